"""The suite's own order: the files conftest.py starts first are there (a renamed one would fall
back to its place in the alphabet, unnoticed, and leave a worker alone with it at the end)."""

from pathlib import Path

from conftest import LONGEST_FIRST


def test_every_file_started_first_exists_once():
    here = Path(__file__).parent
    assert [name for name in LONGEST_FIRST if not (here / name).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)

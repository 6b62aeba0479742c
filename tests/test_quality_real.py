"""benchmarks/quality_real.py's agreement figures and majority (more than half), on three small readers' files."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from quality_real import agreement, cohen_kappa, fleiss_kappa  # noqa: E402
from real_dev_judgments import majority, read_readers  # noqa: E402

HEADER = "row_id\tsynset\tright_sense\tpicturable\tuse\tsense\n"
READINGS = {  # pair -> (right_sense, use) per reader a, b, c
    "r:1": (("yes", "sense"), ("yes", "sense"), ("yes", "sense")),
    "r:2": (("no", "name"), ("no", "name"), ("no", "other_sense")),
    "r:3": (("yes", "sense"), ("no", "modifier"), ("unsure", "unclear")),
}


@pytest.fixture
def folder(tmp_path):
    for reader in range(3):
        lines = [
            f"{row}\tx.n.01\t{answers[reader][0]}\tno\t{answers[reader][1]}\t\n" for row, answers in READINGS.items()
        ]
        (tmp_path / f"real_dev_judged_{'abc'[reader]}.tsv").write_text(HEADER + "".join(lines))
    return tmp_path


def test_fewer_than_three_readers_files_mean_none(folder):
    (folder / "real_dev_judged_c.tsv").unlink()
    assert read_readers(folder) is None


def test_a_pair_counts_by_two_of_three(folder):
    readings = read_readers(folder)
    assert majority(readings, "right_sense") == {
        ("r:1", "x.n.01"): "yes",
        ("r:2", "x.n.01"): "no",
        ("r:3", "x.n.01"): None,
    }
    assert majority(readings, "use")[("r:2", "x.n.01")] == "name"


def test_agreement_per_reader_pair_and_across_all(folder):
    result = agreement(read_readers(folder), ["a", "b", "c"])
    assert result["pairs"] == 3
    assert result["picturable"]["readers"]["a-b"] == {"agree": 1.0, "kappa": None}  # all "no": chance is total
    assert result["right_sense"]["readers"]["a-b"]["agree"] == pytest.approx(2 / 3, abs=1e-3)


def test_kappas_match_hand_computed_values():
    assert cohen_kappa(["y", "y", "n", "n"], ["y", "n", "n", "n"]) == 0.5
    assert fleiss_kappa([["y", "y", "y"], ["n", "n", "n"], ["y", "y", "n"], ["y", "n", "n"]]) == pytest.approx(
        1 / 3, abs=1e-3
    )
    assert fleiss_kappa([["y", "y", "y"], ["n", "n", "n"]]) == 1.0

"""The safety rules over real WordNet 3.0, against lists written by reading WordNet (tests/data/)."""

import csv
import re
from pathlib import Path

import pytest

from imagenot.filters.offensive_synsets import GLOSS_REASON, USAGE_DOMAINS, marked_synsets, offensive_removals
from imagenot.filters.person_synsets import (
    ANY_PERSON,
    IDENTITY_ROOTS,
    PERSON_LEXNAME,
    identity_synsets,
    person_removals,
)
from imagenot.filters.select import select_synsets
from imagenot.pipeline.config.reference_lists import reference_wnids

DATA = Path(__file__).parent / "data"
README = Path(__file__).parent.parent / "README.md"
MARKS = {
    f"{level}usage: {label.split(',')[0]}": reason
    for reason, label in USAGE_DOMAINS.values()
    for level in ("", "lemma ")  # the synset's own label, or one of its lemmas'
}


def _rows(name: str) -> list[dict[str, str]]:
    lines = [line for line in (DATA / name).read_text().splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def _wnid(index, name: str) -> str:
    return index.by_name(name).wnid


@pytest.fixture(scope="module")
def imagenet1k(index):
    return reference_wnids("imagenet1k", index)


def test_wordnet_marks_are_the_synsets_read_from_wordnet(index):
    expected = {row["wnid"]: row for row in _rows("offensive_synsets.tsv")}
    marked = marked_synsets(index)
    assert sorted(marked) == sorted(expected)
    for wnid, (reason, detail) in marked.items():
        row = expected[wnid]
        assert index[wnid].name == row["name"]
        assert reason == MARKS.get(row["mark"], GLOSS_REASON if row["mark"].startswith("gloss: ") else None), wnid
        assert detail.startswith("WordNet usage" if reason != GLOSS_REASON else "gloss: ")


def test_offensive_removals_carry_their_mark(index):
    kike, pommy, gavel = (_wnid(index, n) for n in ("kike.n.01", "pommy.n.01", "gavel.n.01"))
    removals = offensive_removals([kike, pommy, gavel], index)
    assert sorted(removals) == sorted([kike, pommy])
    assert (removals[kike].step, removals[kike].reason) == ("offensive_synsets", "wordnet_usage_ethnic_slur")
    assert removals[kike].detail == "WordNet usage: ethnic slur"
    assert removals[pommy].detail == "gloss: 'disparaging term for'"


def test_identity_rule_decides_as_read_from_wordnet(index):
    identity = identity_synsets(index)
    for row in _rows("identity_person_synsets.tsv"):
        wnid = _wnid(index, row["name"])
        assert identity.get(wnid, ("kept",))[0] == row["expected"], row["name"]


def test_identity_synsets_are_person_synsets_under_a_root(index):
    identity = identity_synsets(index)
    roots = {_wnid(index, name) for names in IDENTITY_ROOTS.values() for name in names}
    assert roots <= identity.keys()
    for wnid, (_, root) in identity.items():
        assert index[wnid].lexname == PERSON_LEXNAME
        assert wnid == root or root in index.ancestors(wnid)


def test_the_readme_states_the_roots_and_the_counts(index):
    """README's "Safety rules" table: one row per identity reason, its roots and its synsets."""
    text = README.read_text()
    identity = identity_synsets(index)
    for reason, names in IDENTITY_ROOTS.items():
        row = re.search(rf"^ *\| `{reason}` \|(.+)\| ([\d,]+) \|$", text, re.MULTILINE)
        assert row, f"README has no row for {reason}"
        assert re.findall(r"`([^`]+)`", row.group(1)) == list(names)
        assert int(row.group(2).replace(",", "")) == sum(1 for r, _ in identity.values() if r == reason)
    assert f"{len(identity):,} person synsets" in text


def test_modes_identity_all_and_keep(index):
    names = ("black.n.05", "frenchman.n.01", "carpenter.n.01", "gavel.n.01")
    black, frenchman, carpenter, gavel = (_wnid(index, n) for n in names)
    pool = [black, frenchman, carpenter, gavel]
    identity = person_removals(pool, index, "identity")
    assert {w: r.reason for w, r in identity.items()} == {
        black: "identity_race_ethnicity",
        frenchman: "identity_nationality",
    }
    assert identity[black].detail.startswith("names people by race or ethnicity: descends from ")
    every = person_removals(pool, index, "all")
    reasons = {w: r.reason for w, r in identity.items()}
    assert {w: r.reason for w, r in every.items()} == {**reasons, carpenter: ANY_PERSON}
    assert person_removals(pool, index, "keep") == {}
    with pytest.raises(ValueError, match="identity, all, keep"):
        person_removals(pool, index, "some")


def test_safety_rules_run_first_so_an_ancestor_stays_a_leaf(index, imagenet1k):
    names = ("person.n.01", "black.n.05", "kike.n.01", "cock_sucking.n.01", "gavel.n.01")
    tagged = {_wnid(index, n): 9 for n in names}  # WordNet marks cock_sucking nowhere; the classifier does
    selection = select_synsets(tagged, tagged, index, reference=imagenet1k, min_count=5)
    fates = {index[w].name: (r.step, r.reason) for w, r in selection.removals.items()}
    assert fates == {
        "kike.n.01": ("offensive_synsets", "wordnet_usage_ethnic_slur"),
        "black.n.05": ("offensive_synsets", "wordnet_usage_ethnic_slur"),  # its lemma blackamoor, before identity
        "cock_sucking.n.01": ("nsfw_synsets", "nsfw_text"),
    }
    assert sorted(index[w].name for w in selection.candidates) == ["gavel.n.01", "person.n.01"]
    off = select_synsets(
        tagged, tagged, index, reference=imagenet1k, min_count=5, offensive_marks=False, person_mode="keep"
    )
    assert off.removals[_wnid(index, "person.n.01")].step == "leaves"  # black.n.05 lies below it
    assert _wnid(index, "kike.n.01") in off.candidates  # the classifier alone lets the slur through

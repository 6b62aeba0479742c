"""Step 2: drop candidates that overlap a reference class set (ImageNet-1k by default).

Two readings of the paper's "remove all synsets that belong to any ImageNet synset/lemmas":
- `paper`: drop the reference synsets and every synset that shares a lemma with one.
- `strict`: also drop every WordNet ancestor and descendant of a reference synset, so no class
  contains or is contained in a reference class (the released ImageNot list keeps some, e.g.
  aircraft.n.01 above airliner.n.01 and gavel.n.01 below hammer.n.02).
And LAIONet's opposite: `within` keeps only the reference synsets (the reference set is the class
set, as LAIONet builds ImageNet-1k classes from LAION).

Lemmas are compared case-insensitively ("Crane", the poet, collides with "crane", the bird):
captions do not keep WordNet's capitalisation, so such a synset cannot be told apart from the
reference class by its captions. Both released ImageNot lists agree with either choice.

When several reasons apply, the record gives the first of: reference synset, shared lemma,
descendant, ancestor; and names the nearest responsible reference synset (the deepest
reference ancestor, the shallowest reference descendant; ties by wnid).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex

STEP = "imagenet_overlap"
Reading = Literal["paper", "strict", "within"]
READINGS: tuple[Reading, ...] = ("paper", "strict", "within")


def overlap_removals(
    candidates: Iterable[str], reference: Iterable[str], index: NounIndex, reading: Reading
) -> dict[str, Removal]:
    """The candidates that overlap the reference set under `reading`, each with its reason."""
    if reading not in READINGS:
        raise ValueError(f"overlap reading {reading!r} is not one of {', '.join(READINGS)}")
    reference = sorted(set(reference))
    reference_set = set(reference)
    if reading == "within":
        return {
            wnid: Removal(wnid, index[wnid].name, STEP, "not_in_reference", "is not in the reference class set", None)
            for wnid in sorted(set(candidates) - reference_set)
        }
    by_lemma = _reference_lemmas(reference, index)
    below, above = ({}, {}) if reading == "paper" else _relatives(reference, index)

    def label(wnid: str) -> str:
        return f"{wnid} {index[wnid].name}"

    removals: dict[str, Removal] = {}
    for wnid in sorted(set(candidates)):
        synset = index[wnid]

        def removal(reason: str, detail: str, cause: str, wnid: str = wnid, name: str = synset.name) -> Removal:
            return Removal(wnid, name, STEP, reason, detail, cause)

        if wnid in reference_set:
            removals[wnid] = removal("reference_synset", "is in the reference set", wnid)
            continue
        shared = next((lemma for lemma in synset.lemmas if lemma.casefold() in by_lemma), None)
        if shared is not None:
            owner = by_lemma[shared.casefold()]
            removals[wnid] = removal("shares_lemma", f"shares lemma {shared!r} with reference {label(owner)}", owner)
        elif wnid in below:
            owner = below[wnid]
            removals[wnid] = removal("descendant_of_reference", f"is a descendant of reference {label(owner)}", owner)
        elif wnid in above:
            owner = above[wnid]
            removals[wnid] = removal("ancestor_of_reference", f"is an ancestor of reference {label(owner)}", owner)
    return removals


def _reference_lemmas(reference: list[str], index: NounIndex) -> dict[str, str]:
    """Casefolded lemma -> the smallest reference wnid that has it."""
    by_lemma: dict[str, str] = {}
    for wnid in reference:  # sorted, so setdefault keeps the smallest wnid
        for lemma in index[wnid].lemmas:
            by_lemma.setdefault(lemma.casefold(), wnid)
    return by_lemma


def _relatives(reference: list[str], index: NounIndex) -> tuple[dict[str, str], dict[str, str]]:
    """(descendant -> deepest reference ancestor, ancestor -> shallowest reference descendant)."""
    below: dict[str, str] = {}
    for wnid in sorted(reference, key=lambda w: (-index[w].depth, w)):
        for descendant in index.descendants(wnid):
            below.setdefault(descendant, wnid)
    above: dict[str, str] = {}
    for wnid in sorted(reference, key=lambda w: (index[w].depth, w)):
        for ancestor in index.ancestors(wnid):
            above.setdefault(ancestor, wnid)
    return below, above

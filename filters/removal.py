"""Why a synset stopped being a candidate: one record per dropped synset, from the step that did."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Removal:
    wnid: str
    name: str  # e.g. "gavel.n.01", so a record reads without the index at hand
    step: str  # a name from filters.funnel.STEPS
    reason: str  # a short code, e.g. "shares_lemma"
    detail: str  # for people: "shares lemma 'crane' with reference n02012849 crane.n.05"
    cause: str | None = None  # the wnid of the synset responsible, when one is

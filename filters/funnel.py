"""The funnel: synsets and captions left after each filter, and why a synset is or is not a class.

Steps, in order: found (step 1) -> row_nsfw (LAION's per-image ratings, a caption filter placed
before the synset steps so that step 3 counts usable captions) -> offensive_synsets ->
person_synsets (the safety rules, filters.offensive_synsets and filters.person_synsets) ->
instance_synsets (named individuals, labels.instances) -> imagenet_overlap -> min_captions ->
leaves -> nsfw_synsets -> picturable -> single_synset (step 6) -> caption_rules (the kept pairs
whose caption does not use the word for the synset, `labels.caption_rules`). "Captions left"
after a synset step counts the rows that still have a candidate synset; after single_synset, the
rows kept with one class. A candidate left with no single-synset caption is dropped at
single_synset; one whose every single-synset caption a caption rule dropped, at caption_rules.
Accounting is exact: found synsets = classes + all dropped synsets, tagged rows = kept rows + all
dropped rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from imagenot.errors import ImagenotError
from imagenot.filters import single_synset, unsafe_rows
from imagenot.filters.removal import Removal
from imagenot.filters.select import SYNSET_STEPS, SynsetSelection
from imagenot.wordnet.index import NounIndex

FOUND = "found"
KEPT = "kept"  # the step column of a synset that passed every filter: a candidate for the rank step
CANDIDATE = "candidate"  # its reason column: whether it becomes a class is decided at rank
CAPTION_RULES_STEP = "caption_rules"  # the label decision's step (`imagenot.labels.caption_rules`)
STEPS = (FOUND, unsafe_rows.STEP, *SYNSET_STEPS, single_synset.STEP, CAPTION_RULES_STEP)


FATE_COLUMNS = ("wnid", "name", "step", "reason", "cause", "detail")


class FunnelError(ImagenotError, ValueError):
    """The caption counts handed to the funnel do not add up."""


@dataclass(frozen=True)
class FunnelStep:
    step: str
    synsets_left: int
    captions_left: int
    synsets_dropped: dict[str, int]  # reason -> synsets
    captions_dropped: dict[str, int]  # reason -> captions


@dataclass(frozen=True)
class Funnel:
    steps: tuple[FunnelStep, ...]
    classes: dict[str, tuple[str, int]]  # wnid -> (name, kept captions), sorted by wnid
    removals: dict[str, Removal]  # wnid -> why it is not a class, sorted by wnid

    def fates(self) -> dict[str, dict[str, str]]:
        """wnid -> its row of `synset_fates.tsv` (FATE_COLUMNS), for every found synset; the
        synsets left after step 6 are candidates (`classes` here), the rank step picks the classes."""
        kept = (
            (wnid, name, KEPT, CANDIDATE, "", f"{n} single-synset captions") for wnid, (name, n) in self.classes.items()
        )
        dropped = ((r.wnid, r.name, r.step, r.reason, r.cause or "", r.detail) for r in self.removals.values())
        return {row[0]: dict(zip(FATE_COLUMNS, row)) for row in sorted([*kept, *dropped])}

    def explain(self, wnid: str) -> str:
        """Why `wnid` is or is not a class, in one line."""
        return describe_fate(wnid, self.fates().get(wnid))


def describe_fate(wnid: str, fate: Mapping[str, str] | None) -> str:
    """One line from a synset's fate row (None: it was never found)."""
    if fate is None:
        return f"{wnid}: not found, no tagged caption mentions it"
    if fate["step"] == KEPT:
        return f"{wnid} {fate['name']}: passed every filter, a candidate for step 'rank' ({fate['detail']})"
    return f"{wnid} {fate['name']}: dropped at step '{fate['step']}' ({fate['reason']}): {fate['detail']}"


def build_funnel(
    selection: SynsetSelection,
    tagged_rows: int,
    caption_drops: Mapping[tuple[str, str], int],
    kept_counts: Mapping[str, int],
    index: NounIndex,
    single_synset_counts: Mapping[str, int] | None = None,
) -> Funnel:
    """The funnel of a run.

    `caption_drops`: (step, reason) -> rows, summed over all batches of the row filter, step 6
    and the caption rules; `kept_counts`: wnid -> rows kept with that class after them all;
    `single_synset_counts`: the same after step 6 alone (default: `kept_counts`).
    """
    unknown = sorted({step for step, _ in caption_drops} - set(STEPS))
    if unknown:
        raise FunnelError(f"caption drops name unknown steps {unknown}; steps are {list(STEPS)}")
    candidates = selection.candidates
    strays = sorted(set(kept_counts) - set(candidates))
    if strays:
        raise FunnelError(f"kept captions carry wnids that are not candidates: {strays[:5]}")
    removals = dict(selection.removals)
    single = kept_counts if single_synset_counts is None else single_synset_counts
    for wnid in candidates:
        if single.get(wnid, 0) and not kept_counts.get(wnid, 0):
            removals[wnid] = Removal(
                wnid,
                index[wnid].name,
                CAPTION_RULES_STEP,
                "no_caption_passes_rules",
                f"a caption rule dropped each of its {single[wnid]:,} single-synset captions",
            )
        elif kept_counts.get(wnid, 0) == 0:
            removals[wnid] = Removal(
                wnid,
                index[wnid].name,
                single_synset.STEP,
                "no_single_synset_caption",
                "every caption that mentions it also mentions another candidate",
            )

    steps = []
    synsets_left, captions_left = len(selection.found), tagged_rows
    for step in STEPS:
        synsets_dropped = _tally(r.reason for r in removals.values() if r.step == step)
        captions_dropped = dict(sorted((reason, n) for (s, reason), n in caption_drops.items() if s == step and n))
        synsets_left -= sum(synsets_dropped.values())
        captions_left -= sum(captions_dropped.values())
        steps.append(FunnelStep(step, synsets_left, captions_left, synsets_dropped, captions_dropped))
    if captions_left != sum(kept_counts.values()) or captions_left < 0:
        raise FunnelError(
            f"{tagged_rows} tagged rows minus {tagged_rows - captions_left} dropped leaves "
            f"{captions_left}, but {sum(kept_counts.values())} rows were kept"
        )
    classes = {wnid: (index[wnid].name, kept_counts[wnid]) for wnid in candidates if wnid not in removals}
    return Funnel(tuple(steps), classes, dict(sorted(removals.items())))


def _tally(reasons) -> dict[str, int]:
    return dict(sorted(Counter(reasons).items()))

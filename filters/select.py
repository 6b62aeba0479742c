"""Steps 1-5 on the driver: from the tag stage's per-synset counts to the candidate classes.

Each step sees the candidates the previous steps left: found (tagged count > 0) -> offensive
synsets -> identity person synsets -> instance synsets -> then the paper's order: ImageNet overlap
-> minimum caption count -> leaves -> NSFW synsets -> picturable. The two safety rules and the
instance rule come first because they judge a synset alone, by WordNet: a synset that may never be
a class does not push its ancestors out at step 4 (Claude Monet does not drop painter.n.01).
Every found synset that does not survive gets exactly one Removal, from the step that dropped it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from imagenot.filters import (
    leaves,
    min_captions,
    nsfw_synsets,
    offensive_synsets,
    overlap,
    person_synsets,
    picturable,
)
from imagenot.filters.overlap import Reading
from imagenot.filters.person_synsets import Mode
from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex

INSTANCE_STEP = "instance_synsets"  # the instance rule's step (`imagenot.labels.instances`)
SYNSET_STEPS = (
    offensive_synsets.STEP,
    person_synsets.STEP,
    INSTANCE_STEP,
    overlap.STEP,
    min_captions.STEP,
    leaves.STEP,
    nsfw_synsets.STEP,
    picturable.STEP,
)


@dataclass(frozen=True)
class SynsetSelection:
    found: tuple[str, ...]  # sorted wnids tagged in at least one caption
    removals: dict[str, Removal]  # wnid -> why it was dropped, sorted by wnid

    @property
    def candidates(self) -> tuple[str, ...]:
        return tuple(wnid for wnid in self.found if wnid not in self.removals)


def select_synsets(
    tagged: Mapping[str, int],
    usable: Mapping[str, int],
    index: NounIndex,
    *,
    reference: Iterable[str],
    reading: Reading = "paper",
    min_count: int = 1000,
    nsfw_threshold: float | None = 0.5,
    offensive_marks: bool = True,
    person_mode: Mode = "identity",
    instances: Callable[[Collection[str]], Mapping[str, Removal]] | None = None,
    picturable_roots: Collection[str] | None = None,
    excluded_lexnames: Collection[str] = (),
) -> SynsetSelection:
    """Run steps 1-5.

    `tagged`: wnid -> captions tagged with it (the tag stage's count table); `usable`: the same
    counted over rows that pass the row-level filters. `reference`: the wnids to stay apart
    from. `nsfw_threshold` None turns step 5 off; `offensive_marks` False keeps the synsets
    WordNet marks offensive; `person_mode` is `filters.person_synsets`' mode; `instances`: the
    instance rule, which of the candidates it drops (`labels.instances.instance_removals` over
    this index; None keeps WordNet's instance synsets); `picturable_roots` None turns the picturable
    step off (`filters.picturable`).
    """
    _check_counts(tagged, usable, index)
    found = tuple(sorted(wnid for wnid, count in tagged.items() if count > 0))
    removals: dict[str, Removal] = {}
    remaining = set(found)
    steps = [  # (on, step), in funnel order
        (offensive_marks, lambda pool: offensive_synsets.offensive_removals(pool, index)),
        (True, lambda pool: person_synsets.person_removals(pool, index, person_mode)),
        (instances is not None, instances),
        (True, lambda pool: overlap.overlap_removals(pool, reference, index, reading)),
        (True, lambda pool: min_captions.too_few_captions(pool, usable, tagged, min_count, index)),
        (True, lambda pool: leaves.non_leaves(pool, index)),
        (nsfw_threshold is not None, lambda pool: nsfw_synsets.nsfw_removals(pool, index, nsfw_threshold)),
        (
            picturable_roots is not None,
            lambda pool: picturable.unpicturable_removals(pool, index, picturable_roots, excluded_lexnames),
        ),
    ]
    for on, step in steps:
        if on:
            dropped = step(remaining)
            removals.update(dropped)
            remaining -= dropped.keys()
    return SynsetSelection(found, dict(sorted(removals.items())))


def _check_counts(tagged: Mapping[str, int], usable: Mapping[str, int], index: NounIndex) -> None:
    for wnid, count in tagged.items():
        if wnid not in index:
            raise ValueError(f"synset count table: {wnid!r} is not a WordNet 3.0 noun synset")
        if count < 0:
            raise ValueError(f"synset count table: {wnid} has a negative count {count}")
    for wnid, count in usable.items():
        if count > tagged.get(wnid, 0):
            raise ValueError(
                f"usable count of {wnid} ({count}) exceeds its tagged count "
                f"({tagged.get(wnid, 0)}): the two tables come from different inputs"
            )

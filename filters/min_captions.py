"""Step 3: drop candidates with too few usable captions, and count captions per synset.

"Usable" means tagged rows that passed the row-level filters (see filters.unsafe_rows): a
synset whose captions are all unsafe has nothing to build a class from. The funnel still
starts from the tag stage's count table, so such a synset is found in step 1 and dropped here
with both numbers in its record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pyarrow as pa

from imagenot.filters.batches import value_counts, wnid_lists
from imagenot.filters.removal import Removal
from imagenot.wordnet.index import NounIndex

STEP = "min_captions"


def synset_caption_counts(batch: pa.RecordBatch) -> dict[str, int]:
    """wnid -> how many rows of the batch are tagged with it (each row counts once per wnid)."""
    return value_counts(wnid_lists(batch)[0])


def too_few_captions(
    candidates: Iterable[str],
    usable: Mapping[str, int],
    tagged: Mapping[str, int],
    min_captions: int,
    index: NounIndex,
) -> dict[str, Removal]:
    """The candidates with fewer than `min_captions` usable captions."""
    if min_captions < 1:
        raise ValueError(f"min_captions must be at least 1, got {min_captions}")
    removals = {}
    for wnid in sorted(set(candidates)):
        count = usable.get(wnid, 0)
        if count >= min_captions:
            continue
        tagged_note = f" ({tagged[wnid]} tagged)" if tagged.get(wnid, 0) != count else ""
        removals[wnid] = Removal(
            wnid,
            index[wnid].name,
            STEP,
            "too_few_captions",
            f"{count} usable captions{tagged_note} < minimum {min_captions}",
        )
    return removals

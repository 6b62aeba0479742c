"""Step 6: keep a caption only if exactly one of its synsets is still a candidate.

The kept row gets a `wnid` column, that candidate. A dropped row is counted under the step
that removed its last candidate ("no_candidate_left"), or under this step when two or more
candidates remain ("several_candidates"); so the funnel's caption count after each synset step
is the number of rows that still had a candidate then.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.filters.batches import (
    Drops,
    FilterInputError,
    require_column,
    row_label,
    value_counts,
    wnid_lists,
)
from imagenot.filters.select import SYNSET_STEPS, SynsetSelection

STEP = "single_synset"
_KEPT = len(SYNSET_STEPS)  # rank of a synset no step removed


class CandidateLookup:
    """Every found synset with the rank of the step that removed it; plain arrays, picklable."""

    def __init__(self, selection: SynsetSelection):
        rank = {step: position for position, step in enumerate(SYNSET_STEPS)}
        self.wnids = pa.array(selection.found, pa.string())
        removals = selection.removals
        self.ranks = np.array([rank[removals[w].step] if w in removals else _KEPT for w in selection.found], np.int8)


def keep_single_synset_rows(batch: pa.RecordBatch, lookup: CandidateLookup) -> tuple[pa.RecordBatch, Drops]:
    """The rows with exactly one candidate, with a `wnid` column, and the other rows counted."""
    if "wnid" in batch.schema.names:
        raise FilterInputError("tagged batch already has a 'wnid' column; step 6 adds it")
    values, parents = wnid_lists(batch)
    if batch.num_rows == 0:
        return batch.append_column("wnid", pa.array([], pa.string())), {}
    positions = pc.index_in(values, value_set=lookup.wnids)
    if positions.null_count:
        first = int(np.flatnonzero(positions.is_null().to_numpy(zero_copy_only=False))[0])
        raise FilterInputError(
            f"{row_label(batch, int(parents[first]))}: wnid {values[first].as_py()!r} is not in "
            "the synset count table (were the table and the tagged shards made by the same run?)"
        )
    ranks = lookup.ranks[positions.to_numpy()]
    is_candidate = ranks == _KEPT
    n_candidates = np.bincount(parents, weights=is_candidate, minlength=batch.num_rows)
    starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])  # every row has >= 1 wnid
    last_rank = np.maximum.reduceat(ranks, starts)

    drops: Drops = {}
    for position, step in enumerate(SYNSET_STEPS):
        count = int(np.count_nonzero(last_rank == position))
        if count:
            drops[(step, "no_candidate_left")] = count
    several = int(np.count_nonzero(n_candidates >= 2))
    if several:
        drops[(STEP, "several_candidates")] = several

    keep = n_candidates == 1
    chosen = np.flatnonzero(is_candidate & keep[parents])  # in row order, one per kept row
    kept = batch.filter(pa.array(keep))
    return kept.append_column("wnid", values.take(pa.array(chosen))), drops


def class_caption_counts(kept: pa.RecordBatch) -> dict[str, int]:
    """wnid -> rows of a step-6 output batch kept with that class."""
    return value_counts(require_column(kept, "wnid", "added by keep_single_synset_rows"))

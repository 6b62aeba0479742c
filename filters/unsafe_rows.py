"""Row-level NSFW filter: LAION's own per-image ratings, `nsfw` (tag) and `punsafe` (score).

A row is dropped when its `nsfw` tag is not one of `allowed_tags` (LAIONet keeps only
"UNLIKELY"; tags compare exactly, as LAION writes them), or when its `punsafe` is above
`max_punsafe`. Either check is off when its parameter is None; an enabled check whose column is
missing from the batch is an error, never a silent pass. A row without a rating (null tag, null
or NaN score) is dropped as unrated unless `keep_unrated`: a missing safety rating is not
evidence of safety, and LAIONet likewise drops a null tag.

Each dropped row is counted once, under the first check it fails, in the order of REASONS.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.filters.batches import Drops, FilterInputError, require_column

STEP = "row_nsfw"
REASONS = ("nsfw_tag_missing", "nsfw_tag", "punsafe_missing", "punsafe_high")


def drop_unsafe_rows(
    batch: pa.RecordBatch,
    allowed_tags: Collection[str] | None,
    max_punsafe: float | None,
    keep_unrated: bool = False,
) -> tuple[pa.RecordBatch, Drops]:
    """The rows that pass the enabled checks, and the dropped rows counted by reason."""
    failures: dict[str, np.ndarray] = {}
    if allowed_tags is not None:
        tags = require_column(batch, "nsfw", "needed by the NSFW tag check; disable it with null")
        if not (pa.types.is_string(tags.type) or pa.types.is_large_string(tags.type)):
            raise FilterInputError(f"column 'nsfw' has type {tags.type}, expected string")
        missing = _mask(tags.is_null())
        failures["nsfw_tag_missing"] = missing & (not keep_unrated)
        allowed = pa.array(sorted(allowed_tags), pa.string())
        failures["nsfw_tag"] = ~missing & ~_mask(pc.is_in(tags.cast(pa.string()), allowed))
    if max_punsafe is not None:
        column = require_column(batch, "punsafe", "needed by the punsafe check; disable it with null")
        if not pa.types.is_floating(column.type):
            raise FilterInputError(f"column 'punsafe' has type {column.type}, expected float64")
        scores = column.cast(pa.float64()).to_numpy(zero_copy_only=False)  # nulls become NaN
        missing = np.isnan(scores)
        failures["punsafe_missing"] = missing & (not keep_unrated)
        failures["punsafe_high"] = ~missing & (np.nan_to_num(scores, nan=0.0) > max_punsafe)

    dropped = np.zeros(batch.num_rows, dtype=bool)
    drops: Drops = {}
    for reason in REASONS:
        if reason not in failures:
            continue
        newly = failures[reason] & ~dropped
        if newly.any():
            drops[(STEP, reason)] = int(newly.sum())
        dropped |= newly
    return batch.filter(pa.array(~dropped)), drops


def _mask(values: pa.Array) -> np.ndarray:
    return values.to_numpy(zero_copy_only=False).astype(bool)

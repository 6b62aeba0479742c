"""Checks and views shared by the caption filters, which run over Arrow batches of tagged rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.errors import ImagenotError

Drops = dict[tuple[str, str], int]  # (funnel step, reason) -> captions dropped


class FilterInputError(ImagenotError, ValueError):
    """A tagged batch lacks a column or holds a value a filter cannot use; names row and field."""


def require_column(batch: pa.RecordBatch, name: str, why: str) -> pa.Array:
    if name not in batch.schema.names:
        raise FilterInputError(f"tagged batch has no column {name!r} ({why}); columns: {', '.join(batch.schema.names)}")
    return batch.column(name)


def row_label(batch: pa.RecordBatch, position: int) -> str:
    """The row's `row_id` when the batch has one, else its position, for error messages."""
    if "row_id" in batch.schema.names:
        return f"row {batch.column('row_id')[position].as_py()!r}"
    return f"row at batch position {position}"


def wnid_lists(batch: pa.RecordBatch) -> tuple[pa.Array, np.ndarray]:
    """The flattened `wnids` values and, for each, the batch row it belongs to.

    Every tagged row carries at least one wnid (the tag stage keeps only rows that matched),
    so a null or empty list is bad input, not a row to skip.
    """
    column = require_column(batch, "wnids", "list<string> of matched synsets")
    if not pa.types.is_list(column.type) and not pa.types.is_large_list(column.type):
        raise FilterInputError(f"column 'wnids' has type {column.type}, expected list<string>")
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    empty = np.flatnonzero(lengths == 0)
    if empty.size:
        raise FilterInputError(
            f"{row_label(batch, int(empty[0]))}: 'wnids' is null or empty; a tagged row must name at least one synset"
        )
    values = pc.list_flatten(column)
    if values.null_count:
        parents = pc.list_parent_indices(column).to_numpy()
        first = int(parents[np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0]])
        raise FilterInputError(f"{row_label(batch, first)}: 'wnids' holds a null wnid")
    return values.cast(pa.string()), pc.list_parent_indices(column).to_numpy()


def value_counts(values: pa.Array) -> dict[str, int]:
    """value -> occurrences, sorted by value."""
    counted = pc.value_counts(values)
    order = pc.array_sort_indices(counted.field("values"))  # sorting in Arrow is ~50x faster
    keys, counts = counted.field("values").take(order), counted.field("counts").take(order)
    return dict(zip(keys.to_pylist(), counts.to_pylist()))

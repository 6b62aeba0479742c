"""Reading corpus shards: files behind paths, globs or URLs (gs:// on Dataflow), in any of the
formats of `formats` (parquet, csv, tsv, json, jsonl; the text ones also gzipped).

A shard's schema is checked from its footer (or header) before any row is read. Rows come out as Arrow
record batches with canonical column names (the fields of `Columns`) plus `row_id`; only the
mapped columns are read from disk. Row checks are vectorised over whole batches, and every row
is either kept or dropped under exactly one counted reason, the first that applies in
`DROP_REASONS` order:

- `line_malformed`: a line of a text file that does not parse (a field missing or extra, an
  unterminated quote, a value that is not a number where one is expected); the first
  `MALFORMED_LISTED` of a shard are listed by file and line in the tally (`formats`).
- `caption_not_utf8`: the caption's bytes are not UTF-8, in any format (parquet does not check
  that a string column holds UTF-8, and csv/tsv values are read as bytes; such a value is
  unreadable text, and reading on would crash on it).
- `caption_missing`: the caption is null.
- `caption_empty`: the caption is empty or only whitespace.
- `caption_not_text`: the caption has no letter or digit in any script (only punctuation,
  symbols, control or format characters: "...", "★★★", "\\u200b").
- `url_not_utf8`, `url_missing` (null, empty or only whitespace), `url_not_http` (not http://
  or https:// and a host: ftp://, file://, data:, relative paths).
- `text_not_utf8`: another text column read (nsfw, license, sample_id) is not UTF-8.
- `punsafe_out_of_range`, `similarity_out_of_range`, `size_out_of_range`: a value that cannot
  be what the column means: a punsafe probability outside [0, 1], a CLIP cosine similarity
  outside [-1, 1], a width or height below 1 or from 2**31 on; infinity in any of them. A null
  or NaN (pandas writes a missing float as NaN) is no value, never out of range: the checks that
  read the column treat it as unrated or unknown.

A shard with no rows reads as one empty batch, so it is counted (and listed) like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Columns, Corpus
from imagenot.pipeline.corpus.formats import CorpusError, Layout, Part, Source, corpus_stem
from imagenot.pipeline.run.paths import name as path_name
from imagenot.pipeline.run.shard_progress import rows_read as report_rows_read

__all__ = ["CorpusError", "Layout"]  # with the reader, for its callers
MALFORMED_LISTED = 20  # malformed lines of a shard named in its tally
DEFAULT_LAYOUT = Layout()  # the layout arguments' default (frozen, so one instance serves all calls)
DROP_REASONS = (
    "line_malformed",
    "caption_not_utf8",
    "caption_missing",
    "caption_empty",
    "caption_not_text",
    "url_not_utf8",
    "url_missing",
    "url_not_http",
    "text_not_utf8",
    "punsafe_out_of_range",
    "similarity_out_of_range",
    "size_out_of_range",
)
# Canonical column -> the closed range its values must fall in (as read, before canonical types).
VALUE_RANGES = {
    "punsafe": ("punsafe_out_of_range", 0.0, 1.0),
    "similarity": ("similarity_out_of_range", -1.0, 1.0),
    "width": ("size_out_of_range", 1, 2**31 - 1),
    "height": ("size_out_of_range", 1, 2**31 - 1),
}
REQUIRED = ("url", "caption")

_HAS_WORD_CHARACTER = r"[\p{L}\p{N}]"
_HTTP_URL = r"(?i)^https?://[^/\s]"


@dataclass(frozen=True)
class _ColumnType:
    """What a corpus column may hold on disk, and the canonical type it is read as."""

    expected: str  # for error messages
    accepts: Callable[[pa.DataType], bool]
    canonical: pa.DataType


def _values(t: pa.DataType) -> pa.DataType:
    """The type of the values: a dictionary-encoded column (pandas' category) holds its dictionary's."""
    return t.value_type if pa.types.is_dictionary(t) else t


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(_values(t)) or pa.types.is_large_string(_values(t))


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(_values(t)) or pa.types.is_floating(_values(t))


def _is_id(t: pa.DataType) -> bool:
    return pa.types.is_integer(_values(t)) or _is_string(t)


_TEXT = _ColumnType("string", _is_string, pa.string())
COLUMN_TYPES: dict[str, _ColumnType] = {
    "url": _TEXT,
    "caption": _TEXT,
    "width": _ColumnType("integer or float", _is_number, pa.int64()),
    "height": _ColumnType("integer or float", _is_number, pa.int64()),
    "similarity": _ColumnType("float or integer", _is_number, pa.float64()),
    "punsafe": _ColumnType("float or integer", _is_number, pa.float64()),
    "nsfw": _TEXT,
    "sample_id": _ColumnType("integer or string", _is_id, pa.string()),
    "license": _TEXT,
}


@dataclass(frozen=True)
class ShardBatch:
    """Kept rows of one slice of a shard, and why the others were dropped.

    Invariant: rows_read == len(batch) + sum(dropped.values()); `malformed` names malformed
    lines ("<file>:<line>: <what is wrong>").
    """

    batch: pa.RecordBatch
    rows_read: int
    dropped: dict[str, int]
    malformed: tuple[str, ...] = ()


def list_shards(patterns: list[str]) -> list[str]:
    """Every file the paths, globs or URLs match, deduplicated and sorted."""
    return [path for path, _, _ in listed_shards(patterns)]


def listed_shards(patterns: list[str]) -> list[tuple[str, int, float]]:
    """(path, size in bytes, modification time) of every file the paths, globs or URLs match,
    deduplicated and sorted by path: one listing."""
    if not patterns:
        raise CorpusError("no corpus paths given")
    try:
        results = FileSystems.match(list(patterns))
    except Exception as err:  # Beam raises BeamIOError or ValueError for bad schemes
        raise CorpusError(f"cannot list corpus paths {patterns}: {err}") from err
    shards: dict[str, tuple[str, int, float]] = {}
    for result in results:
        if not result.metadata_list:
            raise CorpusError(f"corpus path {result.pattern!r} matches no file")
        shards.update((m.path, (m.path, m.size_in_bytes, m.last_updated_in_seconds)) for m in result.metadata_list)
    return sorted(shards.values())


def shard_identities(shards: list[str]) -> list[list]:
    """[file name, size in bytes, modification time] per shard: a changed corpus changes these,
    a corpus moved or copied as it is (times kept) does not."""
    found = {}
    for result in FileSystems.match(list(shards)):
        for meta in result.metadata_list:
            found[meta.path] = [path_name(meta.path), meta.size_in_bytes, meta.last_updated_in_seconds]
    return [found[shard] for shard in shards]


def _present_columns(source: Source, schema: pa.Schema, columns: Columns) -> dict[str, str]:
    """Canonical name -> corpus column for mapped columns in `schema`; raises on bad ones. A text
    file's columns are converted when read, so only their presence is checked."""
    present = {}
    for name, column in columns.source_columns().items():
        kind = COLUMN_TYPES[name]
        index = schema.get_field_index(column)
        if index < 0:
            if name in REQUIRED:
                raise CorpusError(
                    f"shard {source.path}: column {column!r} ({name}) is missing; expected type "
                    f"{kind.expected}; the shard has {schema.names}: set `corpus.columns.{name}` to the column "
                    "that holds it"
                )
            continue
        found = schema.field(index).type
        optional_all_null = name not in REQUIRED and pa.types.is_null(found)
        if not (source.is_text or kind.accepts(found) or optional_all_null):
            raise CorpusError(
                f"shard {source.path}: column {column!r} ({name}) has type {found}, expected {kind.expected}"
            )
        present[name] = column
    return present


def _text_types(source: Source, schema: pa.Schema, present: dict[str, str]) -> dict[str, pa.DataType]:
    """What a text file's mapped columns are parsed as: numbers as float64, ids as json has them."""
    types = {}
    for name, column in present.items():
        canonical = COLUMN_TYPES[name].canonical
        if name == "sample_id" and source.format in ("json", "jsonl"):
            types[column] = schema.field(column).type
        else:
            types[column] = pa.float64() if canonical != pa.string() else pa.string()
    return types


def layout_of(corpus: Corpus) -> Layout:
    """How the configured corpus's files are read."""
    names = tuple(corpus.column_names) if corpus.column_names is not None else None
    return Layout(corpus.format, names, corpus.strict)


def shard_schema(path: str, layout: Layout = DEFAULT_LAYOUT) -> pa.Schema:
    """The shard's columns, from its footer or header (no row is read)."""
    return Source(path, layout).schema()


def validate_shard(path: str, columns: Columns, layout: Layout = DEFAULT_LAYOUT) -> int | None:
    """Check the shard's schema against the column mapping, from the parquet footer (or a text
    file's header, and a csv/tsv file's first lines' fields) only; returns the shard's row count
    where the footer has it, else None."""
    source = Source(path, layout)
    _present_columns(source, source.schema(), columns)
    if source.format in ("csv", "tsv"):
        source.check_fields()
    return source.num_rows()


def read_shard(
    path: str, columns: Columns, batch_rows: int, layout: Layout = DEFAULT_LAYOUT, part: Part | None = None
) -> Iterator[ShardBatch]:
    """The shard's rows (or those of `part` of it: `units`) in batches of up to `batch_rows`,
    checked, with canonical columns; row ids and line numbers are the file's, whatever the part."""
    stem = corpus_stem(path)
    source = Source(path, layout)
    schema = source.schema()
    present = _present_columns(source, schema, columns)
    types = _text_types(source, schema, present) if source.is_text else {}
    listed = 0
    read_any = False
    for raw in source.batches(list(present.values()), types, batch_rows, part):
        read_any = True
        rows = raw.batch.num_rows + len(raw.malformed)
        report_rows_read(rows)  # for the driver's time left
        named = tuple(
            f"{path_name(path)}:{line}: {why}" for line, why in raw.malformed[: max(MALFORMED_LISTED - listed, 0)]
        )
        listed += len(named)
        checked = _checked_batch(raw.batch, present, stem, raw.positions)
        dropped = {**checked.dropped, "line_malformed": len(raw.malformed)}
        yield ShardBatch(checked.batch, rows, {reason: dropped[reason] for reason in DROP_REASONS}, named)
    if not read_any:  # a shard with no rows: one empty batch, with the columns
        fields = [(column, types.get(column) or schema.field(column).type) for column in present.values()]
        empty = pa.RecordBatch.from_pydict({c: pa.array([], t) for c, t in fields})
        yield _checked_batch(empty, present, stem, np.zeros(0, np.int64))


def check_rows(source: Source, raw: pa.Table, columns: Columns, positions: np.ndarray) -> ShardBatch:
    """Rows read apart from the rest of their file (a sample), checked as `read_shard` checks them;
    `positions`: each row's place in the file, for its row id."""
    present = _present_columns(source, raw.schema, columns)
    batch = pa.RecordBatch.from_arrays([c.combine_chunks() for c in raw.columns], schema=raw.schema)
    return _checked_batch(batch, present, corpus_stem(source.path), np.asarray(positions))


def _undecodable(values: pa.Array) -> np.ndarray:
    """Which values of a string array are not valid UTF-8 (whole-array check first: cheap)."""
    try:
        values.validate(full=True)
        return np.zeros(len(values), bool)
    except pa.ArrowInvalid:
        pass
    raw = values.view(pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary())
    bad = np.zeros(len(values), bool)
    for i, value in enumerate(raw.to_pylist()):
        if value is not None:
            try:
                value.decode("utf-8")
            except UnicodeDecodeError:
                bad[i] = True
    return bad


def _decodable(values: pa.Array, bad: np.ndarray) -> pa.Array:
    """`values` with its undecodable entries nulled, so that string kernels may read it."""
    if not bad.any():
        return values
    binary = pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary()
    return pc.if_else(pa.array(bad), pa.scalar(None, binary), values.view(binary)).view(values.type)


def _out_of_range(values: pa.Array, low: float, high: float) -> np.ndarray:
    """Values outside [low, high], infinity included; null and NaN are no value."""
    numbers = values.cast(pa.float64(), safe=False).to_numpy(zero_copy_only=False)  # nulls become NaN
    return ~np.isnan(numbers) & ((numbers < low) | (numbers > high))


def _checked_batch(raw: pa.RecordBatch, present: dict[str, str], stem: str, positions: np.ndarray) -> ShardBatch:
    columns = {field: _decoded(raw.column(column)) for field, column in present.items()}
    problems: dict[str, np.ndarray] = {}
    other_text = np.zeros(raw.num_rows, bool)
    for field, values in columns.items():
        if COLUMN_TYPES[field].canonical == pa.string() and _is_string(values.type):
            bad = _undecodable(values)
            if field in REQUIRED:
                problems[f"{field}_not_utf8"] = bad
            else:
                other_text |= bad
            columns[field] = _decodable(values, bad)
    caption, url = columns["caption"], columns["url"]
    problems |= {
        "caption_missing": pc.is_null(caption),
        "caption_empty": pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(caption)), 0),
        "caption_not_text": pc.invert(pc.match_substring_regex(caption, _HAS_WORD_CHARACTER)),
        "url_missing": pc.or_kleene(pc.is_null(url), pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(url)), 0)),
        "url_not_http": pc.invert(pc.match_substring_regex(url, _HTTP_URL)),
        "text_not_utf8": other_text,
    }
    for field, (reason, low, high) in VALUE_RANGES.items():
        if field in columns and not pa.types.is_null(columns[field].type):
            hit = _out_of_range(columns[field], low, high)
            problems[reason] = problems[reason] | hit if reason in problems else hit
    keep = np.ones(raw.num_rows, dtype=bool)
    dropped = {"line_malformed": 0}
    for reason in DROP_REASONS[1:]:  # a row counts once, under the first reason that applies
        problem = problems.get(reason)
        if problem is None:
            dropped[reason] = 0
            continue
        if not isinstance(problem, np.ndarray):
            problem = pc.fill_null(problem, False).to_numpy(zero_copy_only=False)
        hit = keep & problem
        dropped[reason] = int(hit.sum())
        keep &= ~hit
    positions = pa.array(positions[keep]).cast(pa.string())
    row_id = pc.binary_join_element_wise(f"{stem}:", positions, "")
    mask = pa.array(keep)
    arrays = {"row_id": row_id}
    for field, values in columns.items():
        arrays[field] = _canonical(values.filter(mask), COLUMN_TYPES[field].canonical)
    return ShardBatch(pa.RecordBatch.from_pydict(arrays), raw.num_rows, dropped)


def _decoded(values: pa.Array) -> pa.Array:
    """A dictionary-encoded column (pandas' category) as plain values."""
    return values.dictionary_decode() if pa.types.is_dictionary(values.type) else values


def _canonical(values: pa.Array, target: pa.DataType) -> pa.Array:
    """`values` as `target`; floats become integers by rounding, NaN and infinity become null."""
    if pa.types.is_integer(target) and pa.types.is_floating(values.type):
        values = pc.if_else(pc.is_finite(values), pc.round(values), pa.scalar(None, values.type))
    return values.cast(target)

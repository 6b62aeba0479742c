"""Corpus files as Arrow record batches, whatever their format: parquet, csv, tsv, json (an array)
and jsonl, the text ones also gzipped (the formats img2dataset reads).

The format comes from the file's extension (`.parquet`, `.csv`, `.tsv`, `.json`, `.jsonl`, each
text one also `.gz`) or from `corpus.format`. A `Source` gives the file's schema cheaply (the
parquet footer, the header line of a csv/tsv file, the keys of the first records of a json one)
and its rows in batches, each with the rows' positions in the file (0-based, header excluded),
which make the row ids; so the same rows give the same ids in every format.

Text files are cut into blocks of whole lines (one line is one row: a value may not hold a
newline) and each block is parsed by pyarrow's csv or json reader, vectorised. A line that does
not parse (a field missing or extra, an unterminated quote, a value that is not a number where
one is expected, a json line that is not an object) is malformed: it is left out of the batch and
reported with its line number, for the reader to count or, under `corpus.strict`, to refuse. The
blocks that hold one are split in halves until the line is found, so a clean block costs one parse.
A json line that does not start with `{` (`null`, a number, an empty line) is found before
pyarrow parses the block, which it could crash. A csv/tsv file's values are read as bytes, so text
that is not UTF-8 is told apart (`caption_not_utf8`, ...) as in json and parquet. A gzipped file
is read to the end of its stream (`streams`): one cut short is an error, as is a parquet file
without its footer.
A csv/tsv file's header is its first line; with `corpus.column_names` (files without a header, as
CC3M and CC12M ship), a first line that spells exactly those names is taken as a header too.
TSV has no quoting (a tab or a newline cannot be in a value), as CC3M/CC12M and the IANA format.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from imagenot.pipeline.corpus.streams import (
    CorpusError,
    file_size,
    gunzipped_head,
    is_gzipped,
    open_stored,
    open_text,
)
from imagenot.pipeline.run.paths import name as path_name

FORMATS = ("parquet", "csv", "tsv", "json", "jsonl")
_EXTENSIONS = {
    ".parquet": "parquet",
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
READ_BYTES = 1 << 22  # bytes read from a text file at a time
JSON_SCHEMA_BYTES = 1 << 20  # bytes of a json file read for its keys
FIELDS_CHECK_BYTES = 1 << 16  # bytes of a csv/tsv file whose lines' fields are counted before it is read
UTF8_BOM = b"\xef\xbb\xbf"  # may start a text file (pyarrow's readers skip it)
PARQUET_MAGIC = b"PAR1"  # a parquet file's first and last four bytes


@dataclass(frozen=True)
class Layout:
    """How to read the corpus's files (corpus.format, corpus.column_names, corpus.strict)."""

    format: str | None = None  # None: from each file's extension
    column_names: tuple[str, ...] | None = None  # csv/tsv files without a header
    strict: bool = False  # a malformed line is an error, not a counted drop


@dataclass(frozen=True)
class RawBatch:
    """Rows as parsed (only the wanted columns), their positions in the file, and the malformed
    lines met since the previous batch as (line number, what is wrong)."""

    batch: pa.RecordBatch
    positions: np.ndarray
    malformed: list[tuple[int, str]]


def file_format(path: str, layout: Layout) -> str:
    if layout.format is not None:
        return layout.format
    base = path_name(path).lower().removesuffix(".gz")
    for extension, kind in _EXTENSIONS.items():
        if base.endswith(extension):
            return kind
    raise CorpusError(
        f"shard {path}: cannot tell its format from the file name; name it .parquet, .csv, .tsv, .json or .jsonl "
        "(text ones may end in .gz), or set corpus.format"
    )


def corpus_stem(path: str) -> str:
    """The file name without its format and compression extensions: `part-1.tsv.gz` -> `part-1`,
    so the same rows have the same row ids in any format."""
    base = path_name(path)
    lower = base.lower()
    for extension in (".gz", *_EXTENSIONS):
        if lower.endswith(extension) and len(lower) > len(extension):
            base, lower = base[: -len(extension)], lower[: -len(extension)]
    return base


class Source:
    """One corpus file: its schema and its rows."""

    def __init__(self, path: str, layout: Layout):
        self.path, self.layout, self.format = path, layout, file_format(path, layout)

    @property
    def is_text(self) -> bool:
        return self.format != "parquet"

    def schema(self) -> pa.Schema:
        """The file's columns; a text file's are strings (its values are converted when read)."""
        if self.format == "parquet":
            with open_stored(self.path) as raw, self._parquet(raw) as parquet:
                return parquet.schema_arrow
        if self.format in ("csv", "tsv"):
            return pa.schema([(name, pa.string()) for name in self._header()[0]])
        return pa.schema(list(self._json_keys().items()))

    def num_rows(self) -> int | None:
        """The rows, where the file says so without being read (a parquet footer), else None."""
        if self.format != "parquet":
            return None
        with open_stored(self.path) as raw, self._parquet(raw) as parquet:
            return parquet.metadata.num_rows

    def estimated_rows(self) -> int:
        """The rows: a parquet footer's count; a text file's size over the bytes per line of its
        first megabyte (of a gzipped one, the compressed bytes that held those lines)."""
        rows = self.num_rows()
        if rows is not None:
            return rows
        size = file_size(self.path)
        with open_stored(self.path) as raw:
            head = raw.read(JSON_SCHEMA_BYTES)
        text = gunzipped_head(self.path, head, len(head) >= size) if is_gzipped(self.path) else head
        lines = text.count(b"\n") - (self.format in ("csv", "tsv") and self._header()[1])
        return (
            round(size * max(lines, 0) / len(head)) if len(head) < size else max(lines + (not text.endswith(b"\n")), 0)
        )

    def batches(
        self, columns: list[str], types: dict[str, pa.DataType], batch_rows: int, part: Part | None = None
    ) -> Iterator[RawBatch]:
        """The file's rows (or those of `part` of it) in batches of up to `batch_rows`, with only
        `columns`; a text file's values are converted to `types`. Positions and line numbers are
        the file's, whatever the part."""
        if part is not None and part.kind == "row_groups":
            yield from self._parquet_batches(columns, batch_rows, part)
        elif part is not None:
            yield from self._range_batches(columns, types, batch_rows, part)
        elif self.format == "parquet":
            yield from self._parquet_batches(columns, batch_rows)
        elif self.format == "json":
            records = io.BytesIO(self._json_array_lines())
            yield from self._line_batches(_line_blocks(records, batch_rows), columns, types, 0)
        else:
            with open_text(self.path) as raw:
                header_lines = self._header()[1] if self.format in ("csv", "tsv") else 0
                if header_lines:
                    raw.readline()
                yield from self._line_batches(_line_blocks(raw, batch_rows), columns, types, header_lines)

    def splittable(self) -> bool:
        """Whether the file can be read in parts: parquet (by row groups), and csv, tsv and jsonl
        files that are not compressed (by byte ranges cut at line starts: one line is one row). A
        gzipped file cannot be entered part way, and a .json array is parsed whole."""
        return self.format == "parquet" or (self.format in ("csv", "tsv", "jsonl") and not is_gzipped(self.path))

    def _range_batches(
        self, columns: list[str], types: dict[str, pa.DataType], batch_rows: int, part: Part
    ) -> Iterator[RawBatch]:
        """The rows of the lines that start in the byte range [part.start, part.end); the first
        of them is line `part.first_line` of the file (0-based, the header included)."""
        header_lines = self._header()[1] if self.format in ("csv", "tsv") else 0
        with open_stored(self.path) as raw:
            start = part.start
            if start > 0:
                raw.seek(start - 1)
                start += len(raw.readline()) - 1  # on to the first line that starts in the range
            else:
                for _ in range(header_lines):
                    start += len(raw.readline())
            first = max(part.first_line - header_lines, 0)
            blocks = _line_blocks(_LineRange(raw, start, part.end), batch_rows)
            yield from self._line_batches(blocks, columns, types, header_lines, first)

    # parquet

    @contextlib.contextmanager
    def _parquet(self, raw) -> Iterator[pq.ParquetFile]:
        try:
            parquet = pq.ParquetFile(raw)
        except Exception as err:  # ArrowInvalid for a bad footer, OSError for short reads
            if _cut_parquet(raw):
                raise CorpusError(
                    f"shard {self.path}: ends early: it starts as a parquet file but lacks the footer a whole one "
                    "ends with (the file is truncated); copy it again"
                ) from err
            raise CorpusError(f"shard {self.path}: not a readable parquet file: {err}") from err
        yield parquet

    def row_group_rows(self) -> list[int]:
        """A parquet file's rows per row group, from its footer."""
        with open_stored(self.path) as raw, self._parquet(raw) as parquet:
            return [parquet.metadata.row_group(i).num_rows for i in range(parquet.metadata.num_row_groups)]

    def read_row_group(self, group: int, columns: list[str]) -> pa.Table:
        """One row group of a parquet file, only `columns`, as stored."""
        with open_stored(self.path) as raw, self._parquet(raw) as parquet:
            return parquet.read_row_group(group, columns=columns)

    def _parquet_batches(self, columns: list[str], batch_rows: int, part: Part | None = None) -> Iterator[RawBatch]:
        with open_stored(self.path) as raw, self._parquet(raw) as parquet:
            groups = None if part is None else list(range(part.start, part.end))
            batches = parquet.iter_batches(batch_size=batch_rows, columns=columns, row_groups=groups)
            position = 0 if part is None else part.first_line
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                except Exception as err:  # a truncated or corrupt page surfaces only when read
                    raise CorpusError(
                        f"shard {self.path}: unreadable after row {position}: {type(err).__name__}: {err}"
                    ) from err
                yield RawBatch(batch, np.arange(position, position + batch.num_rows), [])
                position += batch.num_rows

    # text

    def _header(self) -> tuple[list[str], int]:
        """The column names and the lines of header (0 or 1)."""
        with open_text(self.path) as raw:
            first = raw.readline()
        if not first.strip():
            raise CorpusError(
                f"shard {self.path}: the first line is empty; a {self.format} file starts with its header"
            )
        try:
            fields = _split_line(first, self.format)
        except ValueError as err:
            raise CorpusError(f"shard {self.path}: line 1 (the header): {err}") from err
        names = self.layout.column_names
        if names is None:
            return fields, 1
        return list(names), int(fields == list(names))

    def check_fields(self) -> None:
        """A csv/tsv file whose first lines (FIELDS_CHECK_BYTES) mostly hold another number of
        fields than its header (or corpus.column_names) names is refused: it lacks a column, or the
        names are not its columns, and reading on would drop nearly every line as malformed."""
        names, header_lines = self._header()
        with open_text(self.path) as raw:
            lines = raw.read(FIELDS_CHECK_BYTES).split(b"\n")[header_lines:-1]  # the last may be cut short
        counts = Counter(len(_split_line(line, self.format, "replace")) for line in lines)
        fields, most = counts.most_common(1)[0] if counts else (len(names), 0)
        if fields == len(names) or counts[len(names)] * 2 >= len(lines):
            return
        named = "corpus.column_names" if self.layout.column_names is not None else "its header"
        lacks = f"no column {names[fields:]}" if fields < len(names) else f"{fields - len(names)} column(s) not named"
        raise CorpusError(
            f"shard {self.path}: {most:,} of its first {len(lines):,} lines have {fields} field(s), where {named} "
            f"names {len(names)} ({', '.join(names)}): it has {lacks}; set corpus.column_names to its columns in order"
        )

    def _json_keys(self) -> dict[str, pa.DataType]:
        """The keys of the records in the file's first megabyte, in order of appearance, each
        with the type of its first value that is not null (an integer, a float or else a string)."""
        with open_text(self.path) as raw:
            head = raw.read(JSON_SCHEMA_BYTES)
        text = head.removeprefix(UTF8_BOM).decode("utf-8", errors="replace")
        decoder, keys, position = json.JSONDecoder(), {}, 0
        if self.format == "json":
            position = text.find("[") + 1
            if position == 0:
                raise CorpusError(
                    f"shard {self.path}: a .json corpus file is one array of objects; use .jsonl for one object a line"
                )
        while True:
            while position < len(text) and text[position] in " \t\r\n,":
                position += 1
            if position >= len(text):
                break
            try:
                record, position = decoder.raw_decode(text, position)
            except json.JSONDecodeError:  # a malformed line (read as such later) or the cut-off end
                position = text.find("\n", position) + 1
                if position == 0:
                    break
                continue
            for key, value in record.items() if isinstance(record, dict) else ():
                if keys.get(key) is None:
                    keys[key] = _json_type(value)
        return {key: kind or pa.string() for key, kind in keys.items()}

    def _json_array_lines(self) -> bytes:
        """A .json array's records as json lines (the array is parsed whole: for big
        files, jsonl streams)."""
        with open_text(self.path) as raw:
            data = raw.read()
        try:
            records = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            where = (
                f"line {err.lineno} column {err.colno}"
                if isinstance(err, json.JSONDecodeError)
                else f"byte {err.start}"
            )
            raise CorpusError(f"shard {self.path}: not a readable json array: {where}: {err}") from err
        if not isinstance(records, list):
            raise CorpusError(
                f"shard {self.path}: a .json corpus file is one array of objects, not a {type(records).__name__}"
            )
        return b"".join(json.dumps(record, ensure_ascii=False).encode() + b"\n" for record in records)

    def _line_batches(
        self,
        blocks: Iterator[bytes],
        columns: list[str],
        types: dict[str, pa.DataType],
        header_lines: int,
        position: int = 0,
    ) -> Iterator[RawBatch]:
        parse = _Parser(self, columns, types)
        for block in blocks:
            batch, positions, malformed = parse.block(block, position)
            if self.layout.strict and malformed:
                line, why = malformed[0]
                raise CorpusError(f"shard {self.path}: line {line + header_lines + 1}: {why} (corpus.strict is on)")
            yield RawBatch(batch, positions, [(line + header_lines + 1, why) for line, why in malformed])
            position += block.count(b"\n")


@dataclass(frozen=True)
class Part:
    """Part of a corpus file, read as one piece of a work unit: `row_groups` [start, end) of a
    parquet file, whose first row is row `first_line` of the file; or the lines of a text file
    that start in the byte range [start, end), the first of them line `first_line` (0-based,
    the header included)."""

    kind: str  # "row_groups" or "bytes"
    start: int
    end: int
    first_line: int = 0


class _LineRange:
    """A file from `start` (a line start), read up to `end` and then to the end of the line that
    holds byte end - 1: the lines that start before `end`."""

    def __init__(self, raw, start: int, end: int):
        self.raw, self.left = raw, max(end - start, 0)  # none left: no line starts in the range
        if self.left:
            raw.seek(start)

    def read(self, size: int) -> bytes:
        if self.left <= 0:
            return b""
        data = self.raw.read(min(size, self.left))
        self.left = 0 if not data else self.left - len(data)
        if self.left == 0 and data and not data.endswith(b"\n"):
            data += self.raw.readline()  # the range's last line runs on past its end
        return data


def _cut_parquet(raw) -> bool:
    """Whether a file starts with parquet's magic bytes and does not end with them: the footer
    of a parquet file is at its end, so such a file was cut short."""
    raw.seek(0)
    head = raw.read(4)
    raw.seek(0, io.SEEK_END)
    size = raw.tell()
    raw.seek(max(size - 4, 0))
    return head == PARQUET_MAGIC and (size < 8 or raw.read(4) != PARQUET_MAGIC)


def count_line_starts(path: str, start: int, end: int) -> int:
    """The lines of a file that start in the byte range [start, end) (0 < end <= the file's size):
    as `Source.batches` reads a `bytes` part, counted without parsing."""
    with open_stored(path) as raw:
        raw.seek(max(start - 1, 0))
        left, lines = end - 1 - max(start - 1, 0), int(start == 0)
        while left > 0 and (data := raw.read(min(READ_BYTES, left))):
            lines += data.count(b"\n")
            left -= len(data)
    return lines


def _line_blocks(raw, lines: int) -> Iterator[bytes]:
    """The stream as blocks of `lines` whole lines (the last may hold fewer), each ending in a
    newline (one is added after a last line without it)."""
    pending, count = bytearray(), 0
    while data := raw.read(READ_BYTES):
        pending += data
        count += data.count(b"\n")
        while count >= lines:
            cut = _line_end(pending, lines)
            yield bytes(pending[:cut])
            del pending[:cut]
            count -= lines
    if pending:
        yield bytes(pending) + (b"" if pending.endswith(b"\n") else b"\n")


def _line_end(data: bytes | bytearray, lines: int) -> int:
    """The offset just after the `lines`-th newline of `data` (which holds at least that many)."""
    return int(np.flatnonzero(np.frombuffer(data, np.uint8) == 10)[lines - 1]) + 1


def _split_line(line: bytes, fmt: str, errors: str = "strict") -> list[str]:
    """The fields of one csv/tsv line, as the block parser reads them."""
    text = line.decode("utf-8", errors).rstrip("\r\n")
    if fmt == "tsv":
        return text.split("\t")
    return next(csv.reader([text]))


class _Parser:
    """Parses blocks of whole lines of one text file; finds malformed lines by halving."""

    def __init__(self, source: Source, columns: list[str], types: dict[str, pa.DataType]):
        self.source, self.columns = source, columns
        self.types = {column: types.get(column, pa.string()) for column in columns}
        self.read_types = {column: pa.binary() if kind == pa.string() else kind for column, kind in self.types.items()}
        if source.format in ("csv", "tsv"):
            names, _ = source._header()
            missing = [column for column in columns if column not in names]
            if missing:
                raise CorpusError(f"shard {source.path}: no column {missing[0]!r} in its header {names}")
            self.names = names

    def empty(self) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({c: pa.array([], t) for c, t in self.types.items()})

    def block(self, block: bytes, first: int) -> tuple[pa.RecordBatch, np.ndarray, list[tuple[int, str]]]:
        """The rows of the block's good lines, their positions (`first` is the block's first
        line's) and the malformed lines as (position, what is wrong)."""
        tables, positions, malformed = [], [], []
        self._parse(block, first, tables, positions, malformed)
        table = pa.concat_tables(tables) if tables else None
        batches = table.combine_chunks().to_batches() if table is not None and table.num_rows else []
        batch = batches[0] if batches else self.empty()
        return batch, np.concatenate(positions) if positions else np.zeros(0, np.int64), malformed

    def _parse(self, block: bytes, first: int, tables: list, positions: list, malformed: list) -> None:
        lines = block.count(b"\n")
        try:
            table, bad = self._read(block)
            good = np.setdiff1d(np.arange(lines), [number - 1 for number, _ in bad], assume_unique=True)
            if len(good) != table.num_rows:  # a json line that gave no record (an empty line)
                raise _Unparsed("no record on the line")
        except (pa.ArrowInvalid, pa.ArrowTypeError, _Unparsed) as err:
            if lines == 1:
                malformed.append((first, _why(err)))
                return
            half = _line_end(block, lines // 2)
            self._parse(block[:half], first, tables, positions, malformed)
            self._parse(block[half:], first + lines // 2, tables, positions, malformed)
            return
        tables.append(table)
        positions.append(good + first)
        malformed.extend((first + number - 1, why) for number, why in bad)

    def _read(self, block: bytes) -> tuple[pa.Table, list[tuple[int, str]]]:
        """The block's rows, and the lines pyarrow skipped (1-based in the block, with why)."""
        if self.source.format in ("jsonl", "json"):
            objects, bad = _objects_only(block)
            if not objects:
                return pa.Table.from_batches([self.empty()]), bad
            schema = pa.schema(list(self.types.items()))
            options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
            table = pa_json.read_json(
                io.BytesIO(objects), pa_json.ReadOptions(use_threads=False, block_size=len(objects) + 1), options
            )
            return table.select(self.columns), bad
        source = io.BytesIO(block)
        bad: list[tuple[int, str]] = []

        def skip(row) -> str:
            bad.append((row.number, f"{row.actual_columns} fields where the header has {row.expected_columns}"))
            return "skip"

        tsv = self.source.format == "tsv"
        table = pa_csv.read_csv(
            source,
            pa_csv.ReadOptions(column_names=self.names, use_threads=False, block_size=len(block) + 1),
            pa_csv.ParseOptions(
                delimiter="\t" if tsv else ",",
                quote_char=False if tsv else '"',
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
                invalid_row_handler=skip,
            ),
            # text as bytes: the reader tells a value that is not UTF-8 (`caption_not_utf8`, ...), as in json, parquet
            pa_csv.ConvertOptions(column_types=self.read_types, include_columns=self.columns),
        )
        for column, kind in self.types.items():  # an unterminated quote runs on over the next lines
            if kind == pa.string() and pc.any(pc.match_substring(table.column(column), "\n")).as_py():
                raise _Unparsed("an unterminated quote")
        text = [
            table.column(c).combine_chunks().view(pa.string()) if k == pa.string() else table.column(c)
            for c, k in self.types.items()
        ]
        return pa.table(text, names=list(self.types)), bad


def _objects_only(block: bytes) -> tuple[bytes, list[tuple[int, str]]]:
    """The block's lines that start with an object (`{`), and the others (1-based in the block,
    with why): pyarrow's json reader crashes the process (SIGSEGV) on a block that starts with
    `null`, so no line that is not an object reaches it."""
    data = np.frombuffer(block, np.uint8)
    ends = np.flatnonzero(data == 10) + 1
    starts = np.concatenate(([0], ends[:-1]))
    bad = []
    for i in np.flatnonzero(data[starts] != ord("{")):  # most lines: none, checked at C speed
        text = block[starts[i] : ends[i]].strip()
        if not text.removeprefix(UTF8_BOM).startswith(b"{"):  # pyarrow reads a BOM
            shown = text[:40].decode("utf-8", "replace")
            bad.append((int(i) + 1, f"not a json object: {shown}" if text else "an empty line"))
    if not bad:
        return block, []
    skipped = {line - 1 for line, _ in bad}
    kept = b"".join(block[starts[i] : ends[i]] for i in range(len(starts)) if i not in skipped)
    return kept, bad


class _Unparsed(Exception):
    """A block that parsed into something other than its lines."""


def _json_type(value: object) -> pa.DataType | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return pa.string()
    return pa.int64() if isinstance(value, int) else pa.float64()


def _why(err: Exception) -> str:
    """What is wrong with one malformed line, from the parser's error (less its block-relative row)."""
    return re.sub(r"Row #\d+: | in row \d+", "", str(err).splitlines()[0])[:200]

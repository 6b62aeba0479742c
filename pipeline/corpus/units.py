"""Work units: the corpus cut or grouped into pieces of about `corpus.work_unit_rows` rows each,
whatever its files' sizes, so that one big file keeps many workers busy, 100,000 small files do
not cost one Beam element each, and no worker holds more than a unit's rows.

- A parquet file of more rows than the bound is cut at row-group boundaries (from its footer, no
  row read) into runs of at most the bound; a row group of more rows is a unit by itself (a row
  group is parquet's smallest independent read).
- A csv, tsv or jsonl file that is not compressed, and of more rows than the bound (estimated
  from its size and its first megabyte), is cut into equal byte ranges, about one bound of rows
  each; a range holds the lines that start in it (one line is one row: `formats`). A range's
  first line number is the count of lines before it, found by a pass that reads the ranges'
  bytes without parsing (`count_line_starts`, run by the tag stage on its workers), so row ids
  and malformed lines' numbers are the file's.
- A gzipped file (it cannot be entered part way) or a .json array (parsed whole) is read whole.
- Files of at most the bound that are not cut are grouped, in path order, into units of at most
  the bound (a text file's rows estimated); a group holds files of the same column names only, as
  its rows go to one tagged file.

A unit's id tells its content given the file list: a whole file's is its name less the last
suffix (as a shard's outputs were always named), a file's part `<stem>@rg<first>-<last>` (row
groups) or `<stem>@b<start>-<end>` (bytes), a group `<first stem>..<last stem>`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from imagenot.pipeline.corpus.formats import Layout, Part, Source, count_line_starts, file_size
from imagenot.pipeline.run.paths import stem

SHAPE_THREADS = 16  # footers and heads are small reads: latency-bound, so many at once
MAX_ID_CHARS = 200  # a unit id is a file name


@dataclass(frozen=True)
class FileShape:
    """What cutting a file needs: its rows (exact from a parquet footer, else estimated), its
    row groups' rows (parquet), its size when it is a text file that can be cut."""

    path: str
    rows: int
    exact: bool
    row_groups: tuple[int, ...] | None = None
    size: int | None = None
    columns: tuple[str, ...] = ()  # its schema's names: only files with the same ones are grouped


@dataclass(frozen=True)
class Piece:
    path: str
    part: Part | None  # None: the whole file
    rows: int  # exact for parquet, else estimated

    @property
    def starts_file(self) -> bool:
        return self.part is None or self.part.start == 0


@dataclass(frozen=True)
class WorkUnit:
    id: str
    pieces: tuple[Piece, ...]
    exact: bool  # rows known from footers

    @property
    def rows(self) -> int:
        return sum(piece.rows for piece in self.pieces)

    @property
    def key(self) -> str:
        """A path-like name whose stem is the id, for the stage's per-shard files."""
        return f"{self.id}.unit"


def file_shape(path: str, layout: Layout) -> FileShape:
    source = Source(path, layout)
    columns = tuple(sorted(source.schema().names))
    if source.format == "parquet":
        groups = tuple(source.row_group_rows())
        return FileShape(path, sum(groups), True, row_groups=groups, columns=columns)
    size = file_size(path) if source.splittable() else None
    return FileShape(path, source.estimated_rows(), False, size=size, columns=columns)


def file_shapes(paths: list[str], layout: Layout, check: Callable[[str], object] | None = None) -> list[FileShape]:
    """Every file's shape, read many at once, each file first given to `check` (which raises on a
    file the stage refuses: the first such file in `paths` order is the one raised)."""

    def shape(path: str) -> FileShape:
        if check is not None:
            check(path)
        return file_shape(path, layout)

    with ThreadPoolExecutor(SHAPE_THREADS) as pool:
        return list(pool.map(shape, paths))


def plan_units(shapes: Iterable[FileShape], bound: int) -> list[WorkUnit]:
    """The work units of files in path order: deterministic from the files and the bound. A text
    range's `first_line` is 0 until `number_lines` sets it."""
    units: list[WorkUnit] = []
    group: list[FileShape] = []

    def flush() -> None:
        if group:
            ids = [stem(shape.path) for shape in group]
            unit_id = ids[0] if len(ids) == 1 else f"{ids[0]}..{ids[-1]}"
            pieces = tuple(Piece(shape.path, None, shape.rows) for shape in group)
            units.append(WorkUnit(unit_id, pieces, all(shape.exact for shape in group)))
            group.clear()

    for shape in shapes:
        parts = _cut(shape, bound)
        if parts is None and shape.rows <= bound:
            # a unit writes one tagged file: its files must give the same columns
            if sum(s.rows for s in group) + shape.rows > bound or (group and group[0].columns != shape.columns):
                flush()
            group.append(shape)
            continue
        flush()
        if parts is None:  # too big, and cannot be cut
            units.append(WorkUnit(stem(shape.path), (Piece(shape.path, None, shape.rows),), shape.exact))
            continue
        for part, rows in parts:
            mark = f"rg{part.start}-{part.end - 1}" if part.kind == "row_groups" else f"b{part.start}-{part.end}"
            units.append(WorkUnit(f"{stem(shape.path)}@{mark}", (Piece(shape.path, part, rows),), shape.exact))
    flush()
    return [_short_id(unit) for unit in units]


def _cut(shape: FileShape, bound: int) -> list[tuple[Part, int]] | None:
    """The parts of a file of more rows than the bound, with their rows; None: read it whole."""
    if shape.rows <= bound:
        return None
    if shape.row_groups is not None:
        runs, start, rows = [], 0, 0
        first_row = 0
        for group, group_rows in enumerate(shape.row_groups):
            if rows and rows + group_rows > bound:
                runs.append((Part("row_groups", start, group, first_row), rows))
                start, first_row, rows = group, first_row + rows, 0
            rows += group_rows
        runs.append((Part("row_groups", start, len(shape.row_groups), first_row), rows))
        return runs if len(runs) > 1 else None
    if shape.size is None:
        return None
    count = min(math.ceil(shape.rows / bound), shape.size)
    edges = [round(i * shape.size / count) for i in range(count + 1)]
    return [(Part("bytes", a, b), round(shape.rows * (b - a) / shape.size)) for a, b in zip(edges, edges[1:])]


def _short_id(unit: WorkUnit) -> WorkUnit:
    """An id too long for a file name is cut, with a number that keeps it distinct."""
    if len(unit.id) <= MAX_ID_CHARS:
        return unit
    digest = hashlib.sha256(unit.id.encode()).hexdigest()[:12]
    return replace(unit, id=f"{unit.id[: MAX_ID_CHARS - 14]}~{digest}")


def text_ranges(units: list[WorkUnit]) -> list[tuple[str, int, int]]:
    """(path, start, end) of every text range, for `count_line_starts`."""
    return [
        (piece.path, piece.part.start, piece.part.end)
        for unit in units
        for piece in unit.pieces
        if piece.part is not None and piece.part.kind == "bytes"
    ]


def range_key(path: str, start: int) -> str:
    return f"{path}@{start}"


def count_range(element: tuple[str, int, int]) -> dict:
    """A text range's line starts, as a tally (see `number_lines`)."""
    path, start, end = element
    return {"line_starts": {range_key(path, start): count_line_starts(path, start, end)}}


def number_lines(units: list[WorkUnit], line_starts: dict[str, int]) -> list[WorkUnit]:
    """The units with each text range's first line: the lines that start in the file's earlier
    ranges (`line_starts`, by `range_key`; a range missing holds none)."""
    firsts: dict[str, int] = {}
    before: dict[str, int] = {}  # path -> lines in the ranges so far
    for path, start, _ in sorted(text_ranges(units)):
        key = range_key(path, start)
        firsts[key] = before.get(path, 0)
        before[path] = firsts[key] + line_starts.get(key, 0)

    def numbered(piece: Piece) -> Piece:
        if piece.part is None or piece.part.kind != "bytes":
            return piece
        return replace(piece, part=replace(piece.part, first_line=firsts[range_key(piece.path, piece.part.start)]))

    return [replace(unit, pieces=tuple(numbered(piece) for piece in unit.pieces)) for unit in units]


def describe(units: list[WorkUnit], bound: int) -> str:
    """One line: how many units, of how many files, under which bound."""
    files = {piece.path for unit in units for piece in unit.pieces}
    cut = {piece.path for unit in units for piece in unit.pieces if piece.part is not None}
    grouped = sum(len(unit.pieces) for unit in units if len(unit.pieces) > 1)
    return (
        f"{len(units):,} work unit(s) of at most {bound:,} rows (corpus.work_unit_rows) from {len(files):,} "
        f"file(s): {len(cut):,} cut, {grouped:,} grouped"
    )

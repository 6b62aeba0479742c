"""Rows read so far by the shard a worker is processing, so the driver's time left moves with
rows rather than jumping when a whole shard finishes.

`resumable_shard` runs a shard's work inside `reporting(...)`; the shard readers
(`shards.read_batches`, the corpus reader) call `rows_read` per batch; every `INTERVAL` seconds the
count goes to `<stage dir>/progress/<shard stem>.json`, which `pipeline.run.progress` reads. Outside
a shard's work (the driver, a pass that writes no shard) `rows_read` does nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import write_json

PROGRESS_DIR = "progress"
INTERVAL = 2.0  # seconds between a shard's progress writes


@dataclass
class _Shard:
    path: str
    rows: int = 0
    written: float = 0.0


_current: ContextVar[_Shard | None] = ContextVar("shard_progress", default=None)


def progress_path(tally_path: str) -> str:
    """`<stage>/progress/<stem>.json` beside the shard's `<stage>/tallies/<stem>.json`."""
    tallies, name = FileSystems.split(tally_path)
    return FileSystems.join(FileSystems.split(tallies)[0], PROGRESS_DIR, name)


@contextlib.contextmanager
def reporting(path: str) -> Iterator[None]:
    """Count the rows the block reads into the progress file at `path`."""
    shard = _Shard(path, written=time.monotonic())
    token = _current.set(shard)
    try:
        yield
    finally:
        _current.reset(token)


def rows_read(rows: int) -> None:
    """Count rows the running shard read; written out at most every INTERVAL seconds."""
    shard = _current.get()
    if shard is None:
        return
    shard.rows += rows
    now = time.monotonic()
    if now - shard.written >= INTERVAL:
        write_json(shard.path, {"rows": shard.rows})
        shard.written = now

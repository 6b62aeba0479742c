"""Progress of a shard-by-shard stage, watched from the driver while Beam runs it.

Workers write one tally per finished shard and, while a shard runs, the rows read so far
(`pipeline.run.shard_progress`). Where the rows to do are known (given by the caller, who read the
footers already, or read here from the footers of parquet shards), rows done, rows per second and
time left move with every report rather than with whole shards; otherwise (the image audit's
tars) shards are counted. On a terminal this is a live bar; otherwise a plain log line every
`interval` seconds.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from tqdm import tqdm

from imagenot.pipeline.run.files import read_json
from imagenot.pipeline.run.shard_progress import PROGRESS_DIR
from imagenot.pipeline.run.shards import TALLIES_DIR, tally_name

log = logging.getLogger(__name__)


def parquet_rows(path: str) -> int:
    """The rows of a parquet file, from its footer."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pq.ParquetFile(f).metadata.num_rows


class _Done:
    """Shards and rows done among `shards` (the folder may hold other shards' files too): a
    finished shard counts all its rows, a running one the rows its worker last reported."""

    def __init__(self, stage_dir: str, shards: list[str], rows_key: str, shard_rows: list[int] | None = None):
        self._tallies = FileSystems.join(stage_dir, TALLIES_DIR, "*.json")
        self._progress = FileSystems.join(stage_dir, PROGRESS_DIR, "*.json")
        self._shard_of = {tally_name(shard): shard for shard in shards}
        self._rows_key = rows_key
        self._sizes = (
            None if shard_rows is None else {tally_name(s): n for s, n in zip(shards, shard_rows, strict=True)}
        )
        self._finished: dict[str, int] = {}

    def total_rows(self) -> int | None:
        """The rows of all the shards: as given, else when they are parquet files their footers'
        (read once), else None."""
        if self._sizes is None and all(shard.endswith(".parquet") for shard in self._shard_of.values()):
            self._sizes = {name: parquet_rows(shard) for name, shard in self._shard_of.items()}
        return sum(self._sizes.values()) if self._sizes is not None else None

    def _matching(self, pattern: str) -> list[tuple[str, str]]:
        found = [(FileSystems.split(meta.path)[1], meta.path) for meta in FileSystems.match([pattern])[0].metadata_list]
        return [(name, path) for name, path in found if name in self._shard_of]

    def refresh(self) -> tuple[int, int]:
        """(shards done, rows done)."""
        for name, path in self._matching(self._tallies):
            if name not in self._finished:
                self._finished[name] = self._sizes[name] if self._sizes else read_json(path).get(self._rows_key, 0)
        running = sum(
            read_json(path).get("rows", 0)
            for name, path in self._matching(self._progress)
            if name not in self._finished
        )
        return len(self._finished), sum(self._finished.values()) + (running if self._sizes else 0)


def time_left(left: int, per_second: float) -> str:
    """Time left for `left` rows (or shards) at `per_second`."""
    return f"about {left / per_second:.0f} s left" if per_second > 0 else "time left unknown yet"


@contextlib.contextmanager
def watch_shards(
    stage_dir: str,
    shards: list[str],
    label: str,
    rows_key: str,
    interval: float = 10.0,
    shard_rows: list[int] | None = None,
) -> Iterator[None]:
    """Report how far the work on `shards` (paths or names) under `stage_dir` is while the block
    runs; `shard_rows`, each shard's rows where the caller knows them, spares reading the footers."""
    done = _Done(stage_dir, shards, rows_key, shard_rows)
    total = done.total_rows()
    first_shards, first_rows = done.refresh()  # finished by an earlier, interrupted run
    on_terminal = sys.stderr.isatty()
    bar = tqdm(
        total=total if total is not None else len(shards),
        initial=first_rows if total is not None else first_shards,
        desc=label,
        unit="row" if total is not None else "shard",
        disable=not on_terminal,
    )
    started, stop = time.monotonic(), threading.Event()

    def report() -> None:
        shards_done, rows = done.refresh()
        elapsed = max(time.monotonic() - started, 1e-9)
        rate = (rows - first_rows) / elapsed
        bar.update((rows if total is not None else shards_done) - bar.n)
        bar.set_postfix_str(f"{rate:,.0f} rows/s")
        if on_terminal:
            return
        if total is not None:
            left = time_left(total - rows, rate)
            log.info(
                "%s: %s/%s rows (%d/%d shards), %s rows/s, %s",
                label,
                f"{rows:,}",
                f"{total:,}",
                shards_done,
                len(shards),
                f"{rate:,.0f}",
                left,
            )
        else:
            left = time_left(len(shards) - shards_done, (shards_done - first_shards) / elapsed)
            log.info("%s: %d/%d shards, %s rows/s, %s", label, shards_done, len(shards), f"{rate:,.0f}", left)

    def loop() -> None:
        while not stop.wait(1.0 if on_terminal else interval):
            report()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        report()
        bar.close()


@contextlib.contextmanager
def counting(total: int, label: str, unit: str, interval: float = 10.0) -> Iterator[Callable[[int], None]]:
    """Progress of work the driver does itself, `total` items: the block calls the function it is
    given with each count done; a live bar on a terminal, else a log line every `interval` seconds."""
    on_terminal = sys.stderr.isatty()
    bar = tqdm(total=total, desc=label, unit=unit, disable=not on_terminal)
    started = last = time.monotonic()
    done = 0

    def advance(count: int) -> None:
        nonlocal done, last
        done += count
        bar.update(count)
        now = time.monotonic()
        if not on_terminal and now - last >= interval:
            last, rate = now, done / max(now - started, 1e-9)
            left = time_left(total - done, rate)
            log.info("%s: %s/%s %ss, %s %ss/s, %s", label, f"{done:,}", f"{total:,}", unit, f"{rate:,.0f}", unit, left)

    try:
        yield advance
    finally:
        bar.close()

"""Progress of a shard-by-shard stage, watched from the driver while Beam runs it.

Workers write one tally per finished shard, so the driver reads the new tallies: shards done,
rows per second, time left. On a terminal this is a live bar; otherwise a plain log line every
`interval` seconds.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator

from apache_beam.io.filesystems import FileSystems
from tqdm import tqdm

from imagenot.pipeline.shards import TALLIES_DIR, read_json, tally_name

log = logging.getLogger(__name__)


class _Tallies:
    """The tallies of the finished shards among `shards`, each read once (the folder may also
    hold tallies of shards this run does not process)."""

    def __init__(self, stage_dir: str, shards: list[str], rows_key: str):
        self._pattern = FileSystems.join(stage_dir, TALLIES_DIR, "*.json")
        self._wanted = {tally_name(shard) for shard in shards}
        self._rows_key = rows_key
        self._rows: dict[str, int] = {}

    def refresh(self) -> tuple[int, int]:
        """(shards done, rows in them)."""
        for meta in FileSystems.match([self._pattern])[0].metadata_list:
            if meta.path not in self._rows and FileSystems.split(meta.path)[1] in self._wanted:
                self._rows[meta.path] = read_json(meta.path).get(self._rows_key, 0)
        return len(self._rows), sum(self._rows.values())


@contextlib.contextmanager
def watch_shards(
    stage_dir: str, shards: list[str], label: str, rows_key: str, interval: float = 10.0
) -> Iterator[None]:
    """Report which of `shards` (paths or names) are finished under `stage_dir` while the block runs."""
    total = len(shards)
    tallies = _Tallies(stage_dir, shards, rows_key)
    first_shards, first_rows = tallies.refresh()  # finished by an earlier, interrupted run
    on_terminal = sys.stderr.isatty()
    bar = tqdm(total=total, initial=first_shards, desc=label, unit="shard", disable=not on_terminal)
    started, stop = time.monotonic(), threading.Event()

    def report() -> None:
        shards, rows = tallies.refresh()
        elapsed = time.monotonic() - started
        rate = (rows - first_rows) / max(elapsed, 1e-9)
        bar.update(shards - bar.n)
        bar.set_postfix_str(f"{rate:,.0f} rows/s")
        if not on_terminal:
            left = f"about {(total - shards) * elapsed / (shards - first_shards):.0f} s left" if shards > first_shards else "time left unknown yet"
            log.info("%s: %d/%d shards, %s rows/s, %s", label, shards, total, f"{rate:,.0f}", left)

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

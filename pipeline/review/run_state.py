"""What a review server watches of its run, to notice another command changing it under it.

`blocklist apply`, an audit's `--drop`, `review apply` and the stages rewrite a run's dataset,
its tars and the review plan while a server may be serving them. Each holds the run's lock while
it writes (`pipeline/run/lock.py`); once it lets go, what it wrote has other sizes and times.
A server compares these files' metadata (a listing, no reads) with what it read them at.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.layout import LOCK_FILE

log = logging.getLogger(__name__)
CHECK_SECONDS = 1.0  # how often a server looks at its run


def run_is_locked(run_dir: str) -> bool:
    """Another command holds the run's lock: it may be rewriting what the server reads."""
    return FileSystems.exists(FileSystems.join(run_dir, LOCK_FILE))


def files_state(patterns: list[str]) -> tuple:
    """(path, size, modified) of every file the paths or patterns match, sorted: a cheap generation."""
    found = []
    for result in FileSystems.match(patterns):
        found += [(m.path, m.size_in_bytes, m.last_updated_in_seconds) for m in result.metadata_list]
    return tuple(sorted(found))


def watch(owner: object, check: Callable[[object], None], name: str) -> None:
    """Call `check(owner)` every CHECK_SECONDS in a daemon thread while `owner` lives (a weak
    reference: a server's session that is dropped stops its watcher)."""
    ref = weakref.ref(owner)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(CHECK_SECONDS):
            target = ref()
            if target is None:
                return
            try:
                check(target)
            except Exception:  # noqa: BLE001  (a look that failed is tried again a second later)
                log.exception("%s: cannot look at the run", name)
            del target

    threading.Thread(target=loop, name=name, daemon=True).start()

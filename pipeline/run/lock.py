"""One writer per run directory: `imagenot build` and every stage or audit command hold its lock.

Two builds writing one run directory delete each other's stage folders and replace each other's
results, so the second is refused at once, with a message naming the holder. The lock is
`RUN/imagenot.lock`, a JSON record of host, pid, start time and command, created only if absent:

- local: `os.open` with O_CREAT | O_EXCL, the one exclusive create a local filesystem offers
  (Beam's FileSystems has none; this file is the one run path not written through it);
- gs://: an object written with if_generation_match=0, which GCS creates only where no object
  of that name exists, so the lock holds between machines (a Dataflow driver and a laptop).

The holder removes it when done, even on an error. A writer killed outright (kill -9, a lost
machine) leaves it behind. A local lock naming this host whose process is dead (its pid gone, or
taken by another process: the lock records the process's start, from /proc, and a pid reused
since has another) is taken over by the next command, with one warning line naming the dead
holder. Any other lock is stale when it is older than `runner.lock_stale_after_s` (or, in a
bucket, its pid is dead on this host); only an explicit `--break-lock` removes it, never a live one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from imagenot.errors import ImagenotError
from imagenot.pipeline.run.layout import LOCK_FILE

log = logging.getLogger(__name__)


class RunLockedError(ImagenotError):
    """Another writer holds the run directory (or its lock cannot be taken)."""


@dataclass(frozen=True)
class Holder:
    host: str
    pid: int
    started: float  # unix time
    command: str
    token: str  # tells this holder's lock from a later one at the same path
    process_start: str | None = None  # boot id and start tick of the process (None: not known)

    def describe(self) -> str:
        when = datetime.fromtimestamp(self.started, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"pid {self.pid} on {self.host}, since {when} ({self.command})"

    def is_dead_here(self) -> bool:
        """It names this host, and its process is gone or its pid now belongs to another process."""
        if self.host != socket.gethostname():
            return False
        if not _alive(self.pid):
            return True
        return self.process_start is not None and process_start(self.pid) not in (None, self.process_start)

    def is_stale(self, stale_after_s: float) -> bool:
        """Its process is dead on this host, or it is older than the limit."""
        return time.time() - self.started > stale_after_s or self.is_dead_here()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def process_start(pid: int) -> str | None:
    """`<boot id>:<start tick>` of a process, which no later process with its pid shares (None
    where /proc does not tell, or the process is gone)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # the command name, in parentheses, may hold spaces
    return f"{boot}:{fields[19]}" if len(fields) > 19 else None  # field 22 of proc(5), starttime


class _LocalLock:
    def __init__(self, run_dir: str, create_dir: bool):
        self.run_dir, self.path, self.create_dir = run_dir, os.path.join(run_dir, LOCK_FILE), create_dir

    def create(self, data: bytes) -> bool:
        if os.path.exists(self.run_dir) and not os.path.isdir(self.run_dir):
            raise RunLockedError(f"{self.run_dir}: is a file, not a run directory; give a folder")
        try:
            if self.create_dir:
                os.makedirs(self.run_dir, exist_ok=True)
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        except FileNotFoundError as err:
            raise RunLockedError(f"{self.run_dir}: no such run directory") from err
        except OSError as err:  # a parent that is a file, no permission, a read-only disk
            raise RunLockedError(f"{self.run_dir}: cannot be a run directory: {err}") from err
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return True

    def read(self) -> bytes | None:
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def remove(self, data: bytes) -> None:
        """Remove the lock if it still holds `data` (a lock taken since is left alone)."""
        if self.read() == data:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)


class _BucketLock:
    def __init__(self, run_dir: str):
        from apache_beam.io.filesystems import FileSystems
        from apache_beam.io.gcp.gcsio import parse_gcs_path
        from google.cloud import storage  # only runs in buckets need it

        bucket, name = parse_gcs_path(FileSystems.join(run_dir, LOCK_FILE))
        self.blob = storage.Client().bucket(bucket).blob(name)

    def create(self, data: bytes) -> bool:
        from google.api_core.exceptions import PreconditionFailed

        try:
            self.blob.upload_from_string(data, content_type="application/json", if_generation_match=0)
        except PreconditionFailed:
            return False
        return True

    def read(self) -> bytes | None:
        from google.api_core.exceptions import NotFound

        try:
            return self.blob.download_as_bytes()
        except NotFound:
            return None

    def remove(self, data: bytes) -> None:
        from google.api_core.exceptions import NotFound, PreconditionFailed

        with contextlib.suppress(NotFound, PreconditionFailed):
            self.blob.reload()
            if self.blob.download_as_bytes(if_generation_match=self.blob.generation) == data:
                self.blob.delete(if_generation_match=self.blob.generation)


def _store(run_dir: str, create_dir: bool) -> _LocalLock | _BucketLock:
    return _BucketLock(run_dir) if run_dir.startswith("gs://") else _LocalLock(run_dir, create_dir)


def _holder(data: bytes | None) -> Holder | None:
    """The holder a lock file names; None for one that cannot be read (half written, foreign)."""
    try:
        return Holder(**json.loads(data))
    except (TypeError, ValueError):
        return None


@contextlib.contextmanager
def run_lock(run_dir: str, stale_after_s: float, break_lock: bool = False, create_dir: bool = True) -> Iterator[None]:
    """Hold the run directory's lock for the block; refuse at once if another writer holds it.
    `create_dir`: make a missing run directory (build, tag), else a missing one is an error."""
    store = _store(run_dir, create_dir)
    command = " ".join(["imagenot", *sys.argv[1:]])[:300]
    mine = Holder(socket.gethostname(), os.getpid(), time.time(), command, uuid.uuid4().hex, process_start(os.getpid()))
    data = json.dumps(asdict(mine), sort_keys=True).encode("utf-8")
    if not store.create(data):
        held = store.read()
        holder = _holder(held)
        stale = holder is None or holder.is_stale(stale_after_s)
        who = holder.describe() if holder else "an unreadable lock"
        where = f"{run_dir}/{LOCK_FILE}"
        if not stale:
            raise RunLockedError(
                f"{run_dir}: another writer holds this run directory: {who}; wait for it to finish ({where})"
            )
        if isinstance(store, _LocalLock) and holder is not None and holder.is_dead_here():
            log.warning("%s: taking over the lock of a dead writer, %s", run_dir, who)
        elif not break_lock:
            raise RunLockedError(
                f"{run_dir}: a stale lock is left from {who}, which is gone or older than runner.lock_stale_after_s; "
                f"if no build writes here, pass --break-lock ({where})"
            )
        if held is not None:
            store.remove(held)
        if not store.create(data):
            raise RunLockedError(f"{run_dir}: another writer took the lock while the stale one was broken ({where})")
    try:
        yield
    finally:
        store.remove(data)

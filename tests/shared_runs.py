"""Runs that several test modules start from, built once per session and shared by every xdist
worker (conftest.py's session fixtures). Read-only by convention: a test that runs a stage or a
command on one works on `copy_run` of it (or copies the stage folders it needs)."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def _locked(path: Path):
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if the worker dies
        yield


def build_once(folder: Path, make: Callable[[Path], None]) -> Path:
    """`folder`, made by `make(folder)` unless a worker of this session already finished it; a
    worker that asks while another builds waits for it. A build that failed is started over."""
    with _locked(folder.with_name(folder.name + ".lock")):
        done = folder.with_name(folder.name + ".done")
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            done.touch()
    return folder


def copy_run(run_dir: Path, dest: Path) -> Path:
    """A fresh copy of a shared run at `dest` (which must not exist), for a test that changes it;
    file times are kept, so stages see the copy as they would see the original."""
    shutil.copytree(run_dir, dest)
    return dest

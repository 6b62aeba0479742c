"""Model folders prepared once into the local cache (IMAGENOT_CACHE): whole or absent.

A model is built in a staging folder beside its place and renamed into it with its provenance
last, so a folder with `PROVENANCE.json` is complete; two processes preparing the same model at
once both finish, and the first rename wins.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

PROVENANCE_FILE = "PROVENANCE.json"


def is_prepared(folder: Path) -> bool:
    return (folder / PROVENANCE_FILE).exists()


def announce(what: str, target: Path) -> None:
    """The line a command prints when it prepares a model the set-up has not (once: the next finds it)."""
    print(f"imagenot: preparing {what} once into {target}", file=sys.stderr, flush=True)


def staging_folder(target: Path) -> Path:
    """An empty folder beside `target` to build its model in."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))


def publish(staging: Path, target: Path, provenance: dict) -> None:
    """Record `provenance` in `staging`, then move it to `target` in one rename; when another
    process published first, its folder (the same model) stays."""
    (staging / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1, sort_keys=True), encoding="utf-8")
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)

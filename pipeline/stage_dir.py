"""A stage's folder in the run directory, tied to the inputs and settings it was made from.

Each stage writes `fingerprint.json` when it starts: its own settings and the fingerprint of the
stage it reads from; when all its outputs are written, `figures.json` (its accounting, for the
run's summary) and then `DONE`. Finished work in the folder (shards with tallies) is reused only while that fingerprint is
unchanged; a changed setting upstream or here clears the folder, so stale outputs never mix with
new ones and a late-stage change reruns only the stages from there on.
"""

from __future__ import annotations

import hashlib
import json
import logging

from apache_beam.io.filesystems import FileSystems

from pipeline.atomic import write_json
from pipeline.shards import read_json

FINGERPRINT_FILE = "fingerprint.json"
FIGURES_FILE = "figures.json"
DONE_FILE = "DONE"
log = logging.getLogger(__name__)


def digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


def stage_fingerprint(run_dir: str, stage: str) -> str:
    """The digest a finished stage recorded; its downstream stages depend on it."""
    return read_json(FileSystems.join(run_dir, stage, FINGERPRINT_FILE))["digest"]


def _fingerprint(stage: str, settings: dict, upstream: str | None) -> dict:
    payload = {"stage": stage, "settings": settings, "upstream": upstream}
    return {"digest": digest(payload), **payload}


def _recorded_digest(stage_dir: str) -> str | None:
    path = FileSystems.join(stage_dir, FINGERPRINT_FILE)
    return read_json(path)["digest"] if FileSystems.exists(path) else None


def is_current(run_dir: str, stage: str, settings: dict, upstream: str | None) -> bool:
    """Whether the stage finished in `run_dir` from exactly these settings and upstream."""
    stage_dir = FileSystems.join(run_dir, stage)
    recorded = _recorded_digest(stage_dir)
    return recorded == _fingerprint(stage, settings, upstream)["digest"] and is_done(run_dir, stage)


def open_stage(run_dir: str, stage: str, settings: dict, upstream: str | None = None) -> str:
    """The stage's folder, cleared first if it holds work made from other inputs or settings."""
    stage_dir = FileSystems.join(run_dir, stage)
    fingerprint = _fingerprint(stage, settings, upstream)
    path = FileSystems.join(stage_dir, FINGERPRINT_FILE)
    if FileSystems.exists(stage_dir):
        if _recorded_digest(stage_dir) == fingerprint["digest"]:
            done = FileSystems.join(stage_dir, DONE_FILE)
            if FileSystems.exists(done):  # it runs again: done only once it finishes again
                FileSystems.delete([done])
            return stage_dir
        log.info("%s: inputs or settings changed, starting the stage afresh", stage)
        FileSystems.delete([stage_dir])
    write_json(path, fingerprint)
    return stage_dir


def finish_stage(stage_dir: str, figures: dict) -> None:
    """Record the stage's figures, then mark it done."""
    write_json(FileSystems.join(stage_dir, FIGURES_FILE), figures)
    write_json(FileSystems.join(stage_dir, DONE_FILE), {})


def stage_figures(run_dir: str, stage: str) -> dict:
    return read_json(FileSystems.join(run_dir, stage, FIGURES_FILE))


def is_done(run_dir: str, stage: str) -> bool:
    return FileSystems.exists(FileSystems.join(run_dir, stage, DONE_FILE))

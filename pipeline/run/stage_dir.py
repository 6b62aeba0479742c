"""A stage's folder in the run directory, tied to the inputs and settings it was made from.

Each stage writes `fingerprint.json` when it starts: its own settings and the fingerprint of the
stage it reads from; when all its outputs are written, `figures.json` (its accounting, for the
run's summary) and then `DONE`. Finished work in the folder (shards with tallies) is reused only
while that fingerprint is unchanged; a changed setting upstream or here clears the folder, so
stale outputs never mix with new ones and a late-stage change reruns only the stages from there
on.

A fingerprint has two digests. `digest` covers everything the stage's outputs depend on;
downstream stages record it. `base` leaves out revisions: inputs a stage keeps in its own folder
that change its outputs but not its reusable work (the download stage's list of images dropped
by audits: its fetched rounds stay valid). A stage whose base is unchanged keeps its folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from imagenot.pipeline.run.files import read_json, remove_partials, write_json
from imagenot.pipeline.run.filesystems import FileSystems
from imagenot.pipeline.run.layout import DONE_FILE, FIGURES_FILE, FINGERPRINT_FILE
from imagenot.pipeline.run.paths import delete_folder, folder_exists

log = logging.getLogger(__name__)


def digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Fingerprint:
    digest: str  # what the stage's outputs depend on
    base: str  # the same without revisions: what its reusable work depends on


Revision = Callable[[str], object]  # the stage's folder -> a JSON value its outputs depend on


def stage_fingerprint(run_dir: str, stage: str) -> Fingerprint:
    """The fingerprint a stage recorded; its downstream stages depend on it."""
    recorded = read_json(FileSystems.join(run_dir, stage, FINGERPRINT_FILE))
    return Fingerprint(recorded["digest"], recorded["base"])


def _fingerprint(stage: str, settings: dict, upstream: Fingerprint | None, revision: object) -> dict:
    payload = {"stage": stage, "settings": settings, "upstream": upstream.digest if upstream else None}
    base = {**payload, "upstream": upstream.base if upstream else None}
    return {"digest": digest({**payload, "revision": revision}), "base": digest(base), **payload, "revision": revision}


def _recorded(stage_dir: str) -> dict | None:
    path = FileSystems.join(stage_dir, FINGERPRINT_FILE)
    return read_json(path) if FileSystems.exists(path) else None


def _revision(stage_dir: str, revision: Revision | None) -> object:
    return revision(stage_dir) if revision else None


def is_current(
    run_dir: str, stage: str, settings: dict, upstream: Fingerprint | None, revision: Revision | None = None
) -> bool:
    """Whether the stage finished in `run_dir` from exactly these settings, upstream and revision."""
    stage_dir = FileSystems.join(run_dir, stage)
    recorded = _recorded(stage_dir)
    if recorded is None or not is_done(run_dir, stage):
        return False
    return recorded["digest"] == _fingerprint(stage, settings, upstream, _revision(stage_dir, revision))["digest"]


def open_stage(
    run_dir: str, stage: str, settings: dict, upstream: Fingerprint | None = None, revision: Revision | None = None
) -> str:
    """The stage's folder, cleared first if it holds work made from other inputs or settings;
    `revision` is read from the folder once it is known to be kept."""
    stage_dir = FileSystems.join(run_dir, stage)
    recorded = _recorded(stage_dir)
    if recorded is not None and recorded["base"] == _fingerprint(stage, settings, upstream, None)["base"]:
        done = FileSystems.join(stage_dir, DONE_FILE)
        if FileSystems.exists(done):  # it runs again: done only once it finishes again
            FileSystems.delete([done])
        if removed := remove_partials(stage_dir):
            log.info("%s: removed %d half-written files left by an interrupted run", stage, removed)
    elif folder_exists(stage_dir):
        log.info("%s: inputs or settings changed, starting the stage afresh", stage)
        delete_folder(stage_dir)
    record_fingerprint(run_dir, stage, settings, upstream, revision)
    return stage_dir


def record_fingerprint(
    run_dir: str, stage: str, settings: dict, upstream: Fingerprint | None, revision: Revision | None = None
) -> None:
    """Write the stage's fingerprint, its revision as its folder holds it now (unless unchanged)."""
    stage_dir = FileSystems.join(run_dir, stage)
    recorded = _recorded(stage_dir)
    fingerprint = _fingerprint(stage, settings, upstream, _revision(stage_dir, revision))
    if recorded is None or recorded["digest"] != fingerprint["digest"]:
        write_json(FileSystems.join(stage_dir, FINGERPRINT_FILE), fingerprint)


def finish_stage(stage_dir: str, figures: dict) -> None:
    """Record the stage's figures, then mark it done."""
    write_json(FileSystems.join(stage_dir, FIGURES_FILE), figures)
    write_json(FileSystems.join(stage_dir, DONE_FILE), {})


def stage_figures(run_dir: str, stage: str) -> dict:
    return read_json(FileSystems.join(run_dir, stage, FIGURES_FILE))


def made_from(run_dir: str, stage: str, upstream_stage: str) -> bool:
    """Whether `stage` finished from `upstream_stage` as that stage is now."""
    recorded = _recorded(FileSystems.join(run_dir, stage))
    return is_done(run_dir, stage) and recorded["upstream"] == stage_fingerprint(run_dir, upstream_stage).digest


def is_done(run_dir: str, stage: str) -> bool:
    return FileSystems.exists(FileSystems.join(run_dir, stage, DONE_FILE))

"""The check every review command makes before it opens a database or writes a file: the folder is
a run whose stage the command reads has finished, so nothing is written into a folder that is not
a run (a mistyped `--run` gets one line, not a new `review/` folder)."""

from __future__ import annotations

from imagenot.errors import ImagenotError
from imagenot.pipeline.run.stage_dir import is_done


def require_stage(run_dir: str, stage: str, command: str) -> None:
    """Refuse `command` unless `run_dir` holds a finished `stage`; nothing is written either way."""
    if not is_done(run_dir, stage):
        raise ImagenotError(
            f"{run_dir}: not a run with a finished {stage}/ stage, which `imagenot {command}` reads; nothing written"
        )

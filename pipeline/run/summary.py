"""The run's `summary.json`: one section per stage with its accounting and timing."""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import read_json, write_json
from imagenot.pipeline.run.layout import CORPUS, SUMMARY_FILE, TAG


def read_summary(run_dir: str) -> dict:
    path = FileSystems.join(run_dir, SUMMARY_FILE)
    return read_json(path) if FileSystems.exists(path) else {}


def record_stage(run_dir: str, stage: str, figures: dict) -> None:
    """Replace `stage`'s section of the run's summary, keeping the other stages'."""
    summary = read_summary(run_dir)
    summary[stage] = figures
    write_json(FileSystems.join(run_dir, SUMMARY_FILE), summary)


def corpus_rows(run_dir: str, stage: str, figures: dict) -> int | None:
    """The corpus rows behind a stage: a synthetic corpus's rows for the corpus stage, the rows the
    tag stage read for it and every later one; None while the tag stage has not run."""
    if stage == CORPUS:
        return figures.get("rows")
    if stage == TAG:
        return figures.get("rows_read")
    return read_summary(run_dir).get(TAG, {}).get("rows_read")

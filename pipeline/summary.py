"""The run's `summary.json`: one section per stage with its accounting and timing."""

from __future__ import annotations

import json

from apache_beam.io.filesystems import FileSystems

from pipeline.atomic import write_json

SUMMARY_FILE = "summary.json"


def read_summary(run_dir: str) -> dict:
    path = FileSystems.join(run_dir, SUMMARY_FILE)
    if not FileSystems.exists(path):
        return {}
    with FileSystems.open(path) as f:
        return json.load(f)


def record_stage(run_dir: str, stage: str, figures: dict) -> None:
    """Replace `stage`'s section of the run's summary, keeping the other stages'."""
    summary = read_summary(run_dir)
    summary[stage] = figures
    write_json(FileSystems.join(run_dir, SUMMARY_FILE), summary)

"""The run's `summary.json`: one section per stage with its accounting and timing."""

from __future__ import annotations

import time
from collections.abc import Callable

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.run.files import read_json, write_json
from imagenot.pipeline.run.layout import SUMMARY_FILE
from imagenot.pipeline.run.stage_dir import stage_figures


def read_summary(run_dir: str) -> dict:
    path = FileSystems.join(run_dir, SUMMARY_FILE)
    return read_json(path) if FileSystems.exists(path) else {}


def record_stage(run_dir: str, stage: str, figures: dict) -> None:
    """Replace `stage`'s section of the run's summary, keeping the other stages'."""
    summary = read_summary(run_dir)
    summary[stage] = figures
    write_json(FileSystems.join(run_dir, SUMMARY_FILE), summary)


def run_and_record(stage: str, run: Callable[[Config, str], object], config: Config, run_dir: str) -> dict:
    """Run a stage, then record its figures and wall time as its part of the summary."""
    started = time.monotonic()
    run(config, run_dir)
    figures = {**stage_figures(run_dir, stage), "seconds": round(time.monotonic() - started, 1)}
    record_stage(run_dir, stage, figures)
    return figures

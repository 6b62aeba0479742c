"""`imagenot build`: every stage from corpus to class list, in order, resumable.

A stage that finished for the same settings and upstream outputs is skipped; an interrupted
stage picks up its finished shards; a changed setting reruns that stage and everything after it
(see `pipeline.run.stage_dir`). `--from STAGE` reruns from STAGE on regardless: each of those
stages is cleared once per build, so a killed `build --from` run again keeps what it redid (the
run's journal records the clearing, `pipeline.run.journal`).
"""

from __future__ import annotations

import logging

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.frame.config_file import write_run_config
from imagenot.pipeline.frame.registry import run_stage, stage_config, stages
from imagenot.pipeline.frame.stage_order import STAGE_NAMES
from imagenot.pipeline.run import journal
from imagenot.pipeline.run.cpu import cpu_figures
from imagenot.pipeline.run.layout import DOWNLOAD, RANK, SAMPLE, SCORE, TAG
from imagenot.pipeline.run.paths import delete_folder
from imagenot.pipeline.run.stage_dir import is_current, stage_fingerprint
from imagenot.pipeline.run.summary import read_summary, record_stage

log = logging.getLogger(__name__)


def build(config: Config, run_dir: str, from_stage: str | None = None) -> list[str]:
    """Run every wanted stage not already current; returns the names of the stages run."""
    write_run_config(run_dir, config)
    forced = STAGE_NAMES.index(from_stage) if from_stage else len(STAGE_NAMES)
    wanted = [stage for stage in stages() if stage.wanted(config)]
    ran = []
    for stage in wanted:
        upstream_name = stage.upstream_of(config)
        upstream = stage_fingerprint(run_dir, upstream_name) if upstream_name else None
        stage_dir = FileSystems.join(run_dir, stage.name)
        if STAGE_NAMES.index(stage.name) >= forced:  # once: a rerun of a killed build keeps what it redid
            journal.once(f"cleared {stage.name}", lambda stage_dir=stage_dir: delete_folder(stage_dir))
        if is_current(
            run_dir, stage.name, stage.settings(stage_config(config, run_dir, stage.name)), upstream, stage.revision
        ):
            log.info("%s: up to date, skipped", stage.name)
            continue
        log.info("%s: running", stage.name)
        run_stage(stage, config, run_dir)
        ran.append(stage.name)
    names = {stage.name for stage in wanted}
    record_stage(run_dir, "totals", totals({k: v for k, v in read_summary(run_dir).items() if k in names}))
    return ran


def totals(summary: dict) -> dict:
    """Run-wide figures of the stages in `summary`: the encoder's work (`captions_embedded`)
    against the images it bought, and the time and CPU of the stages (a skipped stage's as it
    last ran)."""
    embedded = sum(summary.get(stage, {}).get("captions_embedded", 0) for stage in (SCORE, RANK))
    images = summary.get(DOWNLOAD, summary.get(SAMPLE, {})).get("images", 0)
    corpus_rows = summary.get(TAG, {}).get("rows_read")
    return {
        "captions_embedded": embedded,
        "images": images,
        "captions_embedded_per_image": round(embedded / images, 3) if images else None,
        "seconds": round(sum(figures.get("seconds", 0) for name, figures in summary.items() if name != "totals"), 1),
        **cpu_figures(sum(figures.get("cpu_seconds", 0) for figures in summary.values()), corpus_rows),
    }

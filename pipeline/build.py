"""`imagenot build`: every stage from corpus to class list, in order, resumable.

A stage that finished for the same settings and upstream outputs is skipped; an interrupted
stage picks up its finished shards; a changed setting reruns that stage and everything after it
(see `pipeline.stage_dir`). `--from STAGE` reruns from STAGE on regardless.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import yaml
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline import stage_order
from imagenot.pipeline.atomic import write_text
from imagenot.pipeline.config import RUN_CONFIG, Config
from imagenot.pipeline.corpus import stage as corpus_stage
from imagenot.pipeline.download import drops
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.export import stage as export_stage
from imagenot.pipeline.layout import DOWNLOAD, RANK, SAMPLE, SCORE
from imagenot.pipeline.paths import delete_folder
from imagenot.pipeline.rank import stage as rank_stage
from imagenot.pipeline.report import stage as report_stage
from imagenot.pipeline.sample import stage as sample_stage
from imagenot.pipeline.score import stage as score_stage
from imagenot.pipeline.select import stage as select_stage
from imagenot.pipeline.stage_dir import Revision, is_current, stage_fingerprint
from imagenot.pipeline.summary import read_summary, record_stage, run_and_record
from imagenot.pipeline.tag import stage as tag_stage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stage:
    name: str
    upstream: str | Callable[[Config], str] | None  # the stage it reads, or a function of the config
    settings: Callable[[Config], dict]
    run: Callable[[Config, str], object]
    wanted: Callable[[Config], bool] = lambda config: True
    revision: Revision | None = None


STAGES = (
    Stage(corpus_stage.STAGE, None, corpus_stage.settings, corpus_stage.run_corpus, lambda c: c.corpus.synth is not None),
    Stage(tag_stage.STAGE, None, tag_stage.settings, tag_stage.run_tag),
    Stage(select_stage.STAGE, tag_stage.STAGE, select_stage.settings, select_stage.run_select),
    Stage(score_stage.STAGE, select_stage.STAGE, score_stage.settings, score_stage.run_score),
    Stage(rank_stage.STAGE, score_stage.STAGE, rank_stage.settings, rank_stage.run_rank),
    Stage(sample_stage.STAGE, rank_stage.STAGE, sample_stage.settings, sample_stage.run_sample),
    Stage(
        download_stage.STAGE,
        sample_stage.STAGE,
        download_stage.settings,
        download_stage.run_download,
        lambda c: c.download.enabled,
        drops.revision,
    ),
    Stage(report_stage.STAGE, report_stage.upstream, report_stage.settings, report_stage.run_report),
    Stage(
        export_stage.STAGE,
        export_stage.UPSTREAM,
        export_stage.settings,
        export_stage.run_export,
        lambda c: c.download.enabled,
    ),
)
STAGE_NAMES = tuple(stage.name for stage in STAGES)
assert STAGE_NAMES == stage_order.STAGE_NAMES, "pipeline/stage_order.py lists the stages for the command line"


def for_run(config: Config, run_dir: str) -> Config:
    """The config as the stages see it: a synthetic corpus is read from the run directory."""
    if config.corpus.synth is None:
        return config
    corpus = config.corpus.model_copy(update={"paths": [corpus_stage.corpus_glob(run_dir)]})
    return config.model_copy(update={"corpus": corpus})


def build(config: Config, run_dir: str, from_stage: str | None = None) -> list[str]:
    """Run every wanted stage not already current; returns the names of the stages run."""
    write_text(FileSystems.join(run_dir, RUN_CONFIG), yaml.safe_dump(config.model_dump(), sort_keys=False))
    forced = STAGE_NAMES.index(from_stage) if from_stage else len(STAGE_NAMES)
    ran = []
    for position, stage in enumerate(STAGES):
        if not stage.wanted(config):
            continue
        stage_config = for_run(config, run_dir) if stage.name != corpus_stage.STAGE else config
        upstream_name = stage.upstream(config) if callable(stage.upstream) else stage.upstream
        upstream = stage_fingerprint(run_dir, upstream_name) if upstream_name else None
        stage_dir = FileSystems.join(run_dir, stage.name)
        if position >= forced:
            delete_folder(stage_dir)
        elif is_current(run_dir, stage.name, stage.settings(stage_config), upstream, stage.revision):
            log.info("%s: up to date, skipped", stage.name)
            continue
        log.info("%s: running", stage.name)
        run_and_record(stage.name, stage.run, stage_config, run_dir)
        ran.append(stage.name)
    wanted = {stage.name for stage in STAGES if stage.wanted(config)}
    record_stage(run_dir, "totals", totals({k: v for k, v in read_summary(run_dir).items() if k in wanted}))
    return ran


def totals(summary: dict) -> dict:
    """Run-wide figures of the stages in `summary`: the encoder's work (`captions_embedded`)
    against the images it bought."""
    embedded = sum(summary.get(stage, {}).get("captions_embedded", 0) for stage in (SCORE, RANK))
    images = summary.get(DOWNLOAD, summary.get(SAMPLE, {})).get("images", 0)
    return {
        "captions_embedded": embedded,
        "images": images,
        "captions_embedded_per_image": round(embedded / images, 3) if images else None,
        "seconds": round(sum(figures.get("seconds", 0) for name, figures in summary.items() if name != "totals"), 1),
    }

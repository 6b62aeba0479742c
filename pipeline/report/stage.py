"""The report stage: `report/card.md`, `report/report.html` and `report/removed_synsets.tsv` from a finished run.

It reads the run's stage folders (see `pipeline.report.facts`) and the audits' outputs when they
exist. It has no settings of its own: its fingerprint is the configuration it describes, and it
renders afresh every time it runs (a few seconds), so audits run after the build are picked up by
`imagenot report --run DIR`.
"""

from __future__ import annotations

import json

import click
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.atomic import write_text
from imagenot.pipeline.config import Config, load_run_config
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.layout import CARD_FILE, PAGE_FILE, REPORT, dataset_stage, stage_path
from imagenot.pipeline.rank import stage as rank_stage
from imagenot.pipeline.report.card import render_card
from imagenot.pipeline.report.facts import gather
from imagenot.pipeline.report.gallery import class_gallery
from imagenot.pipeline.report.no_classes import describe
from imagenot.pipeline.report.page import render_page
from imagenot.pipeline.report.plots import draw_all
from imagenot.pipeline.report.safety import write_removed
from imagenot.pipeline.run_lock import break_lock_option, run_lock
from imagenot.pipeline.sample import stage as sample_stage
from imagenot.pipeline.score import stage as score_stage
from imagenot.pipeline.select import stage as select_stage
from imagenot.pipeline.shards import read_json
from imagenot.pipeline.stage_command import run_config_option
from imagenot.pipeline.stage_dir import (
    FINGERPRINT_FILE,
    finish_stage,
    is_done,
    open_stage,
    stage_fingerprint,
)
from imagenot.pipeline.summary import run_and_record
from imagenot.wordnet.index import load_index

STAGE = REPORT
CHECKED_STAGES = (select_stage, score_stage, rank_stage, sample_stage)  # settings the card states


def upstream(config: Config) -> str:
    return dataset_stage(config.download.enabled)


def described_config(config: Config) -> Config:
    """The config as the card shows it: a synthetic corpus is its synth settings (the build points
    corpus.paths at the run's own copy, which says nothing to a reader and moves with the run)."""
    if config.corpus.synth is None:
        return config
    return config.model_copy(update={"corpus": config.corpus.model_copy(update={"paths": []})})


def settings(config: Config) -> dict:
    return described_config(config).model_dump(mode="json")


def check_config(config: Config, run_dir: str) -> None:
    """Raise unless each stage the card describes ran with this config's settings."""
    stages = [*CHECKED_STAGES, *([download_stage] if config.download.enabled else [])]
    for stage in stages:
        recorded = read_json(stage_path(run_dir, stage.STAGE, FINGERPRINT_FILE))["settings"]
        expected = json.loads(json.dumps(stage.settings(config)))
        if recorded != expected:
            differing = sorted(k for k in recorded.keys() | expected.keys() if recorded.get(k) != expected.get(k))
            raise ImagenotError(
                f"{run_dir}/{stage.STAGE} ran with other settings than the config gives ({', '.join(differing)}); "
                "pass the config the run was built with"
            )


def run_report(config: Config, run_dir: str) -> dict:
    """Write `<run_dir>/report/card.md` and `report.html`; returns the stage's figures."""
    before = upstream(config)
    if not is_done(run_dir, before):
        raise ImagenotError(f"{run_dir}: no finished {before}/ stage; the report describes a finished run")
    check_config(config, run_dir)
    stage_dir = open_stage(run_dir, STAGE, settings(config), stage_fingerprint(run_dir, before))
    facts = gather(described_config(config), run_dir, load_index())
    write_text(FileSystems.join(stage_dir, CARD_FILE), render_card(facts))
    write_removed(facts.safety, stage_dir)
    gallery = class_gallery(config, run_dir, facts.classes, facts.dataset)
    write_text(FileSystems.join(stage_dir, PAGE_FILE), render_page(facts, draw_all(facts), gallery))
    figures = {"classes": len(facts.classes), "images": facts.images, "audits": sorted(facts.audits)}
    if not facts.classes:
        figures["no_classes"] = describe(facts)
    finish_stage(stage_dir, figures)
    return figures


@click.command(STAGE)
@click.option("--run", "run_dir", required=True, help="run directory holding a finished sample/ (or download/) stage")
@run_config_option
@break_lock_option
def report_command(run_dir: str, config_path: str | None, break_lock: bool) -> None:
    """Write the dataset card and the HTML report of a finished run into RUN/report/."""
    config = load_run_config(run_dir, config_path)
    with run_lock(run_dir, config.runner.lock_stale_after_s, break_lock, create_dir=False):
        figures = run_and_record(STAGE, run_report, config, run_dir)
    click.echo(f"{STAGE}: {json.dumps(figures)} -> {stage_path(run_dir, STAGE, PAGE_FILE)}")

"""The report stage: `report/card.md`, `report/report.html` and `report/removed_synsets.tsv` from a finished run.

It reads the run's stage folders (see `pipeline.report.facts`) and the audits' outputs when they
exist. It has no settings of its own: its fingerprint is the configuration it describes, and it
renders afresh every time it runs (a few seconds), so audits run after the build are picked up by
`imagenot report --run DIR`.
"""

from __future__ import annotations

import json

from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.frame.registry import CommandForm, Stage, settings_differences, stages
from imagenot.pipeline.report.card import render_card
from imagenot.pipeline.report.facts import gather
from imagenot.pipeline.report.gallery import class_gallery
from imagenot.pipeline.report.no_classes import describe
from imagenot.pipeline.report.page import render_page
from imagenot.pipeline.report.safety import write_removed
from imagenot.pipeline.run.files import write_text
from imagenot.pipeline.run.layout import CARD_FILE, PAGE_FILE, REPORT, dataset_stage, stage_path
from imagenot.pipeline.run.stage_dir import is_done
from imagenot.wordnet.index import load_index

STAGE = REPORT


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
    """Raise unless each stage the card describes (every stage before this one that the config
    runs) ran with this config's settings."""
    described = [stage for stage in stages(before=STAGE) if stage.wanted(config)]
    for stage in reversed(described):  # the upstream first
        if not is_done(run_dir, stage.name):
            raise ImagenotError(f"{run_dir}: no finished {stage.name}/ stage; the report describes a finished run")
    for stage in described:
        if differing := settings_differences(stage, config, run_dir):
            raise ImagenotError(
                f"{run_dir}/{stage.name} ran with other settings than the config gives ({', '.join(differing)}); "
                "pass the config the run was built with"
            )


def run_report(config: Config, run_dir: str) -> dict:
    """Write `<run_dir>/report/card.md` and `report.html`; returns the stage's figures."""
    stage_dir = stage_path(run_dir, STAGE)
    facts = gather(described_config(config), run_dir, load_index())
    write_text(FileSystems.join(stage_dir, CARD_FILE), render_card(facts))
    write_removed(facts.safety, stage_dir)
    gallery = class_gallery(config, run_dir, facts.classes, facts.dataset)
    from imagenot.pipeline.report.plots import draw_all  # matplotlib: loaded when a report is drawn, not checked

    write_text(FileSystems.join(stage_dir, PAGE_FILE), render_page(facts, draw_all(facts), gallery))
    figures = {"classes": len(facts.classes), "images": facts.images, "audits": sorted(facts.audits)}
    if not facts.classes:
        figures["no_classes"] = describe(facts)
    return figures


def said(figures: dict, run_dir: str) -> str:
    """The line `imagenot report` ends with."""
    return f"{STAGE}: {json.dumps(figures)} -> {stage_path(run_dir, STAGE, PAGE_FILE)}"


DECLARATION = Stage(
    STAGE,
    upstream,
    settings,
    run_report,
    prepare=check_config,  # a config other than the one the run was built with is refused: a check of the run
    command=CommandForm(describes_run=True, result=said),
)

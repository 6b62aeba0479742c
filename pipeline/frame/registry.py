"""The stages, each declared once: what it is called, the stage it reads, the settings it records,
how it runs and what its command takes. `imagenot build`, each stage's command, `--from`, resume
and the report's config check all read these declarations.

A stage module declares itself as `DECLARATION = Stage(...)`; the order is `stage_order.STAGE_NAMES`
and a stage's module is `imagenot.pipeline.<name>.stage`. Declarations are loaded on demand, so a
command imports only the stages it needs, and no stage module imports a later one
(tests/test_layering.py checks both from here).

The registry owns a stage's life cycle, as an executor would: `run_stage` opens the stage's
folder (cleared when its settings or upstream changed), runs the stage, finishes the folder with
the figures the run gives, and records them in the run's summary.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.demo.serving import serving_demo_images
from imagenot.pipeline.frame.stage_order import STAGE_NAMES
from imagenot.pipeline.run.cpu import cpu_figures, cpu_seconds
from imagenot.pipeline.run.files import read_json
from imagenot.pipeline.run.journal import checkpoint
from imagenot.pipeline.run.layout import CORPUS, CORPUS_PARTS, DOWNLOAD, FINGERPRINT_FILE, read_vetoes, stage_path
from imagenot.pipeline.run.stage_dir import (
    Revision,
    finish_stage,
    open_stage,
    record_fingerprint,
    stage_figures,
    stage_fingerprint,
)
from imagenot.pipeline.run.summary import corpus_rows, record_stage

Check = Callable[[Config, str], None]  # (config, run dir): raises an ImagenotError naming what to fix


def _always(config: Config) -> bool:
    return True


def download_enabled(config: Config) -> bool:
    """Whether the config fetches images: the download stage and the export run only then."""
    return config.download.enabled


@dataclass(frozen=True)
class CommandForm:
    """How a stage's command runs apart from `imagenot STAGE --run DIR [--config FILE] [--break-lock]`
    (what it shows before it runs is its `stage_order.CommandFace`)."""

    describes_run: bool = False  # the report: it takes the run's config as built, never rewrites it, and its
    # run checks every stage against it
    result: Callable[[dict, str], str] | None = None  # (figures, run dir) -> its last line (None: the figures)


@dataclass(frozen=True)
class Stage:
    name: str
    upstream: str | Callable[[Config], str] | None  # the stage it reads, or a function of the config
    settings: Callable[[Config], dict] | None  # what it records in its fingerprint (None: an audit's own)
    run: Callable[..., object]  # run(config, run_dir, **prepared, **options): its figures, or `figures`' input
    # (its command's help and options are its face's: `stage_order.FACES`; an audit's: `audit.faces.FACES`)
    wanted: Callable[[Config], bool] = _always  # whether `build` runs it for this config
    revision: Revision | None = None  # see pipeline.run.stage_dir
    unwanted: str | None = None  # why its command refuses a config that does not run it (None: it runs anyway)
    preflight: tuple[Check, ...] = ()  # what `pipeline.frame.preflight` checks before any command writes
    closing: tuple[Callable[[Config, str], str | None], ...] = ()  # warnings its command ends with (None: none)
    prepare: Callable[[Config, str], dict | None] | None = None  # checks before its folder is opened (nothing
    # is written when they fail); what they work out (a dict) is passed on to `run` by name
    figures: Callable[[object], dict] | None = None  # what `run` returned -> the figures (None: it returned them)
    command: CommandForm = field(default_factory=CommandForm)

    def upstream_of(self, config: Config) -> str | None:
        return self.upstream(config) if callable(self.upstream) else self.upstream


def module_of(name: str) -> str:
    return f"imagenot.pipeline.{name}.stage"


def declared(name: str) -> Stage:
    """The declaration of stage `name` (its module is imported now)."""
    if name not in STAGE_NAMES:
        raise KeyError(f"no stage {name!r}; the stages are {', '.join(STAGE_NAMES)}")
    return importlib.import_module(module_of(name)).DECLARATION


def stages(before: str | None = None) -> list[Stage]:
    """Every stage in build order, or those before stage `before`."""
    names = STAGE_NAMES[: STAGE_NAMES.index(before)] if before else STAGE_NAMES
    return [declared(name) for name in names]


def stage_config(config: Config, run_dir: str, stage: str) -> Config:
    """The config as a stage sees it: the run's vetoed classes (`RUN/vetoed_classes.txt`) join
    `ranking.vetoed`, whatever config built it; after the corpus stage, a synthetic corpus is
    read from the run directory."""
    if vetoed := read_vetoes(run_dir):
        ranking = config.ranking.model_copy(update={"vetoed": sorted({*config.ranking.vetoed, *vetoed})})
        config = config.model_copy(update={"ranking": ranking})
    if config.corpus.synth is None or stage == CORPUS:
        return config
    corpus = config.corpus.model_copy(update={"paths": [stage_path(run_dir, CORPUS, CORPUS_PARTS)]})
    return config.model_copy(update={"corpus": corpus})


def settings_differences(stage: Stage, config: Config, run_dir: str) -> list[str]:
    """The settings keys in which what `stage` recorded in `run_dir` differs from what `config`
    gives it (the stage must have run there)."""
    recorded = read_json(stage_path(run_dir, stage.name, FINGERPRINT_FILE))["settings"]
    expected = json.loads(json.dumps(stage.settings(stage_config(config, run_dir, stage.name))))
    return sorted(k for k in recorded.keys() | expected.keys() if recorded.get(k) != expected.get(k))


def run_in_folder(stage: Stage, config: Config, run_dir: str, **options: object) -> object:
    """Run a build stage in its folder: opened (cleared first when its settings or upstream changed),
    then finished with its figures once the run returns; what the run returned. `config` is the
    stage's own (`stage_config`)."""
    prepared = (stage.prepare(config, run_dir) if stage.prepare else None) or {}
    upstream = stage.upstream_of(config)
    fingerprint = stage_fingerprint(run_dir, upstream) if upstream else None
    settings = stage.settings(config)
    stage_dir = open_stage(run_dir, stage.name, settings, fingerprint, stage.revision)
    result = stage.run(config, run_dir, **prepared, **options)
    checkpoint(f"{stage.name} ran")
    if stage.revision:  # the run may change it (download: the drops carried over from an earlier download)
        record_fingerprint(run_dir, stage.name, settings, fingerprint, stage.revision)
    finish_stage(stage_dir, stage.figures(result) if stage.figures else result)
    return result


def run_stage(stage: Stage, config: Config, run_dir: str, **options: object) -> dict:
    """Run one stage over `run_dir` (the command ran its preflight checks: `pipeline.frame.preflight`)
    and record its figures, with the time and CPU taken (`pipeline.run.cpu`), as its part of the
    run's summary. An audit (no settings of its own to declare) opens and finishes its own folder:
    its `--drop` goes on after. The demo config's images are served while the download stage fetches them."""
    config = stage_config(config, run_dir, stage.name)
    serving = serving_demo_images(config.download, run_dir) if stage.name == DOWNLOAD else contextlib.nullcontext()
    started, cpu_started = time.monotonic(), cpu_seconds()
    with serving:
        if stage.settings is None:
            stage.run(config, run_dir, **options)
        else:
            run_in_folder(stage, config, run_dir, **options)
    figures = {**stage_figures(run_dir, stage.name), "seconds": round(time.monotonic() - started, 1)}
    figures.update(cpu_figures(cpu_seconds() - cpu_started, corpus_rows(run_dir, stage.name, figures)))
    record_stage(run_dir, stage.name, figures)
    return figures

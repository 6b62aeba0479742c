"""The stages, each declared once: what it is called, the stage it reads, the settings it records,
how it runs and what its command takes. `imagenot build`, each stage's command, `--from`, resume
and the report's config check all read these declarations.

A stage module declares itself as `DECLARATION = Stage(...)`; the order is `stage_order.STAGE_NAMES`
and a stage's module is `imagenot.pipeline.<name>.stage`. Declarations are loaded on demand, so a
command imports only the stages it needs, and no stage module imports a later one
(tests/test_layering.py checks both from here).
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.demo.serving import serving_demo_images
from imagenot.pipeline.run.files import read_json
from imagenot.pipeline.run.layout import CORPUS, CORPUS_PARTS, DOWNLOAD, FINGERPRINT_FILE, read_vetoes, stage_path
from imagenot.pipeline.run.stage_dir import Revision
from imagenot.pipeline.run.summary import run_and_record
from imagenot.pipeline.stage_order import STAGE_NAMES

Check = Callable[[Config, str], None]  # (config, run dir): raises an ImagenotError naming what to fix


def _always(config: Config) -> bool:
    return True


def download_enabled(config: Config) -> bool:
    """Whether the config fetches images: the download stage and the export run only then."""
    return config.download.enabled


@dataclass(frozen=True)
class Stage:
    name: str
    upstream: str | Callable[[Config], str] | None  # the stage it reads, or a function of the config
    settings: Callable[[Config], dict] | None  # what it records in its fingerprint (None: an audit's own)
    run: Callable[..., object]  # run(config, run_dir, **options)
    doc: str  # its command's help
    options: tuple[Callable[[Callable], Callable], ...] = ()  # click options passed on to `run` by name
    wanted: Callable[[Config], bool] = _always  # whether `build` runs it for this config
    revision: Revision | None = None  # see pipeline.run.stage_dir
    unwanted: str | None = None  # why its command refuses a config that does not run it (None: it runs anyway)
    preflight: tuple[Check, ...] = ()  # what `pipeline.config.preflight` checks before any command writes
    closing: tuple[Callable[[Config, str], str | None], ...] = ()  # warnings its command ends with (None: none)

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


def run_stage(stage: Stage, config: Config, run_dir: str, **options: object) -> dict:
    """Run one stage over `run_dir` (the command ran its preflight checks: `pipeline.config.preflight`),
    and record its figures in the run's summary. The demo config's images are served while the
    download stage fetches them."""
    config = stage_config(config, run_dir, stage.name)
    serving = serving_demo_images(config.download) if stage.name == DOWNLOAD else contextlib.nullcontext()
    with serving:
        return run_and_record(stage.name, lambda c, r: stage.run(c, r, **options), config, run_dir)

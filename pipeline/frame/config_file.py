"""RUN/config.yaml for the commands that run one stage, so that a run built stage by stage is as
reproducible as one built by `imagenot build`: the first command on a run writes it (from
`--config`, or the defaults), later commands without `--config` use it, and a `--config` that
changes the settings of a stage that already ran before this one is refused, naming the keys
and the stage to rerun from. One that changes only this stage's or later stages' settings
replaces RUN/config.yaml, and the stage reruns, as under `build`."""

from __future__ import annotations

import click
import yaml
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config, load_config
from imagenot.pipeline.frame.registry import Stage, settings_differences, stages
from imagenot.pipeline.frame.stage_order import STAGE_NAMES
from imagenot.pipeline.run.files import write_text
from imagenot.pipeline.run.layout import RUN_CONFIG
from imagenot.pipeline.run.stage_dir import is_done


def write_run_config(run_dir: str, config: Config) -> None:
    write_text(FileSystems.join(run_dir, RUN_CONFIG), yaml.safe_dump(config.model_dump(), sort_keys=False))


def settled_config(
    run_dir: str, config_path: str | None, stage: Stage, corpus_paths: list[str] | None = None
) -> tuple[Config, str | None]:
    """The config a command running `stage` over `run_dir` runs with, and, when RUN/config.yaml is
    to be written with it (by `record_run_config`, once the preflight passed), the line that says so.
    `corpus_paths` replaces corpus.paths (`imagenot tag --input`); a `--config` naming no corpus
    keeps the run's. Nothing is written here."""
    own = FileSystems.join(run_dir, RUN_CONFIG)
    written = load_config(own) if FileSystems.exists(own) else None
    if config_path is None and written is not None and not corpus_paths:
        return written, None
    config = load_config(config_path or (own if written is not None else None), corpus_paths, bool(corpus_paths))
    if written is not None and not config.corpus.paths and config.corpus.synth is None:
        config = load_config(config_path, written.corpus.paths)  # a --config without a corpus: the run's
    if config == written:
        return config, None
    given = config_path or "--input"
    for earlier in stages(before=stage.name) if stage.name in STAGE_NAMES else stages():  # an audit: after all
        if earlier.settings is not None and earlier.wanted(config) and is_done(run_dir, earlier.name):
            if keys := settings_differences(earlier, config, run_dir):
                raise ImagenotError(
                    f"{given} changes settings the {earlier.name} stage already ran with in {run_dir} "
                    f"({', '.join(keys)}); rerun from {earlier.name}: "
                    f"imagenot build --config CONFIG --out {run_dir} --from {earlier.name}"
                )
    origin = config_path or ("the defaults (no --config given)" if written is None else f"{own} and --input")
    return config, f"{own}: {'written' if written is None else 'updated'} from {origin}"


def record_run_config(run_dir: str, config: Config, note: str | None) -> None:
    """RUN/config.yaml written, if `settled_config` said so (once the checks passed, under the lock)."""
    if note is not None:
        write_run_config(run_dir, config)
        click.echo(note, err=True)

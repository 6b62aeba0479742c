"""The command that runs one declared stage over a run directory: `imagenot <stage> --run DIR`."""

from __future__ import annotations

import json

import click

from imagenot.errors import ImagenotError
from imagenot.pipeline.commands.lock_option import break_lock_option
from imagenot.pipeline.config.preflight import preflight, stages_from
from imagenot.pipeline.config.schema import load_run_config
from imagenot.pipeline.registry import Stage, run_stage
from imagenot.pipeline.run.config_file import record_run_config, settled_config
from imagenot.pipeline.run.layout import RUN_CONFIG
from imagenot.pipeline.run.lock import run_lock
from imagenot.pipeline.run.stage_dir import is_done

run_config_option = click.option(
    "--config",
    "config_path",
    help=f"YAML run configuration (local or gs://) [default: RUN/{RUN_CONFIG}, written by the run's first command]",
)


def stage_command(stage: Stage) -> click.Command:
    """A click command that runs `stage` over `--run DIR` after its upstream finished there and
    records the stage's figures (plus the time taken) as its part of summary.json. The stage's
    `options` (click option decorators) are passed on to its run function by name."""

    @click.command(stage.name, help=stage.doc)
    @click.option("--run", "run_dir", required=True, help="run directory holding the stage's finished upstream stage")
    @run_config_option
    @break_lock_option
    def command(run_dir: str, config_path: str | None, break_lock: bool, **values: object) -> None:
        if stage.unwanted and not stage.wanted(load_run_config(run_dir, config_path)):
            raise ImagenotError(stage.unwanted)  # the first thing to say, before what the run's stages recorded
        config, note = settled_config(run_dir, config_path, stage)
        preflight(config, run_dir, stages_from(config, stage))  # before the lock: nothing left if refused
        with run_lock(run_dir, config.runner.lock_stale_after_s, break_lock, create_dir=False):
            upstream = stage.upstream_of(config)
            if upstream and not is_done(run_dir, upstream):
                raise ImagenotError(f"{run_dir}: no finished {upstream}/ stage; run `imagenot {upstream}` first")
            record_run_config(run_dir, config, note)
            figures = run_stage(stage, config, run_dir, **values)
        click.echo(f"{stage.name}: {json.dumps(figures, indent=2)}")
        for warning in filter(None, (closing(config, run_dir) for closing in stage.closing)):
            click.echo(f"Warning: {warning}", err=True)

    for option in stage.options:
        command = option(command)
    return command

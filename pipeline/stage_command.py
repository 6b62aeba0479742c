"""The command that runs one stage over a run directory: `imagenot <stage> --run DIR`."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

import click

from imagenot.errors import ImagenotError
from imagenot.pipeline.config import RUN_CONFIG, load_run_config
from imagenot.pipeline.corpus.preflight import check_corpus_schema
from imagenot.pipeline.run_lock import break_lock_option, run_lock
from imagenot.pipeline.stage_dir import is_done
from imagenot.pipeline.summary import run_and_record

run_config_option = click.option(
    "--config",
    "config_path",
    help=f"YAML run configuration (local or gs://) [default: RUN/{RUN_CONFIG}, written by imagenot build]",
)


def stage_command(
    stage: str,
    upstream: str,
    run: Callable[..., object],
    doc: str,
    options: tuple[Callable[[Callable], Callable], ...] = (),
) -> click.Command:
    """A click command that runs `run(config, run_dir, **options)` after `upstream` finished
    there and records the stage's figures (plus the time taken) as its part of summary.json.
    `options`: click option decorators whose values are passed on to `run` by name."""

    @click.command(stage, help=doc)
    @click.option("--run", "run_dir", required=True, help=f"run directory holding a finished {upstream}/ stage")
    @run_config_option
    @break_lock_option
    def command(run_dir: str, config_path: str | None, break_lock: bool, **values: object) -> None:
        config = load_run_config(run_dir, config_path)
        check_corpus_schema(config, missing_ok=True)  # before the lock: a refused command leaves nothing
        with run_lock(run_dir, config.runner.lock_stale_after_s, break_lock, create_dir=False):
            if not is_done(run_dir, upstream):
                raise ImagenotError(f"{run_dir}: no finished {upstream}/ stage; run `imagenot {upstream}` first")
            figures = run_and_record(stage, functools.partial(run, **values), config, run_dir)
        click.echo(f"{stage}: {json.dumps(figures, indent=2)}")

    for option in options:
        command = option(command)
    return command

"""The command that runs one declared stage over a run directory, `imagenot <stage> --run DIR`,
built from the stage's face (`stage_order.CommandFace`; an audit's: `audit.faces`) without importing
the stage, which loads only when the command runs, so that `--help` loads no Beam; and the options
it shares with the other commands that write a run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from imagenot.errors import ImagenotError
from imagenot.pipeline.frame.lock_option import absolute_paths, break_lock_option, run_config_option
from imagenot.pipeline.frame.stage_order import FACES, CommandFace

if TYPE_CHECKING:
    from imagenot.pipeline.frame.registry import Stage

# The first stage's: the run starts here, so there is no run's config to fall back on.
first_config_option = click.option("--config", "config_path", callback=absolute_paths, help="YAML run configuration")
input_option = click.option(
    "--input",
    "inputs",
    multiple=True,
    callback=absolute_paths,
    help="corpus file paths, globs or URLs (repeatable); default: the config's corpus.paths",
)


def _run_options(name: str, face: CommandFace) -> tuple:
    """The run folder's options, in the order `--help` lists them."""
    if face.starts_run:
        out_help = f"run directory: writes its {name}/ folder and summary.json"
        return (
            input_option,
            click.option("--out", "run_dir", required=True, callback=absolute_paths, help=out_help),
            first_config_option,
        )
    return click.option(
        "--run", "run_dir", required=True, callback=absolute_paths, help=face.run_help
    ), run_config_option


def _require_done(run_dir: str, upstream: str | None) -> None:
    """Refused, a folder that is not a run (or lacks the stage read) is left as it was."""
    from imagenot.pipeline.run.layout import AUDIT_EMBEDDINGS
    from imagenot.pipeline.run.stage_dir import is_done

    if upstream and not is_done(run_dir, upstream):
        command = "audit embed" if upstream == AUDIT_EMBEDDINGS else upstream
        raise ImagenotError(f"{run_dir}: no finished {upstream}/ stage; run `imagenot {command}` first")


def _journal_entry(
    stage: Stage, starts_run: bool, run_dir: str, config_path: str | None, inputs: tuple, values: dict
) -> tuple[str, dict, tuple[str, ...]]:
    """The command, its options as typed and the commands whose unfinished entry it finishes, for
    the run's journal: a build stage finishes a killed run of itself with other options (its folder's
    fingerprint tells what to redo); an audit, whose `--drop` rewrites the dataset, only with the same."""
    typed = click.get_current_context().info_name  # `embed` for the audit/embeddings stage
    command = typed if stage.settings is not None else f"audit {typed.removeprefix('audit/')}"
    args = {"--out" if starts_run else "--run": run_dir, "--config": config_path}
    args |= {"--input": list(inputs) or None} | {f"--{name.replace('_', '-')}": v for name, v in values.items()}
    return command, args, () if stage.settings is None else (command,)


def declared_stage_command(name: str) -> click.Command:
    """The command of build stage `name`, whose module is imported when the command runs."""

    def declaration() -> Stage:
        from imagenot.pipeline.frame.registry import declared

        return declared(name)

    return face_command(name, FACES[name], declaration)


def face_command(name: str, face: CommandFace, declaration: Callable[[], Stage]) -> click.Command:
    """A click command, as `face` shows it, that runs the stage `declaration()` gives (called when
    the command runs) over its run directory after its upstream finished there and records the
    stage's figures (plus the time taken) as its part of summary.json. The face's `options` (click
    option decorators) are passed on to the stage's run function by name."""

    def command(run_dir: str, config_path: str | None, break_lock: bool, inputs: tuple = (), **values: object):
        from imagenot.pipeline.config.schema import load_run_config
        from imagenot.pipeline.frame.config_file import record_run_config, settled_config
        from imagenot.pipeline.frame.preflight import preflight, stages_from
        from imagenot.pipeline.frame.registry import run_stage
        from imagenot.pipeline.run.journal import intent, refuse_unfinished
        from imagenot.pipeline.run.lock import run_lock

        stage = declaration()
        form = stage.command
        if form.describes_run:
            config, note = load_run_config(run_dir, config_path), None
        else:
            if stage.unwanted and not stage.wanted(load_run_config(run_dir, config_path)):
                raise ImagenotError(stage.unwanted)  # the first thing to say, before what the run's stages recorded
            config, note = settled_config(run_dir, config_path, stage, list(inputs) or None)
        preflight(config, run_dir, stages_from(config, stage))  # before the lock: nothing left if refused
        with run_lock(run_dir, config.runner.lock_stale_after_s, break_lock, create_dir=face.starts_run):
            entry = _journal_entry(stage, face.starts_run, run_dir, config_path, inputs, values)
            refuse_unfinished(run_dir, *entry)  # first: a half-rewritten run may lack its upstream
            _require_done(run_dir, None if form.describes_run else stage.upstream_of(config))
            with intent(run_dir, *entry):  # before the first write (pipeline.run.journal)
                record_run_config(run_dir, config, note)
                figures = run_stage(stage, config, run_dir, **values)
        click.echo(form.result(figures, run_dir) if form.result else f"{stage.name}: {json.dumps(figures, indent=2)}")
        for warning in filter(None, (closing(config, run_dir) for closing in stage.closing)):
            click.echo(f"Warning: {warning}", err=True)

    for option in reversed((*_run_options(name, face), break_lock_option)):
        command = option(command)
    command = click.command(name, help=face.doc)(command)
    for option in face.options:
        command = option(command)
    return command

"""`--break-lock`, taken by every command that writes a run, `--config` of a command on a run, and
`absolute_paths`, the callback of every option that names a run or a file a run records; apart from
`run/lock.py` and `stage_command.py` (which read the run folder's names, and so load Beam) so that
a command's `--help` loads no Beam."""

from __future__ import annotations

import click


def absolute_paths(ctx: click.Context, param: click.Parameter, value: str | tuple[str, ...] | None):
    """An option's path (or paths) as it names the same place from any working folder: a run and
    what it records (a config, a list, a corpus) never depend on where its command was typed."""
    from imagenot.pipeline.run.paths import absolute  # loads Beam: when the command runs, not for --help

    if value is None:
        return None
    return tuple(absolute(path) for path in value) if isinstance(value, tuple) else absolute(value)


break_lock_option = click.option(
    "--break-lock",
    is_flag=True,
    help="remove a stale lock left by a killed writer on another host or in a bucket (older than "
    "runner.lock_stale_after_s); a dead writer's lock on this host is taken over without it",
)
run_config_option = click.option(
    "--config",
    "config_path",
    callback=absolute_paths,
    help="YAML run configuration (local or gs://) [default: the run's own config.yaml, written by its first command]",
)

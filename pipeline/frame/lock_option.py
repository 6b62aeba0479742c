"""`--break-lock`, taken by every command that writes a run, and `--config` of a command on a run;
apart from `run/lock.py` and `stage_command.py` (which read the run folder's names, and so load
Beam) so that a command's `--help` loads no Beam."""

from __future__ import annotations

import click

break_lock_option = click.option(
    "--break-lock",
    is_flag=True,
    help="remove a stale lock left by a killed writer on another host or in a bucket (older than "
    "runner.lock_stale_after_s); a dead writer's lock on this host is taken over without it",
)
run_config_option = click.option(
    "--config",
    "config_path",
    help="YAML run configuration (local or gs://) [default: the run's own config.yaml, written by its first command]",
)

"""`--break-lock`, taken by every command that writes a run; apart from `run/lock.py` (which reads
the run folder's names, and so loads Beam) so that a command's `--help` loads no Beam."""

from __future__ import annotations

import click

break_lock_option = click.option(
    "--break-lock",
    is_flag=True,
    help="remove a stale lock left by a killed writer on another host or in a bucket (older than "
    "runner.lock_stale_after_s); a dead writer's lock on this host is taken over without it",
)

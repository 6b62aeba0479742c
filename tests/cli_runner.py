"""Commands run as a user runs them: through `imagenot`'s top-level group, whose error handling
turns an imagenot error into one line and exit status 1."""

import click
from click.testing import CliRunner, Result

from imagenot.pipeline.cli import main


def _path(group: click.Group, command: click.Command) -> list[str] | None:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if sub is command:
            return [name]
        if isinstance(sub, click.Group) and (inner := _path(sub, command)) is not None:
            return [name, *inner]
    return None


def invoke(command: click.Command, args: list[str], **kwargs) -> Result:
    path = _path(main, command)
    assert path is not None, f"{command.name} is not a command of imagenot"
    return CliRunner().invoke(main, [*path, *args], **kwargs)


def cli_command(name: str) -> click.Command:
    """The command `imagenot NAME` runs (a stage's is built from its declaration)."""
    return main.get_command(click.Context(main), name)


def killed_at(point: str, args: list[str], cwd=None) -> None:
    """Run `imagenot ARGS` (in the folder `cwd`, by default this process's) in a process group of
    its own that kills itself with SIGKILL at the named point of its work
    (`pipeline.run.journal.checkpoint`), as `kill -9` would; fail if it finished or failed before
    it got there."""
    import os
    import signal
    import subprocess
    import sys

    from imagenot.pipeline.run.journal import KILL_AT

    command = [sys.executable, "-m", "imagenot.pipeline.cli", *args]
    env = {**os.environ, KILL_AT: point}
    done = subprocess.run(
        command, env=env, cwd=cwd, start_new_session=True, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == -signal.SIGKILL, f"not killed at {point!r} ({done.returncode}):\n{done.stderr[-3000:]}"

"""How fast the command line answers: `imagenot --help`, `imagenot build --help` and
`imagenot --version` against `python -c pass` (the floor) and against importing every command's
module (what the command line did before commands loaded on use: Beam, torch, open_clip); and how
fast a build that preflight refuses ends (`scoring.model` naming a model that is not installed):
the config check imports the stages' declarations, but not img2dataset, torch or matplotlib.
`--every` also times each command's and sub-command's `--help` (the click tree walked; issue 43:
each under MAX_EVERY_HELP_S). `--run RUN` also times `review status` and `review classes status` on
a finished run with a review (issue 50: each under MAX_STATUS_S), beside Beam's import alone, which
they paid before and no longer do.

Each is a fresh interpreter; runs alternate, best of `--repeats` (wall and CPU seconds apart), so
load from other processes hurts all alike. The last line is JSON.

    python benchmarks/bench_cli_start.py [--repeats 5] [--every] [--run RUN]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from imagenot.pipeline.cli import AUDITS, COMMANDS

MAX_HELP_RATIO = 15  # against python -c pass; tests/test_cli.py asserts the same bar
MAX_EVERY_HELP_S = 0.5  # any command's --help, wall seconds on an idle machine (issue 43)
MAX_REFUSED_S = 5.0  # a refused build, wall seconds (issue 28: preflight under 5 s)
MAX_STATUS_S = 2.0  # review status, review classes status: wall seconds (issue 50)
BEAM_IMPORT = "Beam imported (the status commands before)"
MISSING_MODEL = "/nonexistent/imagenot-bench/model"
REFUSED_CONFIG = f"""corpus:
  synth: {{rows: 1000, seed: 1, shard_rows: 1000}}
scoring:
  model: {MISSING_MODEL}
ranking:
  thresholds: {{"{MISSING_MODEL}": 0.3}}
"""

CASES = {
    "python -c pass": "pass",
    "imagenot --help": "from imagenot.pipeline.cli import main; main(['--help'])",
    "imagenot build --help": "from imagenot.pipeline.cli import main; main(['build', '--help'])",
    "imagenot --version": "from imagenot.pipeline.cli import main; main(['--version'])",
    "every command imported": (
        f"import importlib; [importlib.import_module(m) for m, _, _ in {[*COMMANDS.values(), *AUDITS.values()]}]"
    ),
}


def _refused_build(folder: Path) -> str:
    config = folder / "missing-model.yaml"
    config.write_text(REFUSED_CONFIG)
    args = ["build", "--config", str(config), "--out", str(folder / "run")]
    return f"from imagenot.pipeline.cli import main; main({args!r})"


def _seconds(code: str) -> tuple[float, float]:
    """Wall seconds, and CPU seconds (user + system: what load from other processes changes least)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _status(run_dir: str) -> dict[str, str]:
    """The two status commands on `run_dir`, and Beam's import alone as their old floor."""
    commands = (["review", "status"], ["review", "classes", "status"])
    return {
        BEAM_IMPORT: "import apache_beam.io.filesystems",
        **{
            f"imagenot {' '.join(c)}": f"from imagenot.pipeline.cli import main; main({[*c, '--run', run_dir]!r})"
            for c in commands
        },
    }


def _every_help() -> dict[str, str]:
    """Each command's and sub-command's `--help`, by its path: the click tree walked."""
    from imagenot.pipeline.cli import main as cli

    def walk(group: click.Group, path: list[str], ctx: click.Context):
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            yield [*path, name]
            if isinstance(command, click.Group):
                yield from walk(command, [*path, name], click.Context(command, parent=ctx, info_name=name))

    return {
        f"imagenot {' '.join(path)} --help": f"from imagenot.pipeline.cli import main; main({[*path, '--help']!r})"
        for path in walk(cli, [], click.Context(cli, info_name="imagenot"))
    }


@click.command()
@click.option("--repeats", default=5, show_default=True)
@click.option("--every", is_flag=True, help="also time every command's and sub-command's --help")
@click.option("--run", "run_dir", help="also time the review status commands on this run (with a review plan)")
def main(repeats: int, every: bool, run_dir: str | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cases = {
            **CASES,
            "imagenot build, refused": _refused_build(Path(folder)),
            **(_every_help() if every else {}),
            **(_status(run_dir) if run_dir else {}),
        }
        refused = subprocess.run(
            [sys.executable, "-c", cases["imagenot build, refused"]], capture_output=True, text=True
        )
        if MISSING_MODEL not in refused.stderr or (Path(folder) / "run").exists():
            raise SystemExit(f"the build was not refused before its first stage: {refused.stderr[-2000:]}")
        best, cpu = dict.fromkeys(cases, float("inf")), dict.fromkeys(cases, float("inf"))
        for _ in range(repeats):
            for name, code in cases.items():
                wall, used = _seconds(code)
                best[name], cpu[name] = min(best[name], wall), min(cpu[name], used)
    floor = best["python -c pass"]
    for name, seconds in best.items():
        print(f"{name:42s} {seconds:7.3f} s  {seconds / floor:7.1f}x python  {cpu[name]:7.3f} s CPU")
    ratios = {name: round(seconds / floor, 1) for name, seconds in best.items()}
    passed = max(ratios["imagenot --help"], ratios["imagenot build --help"]) < MAX_HELP_RATIO
    passed = passed and best["imagenot build, refused"] < MAX_REFUSED_S
    helps = {name: seconds for name, seconds in best.items() if name.endswith(" --help") and every}
    slowest = max(helps, key=helps.get) if helps else None
    passed = passed and (slowest is None or helps[slowest] < MAX_EVERY_HELP_S)
    statuses = {name: seconds for name, seconds in best.items() if name.endswith(" status")}
    passed = passed and all(seconds < MAX_STATUS_S for seconds in statuses.values())
    print(
        json.dumps(
            {
                "seconds": {k: round(v, 3) for k, v in best.items()},
                "cpu_seconds": {k: round(v, 3) for k, v in cpu.items()},
                "ratio_to_python": ratios,
                "slowest_help": slowest and {slowest: round(helps[slowest], 3), "cpu_s": round(cpu[slowest], 3)},
                "status_against_beam_import": {
                    name: round(cpu[name] / cpu[BEAM_IMPORT], 2) for name in statuses
                },  # CPU seconds: the ratio load disturbs least
                "passed": passed,
            }
        )
    )


if __name__ == "__main__":
    main()

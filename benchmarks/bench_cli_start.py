"""How fast the command line answers: `imagenot --help`, `imagenot build --help` and
`imagenot --version` against `python -c pass` (the floor) and against importing every command's
module (what the command line did before commands loaded on use: Beam, torch, open_clip); and how
fast a build that preflight refuses ends (`scoring.model` naming a model that is not installed):
the config check imports the stages' declarations, but not img2dataset, torch or matplotlib.

Each is a fresh interpreter; runs alternate, best of `--repeats` (wall and CPU seconds apart), so
load from other processes hurts all alike. The last line is JSON.

    python benchmarks/bench_cli_start.py [--repeats 5]
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
MAX_REFUSED_S = 5.0  # a refused build, wall seconds (issue 28: preflight under 5 s)
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


@click.command()
@click.option("--repeats", default=5, show_default=True)
def main(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cases = {**CASES, "imagenot build, refused": _refused_build(Path(folder))}
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
        print(f"{name:26s} {seconds:7.3f} s  {seconds / floor:7.1f}x python  {cpu[name]:7.3f} s CPU")
    ratios = {name: round(seconds / floor, 1) for name, seconds in best.items()}
    passed = max(ratios["imagenot --help"], ratios["imagenot build --help"]) < MAX_HELP_RATIO
    passed = passed and best["imagenot build, refused"] < MAX_REFUSED_S
    print(
        json.dumps(
            {
                "seconds": {k: round(v, 3) for k, v in best.items()},
                "cpu_seconds": {k: round(v, 3) for k, v in cpu.items()},
                "ratio_to_python": ratios,
                "passed": passed,
            }
        )
    )


if __name__ == "__main__":
    main()

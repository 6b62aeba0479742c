"""How fast the command line answers: `imagenot --help`, `imagenot build --help` and
`imagenot --version` against `python -c pass` (the floor) and against importing every command's
module (what the command line did before commands loaded on use: Beam, torch, open_clip).

Each is a fresh interpreter; runs alternate, best of `--repeats`, so load from other processes
hurts all alike. The last line is JSON.

    python benchmarks/bench_cli_start.py [--repeats 5]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import click

from imagenot.pipeline.cli import AUDITS, COMMANDS

MAX_HELP_RATIO = 15  # against python -c pass; tests/test_cli.py asserts the same bar

CASES = {
    "python -c pass": "pass",
    "imagenot --help": "from imagenot.pipeline.cli import main; main(['--help'])",
    "imagenot build --help": "from imagenot.pipeline.cli import main; main(['build', '--help'])",
    "imagenot --version": "from imagenot.pipeline.cli import main; main(['--version'])",
    "every command imported": (
        f"import importlib; [importlib.import_module(m) for m, _, _ in {[*COMMANDS.values(), *AUDITS.values()]}]"
    ),
}


def _seconds(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    return time.perf_counter() - started


@click.command()
@click.option("--repeats", default=5, show_default=True)
def main(repeats: int) -> None:
    best = dict.fromkeys(CASES, float("inf"))
    for _ in range(repeats):
        for name, code in CASES.items():
            best[name] = min(best[name], _seconds(code))
    floor = best["python -c pass"]
    for name, seconds in best.items():
        print(f"{name:24s} {seconds:7.3f} s  {seconds / floor:7.1f}x python")
    ratios = {name: round(seconds / floor, 1) for name, seconds in best.items()}
    passed = max(ratios["imagenot --help"], ratios["imagenot build --help"]) < MAX_HELP_RATIO
    print(
        json.dumps({"seconds": {k: round(v, 3) for k, v in best.items()}, "ratio_to_python": ratios, "passed": passed})
    )


if __name__ == "__main__":
    main()

"""`make demo` and `make test` as a new user meets them: a fresh clone, an empty home folder and
an empty pip cache (issue 52's targets: `make demo` at most 5 minutes from a fresh clone, `make
test` at most 5 minutes after set-up, on a 2-core machine).

    python benchmarks/bench_fresh_clone.py [--test] [--repo PATH] [--keep] [--dry-run]

Clones the repository's HEAD (committed work only) into a temporary folder and runs there, with
HOME, PIP_CACHE_DIR and XDG_CACHE_HOME pointing at new empty folders (so pip downloads every
wheel from the registry again, and WordNet, the noun index and any model are prepared anew):
`make .venv/.setup-demo` (the demo's set-up), then `make demo` (the build alone, set-up being
done); with --test also `make setup` (what the tests add) and `make test`. It prints each step's
line and seconds, the machine's load average before and after each step (the machine is shared:
a figure measured under load says so), and as its last line a JSON object of the figures.
Debian's packages are whatever the machine has (installing them is not timed: the script does not
remove any); the set-up step's own lines say what it installed. --dry-run (the smoke run of
tests/test_benchmark_scripts.py) runs each step as `make -n` (the commands printed, none run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEP_LINE = re.compile(r"^  (?P<step>.+?)\s+done \((?P<seconds>\d+) s\)$")


def _clean_env(home: Path) -> dict[str, str]:
    """The caller's environment with a new home, pip cache and cache folder, and no imagenot or
    NLTK data folder carried over."""
    env = {k: v for k, v in os.environ.items() if k not in ("IMAGENOT_CACHE", "NLTK_DATA", "VIRTUAL_ENV")}
    env.update(HOME=str(home), PIP_CACHE_DIR=str(home / "pip-cache"), XDG_CACHE_HOME=str(home / ".cache"))
    return env


def _timed(name: str, command: list[str], cwd: Path, env: dict[str, str], log: Path) -> dict:
    """Run `command`, its output to `log` and to the terminal; its wall seconds, set-up step lines
    and the load average before and after."""
    before = os.getloadavg()[0]
    start = time.monotonic()
    lines = []
    with (
        log.open("a") as out,
        subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as process,
    ):
        for line in process.stdout:
            out.write(line)
            lines.append(line.rstrip("\n"))
            if STEP_LINE.match(lines[-1]) or line.startswith(("set-up", "=", "FAILED")):
                print(f"  {name}: {lines[-1].strip()}", flush=True)
    seconds = round(time.monotonic() - start, 1)
    if process.returncode:
        sys.exit(f"{name} failed (exit {process.returncode}); the end of {log}:\n" + "\n".join(lines[-30:]))
    steps = {m["step"]: int(m["seconds"]) for line in lines if (m := STEP_LINE.match(line))}
    figures = {"seconds": seconds, "load_before": round(before, 2), "load_after": round(os.getloadavg()[0], 2)}
    if steps:
        figures["steps"] = steps
    summary = next((line for line in reversed(lines) if re.search(r"\d+ passed", line)), None)
    if summary:
        figures["tests"] = summary.strip("= ")
    print(f"{name}: {seconds} s (load {figures['load_before']} -> {figures['load_after']})", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository to clone (its HEAD)")
    parser.add_argument("--test", action="store_true", help="also `make setup` and `make test` in the clone")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    parser.add_argument("--dry-run", action="store_true", help="`make -n` for each step: print, run nothing")
    args = parser.parse_args()
    make = ["make", "-n"] if args.dry_run else ["make"]

    work = Path(tempfile.mkdtemp(prefix="imagenot-fresh-"))
    clone, home = work / "imagenot", work / "home"
    home.mkdir()
    log = work / "bench.log"
    print(f"fresh clone in {clone}, HOME={home}, log {log}", flush=True)
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(args.repo), str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True)
    env = _clean_env(home)
    figures = {
        "commit": commit.stdout.strip(),
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "setup_demo": _timed("set-up (demo)", [*make, ".venv/.setup-demo"], clone, env, log),
        "build_demo": _timed("make demo's build", [*make, "demo"], clone, env, log),
    }
    figures["make_demo_seconds"] = round(figures["setup_demo"]["seconds"] + figures["build_demo"]["seconds"], 1)
    if not args.dry_run:
        freeze = subprocess.run(
            [".venv/bin/python", "-m", "pip", "list", "--format=freeze"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
        )
        packages = freeze.stdout.split()
        figures["demo_packages"] = len(packages)
        figures["demo_google_packages"] = sorted(p.split("==")[0] for p in packages if p.startswith("google"))
    if args.test:
        figures["setup_test"] = _timed("set-up (test)", [*make, "setup"], clone, env, log)
        figures["make_test"] = _timed("make test", [*make, "test"], clone, env, log)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()

"""What a fresh worker process pays before its first batch (each Beam worker, each command):

- a tag worker: WordNet's noun index and the tagger, built with the garbage collector paused
  (`imagenot.bulk.without_gc`) against the same code with the collector left running (the
  benchmark's process makes `gc.disable` a no-op);
- a scoring worker on a warm embedding cache (a rerun's): the text model loaded at its first cache
  miss (`runtimes.lazy_encoder`, so never here) against loaded at setup, as before.

Each case is a fresh interpreter, runs alternate, best of `--repeats` by CPU seconds (user +
system of the child), which load from other processes disturbs least. The last line is JSON.

    python benchmarks/bench_worker_start.py [--repeats 3] [--case NAME ...]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time

import click

COLLECTOR_RUNS = "import gc; gc.disable = lambda: None\n"
TAG_WORKER = (
    "from imagenot.pipeline.config.schema import Config\n"
    "from imagenot.pipeline.tag.stage import build_matcher\n"
    "from imagenot.wordnet.index import load_index\n"
    "build_matcher(load_index(), Config().tagging.ignore_forms)\n"
)
CLASSES = ["n02084071", "n03126707", "n02000954", "n07697537"]  # dog, crane (machine, bird), hotdog
SCORING_WORKER = (
    "import sys\n"
    "from imagenot.pipeline.config.schema import Config, Scoring\n"
    "from imagenot.pipeline.score.stage import CaptionScorer\n"
    "config = Config(scoring=Scoring(cache_dir=sys.argv[1]))\n"
    f"scorer = CaptionScorer(config.scoring, config.runner, {CLASSES!r})\n"
    "assert scorer.encoder.embedded == 0 or sys.argv[2] == 'fill'\n"
)
LOAD_AT_SETUP = "scorer.encoder.encoder.loaded\n"  # what every worker did before


def _run(code: str, *args: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh interpreter running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


CASES = (
    "tag worker, collector paused",
    "tag worker, collector running",
    "scoring worker on a warm cache, model on first miss",
    "scoring worker on a warm cache, model at setup",
)


@click.command()
@click.option("--repeats", default=3, show_default=True)
@click.option("--case", "chosen", multiple=True, type=click.Choice(CASES), help="only these cases [every one]")
def main(repeats: int, chosen: tuple[str, ...]) -> None:
    with tempfile.TemporaryDirectory() as cache:
        codes = {
            CASES[0]: (TAG_WORKER,),
            CASES[1]: (COLLECTOR_RUNS + TAG_WORKER,),
            CASES[2]: (SCORING_WORKER, cache, "check"),
            CASES[3]: (SCORING_WORKER + LOAD_AT_SETUP, cache, "check"),
        }
        cases = {name: codes[name] for name in chosen or CASES}
        if any(name.startswith("scoring") for name in cases):
            _run(SCORING_WORKER, cache, "fill")  # the class queries and sense queries, cached once
        best = {name: (float("inf"), float("inf")) for name in cases}
        for _ in range(repeats):
            for name, (code, *args) in cases.items():
                wall, cpu = _run(code, *args)
                best[name] = min(best[name], (cpu, wall))
    for name, (cpu, wall) in best.items():
        print(f"{name:55s} CPU {cpu:6.2f} s   wall {wall:6.2f} s")
    print(json.dumps({name: {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3)} for name, (cpu, wall) in best.items()}))


if __name__ == "__main__":
    main()

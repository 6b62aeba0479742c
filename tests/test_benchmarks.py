"""Every benchmark that builds runs: a smoke run at a tiny size, as a user runs the script, reading the
JSON object its last line prints (a change that breaks a script fails here, not months later in a
table of benchmarks/README.md). Their stages run through the frame (`registry.run_stage`), as the
command line runs them; `--in-process` keeps them in the script's process (one WordNet and model
load: seconds), the fresh process per stage being the same call in a child."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.benchmarks  # `make test-benchmarks`: CI runs them beside `make test`

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _last_json(script: str, *args: str, timeout: int = 300) -> dict:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=BENCHMARKS.parent,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def build_bench(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("bench-build")
    # 5 images a class (the default 100 leaves 4,000 rows no class, and bench_plan nothing to plan)
    return _last_json(
        "bench_build.py", "--rows", "4000", "--images-per-class", "5", "--in-process", "--tmp", str(folder)
    )


def test_bench_build_gives_each_stages_cpu_per_row_and_peak_memory(build_bench):
    assert set(build_bench) == {"sizes", "scale", "ratios", "fits", "projection", "workers"}
    [size] = build_bench["sizes"]
    assert size["rows"] == 4000 and set(size["stages"]) == {"tag", "select", "score", "rank", "sample"}
    scale = build_bench["scale"]["sizes"]["4000"]
    assert set(scale) == {
        "cpu_us_per_row",
        "peak_rss_mb",
        "tag_select_us_per_row",
        "captions_embedded_per_image",
        "sense_us_per_scored_caption",
    }
    assert all(scale["cpu_us_per_row"][stage] > 0 and scale["peak_rss_mb"][stage] > 0 for stage in size["stages"])
    assert size["stages"]["tag"]["figures"]["rows"] == 4000  # run_stage's figures, as summary.json records them


def test_bench_plan_compares_the_plan_with_saved_runs(build_bench, tmp_path):
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps(build_bench["sizes"]))
    compared = _last_json("bench_plan.py", "--measured", str(saved), "--rate", "candidates=10")
    assert compared["rows"] == 4000 and "tag_cpu_s" in compared["figures"]


def test_bench_scoring_runs_both_rank_paths(tmp_path):
    summary = _last_json("bench_scoring.py", "--rows", "4000", "--in-process", "--tmp", str(tmp_path))
    assert summary["rows"] == [4000] and summary["bounded_mode"] == "static"
    assert {"exact_captions_embedded_per_image", "bounded_captions_embedded_per_image", "rank_cpu_seconds"} <= set(
        summary
    )

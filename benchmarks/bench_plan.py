"""`imagenot plan` against the build it plans: plan / measured / ratio for each figure, per size.

For each corpus size, bench_build's measured build (`bench_size`: the same synthetic corpora,
settings and one-process-per-stage measurement as "Build scale" in benchmarks/README.md), with
rank and sample run again with `scoring.first_phase: static` on a copy of the run; then
`make_plan` on the same config. What only a build can know is taken from the run: the
candidates select kept and the classes rank chose. The plan is for the run's local workers, billed
at 1 vCPU a process, so a stage's `process_seconds` is its CPU seconds here, workers included.

Printed: one JSON line per size and first-phase mode, each figure as [plan, measured,
plan/measured], and the largest miss. `--save FILE` keeps the measured runs (JSON), and
`--measured FILE...` compares the plan with saved runs instead of building again (seconds, not
half an hour); `--rate NAME=VALUE` overrides a `Rates` field.

    python benchmarks/bench_plan.py --rows 100000 300000 1000000 [--save runs.json]
    python benchmarks/bench_plan.py --measured runs.json

`--against CONFIG RUN ...` compares `imagenot plan --sample` (its default sample) with finished
builds instead (each RUN built from CONFIG with `imagenot build`): candidates, classes, captions
scored and embedded as [plan low, mid, high, built, mid / built], score's and rank's captions and
embedded captions as [plan mid, built], the eligible candidates the plan took for broad words,
whether the plan warns that it cannot fill `ranking.classes` and whether the build fell short, and
the plan's seconds. A build's captions embedded count only with a fresh embedding cache.

    python benchmarks/bench_plan.py --against configs/demo.yaml runs/demo
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from dataclasses import asdict, fields, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build import SHARD_ROWS, bench_config, bench_size, load_text, measured_rates  # noqa: E402

from imagenot.pipeline.config.schema import Config, load_config  # noqa: E402
from imagenot.pipeline.plan.estimate import SAMPLE_ROWS, Rates, corpus_units, make_plan  # noqa: E402
from imagenot.pipeline.plan.projection import plan_from_sample  # noqa: E402

MODES = ("off", "static")
ONE_PROCESS = {"vcpus_per_worker": 1, "processes_per_worker": 1}  # process_seconds = CPU seconds here


def compare(result: dict, mode: str, rates: Rates) -> dict:
    """[plan, measured, plan / measured] for each figure that both give, for one size and mode."""
    rows = result["rows"]
    measured = {**result["stages"], **result["first_phase"].get(mode, {})}
    figures = {stage: m["figures"] for stage, m in measured.items()}
    n = result.get("images_per_class", 20)  # runs saved before bench_build recorded N ran N = 20
    workers = result.get("workers", 1)
    settings = bench_config(rows, Path("corpus"), Path("cache"), workers, mode, n)
    settings["ranking"]["classes"] = figures["rank"]["classes"]  # known only after rank
    config = Config.model_validate(settings)
    rates = replace(rates, candidates=figures["select"]["candidates"], **ONE_PROCESS)  # known only after select
    plan = make_plan(config, rows, math.ceil(rows / SHARD_ROWS), rates, workers)["stages"]
    pairs = {
        "tag_rows": (plan["tag"]["work"]["rows"], figures["tag"]["rows_read"]),
        "score_captions": (plan["score"]["work"]["captions_scored"], figures["score"]["rows_scored"]),
        "score_embedded": (plan["score"]["work"]["captions_to_embed"], figures["score"]["captions_embedded"]),
        "rank_captions": (plan["rank"]["work"]["captions_scored"], figures["rank"]["rows_scored"]),
        "rank_embedded": (plan["rank"]["work"]["captions_to_embed"], figures["rank"]["captions_embedded"]),
    }
    if mode != "off":
        class_captions = figures["rank"]["rows_scored"] + figures["rank"]["rows_beyond_first_phase"]
        pairs["first_phase_captions"] = (plan["rank"]["work"]["first_phase_captions"], class_captions)
    for stage in ("tag", "select", "score", "rank", "sample"):
        pairs[f"{stage}_cpu_s"] = (plan[stage]["process_seconds"], measured[stage]["cpu_seconds"])
    ratios = {name: [p, m, round(p / m, 3) if m else None] for name, (p, m) in pairs.items()}
    worst = max(ratios, key=lambda name: abs(math.log(ratios[name][2] or 1e-9)))
    return {"rows": rows, "first_phase": mode, "figures": ratios, "worst": [worst, ratios[worst][2]]}


def against_build(config_path: str, run: str, rates: Rates) -> dict:
    """The sampled plan of `config_path` beside the finished build in `run`."""
    config = load_config(config_path)
    rows, shards, _ = corpus_units(config)
    started = time.perf_counter()
    plan = plan_from_sample(config, rows, shards, rates, config.runner.workers, SAMPLE_ROWS, 0)
    seconds = time.perf_counter() - started
    summary = json.loads(Path(run, "summary.json").read_text(encoding="utf-8"))
    built = {
        "candidates": summary["select"]["candidates"],
        "classes": summary["rank"]["classes"],
        "captions_scored": summary["score"]["rows_scored"] + summary["rank"]["rows_scored"],
        "captions_embedded": summary["score"]["captions_embedded"] + summary["rank"]["captions_embedded"],
    }
    figures = {
        key: [
            plan[key]["low"],
            plan[key]["mid"],
            plan[key]["high"],
            value,
            round(plan[key]["mid"] / value, 3) if value else None,
        ]
        for key, value in built.items()
    }
    stages = plan["stages"]
    per_stage = {  # the mid plan beside the build, stage by stage
        f"{stage}_{key}": [stages[stage]["work"][work], summary[stage][measured]]
        for stage in ("score", "rank")
        for key, work, measured in (
            ("captions", "captions_scored", "rows_scored"),
            ("embedded", "captions_to_embed", "captions_embedded"),
        )
    }
    warns = any(w.startswith("cannot fill") for w in plan["warnings"])
    short = built["classes"] < config.ranking.classes
    return {
        "config": config_path,
        "rows": rows,
        "sample": plan["sample"]["rows"],
        "figures": figures,
        "per_stage": per_stage,
        "broad": plan["sample"]["broad"],
        "warns_cannot_fill": warns,
        "build_short": short,
        "agree": warns == short,
        "plan_seconds": round(seconds, 1),
    }


def parse_rates(overrides: list[str]) -> Rates:
    types = {f.name: f.type for f in fields(Rates)}
    values = {}
    for item in overrides:
        name, _, value = item.partition("=")
        if name not in types:
            raise SystemExit(f"--rate {item}: no Rates field {name!r} (one of {', '.join(types)})")
        values[name] = (int if types[name] == "int" else float)(value)
    return Rates(**values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=1, help="local Beam worker processes per stage")
    parser.add_argument("--save", help="write the measured runs here (JSON)")
    parser.add_argument(
        "--measured", nargs="+", help="compare with these saved runs (--save files) instead of building"
    )
    parser.add_argument("--rate", action="append", default=[], metavar="NAME=VALUE", help="override a Rates field")
    parser.add_argument("--tmp", help="where the temporary folder for corpora and runs goes (removed at the end)")
    parser.add_argument(
        "--against", nargs="+", metavar="CONFIG RUN", help="compare the sampled plan with finished builds"
    )
    args = parser.parse_args()
    if args.against:
        for config_path, run in zip(args.against[::2], args.against[1::2]):
            print(json.dumps(against_build(config_path, run, parse_rates(args.rate))), flush=True)
        return
    if args.measured:
        results = sorted(
            (r for path in args.measured for r in json.loads(Path(path).read_text(encoding="utf-8"))),
            key=lambda r: r["rows"],
        )
    else:
        print(f"start: {load_text()}; {os.cpu_count()} cores", flush=True)
        with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
            results = [bench_size(rows, args.workers, Path(tmp), MODES[1:]) for rows in sorted(args.rows)]
        print(f"end: {load_text()}", flush=True)
        if args.save:
            Path(args.save).write_text(json.dumps(results), encoding="utf-8")
    if len(results) > 1:
        print(f"rates measured by these runs: {json.dumps(asdict(measured_rates(results)))}")
    rates = parse_rates(args.rate)
    for result in results:
        for mode in MODES:
            print(json.dumps(compare(result, mode, rates)))


if __name__ == "__main__":
    main()

"""The rank stage with and without its first phase: encoder work, time, memory and what changes.

For each size, a synthetic corpus (`pipeline.corpus.synth`, seed 0) is written outside every
timing, then tag, select and score run once. The run is copied, with its embedding cache, and
rank and sample run on each copy: once with `scoring.first_phase: off` (the encoder scores every
caption of the K classes) and once with the bounded path (`--bounded`): `static` (a static model
ranks them, the encoder scores each class's best `exact_per_class`) or `priority` (strategy
threshold: the encoder scores each class's captions in the sample's order until its list is
settled). Each stage runs in a fresh process (bench_build.py's `measure_stage`), so its peak RSS
is its own.

Settings: `selection.min_captions` 100 per 100,000 rows (a similar number of candidates at each
size), `sampling.images_per_class` 5 and a reserve of 2, so each class has many times more
captions than it needs; `exact_per_class` its default, 2 x (N + reserve) = 14.

Printed per size: the encoder's captions in rank (cache misses; the score stage's first-pass
captions are cached already), final images, the first phase's and the exact phase's seconds,
peak RSS of rank and sample, `topn_overlap` (the share of the exact run's dataset rows that the
bounded run also chose, over all classes) and whether the class lists are identical. The last
line is one JSON object.

    python benchmarks/bench_scoring.py --rows 300000 1000000
    python benchmarks/bench_scoring.py --rows 300000 1000000 --bounded priority --strategy threshold --threshold 0.5
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build import IN_PROCESS, load_text, measure_stage  # noqa: E402

SHARD_ROWS = 100_000
COMMON_STAGES = ("tag", "select", "score")
PHASE_STAGES = ("rank", "sample")
EXACT = "off"


def bench_config(rows: int, corpus_dir: Path, cache_dir: Path, mode: str, workers: int, sampling: dict) -> dict:
    return {
        "corpus": {"paths": [str(corpus_dir / "part-*.parquet")]},
        "selection": {"min_captions": max(1, rows // 1000)},
        "scoring": {"first_pass_captions": 50, "cache_dir": str(cache_dir), "first_phase": mode},
        "ranking": {"classes": 100, "top_n": 10},
        "sampling": {"images_per_class": 5, "test_per_class": 1, "reserve_factor": 0.3, **sampling},
        "runner": {"workers": workers},
    }


def chosen_rows(run_dir: Path) -> dict[str, set[str]]:
    """wnid -> row ids of the dataset's images (reserve excluded)."""
    table = pq.read_table(run_dir / "sample" / "dataset", columns=["wnid", "row_id"])
    chosen: dict[str, set[str]] = {}
    for wnid, row_id in zip(table.column("wnid").to_pylist(), table.column("row_id").to_pylist()):
        chosen.setdefault(wnid, set()).add(row_id)
    return chosen


def bench_size(rows: int, workers: int, root: Path, bounded: str, sampling: dict) -> dict:
    from imagenot.pipeline.corpus.synth import synth_corpus

    corpus_dir = root / f"corpus-{rows}"
    started = time.perf_counter()
    synth_corpus(corpus_dir, rows=rows, seed=0, shard_rows=SHARD_ROWS)
    print(f"{rows:,} rows: corpus written in {time.perf_counter() - started:.1f} s (not timed)", flush=True)
    modes = (EXACT, bounded)
    runs = {mode: root / f"run-{rows}-{mode}" for mode in modes}
    caches = {mode: root / f"embeddings-{rows}-{mode}" for mode in modes}
    configs = {}
    for mode in modes:
        runs[mode].mkdir(parents=True)
        configs[mode] = runs[mode] / "bench_config.yaml"
        configs[mode].write_text(yaml.safe_dump(bench_config(rows, corpus_dir, caches[mode], mode, workers, sampling)))
    stages = {}
    for stage in COMMON_STAGES:
        stages[stage] = measure_stage(stage, configs["off"], runs["off"])
        print(f"  {stage:7s} {stages[stage]['seconds']:8.1f} s  {load_text()}", flush=True)
    for stage in COMMON_STAGES:
        shutil.copytree(runs[EXACT] / stage, runs[bounded] / stage)
    shutil.copytree(caches[EXACT], caches[bounded])
    by_mode = {}
    for mode in modes:
        by_mode[mode] = {stage: measure_stage(stage, configs[mode], runs[mode]) for stage in PHASE_STAGES}
        rank = by_mode[mode]["rank"]
        print(
            f"  {mode:6s} rank {rank['seconds']:6.1f} s ({rank['peak_rss_mb']:.0f} MB, "
            f"{rank['figures']['captions_embedded']:,} embedded), sample {by_mode[mode]['sample']['seconds']:.1f} s "
            f"({by_mode[mode]['sample']['peak_rss_mb']:.0f} MB)  {load_text()}",
            flush=True,
        )
    exact, chosen = chosen_rows(runs[EXACT]), chosen_rows(runs[bounded])
    shared = sum(len(rows_ & chosen.get(wnid, set())) for wnid, rows_ in exact.items())
    same_classes = (runs[EXACT] / "rank" / "class_list.tsv").read_bytes() == (
        runs[bounded] / "rank" / "class_list.tsv"
    ).read_bytes()
    return {
        "rows": rows,
        "bounded": bounded,
        "common": stages,
        "modes": by_mode,
        "topn_overlap": round(shared / max(1, sum(len(r) for r in exact.values())), 4),
        "class_list_identical": same_classes,
    }


def summary(results: list[dict]) -> dict:
    bounded = results[0]["bounded"]
    modes = (EXACT, bounded)

    def embedded(r, mode):
        return r["modes"][mode]["rank"]["figures"]["captions_embedded"]

    def scored(r, mode):
        return r["modes"][mode]["rank"]["figures"]["rows_scored"]

    def images(r, mode):
        return r["modes"][mode]["sample"]["figures"]["images"]

    def per_mode(stage, key):
        return {m: [r["modes"][m][stage][key] for r in results] for m in modes}

    def per_image(count, r, mode):  # None where the sample chose no image (a corpus too small to rank a class)
        return round(count(r, mode) / images(r, mode), 3) if images(r, mode) else None

    return {
        "rows": [r["rows"] for r in results],
        "bounded_mode": bounded,
        "exact_captions_embedded": [embedded(r, EXACT) for r in results],
        "bounded_captions_embedded": [embedded(r, bounded) for r in results],
        "exact_captions_scored": [scored(r, EXACT) for r in results],
        "bounded_captions_scored": [scored(r, bounded) for r in results],
        "final_images": [images(r, bounded) for r in results],
        "exact_final_images": [images(r, EXACT) for r in results],
        "exact_captions_embedded_per_image": [per_image(embedded, r, EXACT) for r in results],
        "bounded_captions_embedded_per_image": [per_image(embedded, r, bounded) for r in results],
        "bounded_captions_scored_per_image": [per_image(scored, r, bounded) for r in results],
        "topn_overlap": round(
            sum(r["topn_overlap"] * images(r, EXACT) for r in results) / max(1, sum(images(r, EXACT) for r in results)),
            4,
        ),
        "topn_overlap_per_size": [r["topn_overlap"] for r in results],
        "class_list_identical": all(r["class_list_identical"] for r in results),
        "first_phase": [r["modes"][bounded]["rank"]["figures"]["first_phase"] for r in results],
        "exact_phase_seconds": {m: [r["modes"][m]["rank"]["figures"]["exact_seconds"] for r in results] for m in modes},
        "rank_seconds": per_mode("rank", "seconds"),
        "rank_cpu_seconds": per_mode("rank", "cpu_seconds"),
        "rank_peak_rss_mb": per_mode("rank", "peak_rss_mb"),
        "sample_seconds": per_mode("sample", "seconds"),
        "sample_peak_rss_mb": per_mode("sample", "peak_rss_mb"),
        "sample_candidates": {m: [r["modes"][m]["sample"]["figures"]["candidates"] for r in results] for m in modes},
        "score_seconds": [r["common"]["score"]["seconds"] for r in results],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[300_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=1, help="local Beam worker processes per stage")
    parser.add_argument("--tmp", help="where the temporary folder for corpora and runs goes (removed at the end)")
    parser.add_argument(
        "--bounded", choices=["static", "priority"], default="static", help="the scoring.first_phase compared with off"
    )
    parser.add_argument("--strategy", choices=["top", "threshold"], default="top", help="sampling.strategy")
    parser.add_argument("--threshold", type=float, help="sampling.threshold (strategy threshold)")
    parser.add_argument("--in-process", action="store_true", help="run the stages in this process (a smoke run)")
    args = parser.parse_args()
    IN_PROCESS["on"] = args.in_process
    sampling = {"strategy": args.strategy, **({"threshold": args.threshold} if args.threshold is not None else {})}
    print(f"start: {load_text()}", flush=True)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        results = [bench_size(rows, args.workers, Path(tmp), args.bounded, sampling) for rows in sorted(args.rows)]
    print(f"end: {load_text()}")
    print(json.dumps(summary(results)))


if __name__ == "__main__":
    main()

"""Build cost against corpus size: wall time and peak memory of each stage.

For each size, a synthetic LAION-schema corpus (`pipeline.corpus.synth`, seed 0, 100,000-row
shards, the default realistic captions) is written first, outside every timing. Then the build's
stages after the corpus (tag, select, score, rank, sample; no download) run one at a time, each in
a fresh Python process that runs it as its command does (`registry.run_stage`), so its peak
resident memory is its own: the parent waits for it with `os.wait4`, whose `ru_maxrss` is the
largest RSS of the stage process and of any worker process it waited for. Each size gets a fresh
embedding cache, so the encoder's work is counted.

Settings scale with the corpus so that each size yields about the same candidate synsets:
`selection.min_captions` = 100 per 100,000 rows; the rest is fixed (first-pass captions,
classes, top-n, images per class; see `bench_config`). Score's cost is candidates x first-pass
captions (bounded, whatever the corpus size) plus a hash of every selected row; rank's is the
selected captions of the K classes, which grow with the corpus (with `scoring.first_phase: static`
at most K x `exact_per_class` of them reach the encoder).

`--first-phase static` also runs rank and sample with `scoring.first_phase: static` on a copy
of the run's tag, select and score (and of the embedding cache as score left it).

Printed: a table per stage and size (stage wall seconds, stage CPU seconds and CPU microseconds a
corpus row as summary.json records them, peak RSS); per size, tag and select's CPU microseconds a
row together, the encoder's captions per final image and the sense contrast's CPU per scored
caption; each stage's marginal CPU microseconds a row between sizes (`scale`); wall and CPU ratios
against the smallest size with a linear fit (fixed + per-row),
rank and sample per first-phase mode, the rates `imagenot plan` uses as this run measured them
(`measured_rates`), and `imagenot plan`'s projection to LAION-2B-en with those rates. CPU
seconds (summary.json's `cpu_seconds`: the stage process, all its threads, and its local Beam
workers) move far less than wall seconds when other jobs share the machine. The last line is one
JSON object.

    python benchmarks/bench_build.py --rows 100000 300000 1000000 [--workers 1] [--first-phase static]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import yaml

STAGES = ("tag", "select", "score", "rank", "sample")
SHARD_ROWS = 100_000
LAION_2B_EN_ROWS = 2_322_161_808  # LAION-2B-en, English subset of LAION-5B
LAION_SHARD_ROWS = 1_000_000  # assumed: about 2,300 parquet shards
# The projection's fleet: Dataflow's workers, each `--project-processes` stage processes (placeholders: the plan reads
# only the runner's kind and accelerator from them)
DATAFLOW = {"project": "p", "region": "r", "temp_location": "gs://b/tmp", "worker_image": "w"}
MODEL = "packaged:all-MiniLM-L6-v2"
FIRST_PASS_CAPTIONS = 50
# N: the captions the first pass scores per candidate over the images a class needs is what score
# costs per final image (f x candidates that may become classes / (K x N)); 100 keeps f / N = 0.5
# near the defaults' 0.2 (f 200, N 1,000). Earlier turns ran N = 20 (f / N = 2.5).
IMAGES_PER_CLASS = 100


def bench_config(
    rows: int,
    corpus_dir: Path,
    cache_dir: Path,
    workers: int,
    first_phase: str = "off",
    images_per_class: int = IMAGES_PER_CLASS,
    sense_method: str = "sentence",
) -> dict:
    return {
        "corpus": {"paths": [str(corpus_dir / "part-*.parquet")]},
        "selection": {"min_captions": max(1, rows // 1000)},
        "scoring": {
            "first_pass_captions": FIRST_PASS_CAPTIONS,
            "cache_dir": str(cache_dir),
            "first_phase": first_phase,
            "sense_method": sense_method,
        },
        "ranking": {"classes": 100, "top_n": 10},
        "sampling": {"images_per_class": images_per_class, "test_per_class": 2},
        "runner": {"workers": workers},
    }


def run_child(stage: str, config_path: str, run_dir: str, result_path: str) -> None:
    """The child process: one stage as its command runs it (`registry.run_stage`: the stage's
    prepare step, its folder, its figures in summary.json with its wall and CPU seconds, its local
    Beam workers' CPU included); its figures and peak RSS written to `result_path`."""
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.frame.registry import declared, run_stage

    figures = run_stage(declared(stage), load_config(config_path), run_dir)
    result = {
        "seconds": figures["seconds"],
        "cpu_seconds": figures["cpu_seconds"],
        "figures": figures,
        "vm_hwm_mb": vm_hwm_mb(),
    }
    Path(result_path).write_text(json.dumps(result), encoding="utf-8")


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


IN_PROCESS = {"on": False}  # --in-process: stages run in this process (set by the scripts' main)


def measure_stage(stage: str, config_path: Path, run_dir: Path) -> dict:
    """One stage's figures, wall and CPU seconds and peak RSS: in a fresh process, or with
    `--in-process` in this one (seconds, not minutes, at a tiny size: no process start, WordNet and
    the model loaded once; its peak RSS is then this process's so far)."""
    if IN_PROCESS["on"]:
        from imagenot.pipeline.config.schema import load_config
        from imagenot.pipeline.frame.registry import declared, run_stage

        started = time.perf_counter()
        figures = run_stage(declared(stage), load_config(config_path), str(run_dir))
        return {
            "seconds": figures["seconds"],
            "cpu_seconds": figures["cpu_seconds"],
            "process_seconds": round(time.perf_counter() - started, 2),
            "peak_rss_mb": round(vm_hwm_mb(), 1),
            "figures": figures,
        }
    result_path = run_dir / f"bench-{stage}.json"
    log_path = run_dir / f"bench-{stage}.log"
    command = [sys.executable, __file__, "--child", stage, str(config_path), str(run_dir), str(result_path)]
    started = time.perf_counter()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"stage {stage} failed (exit {os.waitstatus_to_exitcode(status)}); see {log_path}")
    child = json.loads(result_path.read_text(encoding="utf-8"))
    return {
        "seconds": round(child["seconds"], 2),
        "cpu_seconds": round(child["cpu_seconds"], 2),
        "process_seconds": round(wall, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # KiB on Linux
        "figures": child["figures"],
    }


def bench_size(
    rows: int,
    workers: int,
    root: Path,
    first_phases: tuple[str, ...] = (),
    images_per_class: int = IMAGES_PER_CLASS,
    sense_methods: tuple[str, ...] = (),
    corpora: Path | None = None,
) -> dict:
    """Every stage with `scoring.first_phase: off`; then, for each of `first_phases`, rank and
    sample again on a copy of the run's tag, select and score (and of the embedding cache as
    score left it), so each mode's rank meets the same cache; for each of `sense_methods`, score
    again on a copy of tag and select with that `scoring.sense_method` (the encoder's captions
    cached: its sense CPU per scored caption is the figure). The corpus is kept in `corpora` when
    given (reused if there)."""
    from imagenot.pipeline.corpus.synth import ground_truth_path, synth_corpus
    from imagenot.pipeline.run import layout

    corpus_dir = (corpora or root) / f"corpus-{rows}"
    run_dir, cache_dir = root / f"run-{rows}", root / f"embeddings-{rows}"
    run_dir.mkdir(parents=True)
    started = time.perf_counter()
    if not Path(ground_truth_path(str(corpus_dir))).exists():
        synth_corpus(corpus_dir, rows=rows, seed=0, shard_rows=SHARD_ROWS)
    print(f"{rows} rows: corpus ready in {time.perf_counter() - started:.1f} s (not timed below)", flush=True)

    def config_file(folder: Path, cache: Path, mode: str = "off", sense_method: str = "sentence") -> Path:
        path = folder / "bench_config.yaml"
        path.write_text(
            yaml.safe_dump(bench_config(rows, corpus_dir, cache, workers, mode, images_per_class, sense_method))
        )
        return path

    config_path = config_file(run_dir, cache_dir)
    stages = {}
    for stage in STAGES:
        if stage == "rank":  # the cache as score left it, for the other modes' rank
            for mode in first_phases:
                shutil.copytree(cache_dir, root / f"embeddings-{rows}-{mode}")
        stages[stage] = _measure_printed(stage, config_path, run_dir, "off")
    modes = {}
    for mode in first_phases:
        mode_dir, mode_cache = root / f"run-{rows}-{mode}", root / f"embeddings-{rows}-{mode}"
        for stage in STAGES[: STAGES.index("rank")]:
            shutil.copytree(run_dir / stage, mode_dir / stage)
        mode_config = config_file(mode_dir, mode_cache, mode)
        modes[mode] = {stage: _measure_printed(stage, mode_config, mode_dir, mode) for stage in ("rank", "sample")}
    senses = {}
    for method in sense_methods:
        method_dir = root / f"run-{rows}-{method}"
        for stage in ("tag", "select"):
            shutil.copytree(run_dir / stage, method_dir / stage)
        method_config = config_file(method_dir, cache_dir, sense_method=method)
        senses[method] = _measure_printed("score", method_config, method_dir, method)
    ranked = {"off": run_dir, **{mode: root / f"run-{rows}-{mode}" for mode in first_phases}}
    distinct = {
        "rank": {mode: distinct_captions(folder / layout.RANK / layout.SCORED_DIR) for mode, folder in ranked.items()}
    }
    return {
        "rows": rows,
        "workers": workers,
        "images_per_class": images_per_class,
        "stages": stages,
        "first_phase": modes,
        "sense_methods": senses,
        "distinct_captions": distinct,
    }


def distinct_captions(folder: Path) -> int:
    """Distinct caption texts among rank's scored rows (the encoder embeds each text once; score
    writes no captions, and its fresh cache embeds each distinct one: `captions_embedded`)."""
    return len(set(pq.read_table(folder, columns=["caption"]).column("caption").to_pylist()))


def _measure_printed(stage: str, config_path: Path, run_dir: Path, mode: str) -> dict:
    m = measure_stage(stage, config_path, run_dir)
    print(
        f"  {stage:7s} {mode:6s} {m['seconds']:8.1f} s  {m['cpu_seconds']:8.1f} cpu s  "
        f"{m['peak_rss_mb']:7.0f} MB  {load_text()}",
        flush=True,
    )
    return m


def load_text() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def table(results: list[dict]) -> str:
    sizes = [r["rows"] for r in results]
    head = "| stage | " + " | ".join(f"{n:,} rows: s / cpu s / cpu us a row / peak MB" for n in sizes) + " |"
    lines = [head, "|---" * (len(sizes) + 1) + "|"]
    for stage in STAGES:
        cells = []
        for r in results:
            m = r["stages"][stage]
            cells.append(
                f"{m['seconds']:.1f} / {m['cpu_seconds']:.1f} / {m['figures']['cpu_us_per_row']:.1f} / "
                f"{m['peak_rss_mb']:.0f}"
            )
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scale(results: list[dict]) -> dict:
    """Per size: each stage's CPU microseconds a corpus row (summary.json's, start-up included) and
    peak memory, tag and select together, the encoder's captions per final image (score's and
    rank's embedded captions over the sample's images, per `scoring.first_phase` run) and the sense
    contrast's CPU microseconds per caption score scored; between consecutive sizes, each stage's
    marginal CPU microseconds a row (the CPU the added rows cost: start-up cancels)."""
    sizes = {}
    for r in results:
        stages, figures = r["stages"], {stage: r["stages"][stage]["figures"] for stage in STAGES}
        per_image = {
            mode: _embedded_per_image(figures["score"], by_stage["rank"]["figures"], by_stage["sample"]["figures"])
            for mode, by_stage in {"off": stages, **r["first_phase"]}.items()
        }
        sizes[str(r["rows"])] = {
            "cpu_us_per_row": {stage: figures[stage]["cpu_us_per_row"] for stage in STAGES},
            "peak_rss_mb": {stage: stages[stage]["peak_rss_mb"] for stage in STAGES},
            "tag_select_us_per_row": round(figures["tag"]["cpu_us_per_row"] + figures["select"]["cpu_us_per_row"], 2),
            "captions_embedded_per_image": per_image,
            "sense_us_per_scored_caption": {
                method: _sense_us(score["figures"])
                for method, score in {"sentence": stages["score"], **r.get("sense_methods", {})}.items()
            },
        }
    marginal = {
        f"{b['rows']}-{a['rows']}": {
            stage: round(
                (b["stages"][stage]["cpu_seconds"] - a["stages"][stage]["cpu_seconds"]) / (b["rows"] - a["rows"]) * 1e6,
                2,
            )
            for stage in STAGES
        }
        for a, b in zip(results, results[1:])
    }
    return {"sizes": sizes, "marginal_us_per_row": marginal}


def _sense_us(score: dict) -> float | None:
    """The sense contrast's CPU microseconds per caption the score stage scored."""
    scored = score["rows_scored"]
    return round(score.get("sense_cpu_seconds", 0) / scored * 1e6, 1) if scored else None


def _embedded_per_image(score: dict, rank: dict, sample: dict) -> float | None:
    """The encoder's captions (score's and rank's cache misses) per image the sample chose."""
    embedded = score["captions_embedded"] + rank["captions_embedded"]
    return round(embedded / sample["images"], 3) if sample["images"] else None


def ratios(results: list[dict], key: str) -> dict[str, dict[str, float]]:
    """Per stage, `key` (seconds or cpu_seconds) at each size over its value at the smallest size."""
    base = results[0]
    return {
        stage: {
            f"{r['rows']}/{base['rows']}": round(r["stages"][stage][key] / base["stages"][stage][key], 2)
            for r in results[1:]
        }
        for stage in STAGES
    }


def linear_fits(results: list[dict], key: str) -> dict[str, dict[str, float]]:
    """Per stage, least squares `key` = fixed + per_million * rows/1e6 over the sizes, and the
    largest relative miss: linear growth leaves it small, whatever the fixed cost (process
    start, model and WordNet loading, Beam start) adds at the small sizes."""
    millions = [r["rows"] / 1e6 for r in results]
    fits = {}
    for stage in STAGES:
        seconds = [r["stages"][stage][key] for r in results]
        slope, fixed = np.polyfit(millions, seconds, 1)
        worst = max(abs(fixed + slope * m - s) / s for m, s in zip(millions, seconds))
        fits[stage] = {
            "fixed_s": round(float(fixed), 1),
            "s_per_million_rows": round(float(slope), 1),
            "worst_miss": round(worst, 3),
        }
    return fits


def stage_work(results: list[dict]) -> list[str]:
    """What each size's score and rank stages had to do (their cost is this, not corpus rows)."""
    lines = []
    for r in results:
        score, rank = r["stages"]["score"]["figures"], r["stages"]["rank"]["figures"]
        select = r["stages"]["select"]["figures"]
        lines.append(
            f"{r['rows']:,} rows: {select['candidates']} candidates ({score.get('candidates_unscored', 0)} unable to "
            f"become classes, not scored); score: {score['rows_scored']:,} first-pass "
            f"captions ({score['captions_embedded']:,} embedded); rank: {rank['classes']} classes, "
            f"{rank['rows_scored']:,} captions scored ({rank['captions_embedded']:,} embedded)"
        )
    return lines


def first_phase_table(results: list[dict], modes: tuple[str, ...]) -> str:
    lines = [
        "| rows | first_phase | rank cpu s | rank captions scored (embedded) | rank peak MB | sample peak MB |",
        "|---" * 6 + "|",
    ]
    for r in results:
        for mode in modes:
            stages = r["first_phase"].get(mode) or r["stages"]
            rank, sample = stages["rank"], stages["sample"]
            lines.append(
                f"| {r['rows']:,} | {mode} | {rank['cpu_seconds']:.1f} | {rank['figures']['rows_scored']:,} "
                f"({rank['figures']['captions_embedded']:,}) | {rank['peak_rss_mb']:.0f} | "
                f"{sample['peak_rss_mb']:.0f} |"
            )
    return "\n".join(lines)


def measured_rates(results: list[dict]):
    """`imagenot plan`'s Rates as this run measured them (first_phase off; CPU seconds of a stage
    with its local workers; least squares over the sizes, so at least two).

    tag and select: per row (their fixed parts are the Rates', measured apart on a tiny corpus:
    a fit's intercept from two large sizes is mostly noise). sample: fixed + per row (it reads one
    rank shard per corpus shard). rank:
    fixed + embedded captions / R, which gives R, the encoder's embedded captions per CPU second;
    score: fixed + per row (its hash of every selected row) + embedded / R. With first_phase
    static: the class captions over the CPU seconds rank spent beyond its fixed part and its
    encoder (the static pass), and the exact captions' repeats fitted to the plan's form
    (embedded = exact x exp(-f / class mean) x (1 - repeats)). Shares: score's captions over
    candidates x first-pass captions (fill), the captions score did not embed in a fresh cache
    (first-pass duplicates), the repeats among the classes' captions in rank (class duplicates),
    one class's captions per corpus row."""
    from imagenot.pipeline.plan.estimate import Rates, local_worker_processes

    def fit(x: list[float], y: list[float]) -> tuple[float, float]:
        slope, fixed = np.polyfit(x, y, 1)
        return float(fixed), float(slope)

    def cpu(stage: str) -> list[float]:
        return [r["stages"][stage]["cpu_seconds"] for r in results]

    def figure(stage: str, key: str) -> list[float]:
        return [r["stages"][stage]["figures"][key] for r in results]

    rows = [r["rows"] for r in results]
    (_, tag_slope), (_, select_slope) = fit(rows, cpu("tag")), fit(rows, cpu("select"))
    rank_fixed, seconds_per_caption = fit(figure("rank", "captions_embedded"), cpu("rank"))
    score_cpu = [c - e * seconds_per_caption for c, e in zip(cpu("score"), figure("score", "captions_embedded"))]
    score_fixed, score_slope = fit(rows, score_cpu)
    static = [(r, r["first_phase"]["static"]) for r in results if "static" in r["first_phase"]]
    sample_fixed, sample_slope = fit(
        rows + [r["rows"] for r, _ in static], cpu("sample") + [m["sample"]["cpu_seconds"] for _, m in static]
    )
    class_mean = {
        r["rows"]: r["stages"]["rank"]["figures"]["rows_scored"] / r["stages"]["rank"]["figures"]["classes"]
        for r in results
    }
    # a fixed part measured in one process stands for the command's process and each worker's alike
    processes = 1 + local_worker_processes(results[0].get("workers", 1))
    rates = dict(
        tag_us_per_row=round(tag_slope * 1e6, 1),
        select_us_per_row=round(select_slope * 1e6, 1),
        score_fixed_s=round(score_fixed / processes, 1),
        score_us_per_row=round(score_slope * 1e6, 1),
        rank_fixed_s=round(rank_fixed / processes, 1),
        sample_fixed_s=round(sample_fixed / processes, 2),
        sample_us_per_row=round(sample_slope * 1e6, 2),
        encoder_captions_per_s=round(1 / seconds_per_caption, 1),
        first_pass_fill=round(
            sum(figure("score", "rows_scored")) / (sum(figure("select", "candidates")) * FIRST_PASS_CAPTIONS), 3
        ),
        class_share=float(f"{np.mean([class_mean[n] / n for n in rows]):.2g}"),
        first_pass_duplicate_share=round(
            1 - sum(figure("score", "captions_embedded")) / sum(figure("score", "rows_scored")), 3
        ),
        class_duplicate_share=round(
            1 - sum(r["distinct_captions"]["rank"]["off"] for r in results) / sum(figure("rank", "rows_scored")), 3
        ),
    )
    if static:  # the static pass: rank's CPU beyond its fixed part and its encoder; the exact captions' repeats
        ranks = [(r["rows"], m["rank"]["cpu_seconds"], m["rank"]["figures"]) for r, m in static]
        pass_cpu = sum(c - rank_fixed - f["captions_embedded"] * seconds_per_caption for _, c, f in ranks)
        beyond_first_pass = sum(f["rows_scored"] * np.exp(-FIRST_PASS_CAPTIONS / class_mean[n]) for n, _, f in ranks)
        rates.update(
            static_captions_per_s=round(
                sum(f["rows_scored"] + f["rows_beyond_first_phase"] for _, _, f in ranks) / pass_cpu
            ),
            exact_repeat_share=round(
                float(1 - sum(f["captions_embedded"] for _, _, f in ranks) / beyond_first_pass), 3
            ),
        )
    return Rates(**rates)


def fittable(results: list[dict]) -> bool:
    """Whether `measured_rates` can fit the sizes: two sizes or more, and classes ranked at each
    (tiny corpora rank none)."""
    return len(results) > 1 and all(r["stages"]["rank"]["figures"]["classes"] > 0 for r in results)


def projection(results: list[dict], args: argparse.Namespace) -> dict[str, dict]:
    """LAION-2B-en as `imagenot plan` projects it (first_phase off and static) with the rates this
    run measured and the largest size's class share, on the fleet, prices and first-pass fill of
    the flags (README: "LAION-2B-en projection")."""
    from imagenot.pipeline.config.schema import Config
    from imagenot.pipeline.plan.estimate import make_plan

    rates, largest = measured_rates(results), results[-1]
    rank = largest["stages"]["rank"]["figures"]
    rates = replace(
        rates,
        candidates=args.project_candidates,
        first_pass_fill=args.project_fill,
        class_share=float(f"{rank['rows_scored'] / rank['classes'] / largest['rows']:.2g}"),
        vcpus_per_worker=args.project_vcpus,
        processes_per_worker=args.project_processes,
        price_vcpu_hour=args.price,
        encoder_captions_per_s=args.encoder_rate or rates.encoder_captions_per_s,
    )
    shards = -(-LAION_2B_EN_ROWS // LAION_SHARD_ROWS)
    return {
        mode: make_plan(
            Config.model_validate(
                {
                    "scoring": {"first_pass_captions": args.project_first_pass, "first_phase": mode},
                    "ranking": {"classes": args.project_classes},
                    "sampling": {"images_per_class": args.project_images},
                    "runner": {"kind": "dataflow", "dataflow": DATAFLOW},
                }
            ),
            LAION_2B_EN_ROWS,
            shards,
            rates,
            args.project_workers,
        )
        for mode in ("off", "static")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--workers", type=int, default=1, help="local Beam worker processes per stage")
    parser.add_argument("--project-workers", type=int, default=100, help="Dataflow workers in the projection")
    parser.add_argument("--project-vcpus", type=int, default=4, help="vCPUs per worker (n1-standard-4)")
    parser.add_argument(
        "--project-processes", type=int, default=2, help="stage processes per worker as fast as one here"
    )
    parser.add_argument("--project-candidates", type=int, default=10_000, help="candidate synsets after select (C)")
    parser.add_argument("--project-first-pass", type=int, default=200, help="first-pass captions per candidate (f)")
    parser.add_argument(
        "--project-fill", type=float, default=1.0, help="first-pass fill: candidates have >= min_captions 1,000"
    )
    parser.add_argument("--project-classes", type=int, default=1000, help="classes (K)")
    parser.add_argument("--project-images", type=int, default=1000, help="images per class (N)")
    parser.add_argument("--encoder-rate", type=float, help="captions/s per process [default: as this run measured it]")
    parser.add_argument("--price", type=float, default=0.04, help="assumed price per vCPU-hour (USD)")
    parser.add_argument(
        "--first-phase",
        nargs="*",
        default=[],
        choices=["static"],
        help="also run rank and sample with this scoring.first_phase (off is always run)",
    )
    parser.add_argument("--images-per-class", type=int, default=IMAGES_PER_CLASS, help="N (sampling.images_per_class)")
    parser.add_argument(
        "--sense-methods",
        nargs="*",
        default=[],
        choices=["context", "both", "trained"],
        help="also run score with this scoring.sense_method (sentence is always run): its CPU per scored caption",
    )
    parser.add_argument("--corpora", help="keep the corpora here and reuse those already written (default: in --tmp)")
    parser.add_argument("--tmp", help="where the temporary folder for corpora and runs goes (removed at the end)")
    parser.add_argument("--in-process", action="store_true", help="run the stages in this process (a smoke run)")
    parser.add_argument("--child", nargs=4, metavar=("STAGE", "CONFIG", "RUN", "RESULT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(*args.child)
        return
    IN_PROCESS["on"] = args.in_process

    print(f"start: {load_text()}; {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        results = [
            bench_size(
                rows,
                args.workers,
                Path(tmp),
                tuple(args.first_phase),
                args.images_per_class,
                tuple(args.sense_methods),
                Path(args.corpora) if args.corpora else None,
            )
            for rows in sorted(args.rows)
        ]
    print(f"end: {load_text()}\n")
    print(table(results))
    scaled = scale(results)
    for rows, figures in scaled["sizes"].items():
        print(
            f"{int(rows):,} rows: tag + select {figures['tag_select_us_per_row']} cpu us a row; captions embedded "
            f"per image by first_phase {figures['captions_embedded_per_image']}; sense contrast's cpu us per caption "
            f"score scored, by sense_method {figures['sense_us_per_scored_caption']}"
        )
    for sizes, by_stage in scaled["marginal_us_per_row"].items():
        print(f"marginal cpu us a row, {sizes} rows: " + ", ".join(f"{k} {v}" for k, v in by_stage.items()))
    all_ratios = {key: ratios(results, key) for key in ("seconds", "cpu_seconds")}
    all_fits = {key: linear_fits(results, key) for key in ("seconds", "cpu_seconds")} if len(results) > 2 else {}
    for key in ("seconds", "cpu_seconds"):
        print(f"\nstage {key} relative to the smallest size, and a linear fit:")
        for stage, by_size in all_ratios[key].items():
            print(f"  {stage:7s} " + "  ".join(f"{k}: {v}x" for k, v in by_size.items()))
        for stage, fit in all_fits.get(key, {}).items():
            print(
                f"  {stage:7s} linear fit: fixed {fit['fixed_s']} s + {fit['s_per_million_rows']} s per million rows, "
                f"worst miss {fit['worst_miss']:.0%}"
            )
    print("\nscore and rank work (bounded by candidates x first-pass captions, and the K classes' captions):")
    print("\n".join("  " + line for line in stage_work(results)))
    if args.first_phase:
        print("\nrank and sample by scoring.first_phase (the same tag, select and score; flat in rows when bounded):")
        print(first_phase_table(results, ("off", *args.first_phase)))
    project = projection(results, args) if fittable(results) else {}
    if project:
        print(f"\nrates measured by this run (imagenot plan's Rates): {measured_rates(results)}")
    from imagenot.pipeline.plan.estimate import render

    for mode, plan in project.items():
        print(
            f"\nLAION-2B-en ({LAION_2B_EN_ROWS:,} rows), scoring.first_phase {mode}, "
            f"as imagenot plan prints it:\n{render(plan)}"
        )
    print(
        json.dumps(
            {
                "sizes": results,
                "scale": scaled,
                "ratios": all_ratios,
                "fits": all_fits,
                "projection": project,
                "workers": args.workers,
            }
        )
    )


if __name__ == "__main__":
    main()

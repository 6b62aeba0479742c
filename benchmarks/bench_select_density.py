"""Tag and select at LAION-2B-en's candidate density (issue 53): CPU a row at two sizes or more.

Select's cost grows with its candidate set, not only with rows: the none-of-these rule counts the
forms of every synset that can still become a candidate, and step 6 and the caption rules read
every caption whose synsets hold one candidate. `bench_build.py` scales `selection.min_captions`
with the corpus (rows / 1,000), so a small corpus keeps a small corpus's candidates at every size.
LAION-2B-en (2,322,161,808 rows) at the default `min_captions` of 1,000 keeps every synset its
captions name a thousand times.

The regime is matched so: each synset's count in the corpus at hand (the tag stage's
`synset_captions`) is projected to LAION-2B-en's rows (count x 2,322,161,808 / rows), and select
runs with the `min_captions` that keeps, at this corpus's size, the synsets whose projection
reaches 1,000: ceil(1,000 x rows / 2,322,161,808), at least 1 (so 1 below 2.3M rows: every synset
the corpus names at all). A synset the corpus never names costs its rows nothing here and would
cost LAION's few rows that name it little; each row's own synsets are candidates as they would be
at LAION, which is what a row's select CPU depends on.

For each size (a synthetic corpus as bench_build writes it, realistic captions, seed 0), tag runs,
then select on that tag output at bench_build's `min_captions` (rows / 1,000, the baseline) and at
LAION's density, each stage in a fresh process (bench_build's `measure_stage`: summary.json's
`cpu_seconds`, local Beam workers included), in `--repeats` rounds, each of which measures every
size once on fresh folders (the sizes in turn, so that a change of the machine's load over the
minutes falls on each size): each stage's least CPU is kept, since other processes on a shared
machine only ever add to it (one run each moved a stage's CPU by 10-20% here, and the marginal of
two sizes by half). Printed: each round's CPU seconds; per size and regime the candidates, the
synsets that could still become candidates during the first pass (`possible_candidates`), CPU
seconds (every run's, and the least) and CPU us a row; between consecutive sizes, each stage's
marginal CPU us a row (start-up cancels), and tag + select; the density's select over the
baseline's. Select's driver work that grows with the candidates (`driver_cpu_seconds`: a one-off
at LAION's size) is measured again in this process and the marginal is also given net of it,
since the candidates grow with the corpus here. The last line is one JSON object.

    python benchmarks/bench_select_density.py --rows 200000 1000000 --repeats 3 [--workers 1] [--corpora DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_build import IN_PROCESS, LAION_2B_EN_ROWS, SHARD_ROWS, bench_config, load_text, measure_stage  # noqa: E402

from imagenot.filters.single_synset import STEP as SINGLE_SYNSET  # noqa: E402

LAION_MIN_CAPTIONS = 1000  # the default selection.min_captions, at LAION-2B-en's rows
REGIMES = ("small", "laion")  # bench_build's min_captions (rows / 1,000), and LAION's candidate density


def laion_min_captions(rows: int) -> int:
    """The min_captions that keeps, at `rows`, the synsets whose count projected to LAION-2B-en's
    rows reaches the default 1,000: count x LAION / rows >= 1,000."""
    return max(1, math.ceil(LAION_MIN_CAPTIONS * rows / LAION_2B_EN_ROWS))


def projected_candidates(tagged: dict[str, int], rows: int) -> int:
    """The tagged synsets whose count projected to LAION-2B-en reaches the default min_captions
    (before select's other steps)."""
    return sum(count * LAION_2B_EN_ROWS / rows >= LAION_MIN_CAPTIONS for count in tagged.values())


def candidate_synsets(funnel: list[dict]) -> int:
    """The candidates steps 2-5 keep: the synsets left before step 6 (summary.json's `candidates`
    counts those that kept a caption after step 6 and the caption rules)."""
    steps = [step["step"] for step in funnel]
    return funnel[steps.index(SINGLE_SYNSET) - 1]["synsets_left"]


def measure_driver(config_path: Path, run_dir: Path) -> float:
    """`driver_cpu_seconds` in a fresh process (NLTK's caches would make a second call cheaper),
    or with `--in-process` in this one."""
    if IN_PROCESS["on"]:
        return driver_cpu_seconds(config_path, run_dir)
    command = [sys.executable, __file__, "--driver", str(config_path), str(run_dir)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def driver_cpu_seconds(config_path: Path, run_dir: Path) -> float:
    """The CPU seconds of select's work on the driver that grows with the candidates, not the rows,
    redone here on the run's files: the synsets that can still become candidates and their forms,
    steps 2-5, and the caption rules' facts of every candidate (`PairChecker`). At LAION-2B-en it
    is a one-off of seconds against hours of per-row work, but between two small corpora whose
    candidates differ by thousands it would pass for per-row CPU."""
    from imagenot.labels.pair_checker import _wordnet, senses_of
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.run.files import read_json
    from imagenot.pipeline.run.layout import SELECT, TAG, TAG_TALLY_FILE, stage_path
    from imagenot.pipeline.select.stage import USABLE_FILE, choose_synsets, lemma_forms, possible_candidates
    from imagenot.wordnet.index import load_index

    selection, index = load_config(str(config_path)).selection, load_index()
    _wordnet()  # loaded before the clock starts: a fixed cost of every process
    tagged = read_json(os.path.join(stage_path(str(run_dir), TAG), TAG_TALLY_FILE))["synset_captions"]
    usable = read_json(os.path.join(stage_path(str(run_dir), SELECT), USABLE_FILE))["usable"]
    started = time.process_time()
    lemma_forms(possible_candidates(tagged, selection), index)
    senses_of(index, choose_synsets(tagged, usable, selection).candidates)
    return round(time.process_time() - started, 2)


def regime_min_captions(regime: str, rows: int) -> int:
    return laion_min_captions(rows) if regime == "laion" else max(1, rows // 1000)


class Size:
    """One corpus size: its corpus (written once, or found in `corpora`), and fresh run folders with
    their configs."""

    def __init__(self, rows: int, workers: int, root: Path, corpora: Path | None):
        from imagenot.pipeline.corpus.synth import ground_truth_path, synth_corpus

        self.rows, self.workers, self.root = rows, workers, root
        self.corpus_dir = (corpora or root) / f"corpus-{rows}"
        if not Path(ground_truth_path(str(self.corpus_dir))).exists():
            synth_corpus(self.corpus_dir, rows=rows, seed=0, shard_rows=SHARD_ROWS)

    def fresh(self, name: str, repeat: int, min_captions: int, tagged: Path | None = None) -> tuple[Path, Path]:
        """A new run folder (with a copy of `tagged`, a tag stage's folder) and its config file."""
        from imagenot.pipeline.run.layout import TAG, stage_path

        folder = self.root / f"run-{self.rows}-{name}-{repeat}"
        folder.mkdir(parents=True)
        if tagged is not None:
            shutil.copytree(tagged, stage_path(str(folder), TAG))
        config = bench_config(self.rows, self.corpus_dir, self.root / f"embeddings-{self.rows}", self.workers)
        config["selection"]["min_captions"] = min_captions
        path = folder / "bench_config.yaml"
        path.write_text(yaml.safe_dump(config))
        return folder, path


def measure_round(size: Size, repeat: int) -> dict[str, tuple[dict, Path, Path]]:
    """Tag, then select in each regime on that tag output, each on fresh folders: "tag" and each
    regime -> (the stage's figures, its run folder, its config)."""
    from imagenot.pipeline.run.layout import TAG, stage_path

    folder, config = size.fresh("tag", repeat, regime_min_captions("small", size.rows))
    measured = {"tag": (measure_stage("tag", config, folder), folder, config)}
    tagged = Path(stage_path(str(folder), TAG))
    for regime in REGIMES:
        folder, config = size.fresh(regime, repeat, regime_min_captions(regime, size.rows), tagged)
        measured[regime] = (measure_stage("select", config, folder), folder, config)
    cpu = ", ".join(f"{name} {figures['cpu_seconds']:.1f}" for name, (figures, _, _) in measured.items())
    print(f"  {size.rows:,} rows, round {repeat + 1}: {cpu} cpu s  {load_text()}", flush=True)
    return measured


def least_cpu(runs: list[tuple[dict, Path, Path]]) -> tuple[dict, Path, Path]:
    """Of one stage's runs, the one of least CPU (other processes on the machine only ever add to
    it), with every run's CPU."""
    figures, folder, config = min(runs, key=lambda run: run[0]["cpu_seconds"])
    return {**figures, "cpu_seconds_runs": [run[0]["cpu_seconds"] for run in runs]}, folder, config


def size_result(size: Size, rounds: list[dict]) -> dict:
    """A size's figures from its rounds: each stage's least CPU, the candidates of each regime."""
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.run.files import read_json
    from imagenot.pipeline.run.layout import TAG, TAG_TALLY_FILE, stage_path
    from imagenot.pipeline.select.stage import possible_candidates

    tag, tag_folder, _ = least_cpu([measured["tag"] for measured in rounds])
    tagged = read_json(os.path.join(stage_path(str(tag_folder), TAG), TAG_TALLY_FILE))["synset_captions"]
    print(f"{size.rows:,} rows: tag {tag['cpu_seconds']:.1f} cpu s (runs {tag['cpu_seconds_runs']})")
    select = {}
    for regime in REGIMES:
        measured, folder, config = least_cpu([measured[regime] for measured in rounds])
        selection = load_config(str(config)).selection
        select[regime] = {
            **measured,
            "min_captions": selection.min_captions,
            "candidates": candidate_synsets(measured["figures"]["funnel"]),
            "classes_with_captions": measured["figures"]["candidates"],
            "possible_candidates": len(possible_candidates(tagged, selection)),
            "driver_cpu_seconds": measure_driver(config, folder),
        }
        print(
            f"  select {regime:5s} min_captions {selection.min_captions:5d}: {select[regime]['candidates']:6,} "
            f"candidates ({select[regime]['possible_candidates']:,} possible in the first pass; "
            f"{select[regime]['classes_with_captions']:,} with captions after the rules), "
            f"{measured['cpu_seconds']:.1f} cpu s (runs {measured['cpu_seconds_runs']}; candidate-bound driver work "
            f"{select[regime]['driver_cpu_seconds']} cpu s)",
            flush=True,
        )
    return {
        "rows": size.rows,
        "workers": size.workers,
        "tagged_synsets": len(tagged),
        "projected_candidates": projected_candidates(tagged, size.rows),
        "tag": tag,
        "select": select,
    }


def per_row(seconds: float, rows: int) -> float:
    return round(seconds / rows * 1e6, 2)


def marginal(results: list[dict]) -> dict[str, dict[str, float]]:
    """Between consecutive sizes: tag's and each regime's select's marginal CPU us a row, and tag +
    select at LAION's density."""
    out = {}
    for a, b in zip(results, results[1:]):
        added = b["rows"] - a["rows"]
        figures = {"tag": per_row(b["tag"]["cpu_seconds"] - a["tag"]["cpu_seconds"], added)}
        for regime in REGIMES:
            spent = b["select"][regime]["cpu_seconds"] - a["select"][regime]["cpu_seconds"]
            driver = b["select"][regime]["driver_cpu_seconds"] - a["select"][regime]["driver_cpu_seconds"]
            figures[f"select_{regime}"] = per_row(spent, added)
            figures[f"select_{regime}_net_of_driver"] = per_row(spent - driver, added)
        figures["tag_select_laion"] = round(figures["tag"] + figures["select_laion"], 2)
        figures["tag_select_laion_net_of_driver"] = round(figures["tag"] + figures["select_laion_net_of_driver"], 2)
        figures["select_laion_over_small"] = round(figures["select_laion"] / figures["select_small"], 2)
        out[f"{b['rows']}-{a['rows']}"] = figures
    return out


def table(results: list[dict]) -> str:
    lines = [
        "| rows | regime | min_captions | candidates (possible in the first pass; with captions after the rules) "
        "| select cpu s | select us a row |",
        "|---" * 6 + "|",
    ]
    for r in results:
        for regime in REGIMES:
            s = r["select"][regime]
            lines.append(
                f"| {r['rows']:,} | {regime} | {s['min_captions']:,} | {s['candidates']:,} "
                f"({s['possible_candidates']:,}; {s['classes_with_captions']:,}) | {s['cpu_seconds']:.1f} | "
                f"{per_row(s['cpu_seconds'], r['rows'])} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[200_000, 500_000])
    parser.add_argument("--workers", type=int, default=1, help="local Beam worker processes per stage")
    parser.add_argument(
        "--repeats", type=int, default=1, help="measure each stage this many times, on fresh copies; keep the least CPU"
    )
    parser.add_argument("--corpora", help="keep the corpora here and reuse those already written (default: in --tmp)")
    parser.add_argument("--tmp", help="where the temporary folder for runs goes (removed at the end)")
    parser.add_argument("--in-process", action="store_true", help="run the stages in this process (a smoke run)")
    parser.add_argument("--driver", nargs=2, metavar=("CONFIG", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.driver:
        print(driver_cpu_seconds(*map(Path, args.driver)))
        return
    IN_PROCESS["on"] = args.in_process

    print(f"start: {load_text()}; {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        corpora = Path(args.corpora) if args.corpora else None
        sizes = [Size(rows, args.workers, Path(tmp), corpora) for rows in sorted(args.rows)]
        rounds = {size.rows: [] for size in sizes}
        for repeat in range(args.repeats):  # the sizes in turn: a change of the machine's load falls on each
            for size in sizes:
                rounds[size.rows].append(measure_round(size, repeat))
        results = [size_result(size, rounds[size.rows]) for size in sizes]
    print(f"end: {load_text()}\n")
    print(table(results))
    for r in results:
        print(
            f"{r['rows']:,} rows: {r['tagged_synsets']:,} synsets tagged, {r['projected_candidates']:,} of them "
            f"projected to >= {LAION_MIN_CAPTIONS:,} captions at LAION-2B-en; tag "
            f"{per_row(r['tag']['cpu_seconds'], r['rows'])} cpu us a row"
        )
    margins = marginal(results)
    for sizes, figures in margins.items():
        print(f"marginal cpu us a row, {sizes} rows: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    print(json.dumps({"sizes": results, "marginal_us_per_row": margins, "workers": args.workers}))


if __name__ == "__main__":
    main()

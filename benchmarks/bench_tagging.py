"""Tagging speed: the vectorised `LemmaMatcher` against a per-caption pyahocorasick baseline.

    python benchmarks/bench_tagging.py --rows 1000000 [--corpus DIR]

Reads the TEXT column of the parquet shards in `--corpus` (a synthetic corpus is written there
with `pipeline.corpus.synth` first if it holds none; default: a temporary folder). Everything
runs in one process on one core (Arrow's thread pool is set to one thread) and speed is
captions per CPU second. On the same captions and surface forms it runs:

- the tagger, batch by batch (`--batch-rows`);
- the baseline, `ReferenceMatcher` in `tests/reference_matcher.py` (normalise in Python, then iterate
  the automaton), caption by caption; its output must equal the tagger's on every row, else
  the disagreements are printed and the exit status is 1;
- on the first `--laionet-sample` captions, LAIONet's loop: ` lemma ` substring tests of every
  lemma (punctuation stripped from captions only, case-sensitive, no plurals).

Peak memory is measured in fresh processes that only tag `--memory-rows` rows and then all
rows. The last line of output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.pipeline.tag.matcher import LemmaMatcher
from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import surface_forms

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test oracle is the baseline
from reference_matcher import ReferenceMatcher  # noqa: E402

_LAIONET_PUNCTUATION = re.compile(r"[^\w\s]")


def caption_batches(corpus: Path, column: str, rows: int, batch_rows: int) -> Iterator[pa.Array]:
    """The first `rows` captions of the corpus's shards, in batches."""
    left = rows
    for shard in sorted(corpus.glob("part-*.parquet")):
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=batch_rows, columns=[column]):
            yield batch.column(0)[:left]
            left -= min(len(batch), left)
            if not left:
                return
    if left:
        raise SystemExit(f"{corpus}: only {rows - left} captions, --rows asked for {rows}")


def ensure_corpus(corpus: Path, rows: int, seed: int) -> None:
    if not any(corpus.glob("part-*.parquet")):
        from imagenot.pipeline.corpus.synth import synth_corpus

        print(f"writing a {rows:,}-row synthetic corpus to {corpus} ...", flush=True)
        synth_corpus(corpus, rows, seed)


def memory_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process, from Linux's /proc/self/status."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", status).group(1)) / 1024


def memory_probe(args: argparse.Namespace) -> None:
    """Tag `--rows` rows with nothing else in the process; print RSS after building and peak RSS
    while tagging (the peak is reset after the build, whose own peak is higher)."""
    pa.set_cpu_count(1)
    matcher = LemmaMatcher.from_index(load_index())
    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    built = memory_mb("VmRSS")
    for captions in caption_batches(args.corpus, args.text_column, args.rows, args.batch_rows):
        matcher.tag(captions)
    print(json.dumps({"rows": args.rows, "built_mb": built, "peak_mb": memory_mb("VmHWM")}))


def run_probe(args: argparse.Namespace, rows: int) -> dict:
    command = [
        sys.executable,
        __file__,
        "--memory-probe",
        "--rows",
        str(rows),
        "--corpus",
        str(args.corpus),
        "--batch-rows",
        str(args.batch_rows),
        "--text-column",
        args.text_column,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def laionet_loop(captions: list[str | None], lemmas: list[str]) -> tuple[float, int]:
    """CPU seconds of LAIONet's per-lemma substring loop over `captions`, and captions matched."""
    padded_lemmas = [f" {lemma.replace('_', ' ')} " for lemma in lemmas]
    start = time.process_time()
    matched = 0
    for caption in captions:
        text = f" {_LAIONET_PUNCTUATION.sub(' ', caption or '')} "
        matched += bool([lemma for lemma in padded_lemmas if lemma in text])
    return time.process_time() - start, matched


def compare(args: argparse.Namespace) -> int:
    pa.set_cpu_count(1)
    index = load_index()
    index.lemma_synsets  # noqa: B018 (built once, outside the timings)
    start = time.perf_counter()
    forms = surface_forms(index)
    matcher = LemmaMatcher(forms)
    build_s = time.perf_counter() - start
    baseline = ReferenceMatcher(forms)
    print(f"{len(forms):,} surface forms of {len(index.lemma_synsets):,} lemmas; tagger built in {build_s:.1f} s")

    tagger_s = baseline_s = 0.0
    rows = tagged = 0
    disagreements: list[str] = []
    laionet_sample: list[str | None] = []
    for captions in caption_batches(args.corpus, args.text_column, args.rows, args.batch_rows):
        start = time.process_time()
        tags = matcher.tag(captions)
        tagger_s += time.process_time() - start

        texts = captions.to_pylist()
        start = time.process_time()
        expected = [baseline.tag(text) for text in texts]
        baseline_s += time.process_time() - start

        got = zip(tags.wnids.to_pylist(), tags.matched.to_pylist())
        for position, (text, want, have) in enumerate(zip(texts, expected, got)):
            if tuple(want) != have and len(disagreements) < 20:
                disagreements.append(f"row {rows + position}: {text!r}\n  baseline {want}\n  tagger   {have}")
        tagged += sum(1 for wnids, _ in expected if wnids)
        rows += len(texts)
        laionet_sample += texts[: args.laionet_sample - len(laionet_sample)]

    laionet_s, laionet_matched = laionet_loop(laionet_sample, list(index.lemma_synsets))
    unmatchable = [lemma for lemma in index.lemma_synsets if _LAIONET_PUNCTUATION.search(lemma)]
    small = run_probe(args, min(args.memory_rows, args.rows))
    full = run_probe(args, args.rows)

    figures = {
        "rows": rows,
        "tagger_captions_per_s_per_core": round(rows / tagger_s),
        "baseline_captions_per_s_per_core": round(rows / baseline_s),
        "speedup": round(baseline_s / tagger_s, 2),
        "laionet_captions_per_s_per_core": round(len(laionet_sample) / laionet_s, 1),
        "build_s": round(build_s, 2),
        "peak_rss_mb": {
            str(small["rows"]): round(small["peak_mb"]),
            str(full["rows"]): round(full["peak_mb"]),
        },
        "disagreements": len(disagreements),
    }
    print(f"rows with >= 1 synset: {tagged:,} of {rows:,}")
    print(f"tagger    {figures['tagger_captions_per_s_per_core']:>10,} captions/s per core")
    print(
        f"baseline  {figures['baseline_captions_per_s_per_core']:>10,} captions/s per core "
        f"(pyahocorasick, per caption); tagger is {figures['speedup']}x"
    )
    print(
        f"LAIONet   {figures['laionet_captions_per_s_per_core']:>10,} captions/s per core "
        f"on {len(laionet_sample):,} captions ({laionet_matched:,} matched); it can never match "
        f"{len(unmatchable):,} lemmas with punctuation, e.g. {', '.join(unmatchable[:3])}"
    )
    for probe in (small, full):
        print(
            f"peak RSS tagging {probe['rows']:>9,} rows: {probe['peak_mb']:.0f} MB "
            f"(RSS {probe['built_mb']:.0f} MB once the matcher is built)"
        )
    if disagreements:
        print(f"tagger and baseline disagree ({len(disagreements)} shown):", *disagreements, sep="\n")
    print(json.dumps(figures))
    return 1 if disagreements else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--corpus", type=Path, help="folder of part-*.parquet shards")
    parser.add_argument("--text-column", default="TEXT")
    parser.add_argument("--seed", type=int, default=0, help="seed of a generated corpus")
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--laionet-sample", type=int, default=1_000)
    parser.add_argument("--memory-rows", type=int, default=100_000)
    parser.add_argument("--memory-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_probe:
        memory_probe(args)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-tagging-") as scratch:
        args.corpus = args.corpus or Path(scratch)
        ensure_corpus(args.corpus, args.rows, args.seed)
        return compare(args)


if __name__ == "__main__":
    sys.exit(main())

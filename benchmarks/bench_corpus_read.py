"""Corpus read speed per format: imagenot's reader against pyarrow's own reader on the same file.

    python benchmarks/bench_corpus_read.py --rows 200000 [--corpus DIR]

Writes the first `--rows` rows of a synthetic corpus (`pipeline.corpus.synth`, LAION's schema) as
parquet, csv, tsv, jsonl, json and the gzipped text ones, then reads each file on one core
(Arrow's thread pool set to one thread) in batches of `--batch-rows`, two ways:

- imagenot: `read_shard` with the default (LAION) column map: the mapped columns parsed, every
  row checked (drop reasons, row ids, canonical types), malformed lines looked for;
- pyarrow: the same columns, parsed only: `ParquetFile.iter_batches`, `pyarrow.csv.open_csv`
  (streaming), `pyarrow.json.read_json` (a .json array: json.loads, as it has no streaming reader).

Speed is rows per CPU second (process time), the best of `--repeats`; the ratio is imagenot's
over pyarrow's. The synth caption-cost figures are measured by `--captions` (see
benchmarks/README.md, "Corpus formats"). The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from imagenot.pipeline.config.schema import FUNCTION_WORDS, Columns
from imagenot.pipeline.corpus.reader import read_shard
from imagenot.pipeline.corpus.synth import synth_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_corpus_formats import write_as  # noqa: E402  (the test's writers: the files a user holds)

FORMATS = ("parquet", "csv", "tsv", "jsonl", "json", "csv.gz", "tsv.gz", "jsonl.gz")


def corpus(folder: Path, rows: int) -> pa.Table:
    shards = sorted(folder.glob("part-*.parquet"))
    if not shards:
        synth_corpus(folder, rows, 0, shard_rows=rows)
        shards = sorted(folder.glob("part-*.parquet"))
    table = pq.read_table(shards[0]).slice(0, rows)
    no_break = pc.invert(pc.fill_null(pc.match_substring_regex(table["TEXT"], "[\t\n\r]"), False))
    return table.filter(no_break)  # rows a TSV can hold


def pyarrow_rows(path: Path, columns: list[str], batch_rows: int) -> int:
    """Rows read by pyarrow's own reader for the format, the same columns."""
    kind = path.name.removesuffix(".gz").rsplit(".", 1)[1]
    if kind == "parquet":
        return sum(b.num_rows for b in pq.ParquetFile(path).iter_batches(batch_size=batch_rows, columns=columns))
    data = path.read_bytes()
    data = gzip.decompress(data) if path.name.endswith(".gz") else data
    if kind in ("csv", "tsv"):
        reader = pa_csv.open_csv(
            io.BytesIO(data),
            pa_csv.ReadOptions(use_threads=False),
            pa_csv.ParseOptions(delimiter="\t" if kind == "tsv" else ",", quote_char=False if kind == "tsv" else '"'),
            pa_csv.ConvertOptions(include_columns=columns),
        )
        return sum(b.num_rows for b in reader)
    if kind == "json":
        data = b"".join(json.dumps(r).encode() + b"\n" for r in json.loads(data))
    return pa_json.read_json(io.BytesIO(data), pa_json.ReadOptions(use_threads=False)).select(columns).num_rows


def best_rate(read, rows: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        assert read() == rows
        best = min(best, time.process_time() - started)
    return rows / best


def caption_cost(paths: list[str]) -> dict:
    """Mean caption length, noun synsets per tagged caption (mean, median) and the share of tagged
    captions that name exactly one, tagged as the tag stage tags them."""
    from imagenot.pipeline.tag.stage import build_matcher
    from imagenot.wordnet.index import load_index

    captions = pa.chunked_array([pq.read_table(p, columns=["TEXT"])["TEXT"] for p in paths]).combine_chunks()
    captions = captions.filter(pc.invert(pc.is_null(captions)))
    synsets = pc.list_value_length(build_matcher(load_index(), FUNCTION_WORDS).tag(captions).wnids).to_numpy(
        zero_copy_only=False
    )
    tagged = synsets[synsets > 0]
    return {
        "captions": len(captions),
        "mean_chars": round(float(np.mean(pc.utf8_length(captions).to_numpy(zero_copy_only=False))), 1),
        "synsets_mean": round(float(tagged.mean()), 2),
        "synsets_median": float(np.median(tagged)),
        "one_synset_share": round(float((tagged == 1).mean()), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--batch-rows", type=int, default=65_536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--corpus", type=Path, help="a folder with a synthetic corpus, or where to write one")
    parser.add_argument("--captions", nargs="*", help="parquet files whose caption cost to measure (TEXT column)")
    args = parser.parse_args()
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    if args.captions:
        print(json.dumps(caption_cost(args.captions)))
        return
    folder = args.corpus or Path(tempfile.mkdtemp())
    folder.mkdir(parents=True, exist_ok=True)
    table = corpus(folder, args.rows)
    columns = [c for c in Columns().source_columns().values() if c in table.column_names]
    results = {}
    for extension in FORMATS:
        path = write_as(table, folder / f"bench.{extension}")
        ours = best_rate(
            lambda path=path: sum(p.rows_read for p in read_shard(str(path), Columns(), args.batch_rows)),
            table.num_rows,
            args.repeats,
        )
        theirs = best_rate(lambda path=path: pyarrow_rows(path, columns, args.batch_rows), table.num_rows, args.repeats)
        results[extension] = {
            "imagenot_rows_per_cpu_s": round(ours),
            "pyarrow_rows_per_cpu_s": round(theirs),
            "ratio": round(ours / theirs, 2),
        }
        print(
            f"{extension:<9} imagenot {ours:>12,.0f} rows/s   pyarrow {theirs:>12,.0f} rows/s   "
            f"ratio {ours / theirs:.2f}",
            flush=True,
        )
    print(json.dumps({"rows": table.num_rows, "batch_rows": args.batch_rows, "formats": results}))


if __name__ == "__main__":
    main()

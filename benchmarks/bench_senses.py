"""`imagenot senses --input` speed: the command's table path (`senses_command.senses_table`).

    python benchmarks/bench_senses.py [--copies 4] [--repeats 2] [--threads 1] [--real] [--method context]

Input: the sense dev set (`data/sense_dev.parquet`, 527 captions of 111 lemmas) repeated
`--copies` times, each copy's captions given their own product number (" - 1043") so that every
caption is a new text for the encoder (which runs each distinct token sequence once); with
`--real`, the real dev set's LAION captions (`data/real_dev_pairs.tsv`, each with the surface form
that matched) instead. One loaded scorer (the default config's, MiniLM, `--threads` torch threads; `--method` sets
`scoring.sense_method`), warmed once on the input: the tagger's matcher built, the sense queries
embedded (in the embedding cache) or the sense vectors loaded, as a second run of the command
finds them. Timed, best of `--repeats`: the whole table path, and the encoder the method runs on
each caption alone (the sentence encoder, or the span encoder on the same spans). Captions/s counts input rows. The
last line is one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.score.senses_command import scorer, senses_table, word_vectors

DATA = Path(__file__).parent / "data"


def dev_input(copies: int, limit: int | None = None) -> pa.Table:
    dev = pq.read_table(DATA / "sense_dev.parquet").select(["caption", "lemma"]).slice(0, limit)
    parts = []
    for k in range(copies):
        captions = [f"{c} - {1000 + 37 * k + i % 37}" for i, c in enumerate(dev.column("caption").to_pylist())]
        parts.append(dev.set_column(0, "caption", pa.array(captions, pa.string())))
    return pa.concat_tables(parts)


def real_input() -> pa.Table:
    with open(DATA / "real_dev_pairs.tsv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return pa.table({"caption": [r["caption"] for r in rows], "lemma": [r["matched"] for r in rows]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4, help="copies of the dev set, each a new set of captions")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (runner.torch_threads)")
    parser.add_argument("--real", action="store_true", help="the real dev set's LAION captions instead")
    parser.add_argument("--method", choices=["sentence", "context", "both", "trained"], help="scoring.sense_method")
    parser.add_argument("--limit", type=int, help="the dev set's first N captions only (a quick look)")
    args = parser.parse_args()
    config = load_config(None)
    update = {"runner": config.runner.model_copy(update={"torch_threads": args.threads})}
    if args.method:
        update["scoring"] = config.scoring.model_copy(update={"sense_method": args.method})
    config = config.model_copy(update=update)
    started = time.perf_counter()
    queries = scorer(config)
    load_seconds = time.perf_counter() - started
    table = real_input() if args.real else dev_input(args.copies, args.limit)
    result = senses_table(table, config, queries)  # builds the matcher, warms torch
    read = [i for i, p in enumerate(result.column("predicted").to_pylist()) if p is not None]
    captions = [table.column("caption")[i].as_py() for i in read]
    spans = [(result.column("start")[i].as_py(), result.column("end")[i].as_py()) for i in read]
    timings: dict[str, list[float]] = {"table": [], "encoder": []}
    for _ in range(args.repeats):
        started = time.perf_counter()
        again = senses_table(table, config, queries)
        timings["table"].append(time.perf_counter() - started)
        started = time.perf_counter()
        word_vectors(queries, captions, spans)
        timings["encoder"].append(time.perf_counter() - started)
        if not again.equals(result):
            raise SystemExit("two runs gave different tables")
    report = {
        "input": "real_dev_pairs" if args.real else f"sense_dev x {args.copies}",
        "captions": table.num_rows,
        "read": len(read),
        "threads": args.threads,
        "sense_method": config.scoring.sense_method,
        "scorer_load_seconds": round(load_seconds, 2),
        "captions_per_s": round(table.num_rows / min(timings["table"]), 1),
        "encoder_alone_captions_per_s": round(len(read) / min(timings["encoder"]), 1),
        "seconds": timings,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()

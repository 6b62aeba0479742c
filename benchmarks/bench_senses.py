"""`imagenot senses --input` speed: the command's table path against the path it replaced.

    python benchmarks/bench_senses.py [--copies 4] [--repeats 2] [--threads 1]

Input: the sense dev set (`data/sense_dev.parquet`, 527 captions of 111 lemmas) repeated
`--copies` times, each copy's captions given their own product number (" - 1043") so that every
caption is a new text for the encoder (which embeds each distinct token sequence once). Both paths
share one loaded encoder (MiniLM, the default config's; `--threads` torch threads) and one set of
sense query vectors, embedded before timing: "warm", as a second run of the command is once the
word's queries are in the embedding cache. Timed, alternating, best of `--repeats`:

- old: the command as first written: the tagger's matcher built on every call, each row's lemma
  normalised through pyarrow on its own (~2 ms a row), a Python sort per row;
- new: `senses_command.senses_table` (the matcher built once per process, each distinct lemma
  normalised once in one call, the senses' queries embedded in one call, a vectorised sort).

Both must give the same table. Captions/s counts input rows; the encoder's share is timed apart.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.score import senses_command as new
from imagenot.pipeline.tag.stage import build_matcher
from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import normalize
from imagenot.wordnet.senses import WordSenses

DEV_SET = Path(__file__).parent / "data" / "sense_dev.parquet"


class PerCallSenses(WordSenses):
    """The old lookups: each call normalises its word through pyarrow."""

    def word(self, word: str) -> str:
        return normalize(word) or ""

    def normalize_words(self, words: list[str]) -> None:
        pass


def old_senses_table(table: pa.Table, config, queries) -> pa.Table:
    """The command's table path before this benchmark, kept to measure against."""
    lemmas = table.column("lemma").to_pylist()
    for row, lemma in enumerate(lemmas):
        if not isinstance(lemma, str) or not queries.senses.senses(lemma):
            raise ValueError(f"row {row}: lemma {lemma!r} is not a WordNet noun")
    captions = table.column("caption").to_pylist()
    vectors = new.caption_encoder(queries).encode(captions)
    ranked: list = [None] * len(lemmas)
    by_lemma: dict[str, list[int]] = {}
    for i, lemma in enumerate(lemmas):
        by_lemma.setdefault(lemma, []).append(i)
    for lemma, rows in by_lemma.items():
        wnids = queries.senses.senses(lemma)
        scores = queries.scores(vectors[rows], lemma, wnids)
        for i, row in zip(rows, scores):
            order = sorted(range(len(wnids)), key=lambda j: (-row[j], wnids[j]))
            ranked[i] = (tuple(wnids[j] for j in order), row[order])
    tags = build_matcher(load_index(), config.tagging.ignore_forms).tag(pa.array(captions, pa.string()))
    matched = [forms or [] for forms in tags.matched.to_pylist()]
    return new.decided_table(table, config, queries.senses.index, ranked, matched)


def dev_input(copies: int) -> pa.Table:
    dev = pq.read_table(DEV_SET)
    parts = []
    for k in range(copies):
        captions = [f"{c} - {1000 + 37 * k + i % 37}" for i, c in enumerate(dev.column("caption").to_pylist())]
        parts.append(dev.set_column(dev.column_names.index("caption"), "caption", pa.array(captions, pa.string())))
    return pa.concat_tables(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4, help="copies of the dev set, each a new set of captions")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (runner.torch_threads)")
    args = parser.parse_args()
    config = load_config(None)
    config = config.model_copy(update={"runner": config.runner.model_copy(update={"torch_threads": args.threads})})
    queries = new.scorer(config)
    old_queries = copy.copy(queries)
    old_queries.senses = copy.copy(queries.senses)
    old_queries.senses.__class__ = PerCallSenses
    table = dev_input(args.copies)
    new.senses_table(table, config, queries)  # embeds every sense query, builds the matcher, warms torch
    encoder = new.caption_encoder(queries)
    timings: dict[str, list[float]] = {"old": [], "new": [], "encoder": []}
    for _ in range(args.repeats):
        started = time.perf_counter()
        old = old_senses_table(table, config, old_queries)
        timings["old"].append(time.perf_counter() - started)
        started = time.perf_counter()
        result = new.senses_table(table, config, queries)
        timings["new"].append(time.perf_counter() - started)
        started = time.perf_counter()
        encoder.encode(table.column("caption").to_pylist())
        timings["encoder"].append(time.perf_counter() - started)
        if not result.equals(old):
            raise SystemExit("the two paths give different tables")
    rate = {name: round(table.num_rows / min(seconds), 1) for name, seconds in timings.items()}
    report = {
        "captions": table.num_rows,
        "lemmas": len(set(table.column("lemma").to_pylist())),
        "threads": args.threads,
        "old_captions_per_s": rate["old"],
        "new_captions_per_s": rate["new"],
        "ratio": round(rate["new"] / rate["old"], 2),
        "encoder_alone_captions_per_s": rate["encoder"],
        "seconds": timings,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()

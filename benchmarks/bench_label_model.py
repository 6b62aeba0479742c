"""What the web senses and the label model cost the score stage, per scored caption (issue 51 item 3).

Scores the pairs select keeps on the shared LAION sample (`data/build_dev.yaml`, tagged and selected
once) through the score stage's own `CaptionScorer`, in this process, one torch thread, three ways
back to back: sense contrast over WordNet's senses alone (before issue 51), with the web senses, and
with the web senses and the label model (the defaults). Each way gets an empty embedding cache, so
every caption and sense query is embedded; `--repeats` runs each way that many times and keeps the
least CPU. Reports CPU milliseconds per scored caption for each, and the sense decision's own share
(`sense_seconds`: the contrast and the label model, the encoder's caption pass apart).

    python benchmarks/bench_label_model.py [--limit N] [--repeats 2]

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from real_dev_pairs import DATA, imagenot, resolved_config

from imagenot.pipeline.config.schema import Config, load_config
from imagenot.pipeline.score.stage import CaptionScorer

WAYS = {
    "wordnet_senses": {"web_senses": False, "label_model": None},
    "web_senses": {"web_senses": True, "label_model": None},
    "web_senses_and_label_model": {},  # the defaults
}


def cpu() -> float:
    times = os.times()
    return times.user + times.system


def measure(config: Config, batch: pa.RecordBatch, update: dict, cache: Path) -> dict:
    scoring = config.scoring.model_copy(update={**update, "cache_dir": str(cache)})
    scorer = CaptionScorer(scoring, config.runner, sorted(set(batch.column("wnid").to_pylist())))
    scorer.encoder.encode(["warm up the model"])  # loading the model is not scoring
    started, sense_before = cpu(), scorer.sense_seconds
    for start in range(0, batch.num_rows, 256):
        scorer.score(batch.slice(start, 256))
    seconds = cpu() - started
    return {
        "cpu_ms_per_caption": 1000 * seconds / batch.num_rows,
        "sense_ms": 1000 * (scorer.sense_seconds - sense_before) / batch.num_rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="score only the first N selected pairs")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--corpus", type=Path, help="the LAION sample (default: build_dev.yaml's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        config_path = resolved_config(tmp / "build.yaml", args.corpus, source=DATA / "build_dev.yaml")
        imagenot("tag", "--config", str(config_path), "--out", str(tmp / "run"))
        imagenot("select", "--run", str(tmp / "run"))
        table = pq.read_table(sorted((tmp / "run" / "select" / "selected").glob("*.parquet")))
        batch = table.combine_chunks().to_batches()[0].slice(0, args.limit)
        config = load_config(str(config_path))
        figures = {}
        for name, update in WAYS.items():
            runs = [measure(config, batch, update, tmp / f"cache-{name}-{i}") for i in range(args.repeats)]
            figures[name] = {k: round(min(r[k] for r in runs), 3) for k in runs[0]}
            print(name, figures[name], flush=True)
    base = figures["wordnet_senses"]["cpu_ms_per_caption"]
    report = {
        "captions": batch.num_rows,
        "threads": config.runner.torch_threads,
        "at": time.strftime("%Y-%m-%d %H:%M"),
        **figures,
    }
    report["ratio_to_wordnet_senses"] = {name: round(f["cpu_ms_per_caption"] / base, 3) for name, f in figures.items()}
    print(json.dumps(report))


if __name__ == "__main__":
    main()

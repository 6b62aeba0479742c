"""Caption embedding speed: the pipeline's encoder path against plain sentence-transformers.

Both embed the same captions with the same model (the packaged all-MiniLM-L6-v2) in the same
process. The captions are the TEXT column of a synthetic LAION-schema corpus
(`pipeline.corpus.synth`), which repeats captions the way LAION does (exact duplicates, heavy
tailed, plus chance collisions of short alt texts); the duplicate rate is measured and printed.

- baseline: `model.encode(captions)`, sentence-transformers' plain call (it sorts by length and
  batches by 32).
- pipeline: `CachedEncoder(SentenceTransformerEncoder, fresh cache folder).encode(captions)`:
  each distinct text once, each distinct token sequence once, batches of similar token length,
  and the cold cache written to disk (its cost included).
- onnx: the same path with the model run by ONNX Runtime (`scoring.runtime: onnx`, an export of
  the same weights made locally, outside the timing), target >= 2.5x the baseline; it also
  checks that a caption gets the same bits in batches of 7 as in the default batches.

The embeddings must agree (cosine >= 0.999 for every caption). Runs alternate, best of
`--repeats` counts, so load from other processes hurts both alike. Both run on `--threads` torch
threads (a process-wide setting; the pipeline's default, `runner.torch_threads`, is 1). The last
line is JSON.

    python benchmarks/bench_encoder.py [--captions 20000] [--repeats 1] [--threads 1]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import click
import numpy as np
import pyarrow.parquet as pq

from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.score.cache import CachedEncoder
from imagenot.pipeline.score.encoders import DEFAULT_MODEL, SentenceTransformerEncoder
from imagenot.pipeline.score.onnx_runtime import OnnxEncoder

MIN_COSINE = 0.999
MIN_SPEEDUP = 1.5
MIN_ONNX_SPEEDUP = 2.5


def laion_like_captions(n: int, seed: int, folder: Path) -> list[str]:
    """The first `n` usable captions of a synthetic corpus (rows the reader drops are skipped)."""
    result = synth_corpus(folder, rows=int(n * 1.05) + 100, seed=seed, shard_rows=max(n, 1000))
    captions: list[str] = []
    for shard in result.shards:
        for text in pq.read_table(shard, columns=["TEXT"]).column("TEXT").to_pylist():
            if isinstance(text, str) and text.strip():
                captions.append(text)
    if len(captions) < n:
        raise RuntimeError(f"synthetic corpus gave {len(captions)} usable captions, wanted {n}")
    return captions[:n]


def timed(run) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


@click.command()
@click.option("--captions", "n", default=20_000, show_default=True, help="captions to embed")
@click.option("--repeats", default=1, show_default=True, help="alternating runs; best time counts")
@click.option("--seed", default=0, show_default=True, help="seed of the synthetic corpus")
@click.option("--threads", default=1, show_default=True, help="torch threads, for both paths")
def main(n: int, repeats: int, seed: int, threads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        captions = laion_like_captions(n, seed, Path(tmp) / "corpus")
        encoder = SentenceTransformerEncoder(DEFAULT_MODEL, threads=threads)
        distinct_texts = len(set(captions))
        distinct_inputs = len({tuple(ids) for ids in encoder.tokenizer(captions)["input_ids"]})
        onnx_encoder = OnnxEncoder(encoder, threads)  # exported here once if set-up has not
        encoder.model.encode(captions[:64])  # warm-up, outside the timings
        onnx_encoder.encode(captions[:64])
        baseline_s = pipeline_s = onnx_s = float("inf")
        for repeat in range(repeats):
            seconds, baseline = timed(lambda: encoder.model.encode(captions))
            baseline_s = min(baseline_s, seconds)
            cached = CachedEncoder(encoder, Path(tmp) / f"cache-{repeat}")
            seconds, ours = timed(lambda: cached.encode(captions))
            pipeline_s = min(pipeline_s, seconds)
            onnx_cached = CachedEncoder(onnx_encoder, Path(tmp) / f"onnx-cache-{repeat}")
            seconds, onnx = timed(lambda: onnx_cached.encode(captions))
            onnx_s = min(onnx_s, seconds)
        onnx_encoder.batch_size = 7
        same_bits = bool(np.array_equal(onnx_encoder.encode(captions[:2000]), onnx[:2000]))
    baseline = baseline / np.linalg.norm(baseline, axis=1, keepdims=True)
    result = {
        "captions": n,
        "threads": threads,
        "distinct_texts": distinct_texts,
        "duplicate_rate": round(1 - distinct_texts / n, 4),
        "distinct_token_sequences": distinct_inputs,
        "captions_embedded": cached.embedded,
        "model": encoder.model_id,
        "baseline_captions_per_s": round(n / baseline_s, 1),
        "pipeline_captions_per_s": round(n / pipeline_s, 1),
        "speedup": round(baseline_s / pipeline_s, 3),
        "min_cosine": round(float(np.einsum("ij,ij->i", ours, baseline).min()), 6),
        "onnx_captions_per_s": round(n / onnx_s, 1),
        "onnx_speedup": round(baseline_s / onnx_s, 3),
        "onnx_over_pipeline": round(pipeline_s / onnx_s, 3),
        "onnx_min_cosine": round(float(np.einsum("ij,ij->i", onnx, baseline).min()), 6),
        "onnx_same_bits_in_batches_of_7": same_bits,
    }
    click.echo(
        f"{n} captions, {distinct_texts} distinct ({result['duplicate_rate']:.1%} duplicates), "
        f"{distinct_inputs} distinct token sequences\n"
        f"baseline model.encode: {result['baseline_captions_per_s']} captions/s\n"
        f"pipeline path:         {result['pipeline_captions_per_s']} captions/s "
        f"({result['speedup']}x, target >= {MIN_SPEEDUP}x)\n"
        f"min cosine: {result['min_cosine']} (target >= {MIN_COSINE})\n"
        f"onnx path:             {result['onnx_captions_per_s']} captions/s ({result['onnx_speedup']}x, target >= "
        f"{MIN_ONNX_SPEEDUP}x; {result['onnx_over_pipeline']}x the torch pipeline path), min cosine {result['onnx_min_cosine']}, "
        f"same bits in batches of 7: {same_bits}"
    )
    click.echo(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()

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

- fp32 ceiling: the multiply-adds the ONNX path must do (each distinct token sequence once,
  counted from the model's linear layers and attention) at this core's own float32 matrix
  speed (the best of torch, numpy's BLAS and ONNX Runtime on the model's FFN product, same
  threads): about the most any fp32 path could reach. Printed with the ONNX path's share of it.
- int8: the ONNX export with ONNX Runtime's dynamic int8 quantization (weights per channel,
  activations per tensor), made in the run: the lower-precision route past the ceiling, with
  its cosine against the baseline. Not offered by the pipeline (see benchmarks/README.md).

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

from imagenot.labels.encoders.text import DEFAULT_MODEL, SentenceTransformerEncoder
from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.score.cache import CachedEncoder
from imagenot.pipeline.score.onnx_runtime import OPSET, OnnxEncoder, export_onnx

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


def useful_flops(encoder: SentenceTransformerEncoder, sequences: set[tuple[int, ...]]) -> float:
    """Floating-point operations of one forward pass over each sequence: 2 per weight of every
    linear layer of the transformer's layers per token, plus attention's scores and weighted sum
    (4 x length x hidden per token and layer). The pooler's dense layer is left out: mean pooling
    does not use it."""
    import torch

    transformer = encoder.model[0].auto_model
    linear = sum(m.weight.numel() for m in transformer.encoder.modules() if isinstance(m, torch.nn.Linear))
    config = transformer.config
    tokens = sum(len(s) for s in sequences)
    attention = sum(4 * len(s) ** 2 * config.hidden_size * config.num_hidden_layers for s in sequences)
    return 2.0 * linear * tokens + attention


def matmul_flops_per_s(encoder: SentenceTransformerEncoder, threads: int) -> float:
    """This core's float32 matrix speed: the best of torch, numpy's BLAS and ONNX Runtime on the
    model's widest product (the FFN: 1024 token rows), on `threads` threads, best of 5 each."""
    import onnx
    import onnxruntime
    import torch
    from threadpoolctl import threadpool_limits

    config = encoder.model[0].auto_model.config
    a = np.random.default_rng(0).random((1024, config.hidden_size), dtype=np.float32)
    b = np.random.default_rng(1).random((config.hidden_size, config.intermediate_size), dtype=np.float32)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["a", "b"], ["c"])],
        "ffn",
        [onnx.helper.make_tensor_value_info("a", onnx.TensorProto.FLOAT, a.shape)],
        [onnx.helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, (a.shape[0], b.shape[1]))],
        [onnx.numpy_helper.from_array(b, "b")],
    )
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    model = onnx.helper.make_model(graph, ir_version=8, opset_imports=[onnx.helper.make_opsetid("", OPSET)])
    session = onnxruntime.InferenceSession(model.SerializeToString(), options)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    best = float("inf")
    with threadpool_limits(threads):
        for product in (lambda: ta @ tb, lambda: a @ b, lambda: session.run(None, {"a": a})):
            for _ in range(5):
                best = min(best, timed(lambda product=product: [product() for _ in range(20)])[0])
    return 20 * 2.0 * a.shape[0] * a.shape[1] * b.shape[1] / best


def int8_copy(source: Path, folder: Path) -> str:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = folder / "model-int8.onnx"
    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
    return str(target)


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
        sequences = {
            tuple(ids)
            for ids in encoder.tokenizer(captions, truncation=True, max_length=encoder.max_length)["input_ids"]
        }
        distinct_inputs = len(sequences)
        flops, peak = useful_flops(encoder, sequences), matmul_flops_per_s(encoder, threads)
        onnx_encoder = OnnxEncoder(encoder, threads)  # exported here once if set-up has not
        int8_encoder = OnnxEncoder(encoder, threads, int8_copy(export_onnx(encoder), Path(tmp)))
        encoder.model.encode(captions[:64])  # warm-up, outside the timings
        onnx_encoder.encode(captions[:64])
        int8_encoder.encode(captions[:64])
        baseline_s = pipeline_s = onnx_s = int8_s = float("inf")
        for repeat in range(repeats):
            seconds, baseline = timed(lambda: encoder.model.encode(captions))
            baseline_s = min(baseline_s, seconds)
            cached = CachedEncoder(encoder, Path(tmp) / f"cache-{repeat}")
            seconds, ours = timed(lambda cached=cached: cached.encode(captions))
            pipeline_s = min(pipeline_s, seconds)
            onnx_cached = CachedEncoder(onnx_encoder, Path(tmp) / f"onnx-cache-{repeat}")
            seconds, onnx = timed(lambda onnx_cached=onnx_cached: onnx_cached.encode(captions))
            onnx_s = min(onnx_s, seconds)
            int8_cached = CachedEncoder(int8_encoder, Path(tmp) / f"int8-cache-{repeat}")
            seconds, int8 = timed(lambda int8_cached=int8_cached: int8_cached.encode(captions))
            int8_s = min(int8_s, seconds)
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
        "gflop_useful": round(flops / 1e9, 1),
        "matmul_gflop_per_s": round(peak / 1e9, 1),
        "onnx_share_of_matmul_speed": round(flops / onnx_s / peak, 3),
        "fp32_ceiling_speedup": round(baseline_s / (flops / peak), 3),
        "int8_captions_per_s": round(n / int8_s, 1),
        "int8_speedup": round(baseline_s / int8_s, 3),
        "int8_min_cosine": round(float(np.einsum("ij,ij->i", int8, baseline).min()), 6),
    }
    click.echo(
        f"{n} captions, {distinct_texts} distinct ({result['duplicate_rate']:.1%} duplicates), "
        f"{distinct_inputs} distinct token sequences\n"
        f"baseline model.encode: {result['baseline_captions_per_s']} captions/s\n"
        f"pipeline path:         {result['pipeline_captions_per_s']} captions/s "
        f"({result['speedup']}x, target >= {MIN_SPEEDUP}x)\n"
        f"min cosine: {result['min_cosine']} (target >= {MIN_COSINE})\n"
        f"onnx path:             {result['onnx_captions_per_s']} captions/s ({result['onnx_speedup']}x, target >= "
        f"{MIN_ONNX_SPEEDUP}x; {result['onnx_over_pipeline']}x the torch pipeline path), "
        f"min cosine {result['onnx_min_cosine']}, "
        f"same bits in batches of 7: {same_bits}\n"
        f"fp32 ceiling:          {result['gflop_useful']} GFLOP at this core's {result['matmul_gflop_per_s']} GFLOP/s "
        f"= {result['fp32_ceiling_speedup']}x model.encode; the onnx path runs at "
        f"{result['onnx_share_of_matmul_speed']:.0%} of that speed\n"
        f"int8 onnx (not offered): {result['int8_captions_per_s']} captions/s ({result['int8_speedup']}x), "
        f"min cosine {result['int8_min_cosine']} (target >= {MIN_COSINE})"
    )
    click.echo(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()

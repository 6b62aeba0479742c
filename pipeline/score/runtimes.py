"""Choosing a text encoder: its kind (sentence-transformers or transformers) and the runtime that
runs it (torch, or ONNX Runtime over the same weights)."""

from __future__ import annotations

from imagenot.pipeline.config.model_files import text_model_problem
from imagenot.pipeline.score.encoders import (
    DEFAULT_MODEL,
    EncoderError,
    EncoderKind,
    Runtime,
    SentenceTransformerEncoder,
    TextEncoder,
    TransformersEncoder,
)
from imagenot.pipeline.score.onnx_runtime import OnnxEncoder


def load_encoder(
    kind: EncoderKind = "sentence-transformers", model: str = DEFAULT_MODEL, runtime: Runtime = "torch", **options
) -> TextEncoder:
    """The encoder `kind` for `model` (a local path, a cached hub id or DEFAULT_MODEL), run by
    torch or by ONNX Runtime (`onnx_runtime.py`: the same weights, exported once).

    `options` go to the implementation: `batch_size` and `threads` (torch threads, default 1)
    for both, `pooling` and `max_length` for "transformers".
    """
    if problem := text_model_problem(model):  # preflight's line, also where only a worker can tell
        raise EncoderError(f"scoring.model {model!r}: {problem}")
    if kind == "sentence-transformers":
        encoder = SentenceTransformerEncoder(model, **options)
    elif kind == "transformers":
        encoder = TransformersEncoder(model, **options)
    else:
        raise EncoderError(f"encoder kind must be 'sentence-transformers' or 'transformers', got {kind!r}")
    if runtime == "torch":
        return encoder
    if runtime == "onnx":
        return OnnxEncoder(encoder, options.get("threads", 1))
    raise EncoderError(f"encoder runtime must be 'torch' or 'onnx', got {runtime!r}")

"""Choosing a text encoder: its kind (sentence-transformers or transformers) and the runtime that
runs it (torch, or ONNX Runtime over the same weights), loaded now or at its first use."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from imagenot.labels.encoders.models import text_model_problem
from imagenot.labels.encoders.text import (
    DEFAULT_MODEL,
    EncoderError,
    EncoderKind,
    Runtime,
    SentenceTransformerEncoder,
    TransformersEncoder,
)
from imagenot.labels.senses.encoders import TextEncoder
from imagenot.pipeline.score.onnx_runtime import OnnxEncoder

_KINDS = {"sentence-transformers": SentenceTransformerEncoder, "transformers": TransformersEncoder}


def _checked_kind(kind: EncoderKind, model: str, runtime: Runtime):
    """The encoder class of `kind`, once the model, kind and runtime are known to load offline."""
    if problem := text_model_problem(model):  # preflight's line, also where only a worker can tell
        raise EncoderError(f"scoring.model {model!r}: {problem}")
    if kind not in _KINDS:
        raise EncoderError(f"encoder kind must be 'sentence-transformers' or 'transformers', got {kind!r}")
    if runtime not in ("torch", "onnx"):
        raise EncoderError(f"encoder runtime must be 'torch' or 'onnx', got {runtime!r}")
    return _KINDS[kind]


def load_encoder(
    kind: EncoderKind = "sentence-transformers", model: str = DEFAULT_MODEL, runtime: Runtime = "torch", **options
) -> TextEncoder:
    """The encoder `kind` for `model` (a local path, a cached hub id or DEFAULT_MODEL), run by
    torch or by ONNX Runtime (`onnx_runtime.py`: the same weights, exported once).

    `options` go to the implementation: `batch_size` and `threads` (torch threads, default 1)
    for both, `pooling` and `max_length` for "transformers".
    """
    encoder = _checked_kind(kind, model, runtime)(model, **options)
    return encoder if runtime == "torch" else OnnxEncoder(encoder, options.get("threads", 1))


def lazy_encoder(
    kind: EncoderKind = "sentence-transformers", model: str = DEFAULT_MODEL, runtime: Runtime = "torch", **options
) -> LazyEncoder:
    """`load_encoder`'s encoder, checked now and loaded at its first encode."""
    model_id = _checked_kind(kind, model, runtime).identify(model, **options)
    if runtime == "onnx":
        model_id = OnnxEncoder.identify(model_id)
    return LazyEncoder(model_id, functools.partial(load_encoder, kind, model, runtime, **options))


class LazyEncoder:
    """A text encoder whose model loads at its first encode. Its model id is known before, so a
    caching encoder (`cache.CachedEncoder`) whose texts are all cached never loads the model nor
    imports torch: each Beam worker of a rerun starts in under 3 s instead of about 9
    (`benchmarks/bench_worker_start.py`)."""

    def __init__(self, model_id: str, load: Callable[[], TextEncoder]):
        self.model_id = model_id
        self._load = load

    @functools.cached_property
    def loaded(self) -> TextEncoder:
        return self._load()

    @property
    def dim(self) -> int:
        return self.loaded.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.loaded.encode(texts)

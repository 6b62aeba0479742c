"""What the sense scorers take from their caller: a text encoder (sentences and sense queries) and
a word encoder (the word's vector where it stands). `labels.encoders` (text, spans) and the pipeline's
embedding cache over them are such; the scorers load no model themselves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class TextEncoder(Protocol):
    model_id: str  # stable across runs and machines: keys the embedding cache
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 array (len(texts), dim), each row L2-normalised, row i for texts[i]."""
        ...


class WordEncoder(Protocol):
    model_id: str
    dim: int

    def encode_spans(self, texts: Sequence[str], spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """float32 (len(texts), dim), row i the unit vector of texts[i][start:end] for spans[i]."""
        ...

    def tune(self, parameters: dict[str, np.ndarray]) -> None:
        """Read words through the model with its top layers' parameters (named as in its state dict)
        replaced by these."""
        ...

    def encode_spans_and_texts(
        self, texts: Sequence[str], spans: Sequence[tuple[int, int]], text_encoder: TextEncoder
    ) -> tuple[np.ndarray, np.ndarray]:
        """(`encode_spans`, `text_encoder.encode(texts)`), in one model pass where they share one."""
        ...


class SenseVectorTable(Protocol):
    def vector(self, wnid: str) -> np.ndarray:
        """A noun synset's unit vector (float32) for the context method."""
        ...

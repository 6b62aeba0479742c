"""Contextual embeddings of a word where it stands: a character span of a text, read by the encoder
with the text around it.

A span's vector is the mean, over the word pieces its characters overlap, of the sum of the
model's last `layers` hidden states (LMMS, Loureiro & Jorge 2019, sums BERT's last four), L2
normalised. Each distinct token sequence runs through the model once, in the unpadded
same-length batches of `encoders._SameLengthBatches` on one torch thread, so a span's vector
is the same bits whatever batch it came in. A span no piece overlaps (cut off by `max_length`,
or empty) gets the mean of all the text's pieces.

A trained sense head tunes the model's top layers (`tune`): the word's vector is then read through
the tuned layers, while the model itself stays as it was, so that one pass can also give each
text's sentence embedding (`encode_spans_and_texts`): the frozen model's last layer pooled by the
text encoder, the tuned layers run on the hidden states entering them. Both are the same bits as
the two encoders give apart (tests/test_trained_senses.py).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from imagenot.labels.encoders.models import DEFAULT_MODEL
from imagenot.labels.encoders.text import (
    EncoderError,
    _normalise,
    _SameLengthBatches,
    distinct_sequences,
    load_transformers_model,
)
from imagenot.labels.sense_model.head import LAYER_PREFIX


class PoolingEncoder(Protocol):
    """A text encoder over the same model whose sentence embedding is a pooling of its last layer."""

    model_id: str
    max_length: int

    def encode(self, texts: list[str]) -> np.ndarray: ...

    def pool(self, hidden, batch: dict): ...


class SpanEncoder(_SameLengthBatches):
    """A Hugging Face encoder (AutoModel) over character spans of texts."""

    def __init__(
        self,
        model_name_or_path: str = DEFAULT_MODEL,
        layers: int = 4,
        max_length: int = 128,
        batch_size: int = 64,
        threads: int = 1,
    ):
        self.tokenizer, self.model, model_id = load_transformers_model(model_name_or_path, threads)
        if not 1 <= layers <= self.model.config.num_hidden_layers:
            raise EncoderError(
                f"{model_name_or_path!r} has {self.model.config.num_hidden_layers} layers; cannot sum the last {layers}"
            )
        self.base_id = model_id
        self.model_id = f"{model_id}#spans,layers={layers},max_length={max_length}"
        self.layers = layers
        self.max_length = max_length
        self.batch_size = batch_size
        self.dim = int(self.model.config.hidden_size)
        self.tuned_model = self.model  # the model the word's vector is read through (`tune`)
        self.top: list = []  # the tuned model's tuned top layers

    def tune(self, parameters: dict[str, np.ndarray]) -> None:
        """Read the word's vector through a copy of the model whose top layers take `parameters`
        (named as in the model's state dict, `encoder.layer.<i>.`); the model stays as it is."""
        import torch

        first = min(int(name[len(LAYER_PREFIX) :].split(".")[0]) for name in parameters)
        self.tuned_model = copy.deepcopy(self.model)
        weights = {name: torch.from_numpy(value) for name, value in parameters.items()}
        self.tuned_model.load_state_dict(weights, strict=False)
        self.top = list(self.tuned_model.encoder.layer[first:])

    def encode_spans(self, texts: Sequence[str], spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """float32 (len(texts), dim), row i the vector of texts[i][start:end] for spans[i]."""
        return self._encode(texts, spans, None)[0]

    def encode_spans_and_texts(
        self, texts: Sequence[str], spans: Sequence[tuple[int, int]], text_encoder: PoolingEncoder
    ) -> tuple[np.ndarray, np.ndarray]:
        """(`encode_spans`, `text_encoder.encode(texts)`) from one pass of the model where the text
        encoder runs this model; texts either encoder cuts short it embeds apart."""
        # another model, or a runtime that gives no hidden states (ONNX: no `pool`): two passes
        if text_encoder.model_id.split("#")[0] != self.base_id or not hasattr(text_encoder, "pool"):
            return self.encode_spans(texts, spans), text_encoder.encode(list(texts))
        return self._encode(texts, spans, text_encoder)

    def _encode(self, texts: Sequence[str], spans: Sequence[tuple[int, int]], text_encoder: PoolingEncoder | None):
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32), np.zeros((0, self.dim), dtype=np.float32)
        tokens = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, return_offsets_mapping=True)
        inverse, firsts = distinct_sequences(tokens["input_ids"])
        rows_of: list[list[int]] = [[] for _ in firsts]
        for row, sequence in enumerate(inverse):
            rows_of[sequence].append(row)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        pooled = np.zeros((len(firsts), self.dim), dtype=np.float32)
        for sequences, batch in self.batches(tokens, firsts):
            if text_encoder is None:
                hidden = self.tuned_model(**batch, output_hidden_states=True).hidden_states
            else:
                hidden = self.model(**batch, output_hidden_states=True).hidden_states
                pooled[sequences] = text_encoder.pool(hidden[-1], batch)[: len(sequences)].float().numpy()
                hidden = self._through_top(hidden)
            summed = sum(hidden[-self.layers :]).float().numpy()
            for sequence, states in zip(sequences, summed):
                for row in rows_of[sequence]:
                    out[row] = states[_pieces(tokens["offset_mapping"][row], spans[row])].mean(axis=0)
        if text_encoder is None:
            return _normalise(out), None
        return _normalise(out), self._texts(texts, tokens, _normalise(pooled)[inverse], text_encoder)

    def _through_top(self, hidden: tuple) -> tuple:
        """The frozen model's hidden states with the tuned top layers' in place of its own: the
        tuned layers run on the states entering them (an unpadded batch needs no attention mask)."""
        if not self.top:
            return hidden
        states = list(hidden[: len(hidden) - len(self.top)])
        for layer in self.top:
            out = layer(states[-1], attention_mask=None)
            states.append(out[0] if isinstance(out, tuple) else out)
        return tuple(states)

    def _texts(self, texts: Sequence[str], tokens, pooled: np.ndarray, text_encoder: PoolingEncoder) -> np.ndarray:
        """The pooled rows, but a text that either encoder's `max_length` cuts is embedded by the text
        encoder itself: its tokens are not the ones this pass read."""
        shortest = min(self.max_length, text_encoder.max_length)
        cut = [i for i, ids in enumerate(tokens["input_ids"]) if len(ids) >= shortest]
        if cut:
            pooled[cut] = text_encoder.encode([texts[i] for i in cut])
        return pooled


def _pieces(offsets: list[tuple[int, int]], span: tuple[int, int]) -> np.ndarray:
    """Indices of the word pieces whose characters overlap `span`; all the text's pieces when none
    does (special tokens, whose offsets are empty, never count)."""
    start, end = span
    real = [i for i, (a, b) in enumerate(offsets) if b > a]
    inside = [i for i in real if offsets[i][0] < end and offsets[i][1] > start]
    return np.array(inside or real or [0])

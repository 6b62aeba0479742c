"""Contextual embeddings of a word where it stands: a character span of a text, read by the encoder
with the text around it.

A span's vector is the mean, over the word pieces its characters overlap, of the sum of the
model's last `layers` hidden states (LMMS, Loureiro & Jorge 2019, sums BERT's last four), L2
normalised. Each distinct token sequence runs through the model once, in the unpadded
same-length batches of `encoders._SameLengthBatches` on one torch thread, so a span's vector
is the same bits whatever batch it came in. A span no piece overlaps (cut off by `max_length`,
or empty) gets the mean of all the text's pieces.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from imagenot.pipeline.config.model_files import DEFAULT_MODEL
from imagenot.pipeline.score.encoders import (
    EncoderError,
    _normalise,
    _SameLengthBatches,
    distinct_sequences,
    load_transformers_model,
)


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
        self.model_id = f"{model_id}#spans,layers={layers},max_length={max_length}"
        self.layers = layers
        self.max_length = max_length
        self.batch_size = batch_size
        self.dim = int(self.model.config.hidden_size)

    def encode_spans(self, texts: Sequence[str], spans: Sequence[tuple[int, int]]) -> np.ndarray:
        """float32 (len(texts), dim), row i the vector of texts[i][start:end] for spans[i]."""
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        tokens = self.tokenizer(list(texts), truncation=True, max_length=self.max_length, return_offsets_mapping=True)
        inverse, firsts = distinct_sequences(tokens["input_ids"])
        rows_of: list[list[int]] = [[] for _ in firsts]
        for row, sequence in enumerate(inverse):
            rows_of[sequence].append(row)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for sequences, batch in self.batches(tokens, firsts):
            hidden = self.model(**batch, output_hidden_states=True).hidden_states
            summed = sum(hidden[-self.layers :]).float().numpy()
            for sequence, states in zip(sequences, summed):
                for row in rows_of[sequence]:
                    out[row] = states[_pieces(tokens["offset_mapping"][row], spans[row])].mean(axis=0)
        return _normalise(out)


def _pieces(offsets: list[tuple[int, int]], span: tuple[int, int]) -> np.ndarray:
    """Indices of the word pieces whose characters overlap `span`; all the text's pieces when none
    does (special tokens, whose offsets are empty, never count)."""
    start, end = span
    real = [i for i, (a, b) in enumerate(offsets) if b > a]
    inside = [i for i in real if offsets[i][0] < end and offsets[i][1] > start]
    return np.array(inside or real or [0])

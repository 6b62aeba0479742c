"""The word read where it stands: each noun sense of a caption's word scored against the word's
contextual embedding in the caption (`scoring.sense_method: context`, the default).

The matched surface form's span in the caption (`wordnet.spans.find_span`, the tagger's
normalisation) is embedded with the caption around it (`span_encoder.SpanEncoder`: the mean of
its word pieces over the last `scoring.sense_layers` layers), and a sense's score is its cosine
with the sense's vector (`sense_vectors`: SemCor's training documents, hypernym back-off) plus
`scoring.sense_prior` x log P(sense | word) from WordNet's tagged counts. The fit of a sense is the
cosine alone. Scores are computed row by row in float64 (np.einsum, no BLAS), so a caption's
scores do not depend on the captions batched with it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.score.sense_vectors import SenseVectors, load_sense_vectors
from imagenot.pipeline.score.span_encoder import SpanEncoder
from imagenot.wordnet.senses import WordSenses, word_senses
from imagenot.wordnet.spans import find_span


class ContextSenses:
    """Scores of a word's noun senses where the word stands in its caption."""

    def __init__(
        self,
        scoring: Scoring,
        threads: int = 1,
        senses: WordSenses | None = None,
        encoder: SpanEncoder | None = None,
        vectors: SenseVectors | None = None,
    ):
        self.encoder = encoder or SpanEncoder(
            scoring.model, scoring.sense_layers, scoring.max_length, scoring.batch_size, threads
        )
        self.vectors = vectors or load_sense_vectors(self.encoder)
        self.prior = scoring.sense_prior
        self.senses = senses or word_senses()
        self.embedded = 0  # sense vectors are not embedded at run time: nothing to count apart

    def row_vectors(self, captions: Sequence[str], caption_vectors: np.ndarray | None, forms: Sequence[str]):
        """The word's contextual vector per caption, where `forms[i]` (a normalised surface form;
        "" for none) first stands in captions[i]; the whole caption where it is not found."""
        spans = [find_span(c, f) if f else None for c, f in zip(captions, forms)]
        return self.encoder.encode_spans(list(captions), [s or (0, 0) for s in spans])

    def scores(self, vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """float64 (rows, len(wnids)) scores and fits of each row's vector for each sense of `word`."""
        senses = np.stack([self.vectors.vector(w) for w in wnids]).astype(np.float64)
        fit = np.einsum("nd,sd->ns", np.asarray(vectors, np.float64), senses)
        if not self.prior:
            return fit, fit
        return fit + self.prior * np.array(self.senses.log_prior(word, wnids)), fit

"""The word read where it stands: each noun sense of a caption's word scored against the word's
contextual embedding in the caption (`scoring.sense_method: context`).

The matched surface form's span in the caption (`labels.spans.find_span`, the tagger's
normalisation) is embedded with the caption around it by the word encoder the caller gives (the
`labels.encoders.spans.SpanEncoder`: the mean of its word pieces over the last
`scoring.sense_layers` layers), and a sense's score is its cosine with the sense's vector (the
pipeline's `sense_vectors`: SemCor's training documents, hypernym back-off) plus
`scoring.sense_prior` x log P(sense | word) from WordNet's tagged counts; its fit is the score
without the prior. `scoring.sense_method: both` adds the sentence method's similarity (the
caption's embedding against the sense's query texts, `sentence.SenseQueries`) to the
cosine. Scores are computed row by row in float64 (np.einsum, no BLAS), so a caption's scores do
not depend on the captions batched with it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from imagenot.labels.senses.encoders import SenseVectorTable, WordEncoder
from imagenot.labels.senses.sentence import SenseQueries
from imagenot.labels.senses.settings import SenseSettings
from imagenot.labels.spans import form_spans
from imagenot.wordnet.senses import WordSenses, word_senses


class ContextSenses:
    """Scores of a word's noun senses where the word stands in its caption; with `sentence` (the
    sentence method's queries, `scoring.sense_method: both`), its fit is added to each sense's."""

    def __init__(
        self,
        settings: SenseSettings,
        encoder: WordEncoder,
        vectors: SenseVectorTable,
        senses: WordSenses | None = None,
        sentence: SenseQueries | None = None,
    ):
        self.encoder = encoder
        self.vectors = vectors
        self.prior = settings.prior
        self.senses = senses or word_senses()
        self.sentence = sentence

    @property
    def embedded(self) -> int:
        """Query texts the model embedded (the sentence method's; sense vectors are built at set-up)."""
        return 0 if self.sentence is None else self.sentence.embedded

    def vectors_at(
        self, captions: Sequence[str], spans: Sequence[tuple[int, int]], caption_vectors: np.ndarray | None = None
    ) -> np.ndarray:
        """Per caption, the word's contextual vector at its span; with the sentence method beside,
        the caption's embedding after it (`caption_vectors`, else embedded by its bare encoder)."""
        at = self.encoder.encode_spans(list(captions), list(spans))
        if self.sentence is None:
            return at
        if caption_vectors is None:
            caption_vectors = getattr(self.sentence.encoder, "encoder", self.sentence.encoder).encode(list(captions))
        return np.hstack([at, caption_vectors])

    def row_vectors(self, captions: Sequence[str], caption_vectors: np.ndarray | None, forms: Sequence[str]):
        """`vectors_at` where `forms[i]` first stands in captions[i] (`form_spans`)."""
        return self.vectors_at(captions, form_spans(captions, forms), caption_vectors)

    def prepare(self, senses) -> None:
        """Embed the sentence method's queries of the senses not seen yet, in one call (the sense
        vectors are built at set-up)."""
        if self.sentence is not None:
            self.sentence.prepare(senses)

    def scores(self, vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """float64 (rows, len(wnids)) scores and fits of each row's vector for each sense of `word`."""
        senses = np.stack([self.vectors.vector(w) for w in wnids]).astype(np.float64)
        dim = self.encoder.dim
        fit = np.einsum("nd,sd->ns", np.asarray(vectors[:, :dim], np.float64), senses)
        if self.sentence is not None:
            fit = fit + self.sentence.scores(vectors[:, dim:], word, wnids)[1]
        if not self.prior:
            return fit, fit
        return fit + self.prior * np.array(self.senses.log_prior(word, wnids)), fit

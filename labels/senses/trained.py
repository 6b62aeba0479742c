"""The word's sense read by a model trained for it (`scoring.sense_method: trained`).

A head trained on SemCor's training documents (`labels/sense_model/train.py`; the weights
and what trained them in `labels/sense_model/head.npz` and `head.json`): the word's contextual
vector where it stands (the word encoder the caller gives, the pipeline's `SpanEncoder` as the
context method reads it, with its top layers replaced by the head's tuned ones: `tuned`) against
each noun sense's frozen gloss vector (the mean of the sense queries' embeddings,
`sentence.SenseQueries` with the head's templates). A sense's logit is
`scale x cos(word, gloss) + gloss' W word`, W a learned 384 x 384 map; its score is the
log-probability of a softmax over the word's senses, plus `scoring.sense_sentence_weight` x the
sentence method's similarity (the caption's embedding against the sense's query texts, mean-pooled:
the head reads the word, the sentence what the caption is about), plus `scoring.sense_prior` x
log P(sense | word) counted on SemCor's training documents. The fit (the score stage's `sense_fit`) is the logit
itself: how well the best sense's gloss matches the word where it stands, whatever the others score.

Scores are computed row by row in float64 (np.einsum, no BLAS), so a caption's scores do not
depend on the captions batched with it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np

from imagenot.errors import ImagenotError
from imagenot.labels.sense_model.head import SenseHead, head_digest, load_head
from imagenot.labels.senses.encoders import TextEncoder, WordEncoder
from imagenot.labels.senses.sentence import SenseQueries, with_web_priors
from imagenot.labels.senses.settings import SenseSettings
from imagenot.labels.spans import form_spans
from imagenot.labels.web_senses import NO_WEB_SENSES, WebLexicon
from imagenot.wordnet.semcor import train_log_prior
from imagenot.wordnet.senses import WordSenses, word_senses


def check_encoder(head: SenseHead, encoder: TextEncoder) -> None:
    """The head reads gloss vectors of the text encoder it was trained over, and no other."""
    if encoder.model_id != head.encoder:
        raise ImagenotError(
            f"scoring.sense_method trained: its head was trained over {head.encoder!r}, "
            f"not {encoder.model_id!r} (scoring.model); use that model or another sense method"
        )


def tuned(spans: WordEncoder, head: SenseHead) -> WordEncoder:
    """The word encoder (over the head's `layers`) with the head's tuned top layers in place of the
    model's own, its model id naming the weights."""
    if head.tuned:
        spans.tune(head.tuned)
        spans.model_id += f"#head={head_digest()}"
    return spans


class TrainedSenses:
    """Scores of a word's noun senses by the trained head, where the word stands in its caption."""

    def __init__(
        self,
        settings: SenseSettings,
        encoder: TextEncoder,
        spans: WordEncoder,
        senses: WordSenses | None = None,
        head: SenseHead | None = None,
        web: WebLexicon = NO_WEB_SENSES,
    ):
        """`encoder`: the text encoder of the glosses (and captions); `spans`: the word encoder,
        `tuned` with this head."""
        self.head = head or load_head()
        check_encoder(self.head, encoder)
        self.encoder = spans
        self.senses = senses or word_senses()
        glosses = dataclasses.replace(settings, templates=self.head.templates, pooling="mean")
        self.glosses = SenseQueries(glosses, encoder, self.senses, web)
        self.web = web
        self.sentence_weight = settings.sentence_weight
        self.prior = settings.prior
        self._mapped: dict[str, np.ndarray] = {}  # wnid -> float64 (2, dim): the gloss vector and W' times it

    @property
    def embedded(self) -> int:
        """Query texts the model embedded (the glosses; captions are the span encoder's)."""
        return self.glosses.embedded

    def vectors_at(
        self, captions: Sequence[str], spans: Sequence[tuple[int, int]], caption_vectors: np.ndarray | None = None
    ) -> np.ndarray:
        """Per caption, the word's contextual vector at its span; with a sentence weight, the
        caption's embedding after it (`caption_vectors`, else embedded by the bare encoder in the
        word encoder's pass: one model pass for both)."""
        if not self.sentence_weight or caption_vectors is not None:
            at = self.encoder.encode_spans(list(captions), list(spans))
            return at if not self.sentence_weight else np.hstack([at, caption_vectors])
        encoder = self.glosses.encoder
        bare = getattr(encoder, "encoder", encoder)  # captions are not cached
        return np.hstack(self.encoder.encode_spans_and_texts(list(captions), list(spans), bare))

    def row_vectors(self, captions: Sequence[str], caption_vectors: np.ndarray | None, forms: Sequence[str]):
        """`vectors_at` where `forms[i]` first stands in captions[i] (`form_spans`)."""
        return self.vectors_at(captions, form_spans(captions, forms), caption_vectors)

    def prepare(self, senses) -> None:
        """Embed the glosses of the senses not seen yet, in one encoder call."""
        self.glosses.prepare(senses)

    def _gloss_terms(self, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        missing = [w for w in wnids if w not in self._mapped]
        if missing:
            glosses = self.glosses.vectors(missing).mean(axis=1)
            glosses /= np.linalg.norm(glosses, axis=1, keepdims=True)
            for wnid, gloss in zip(missing, glosses):
                self._mapped[wnid] = np.stack([gloss, self.head.mapped(gloss)])
        stacked = np.stack([self._mapped[w] for w in wnids])
        return stacked[:, 0], stacked[:, 1]

    def scores(self, vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """float64 (rows, len(wnids)) scores (log-probabilities, plus the sentence method's similarity
        times `scoring.sense_sentence_weight`, plus the prior) and fits (the head's logits)."""
        glosses, mapped = self._gloss_terms(wnids)
        dim = self.encoder.dim
        logits = self.head.logits(np.asarray(vectors[:, :dim], np.float64), glosses, mapped)
        shifted = logits - logits.max(axis=1, keepdims=True)
        scores = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        if self.sentence_weight:
            scores = scores + self.sentence_weight * self.glosses.scores(vectors[:, dim:], word, wnids)[1]
        if self.prior:
            scores = scores + self.prior * with_web_priors(functools.partial(train_log_prior, self.senses), word, wnids)
        return scores, logits

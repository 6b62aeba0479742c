"""Sense contrast: a caption kept for synset S must fit S better than every other noun sense of
the word that matched it.

Ways to score a sense (`scoring.sense_method`): `sentence` (the default, `SenseQueries`, here)
scores the whole caption's embedding against query texts of each noun sense of the word (all of
them: candidates or not; `scoring.sense_templates`), pooled (`scoring.sense_pooling`: max or
mean); `context` (`context.ContextSenses`) reads the word where it stands; `both` adds the two;
`trained` (`trained.TrainedSenses`) reads it with the trained head. Each adds `scoring.sense_prior`
x log P(sense | word). The caption's margin is S's score minus the best other sense's, its fit the
best sense's score without the prior; `labels.caption_rules.caption_decision` is the rule that
keeps or drops it.
Sense queries are embedded once per worker (and through the embedding cache, once per model);
captions reuse the embedding their gloss similarity already computed.

Scores are computed row by row in float64 (no BLAS), so a caption's margin does not depend on
the captions batched with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from imagenot.labels.senses.encoders import TextEncoder
from imagenot.labels.senses.settings import SenseSettings
from imagenot.wordnet.queries import query_text
from imagenot.wordnet.senses import WordSenses, word_senses

NO_OTHER_SENSE = np.float32(np.inf)  # the margin of a caption whose word has one noun sense


class SenseQueries:
    """The query vectors of noun senses, embedded on first use and kept."""

    def __init__(self, settings: SenseSettings, encoder: TextEncoder, senses: WordSenses | None = None):
        self.templates = settings.templates
        self.pooling = settings.pooling
        self.prior = settings.prior
        self.encoder = encoder
        self.senses = senses or word_senses()
        self._vectors: dict[str, np.ndarray] = {}  # wnid -> float64 (templates, dim)
        self.embedded = 0  # query texts the model embedded (cache misses), kept apart from captions

    def vectors(self, wnids: Sequence[str]) -> np.ndarray:
        """float64 (len(wnids), templates, dim), embedding the senses not seen yet in one call."""
        missing = sorted(set(wnids) - self._vectors.keys())
        if missing:
            index = self.senses.index
            texts = [query_text(index[w], t, index) for w in missing for t in self.templates]
            before = getattr(self.encoder, "embedded", 0)  # a caching encoder's model calls
            embedded = self.encoder.encode(texts).astype(np.float64).reshape(len(missing), len(self.templates), -1)
            self._vectors.update(zip(missing, embedded))
            self.embedded += getattr(self.encoder, "embedded", 0) - before
        return np.stack([self._vectors[w] for w in wnids])

    def row_vectors(self, captions: Sequence[str], caption_vectors: np.ndarray, forms: Sequence[str]) -> np.ndarray:
        """What a caption's senses are scored with: its embedding, wherever its word stands."""
        return caption_vectors

    def scores(self, caption_vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """float64 (captions, len(wnids)) scores and fits (the scores without the prior): each
        caption's for each sense of `word`."""
        queries = self.vectors(wnids)
        similarity = np.einsum("nd,skd->nsk", np.asarray(caption_vectors, np.float64), queries)
        pooled = similarity.max(axis=2) if self.pooling == "max" else similarity.mean(axis=2)
        if not self.prior:
            return pooled, pooled
        return pooled + self.prior * np.array(self.senses.log_prior(word, wnids)), pooled


class SenseScorer(Protocol):
    """`SenseQueries`, `context.ContextSenses` or `trained.TrainedSenses`."""

    senses: WordSenses
    embedded: int

    def row_vectors(self, captions: Sequence[str], caption_vectors: np.ndarray, forms: Sequence[str]) -> np.ndarray: ...

    def scores(self, vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]: ...


class SenseContrast:
    """Each caption's margin for its synset over the other senses of the word that matched it."""

    def __init__(self, queries: SenseScorer):
        self.queries = queries
        self._groups: dict[tuple[str, frozenset[str]], tuple[str, tuple[str, ...]]] = {}

    def _group(self, wnid: str, matched: Sequence[str]) -> tuple[str, tuple[str, ...], str]:
        """(word, its noun senses, the surface form that matched it) for the synset's lemma the
        caption matched; the synset's first lemma (and no form) when none of its forms is among
        `matched` (a caller that has no `matched` column)."""
        forms = self.queries.senses.forms(wnid)
        words = frozenset(forms[f] for f in matched if f in forms)
        key = (wnid, words)
        if key not in self._groups:
            chosen = sorted(words) or list(self.queries.senses.words(wnid))[:1]
            senses = sorted({s for word in chosen for s in self.queries.senses.senses(word)} | {wnid})
            self._groups[key] = (chosen[0] if chosen else "", tuple(senses))
        word, senses = self._groups[key]
        return word, senses, next((f for f in matched if forms.get(f) == word), "")

    def margins(
        self,
        captions: Sequence[str],
        caption_vectors: np.ndarray,
        wnids: Sequence[str],
        matched: Sequence[Sequence[str]],
    ) -> tuple[list[str | None], np.ndarray, np.ndarray]:
        """(best other sense's wnid or None, float32 margin: inf where the word has no other
        sense, float32 fit of the best sense) per caption."""
        groups = [self._group(wnid, forms or ()) for wnid, forms in zip(wnids, matched)]
        vectors = self.queries.row_vectors(captions, caption_vectors, [form for _, _, form in groups])
        rows: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i, (word, senses, _) in enumerate(groups):
            rows.setdefault((word, senses), []).append(i)
        winner: list[str | None] = [None] * len(wnids)
        margin = np.full(len(wnids), NO_OTHER_SENSE, np.float32)
        fit = np.zeros(len(wnids), np.float32)
        for (word, senses), at in rows.items():
            scores, fits = self.queries.scores(vectors[at], word, senses)
            fit[at] = fits[np.arange(len(at)), scores.argmax(axis=1)].astype(np.float32)
            if len(senses) < 2:
                continue
            own = np.array([senses.index(wnids[i]) for i in at])
            others = scores.copy()
            others[np.arange(len(at)), own] = -np.inf
            best = others.argmax(axis=1)
            margin[at] = (scores[np.arange(len(at)), own] - others[np.arange(len(at)), best]).astype(np.float32)
            for i, b in zip(at, best):
                winner[i] = senses[b]
        return winner, margin, fit

"""Sense contrast: a caption kept for synset S must fit S better than every other noun sense of
the word that matched it.

Each noun sense of the word (all of them: candidates or not) has one or more query texts
(`scoring.sense_templates`); a caption's score for a sense is its cosine similarity with those
queries, pooled (`scoring.sense_pooling`: max or mean), plus `scoring.sense_prior` x log P(sense |
word) from WordNet's tagged counts. The caption's margin is S's score minus the best other
sense's; `filters.caption_rules.caption_decision` is the rule that keeps or drops it. Sense queries are embedded once
per worker (and through the embedding cache, once per model); captions reuse the embedding
their gloss similarity already computed.

Scores are computed row by row in float64 (no BLAS), so a caption's margin does not depend on
the captions batched with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.score.encoders import TextEncoder
from imagenot.wordnet.queries import query_text
from imagenot.wordnet.senses import WordSenses, word_senses

NO_OTHER_SENSE = np.float32(np.inf)  # the margin of a caption whose word has one noun sense


@dataclass(frozen=True)
class SenseScores:
    """One caption's scores for every noun sense of its word, best first."""

    wnids: tuple[str, ...]
    scores: np.ndarray  # float64, as wnids


class SenseQueries:
    """The query vectors of noun senses, embedded on first use and kept."""

    def __init__(self, scoring: Scoring, encoder: TextEncoder, senses: WordSenses | None = None):
        self.templates = tuple(scoring.sense_templates)
        self.pooling = scoring.sense_pooling
        self.prior = scoring.sense_prior
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

    def scores(self, caption_vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> np.ndarray:
        """float64 (captions, len(wnids)): each caption's score for each sense of `word`."""
        queries = self.vectors(wnids)
        similarity = np.einsum("nd,skd->nsk", np.asarray(caption_vectors, np.float64), queries)
        pooled = similarity.max(axis=2) if self.pooling == "max" else similarity.mean(axis=2)
        if self.prior:
            pooled = pooled + self.prior * np.array(self.senses.log_prior(word, wnids))
        return pooled

    def ranked(self, caption_vector: np.ndarray, word: str) -> SenseScores:
        """Every noun sense of `word` for one caption, best first (ties by wnid)."""
        wnids = self.senses.senses(word)
        scores = self.scores(caption_vector[None, :], word, wnids)[0]
        order = sorted(range(len(wnids)), key=lambda i: (-scores[i], wnids[i]))
        return SenseScores(tuple(wnids[i] for i in order), scores[order])


class SenseContrast:
    """Each caption's margin for its synset over the other senses of the word that matched it."""

    def __init__(self, queries: SenseQueries):
        self.queries = queries
        self._groups: dict[tuple[str, frozenset[str]], tuple[str, tuple[str, ...]]] = {}

    def _group(self, wnid: str, matched: Sequence[str]) -> tuple[str, tuple[str, ...]]:
        """(word, its noun senses) for the synset's lemma the caption matched; the synset's first
        lemma when none of its forms is among `matched` (a caller that has no `matched` column)."""
        forms = self.queries.senses.forms(wnid)
        words = frozenset(forms[f] for f in matched if f in forms)
        key = (wnid, words)
        if key not in self._groups:
            chosen = sorted(words) or list(self.queries.senses.words(wnid))[:1]
            senses = sorted({s for word in chosen for s in self.queries.senses.senses(word)} | {wnid})
            self._groups[key] = (chosen[0] if chosen else "", tuple(senses))
        return self._groups[key]

    def margins(
        self, caption_vectors: np.ndarray, wnids: Sequence[str], matched: Sequence[Sequence[str]]
    ) -> tuple[list[str | None], np.ndarray]:
        """(best other sense's wnid or None, float32 margin: inf where the word has no other sense)."""
        rows: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i, (wnid, forms) in enumerate(zip(wnids, matched)):
            rows.setdefault(self._group(wnid, forms or ()), []).append(i)
        winner: list[str | None] = [None] * len(wnids)
        margin = np.full(len(wnids), NO_OTHER_SENSE, np.float32)
        for (word, senses), at in rows.items():
            if len(senses) < 2:
                continue
            scores = self.queries.scores(caption_vectors[at], word, senses)
            own = np.array([senses.index(wnids[i]) for i in at])
            others = scores.copy()
            others[np.arange(len(at)), own] = -np.inf
            best = others.argmax(axis=1)
            margin[at] = (scores[np.arange(len(at)), own] - others[np.arange(len(at)), best]).astype(np.float32)
            for i, b in zip(at, best):
                winner[i] = senses[b]
        return winner, margin

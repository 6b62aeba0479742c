"""Sense contrast: a caption kept for synset S must fit S better than every other noun sense of
the word that matched it.

Ways to score a sense (`scoring.sense_method`): `sentence` (the default, `SenseQueries`, here)
scores the whole caption's embedding against query texts of each noun sense of the word (all of
them: candidates or not; `scoring.sense_templates`), pooled (`scoring.sense_pooling`: max or
mean); `context` (`context.ContextSenses`) reads the word where it stands; `both` adds the two;
`trained` (`trained.TrainedSenses`) reads it with the trained head. Each adds `scoring.sense_prior`
x log P(sense | word). The caption's margin is S's score minus the best other WordNet sense's, its
fit the best WordNet sense's score without the prior; where the scorer reads them (sentence,
trained), the word's senses WordNet lacks (`labels.web_senses`) are scored beside its WordNet ones
and the caption's web margin is S's score minus the best web sense's;
`labels.caption_rules.caption_decision` is the rule that keeps or drops it.
Sense queries are embedded once per worker (and through the embedding cache, once per model);
captions reuse the embedding their gloss similarity already computed.

Scores are computed row by row in float64 (no BLAS), so a caption's margin does not depend on
the captions batched with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple, Protocol

import numpy as np

from imagenot.labels.senses.encoders import TextEncoder
from imagenot.labels.senses.settings import SenseSettings
from imagenot.labels.web_senses import NO_WEB_SENSES, WebLexicon, is_web_sense
from imagenot.labels.web_senses import query_text as web_query_text
from imagenot.wordnet.queries import query_text
from imagenot.wordnet.senses import WordSenses, word_senses

NO_OTHER_SENSE = np.float32(np.inf)  # the margin of a caption whose word has one noun sense


class SenseQueries:
    """The query vectors of noun senses (WordNet's, and the `web` senses it lacks), embedded on first
    use and kept."""

    def __init__(
        self,
        settings: SenseSettings,
        encoder: TextEncoder,
        senses: WordSenses | None = None,
        web: WebLexicon = NO_WEB_SENSES,
    ):
        self.templates = settings.templates
        self.pooling = settings.pooling
        self.prior = settings.prior
        self.encoder = encoder
        self.senses = senses or word_senses()
        self.web = web
        self._vectors: dict[str, np.ndarray] = {}  # sense id -> float64 (templates, dim)
        self.embedded = 0  # query texts the model embedded (cache misses), kept apart from captions

    def text(self, sense: str, template: str) -> str:
        """The query text of a WordNet sense (wnid) or a web sense (`web:...`) for a template."""
        if is_web_sense(sense):
            return web_query_text(self.web[sense], template)
        return query_text(self.senses.index[sense], template, self.senses.index)

    def vectors(self, wnids: Sequence[str]) -> np.ndarray:
        """float64 (len(wnids), templates, dim), embedding the senses not seen yet in one call."""
        missing = sorted(set(wnids) - self._vectors.keys())
        if missing:
            texts = [self.text(w, t) for w in missing for t in self.templates]
            before = getattr(self.encoder, "embedded", 0)  # a caching encoder's model calls
            embedded = self.encoder.encode(texts).astype(np.float64).reshape(len(missing), len(self.templates), -1)
            self._vectors.update(zip(missing, embedded))
            self.embedded += getattr(self.encoder, "embedded", 0) - before
        return np.stack([self._vectors[w] for w in wnids])

    def row_vectors(self, captions: Sequence[str], caption_vectors: np.ndarray, forms: Sequence[str]) -> np.ndarray:
        """What a caption's senses are scored with: its embedding, wherever its word stands."""
        return caption_vectors

    def prepare(self, senses: Iterable[str]) -> None:
        """Embed the query texts of the senses not seen yet, in one encoder call."""
        if wanted := sorted(set(senses)):  # a batch whose words have one sense each wants none
            self.vectors(wanted)

    def scores(self, caption_vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """float64 (captions, len(wnids)) scores and fits (the scores without the prior): each
        caption's for each sense of `word`."""
        queries = self.vectors(wnids)
        similarity = np.einsum("nd,skd->nsk", np.asarray(caption_vectors, np.float64), queries)
        pooled = similarity.max(axis=2) if self.pooling == "max" else similarity.mean(axis=2)
        if not self.prior:
            return pooled, pooled
        return pooled + self.prior * with_web_priors(self.senses.log_prior, word, wnids), pooled


def with_web_priors(log_prior, word: str, senses: tuple[str, ...]) -> np.ndarray:
    """`log_prior(word, wnids)` for the WordNet senses among `senses`; a web sense gets the best of
    them (the tagged counts predate it: it is taken as likely as the word's commonest WordNet
    sense). WordNet's senses keep the values they have without web senses beside them."""
    wordnet = tuple(s for s in senses if not is_web_sense(s))
    priors = dict(zip(wordnet, log_prior(word, wordnet)))
    best = max(priors.values(), default=0.0)
    return np.array([priors.get(s, best) for s in senses])


class SenseScorer(Protocol):
    """`SenseQueries`, `context.ContextSenses` or `trained.TrainedSenses`; `web`: the web senses it
    scores beside WordNet's (`NO_WEB_SENSES` where it cannot: the context method's sense vectors
    come from SemCor)."""

    senses: WordSenses
    embedded: int
    web: WebLexicon

    def row_vectors(self, captions: Sequence[str], caption_vectors: np.ndarray, forms: Sequence[str]) -> np.ndarray: ...

    def prepare(self, senses: Iterable[str]) -> None: ...

    def scores(self, vectors: np.ndarray, word: str, wnids: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]: ...


class Contrast(NamedTuple):
    """Per caption: the best other WordNet sense (None where the word has one), the margin over it
    (inf there), the best WordNet sense's fit, the best web sense (None where the word has none)
    and the margin over it (inf there), and the form of its word that matched."""

    other: list[str | None]
    margin: np.ndarray  # float32
    fit: np.ndarray  # float32
    web: list[str | None]
    web_margin: np.ndarray  # float32
    forms: list[str]  # the surface form that matched the synset ("" where none of `matched` did)


class SenseContrast:
    """Each caption's margin for its synset over the other senses of the word that matched it."""

    def __init__(self, queries: SenseScorer):
        self.queries = queries
        self._groups: dict[tuple[str, frozenset[str]], tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
        self.web = getattr(queries, "web", NO_WEB_SENSES)

    def _group(self, wnid: str, matched: Sequence[str]) -> tuple[str, tuple[str, ...], tuple[str, ...], str]:
        """(word, its noun senses, its web senses, the surface form that matched it) for the synset's
        lemma the caption matched; the synset's first lemma (and no form) when none of its forms is
        among `matched` (a caller that has no `matched` column). The senses are those of every lemma
        the matched form is a form of ("shoes": the plural of shoe, and the lemma shoes), as the
        caption's word may be any of them."""
        words = self.queries.senses
        forms = words.forms(wnid)
        found = frozenset(f for f in matched if f in forms)
        key = (wnid, found)
        if key not in self._groups:
            chosen = sorted({forms[f] for f in found}) or list(words.words(wnid))[:1]
            lemmas = sorted({*chosen, *(w for f in found for w in words.form_words(f))})
            senses = sorted({s for lemma in lemmas for s in words.senses(lemma)} | {wnid})
            web = tuple(dict.fromkeys(s for lemma in lemmas for s in self.web.of_word(lemma)))
            self._groups[key] = (chosen[0] if chosen else "", tuple(senses), web)
        word, senses, web = self._groups[key]
        return word, senses, web, next((f for f in matched if forms.get(f) == word), "")

    def margins(
        self,
        captions: Sequence[str],
        caption_vectors: np.ndarray,
        wnids: Sequence[str],
        matched: Sequence[Sequence[str]],
    ) -> Contrast:
        """Per caption, its synset's contrast with the other senses of its word (`Contrast`)."""
        groups = [self._group(wnid, forms or ()) for wnid, forms in zip(wnids, matched)]
        self.queries.prepare({s for _, senses, web, _ in groups for s in (*senses, *web)})  # one encoder call
        vectors = self.queries.row_vectors(captions, caption_vectors, [form for *_, form in groups])
        rows: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[int]] = {}
        for i, (word, senses, web, _) in enumerate(groups):
            rows.setdefault((word, senses, web), []).append(i)
        winner: list[str | None] = [None] * len(wnids)
        margin = np.full(len(wnids), NO_OTHER_SENSE, np.float32)
        fit = np.zeros(len(wnids), np.float32)
        web_winner: list[str | None] = [None] * len(wnids)
        web_margin = np.full(len(wnids), NO_OTHER_SENSE, np.float32)
        for (word, senses, web), at in rows.items():
            scores, fits = self.queries.scores(vectors[at], word, senses + web)
            scores, web_scores, fits = scores[:, : len(senses)], scores[:, len(senses) :], fits[:, : len(senses)]
            fit[at] = fits[np.arange(len(at)), scores.argmax(axis=1)].astype(np.float32)
            own = np.array([senses.index(wnids[i]) for i in at])
            own_scores = scores[np.arange(len(at)), own]
            if web:
                best_web = web_scores.argmax(axis=1)
                web_margin[at] = (own_scores - web_scores[np.arange(len(at)), best_web]).astype(np.float32)
                for i, b in zip(at, best_web):
                    web_winner[i] = web[b]
            if len(senses) < 2:
                continue
            others = scores.copy()
            others[np.arange(len(at)), own] = -np.inf
            best = others.argmax(axis=1)
            margin[at] = (own_scores - others[np.arange(len(at)), best]).astype(np.float32)
            for i, b in zip(at, best):
                winner[i] = senses[b]
        return Contrast(winner, margin, fit, web_winner, web_margin, [form for *_, form in groups])

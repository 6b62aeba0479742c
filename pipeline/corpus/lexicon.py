"""The WordNet vocabulary the synthetic corpus draws from, ranked for fast Zipf-like sampling.

Synsets are ranked by a seeded weighted permutation (Efraimidis-Spirakis keys u ** (1 / w)) and
drawn Zipf-like by rank: the synset of rank k has probability proportional to
1 / (k + ZIPF_OFFSET). The weights make concrete things (artifacts, people, animals, food...)
rank early and proper names and taxa ("Paris", "genus_Canis") late, as in web captions; all
synsets keep a chance.
"""

from __future__ import annotations

import re

import numpy as np

from imagenot.wordnet.index import NounIndex

ZIPF_OFFSET = 10
CONCRETE_WEIGHT = 4.0  # rank bias for the lexicographer files below
CONCRETE_LEXNAMES = frozenset(
    {
        "noun.artifact",
        "noun.person",
        "noun.animal",
        "noun.food",
        "noun.plant",
        "noun.object",
        "noun.body",
        "noun.location",
        "noun.substance",
    }
)
NAME_WEIGHT = 0.15  # rank bias for synsets whose first lemma is a proper name or a taxon
_TAXON_PREFIXES = (
    "genus_",
    "family_",
    "order_",
    "class_",
    "subclass_",
    "phylum_",
    "division_",
    "subfamily_",
)
FIRST_LEMMA_SHARE = 0.6  # a synset is written with its first lemma this often, else any lemma
_GLOSS_WORDS = 8
_SYLLABLES = (
    "ka",
    "zo",
    "vri",
    "lux",
    "tek",
    "mo",
    "qua",
    "zen",
    "ix",
    "ra",
    "vo",
    "nex",
    "ul",
    "tor",
)
_CODE_LETTERS = "BCDFGHJKLMNPQRSTVWXZ"


def _zipf_cdf(n: int) -> np.ndarray:
    weights = 1.0 / (np.arange(n) + ZIPF_OFFSET)
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


class Lexicon:
    """Ranked synsets, their lemmas, plural forms and glosses, plus invented non-words."""

    def __init__(self, index: NounIndex, rng: np.random.Generator):
        synsets = [s for s in index if s.lemmas]
        weight = np.array([_rank_weight(s.lexname, s.lemmas[0]) for s in synsets])
        order = np.argsort(-(rng.random(len(synsets)) ** (1.0 / weight)), kind="stable")
        self.synsets = [synsets[i] for i in order]  # by rank
        self.wnids = [s.wnid for s in self.synsets]
        self.rank_of = {wnid: rank for rank, wnid in enumerate(self.wnids)}
        self.lemma_synsets = index.lemma_synsets
        self._cdf = _zipf_cdf(len(self.synsets))
        # synsets with a lemma that other synsets share, for captions about another sense
        self.ambiguous_lemmas = [
            [lemma for lemma in s.lemmas if len(self.lemma_synsets[lemma]) > 1] for s in self.synsets
        ]
        self.ambiguous_ranks = np.flatnonzero([bool(lemmas) for lemmas in self.ambiguous_lemmas])
        self._ambiguous_cdf = _zipf_cdf(len(self.ambiguous_ranks))
        self.irregular_plurals: dict[str, str] = {}
        for form, bases in sorted(index.irregular.items()):
            for base in bases:
                self.irregular_plurals.setdefault(base, form)
        lowered = {lemma.lower() for lemma in self.lemma_synsets}
        self.brands = _non_words(rng, lowered, lambda r: "".join(r.choice(_SYLLABLES, r.integers(2, 4))).title())
        self.codes = _non_words(rng, lowered, lambda r: "".join(r.choice(list(_CODE_LETTERS), r.integers(2, 4))))
        self._gloss_context: dict[int, str] = {}

    def draw_ranks(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n synset ranks, Zipf-like."""
        return np.searchsorted(self._cdf, rng.random(n), side="right")

    def draw_ambiguous_ranks(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n ranks of synsets that share a lemma with another synset, Zipf-like among them."""
        return self.ambiguous_ranks[np.searchsorted(self._ambiguous_cdf, rng.random(n), side="right")]

    def lemma(self, rank: int, u: float) -> str:
        """One of the synset's lemmas for the uniform draw u: the first one most often."""
        lemmas = self.synsets[rank].lemmas
        if u < FIRST_LEMMA_SHARE or len(lemmas) == 1:
            return lemmas[0]
        return lemmas[1 + int((u - FIRST_LEMMA_SHARE) / (1 - FIRST_LEMMA_SHARE) * (len(lemmas) - 1))]

    def plural(self, lemma: str) -> tuple[str, str]:
        """(plural spelling, "irregular_plural" | "plural"), WordNet's underscores kept."""
        if lemma in self.irregular_plurals:
            return self.irregular_plurals[lemma], "irregular_plural"
        head, of, tail = lemma.partition("_of_")  # "rate_of_exchange" -> "rates_of_exchange"
        rest, sep, last = head.rpartition("_")
        if last in self.irregular_plurals:  # "field_mouse" -> "field_mice"
            return rest + sep + self.irregular_plurals[last] + of + tail, "irregular_plural"
        return rest + sep + _regular_plural(last) + of + tail, "plural"

    def gloss_context(self, rank: int) -> str:
        """The first clause of the synset's gloss, at most a few words: caption context."""
        if rank not in self._gloss_context:
            clause = re.split(r"[;(]", self.synsets[rank].gloss, maxsplit=1)[0]
            self._gloss_context[rank] = " ".join(clause.split()[:_GLOSS_WORDS]).rstrip(",:")
        return self._gloss_context[rank]


def _rank_weight(lexname: str, first_lemma: str) -> float:
    weight = CONCRETE_WEIGHT if lexname in CONCRETE_LEXNAMES else 1.0
    if first_lemma[0].isupper() or first_lemma.startswith(_TAXON_PREFIXES):
        weight *= NAME_WEIGHT
    return weight


def _regular_plural(word: str) -> str:
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if len(word) > 1 and word[-1] == "y" and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _non_words(rng: np.random.Generator, lemmas: set[str], make, count: int = 300) -> list[str]:
    """`count` distinct invented words (brand names, model codes) that are no WordNet lemma."""
    found: dict[str, None] = {}
    while len(found) < count:
        word = make(rng)
        if word.lower() not in lemmas:
            found[word] = None
    return list(found)

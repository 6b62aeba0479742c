"""The noun senses of a word: every noun synset with a lemma that reads the same once normalised
("crane" -> the writer, the poet, the constellation, the machine, the bird), and how often
WordNet's tagged corpus used each sense for the word (`Lemma.count()`), for a sense prior."""

from __future__ import annotations

import functools
import math

from imagenot.bulk import without_gc
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.lemmas import inflections, irregular_forms, is_common_noun, normalize, normalize_all


class WordSenses:
    """Built once per process from the index (a few seconds: every lemma is normalised)."""

    def __init__(self, index: NounIndex):
        self.index = index
        lemmas = list(index.lemma_synsets)
        senses: dict[str, dict[str, int]] = {}  # word -> wnid -> tagged count of that sense for the word
        common: set[str] = set()
        for lemma, word in zip(lemmas, normalize_all(lemmas)):
            if not word:
                continue
            for wnid in index.lemma_synsets[lemma]:
                synset = index[wnid]
                count = synset.lemma_counts[synset.lemmas.index(lemma)] if synset.lemma_counts else 0
                senses.setdefault(word, {})[wnid] = senses.get(word, {}).get(wnid, 0) + count
            if is_common_noun(lemma):
                common.add(word)
        self._senses = senses
        self._common = common
        self._irregular = irregular_forms(index)
        self._forms: dict[str, dict[str, str]] = {}  # memo of forms(), per instance
        self._words: dict[str, str] = {}  # memo of normalize(): a word as given -> as the table keys it
        self._form_words: dict[str, tuple[str, ...]] | None = None  # surface form -> lemmas, built on first use

    def word(self, word: str) -> str:
        """`word` normalised as the table's keys are ("Hot_Dog" -> "hot dog"), each spelling once."""
        if word not in self._words:
            self._words[word] = normalize(word) or ""
        return self._words[word]

    def normalize_words(self, words: list[str]) -> None:
        """Normalise the spellings in `words` not seen yet in one call (pyarrow's kernel costs
        about as much for one string as for thousands)."""
        new = list(dict.fromkeys(w for w in words if w not in self._words))
        self._words.update(zip(new, (w or "" for w in normalize_all(new))))

    def words(self, wnid: str) -> tuple[str, ...]:
        """The synset's lemmas, normalised."""
        return tuple(dict.fromkeys(w for w in normalize_all(self.index[wnid].lemmas) if w))

    def senses(self, word: str) -> tuple[str, ...]:
        """Every noun sense of `word` (any spelling: "Hot_Dog", "hot dog"), sorted by wnid; () if none."""
        return tuple(sorted(self._senses.get(self.word(word), {})))

    def forms(self, wnid: str) -> dict[str, str]:
        """Each surface form the tagger matches for the synset's lemmas -> the lemma (normalised)."""
        if wnid not in self._forms:
            self._forms[wnid] = {form: word for word in self.words(wnid) for form in self.word_forms(word)}
        return self._forms[wnid]

    def word_forms(self, word: str) -> tuple[str, ...]:
        """The surface forms the tagger matches for a normalised lemma: itself first, then its
        plurals (common nouns) and noun.exc's forms of it, sorted."""
        plurals = inflections(word, self._irregular) if word in self._common else set()
        return (word, *sorted((plurals | set(self._irregular.get(word, ()))) - {word}))

    def form_words(self, form: str) -> tuple[str, ...]:
        """The lemmas (normalised, sorted) that a surface form in any spelling ("Adventures",
        "Mens") is a form of, as the tagger matches it; () when it matches none."""
        if self._form_words is None:
            self._form_words = self._form_table()
        return self._form_words.get(self.word(form), ())

    @without_gc
    def _form_table(self) -> dict[str, tuple[str, ...]]:
        table: dict[str, set[str]] = {}
        for word in self._senses:
            for surface in self.word_forms(word):
                table.setdefault(surface, set()).add(word)
        return {surface: tuple(sorted(words)) for surface, words in table.items()}

    def log_prior(self, word: str, wnids: tuple[str, ...]) -> list[float]:
        """log P(sense | word) from the tagged counts, add-one smoothed over `wnids`."""
        counts = self._senses.get(self.word(word), {})
        total = sum(counts.get(w, 0) for w in wnids) + len(wnids)
        return [math.log((counts.get(w, 0) + 1) / total) for w in wnids]


@functools.lru_cache(maxsize=1)
@without_gc
def word_senses() -> WordSenses:
    """WordNet 3.0's, built once per process."""
    return WordSenses(load_index())


def sense_label(index: NounIndex, wnid: str) -> str:
    """A synset's name with what kind of thing it is: "crane.n.04 (lifting device)"."""
    synset = index[wnid]
    kind = index[synset.hypernyms[0]].lemmas[0].replace("_", " ") if synset.hypernyms else synset.gloss[:30]
    return f"{synset.name} ({kind})"

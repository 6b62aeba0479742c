""" "None of these": the caption's word, where it stands, names none of its WordNet noun senses.

On raw alt-text a matched word is often a name of a brand, product, company, team or work
("Cartier" the watch brand, "Corvette" the car), a sense WordNet 3.0 lacks (desktop "wallpaper",
"Mac" the computer), a letter or abbreviation ("J.", "Pt."), or a colour or material name
modifying another noun ("Poppy Orange"). No single cue says so, but several together do. A
logistic model combines, for one (caption, matched form, synset) pair:

- where the word stands: capitalised inside a caption written in lower case (`capitalised`),
  in a run of capitalised words there (`in_title_run`), after a given name (`after_given_name`),
  in capitals in a caption that is not (`all_capitals`), one or two letters or an abbreviation
  with a full stop (`short`), next to a word holding a digit (`beside_digits`: model numbers,
  SKUs, sizes), before a colour word (`beside_modifier`: "Poppy Orange"), before another noun
  that it modifies (`before_noun`: "Stock Photo", "Series Bookcase"), in a caption of three
  words or fewer (`few_words`), in a caption whose words are mostly not English (`not_english`);
  whether WordNet spells the synset's lemma with a capital (`proper_sense`); how often WordNet's
  tagged corpus uses the word as a noun against its other parts of speech (`noun_share`: "dry",
  "portable" are mostly adjectives) and whether it ever tagged it as a noun (`untagged_noun`),
  both taken as a noun's where the caption writes the word as WordNet spells a capitalised lemma
  ("LED", not the verb "led");
- how the corpus writes the form (`FormStats`, counted over every tagged row before the pairs are
  decided): the share of its occurrences in lower-case captions that are capitalised
  (`corpus_capitalised`), in capitals (`corpus_capitals`), next to a digit (`corpus_beside_digits`),
  each shrunk toward the corpus-wide rate by `PRIOR_ROWS` pseudo-occurrences, so a form seen
  twice says little and one seen thousands of times says a lot.

The weights are `none_of_these_model.py`, fit by `benchmarks/fit_none_of_these.py` on the judged
real dev pairs; a pair whose probability reaches the threshold (`selection.caption_rules.
none_of_these_threshold`) is dropped as `none_of_these`, counted like a caption rule
(`labels.caption_rules`). `none_of_these_scores` gives the probability and the decision per pair
to any caller (`imagenot senses`, the audit, the benchmarks).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

FEATURES = (
    "capitalised",
    "in_title_run",
    "after_given_name",
    "all_capitals",
    "short",
    "beside_digits",
    "beside_modifier",
    "before_noun",
    "few_words",
    "not_english",
    "proper_sense",
    "noun_share",
    "untagged_noun",
    "corpus_capitalised",
    "corpus_capitals",
    "corpus_beside_digits",
)
STAT_KINDS = ("rows", "in_lower_case", "capitalised", "capitals", "beside_digits")
PRIOR_ROWS = 4.0  # pseudo-occurrences at the corpus-wide rate added to a form's own counts
MIN_LOWER_SHARE = 0.5  # a caption whose words mostly start in lower case: a capital there means something
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


@dataclass(frozen=True)
class Words:
    """The word lists the features read (lower-cased)."""

    given_names: frozenset[str] = frozenset()
    modifiers: frozenset[str] = frozenset()  # colour and material words
    is_english: Callable[[str], bool] = lambda word: True
    tagged_counts: Callable[[str], tuple[int, int]] = lambda word: (0, 0)  # (as a noun, in all parts of speech)
    is_noun: Callable[[str], bool] = lambda word: False  # WordNet has the word (inflected or not) as a noun


@dataclass(frozen=True)
class FormStats:
    """Per normalised form, how the corpus writes it: kind (STAT_KINDS) -> occurrences."""

    counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # kind -> form -> n

    def rates(self) -> dict[str, float]:
        """The corpus-wide rate of each shared cue: what a form never seen is given."""
        total = {kind: sum(self.counts.get(kind, {}).values()) for kind in STAT_KINDS}
        lower = total["in_lower_case"]
        return {
            "capitalised": total["capitalised"] / lower if lower else 0.0,
            "capitals": total["capitals"] / total["rows"] if total["rows"] else 0.0,
            "beside_digits": total["beside_digits"] / total["rows"] if total["rows"] else 0.0,
        }


@dataclass(frozen=True)
class NoneOfThese:
    """The fitted model, its threshold, and the corpus's form statistics."""

    weights: Mapping[str, float]
    bias: float
    threshold: float
    words: Words = Words()
    stats: FormStats = FormStats()
    rates: Mapping[str, float] = field(default_factory=dict)  # FormStats.rates() of `stats`

    def with_stats(self, stats: FormStats) -> NoneOfThese:
        return NoneOfThese(self.weights, self.bias, self.threshold, self.words, stats, stats.rates())

    def probability(self, features: Mapping[str, float]) -> float:
        z = self.bias + sum(self.weights.get(name, 0.0) * value for name, value in features.items())
        return 1.0 / (1.0 + math.exp(-z))


def tokens(caption: str) -> list[tuple[int, int]]:
    """(start, end) of each word of the caption."""
    return [m.span() for m in _TOKEN.finditer(caption)]


def lower_case_share(caption: str, spans: list[tuple[int, int]]) -> float:
    """The share of the caption's alphabetic words that start in lower case."""
    initials = [caption[s] for s, _ in spans if caption[s].isalpha()]
    return sum(c.islower() for c in initials) / len(initials) if initials else 0.0


def _around(spans: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """Positions of the first and last token of the span."""
    first = next((i for i, (s, e) in enumerate(spans) if e > start), len(spans))
    last = max(first, next((i for i in range(len(spans) - 1, -1, -1) if spans[i][0] < end), first))
    return first, last


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper()


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


@dataclass(frozen=True)
class _Caption:
    """A caption's words and their case, read once for all its forms."""

    text: str
    spans: list[tuple[int, int]]
    words: list[str]
    lower_share: float

    @classmethod
    def read(cls, text: str) -> _Caption:
        spans = tokens(text)
        return cls(text, spans, [text[s:e] for s, e in spans], lower_case_share(text, spans))

    def cues(self, first: int, last: int) -> dict[str, bool]:
        """The cues of the occurrence at word positions first..last that the corpus statistics count."""
        text = self.text[self.spans[first][0] : self.spans[last][1]]
        in_lower = self.lower_share >= MIN_LOWER_SHARE and first > 0
        neighbours = [self.words[i] for i in (first - 1, last + 1) if 0 <= i < len(self.words)]
        return {
            "in_lower_case": in_lower,
            "capitalised": in_lower and _is_capitalised(text),
            "capitals": text.isupper() and len(text) >= 2 and self.lower_share > 0,
            "beside_digits": any(_has_digit(word) for word in neighbours),
        }


def form_statistics(captions: Iterable[str | None], matched: Iterable[list[str] | None]) -> dict[str, dict[str, int]]:
    """kind -> form -> occurrences, over rows of captions and their matched forms (the tag stage's
    `matched`); each form's first occurrence in a caption is counted."""
    counts = {kind: Counter() for kind in STAT_KINDS}
    for caption, forms in zip(captions, matched):
        if not caption or not forms:
            continue
        read = _Caption.read(caption)
        lowered = [word.lower().replace("'", "") for word in read.words]
        for form in set(forms):
            at = _locate(form.split(" "), lowered)
            if at is None:
                continue
            cues = read.cues(*at)
            counts["rows"][form] += 1
            for kind, present in cues.items():
                counts[kind][form] += present
    return {kind: {form: n for form, n in sorted(c.items()) if n} for kind, c in counts.items()}


def _locate(form_words: list[str], lowered: list[str]) -> tuple[int, int] | None:
    """First and last token position of the form's words in the caption's lower-cased words (a
    last word may carry a plural ending the form lacks)."""
    k = len(form_words)
    for i in range(len(lowered) - k + 1):
        if lowered[i : i + k - 1] == form_words[:-1] and lowered[i + k - 1].startswith(form_words[-1]):
            return i, i + k - 1
    return None


def form_key(text: str) -> str:
    """A caption's span as the tag stage normalises a form: lower case, apostrophes out, words
    apart by one space."""
    return " ".join(w.replace("'", "") for w in _TOKEN.findall(text.lower()))


def pair_features(caption: str, start: int, end: int, lemmas: tuple[str, ...], model: NoneOfThese) -> dict[str, float]:
    """The features (FEATURES) of the word at caption[start:end] kept for a synset whose lemmas
    WordNet spells as `lemmas`."""
    read = _Caption.read(caption)
    text, words = caption[start:end], read.words
    first, last = _around(read.spans, start, end)
    cues = read.cues(first, last)
    before = words[first - 1] if first > 0 else ""
    after = words[last + 1] if last + 1 < len(words) else ""
    joined = caption[end : read.spans[last + 1][0]] if last + 1 < len(words) else ""
    letters = sum(c.isalpha() for c in text)
    abbreviation = caption[end : end + 1] == "." and letters <= 3 and _is_capitalised(text)
    english = [model.words.is_english(w.lower()) for w in words if w.isalpha()]
    form = form_key(text)
    # written as WordNet spells a capitalised lemma ("LED", "Alabama"): the synset's own name, whatever
    # the lower-cased word's tagged counts say ("led", a verb)
    own_spelling = any(not lemma.islower() and text.startswith(lemma.replace("_", " ")) for lemma in lemmas)
    noun, tagged = (1, 1) if own_spelling else model.words.tagged_counts(form.replace(" ", "_"))
    return {
        "capitalised": float(cues["capitalised"]),
        "in_title_run": float(cues["capitalised"] and (_is_capitalised(before) or _is_capitalised(after))),
        "after_given_name": float(_is_capitalised(before) and before.lower() in model.words.given_names),
        "all_capitals": float(cues["capitals"] and not any(lemma.isupper() for lemma in lemmas)),
        "short": float(letters <= 2 or abbreviation),
        "beside_digits": float(cues["beside_digits"]),
        "beside_modifier": float(after.lower() in model.words.modifiers),
        "before_noun": float(joined.strip() == "" and after.isalpha() and model.words.is_noun(after.lower())),
        "few_words": float(len(words) <= 3),
        "not_english": 1.0 - sum(english) / len(english) if english else 0.0,
        "proper_sense": float(any(_is_capitalised(lemma) for lemma in lemmas)),
        "noun_share": (noun + 1) / (tagged + 2),
        "untagged_noun": float(noun == 0),
        "corpus_capitalised": _shrunk(model, form, "capitalised", "in_lower_case"),
        "corpus_capitals": _shrunk(model, form, "capitals", "rows"),
        "corpus_beside_digits": _shrunk(model, form, "beside_digits", "rows"),
    }


def _shrunk(model: NoneOfThese, form: str, kind: str, out_of: str) -> float:
    counts = model.stats.counts
    k, n = counts.get(kind, {}).get(form, 0), counts.get(out_of, {}).get(form, 0)
    return (k + PRIOR_ROWS * model.rates.get(kind, 0.0)) / (n + PRIOR_ROWS)


def none_of_these_scores(
    pairs: Iterable[tuple[str, int, int, tuple[str, ...]]], model: NoneOfThese
) -> list[tuple[float, bool]]:
    """Per pair (caption, span start, span end, the synset's lemmas as WordNet spells them), the
    probability that the word names none of its noun senses and whether it reaches the threshold."""
    scores = []
    for caption, start, end, lemmas in pairs:
        p = model.probability(pair_features(caption, start, end, lemmas, model))
        scores.append((p, p >= model.threshold))
    return scores

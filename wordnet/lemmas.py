"""Normalised surface forms of every WordNet noun lemma: the table the caption tagger matches.

`normalize_text` is THE normalisation; captions and lemmas both go through it (the tagger's
ASCII fast path is derived from it and tested against it), so "go-kart", "Go Kart" and
"go_kart" all become "go kart", and "jack-o'-lantern", "Jack-O-Lantern" and "jack o lantern"
all become "jack o lantern":

- Unicode NFKD, then combining marks are dropped: "café" -> "cafe", "ﬁsh" -> "fish",
  "ｃａｔ" (full width) -> "cat".
- Invisible format characters are deleted, not split on: zero-width spaces and joiners, soft
  hyphens, BOMs, direction marks ("ca\u200bt" -> "cat", "cof\u00adfee" -> "coffee"). They sit
  inside words where a reader sees none; as separators they would make one-letter words.
- Lower-case.
- Apostrophes (' ’ ‘ ʼ) are deleted, not split on, and so is a possessive "'s" ending a word:
  "o'clock" -> "oclock", "Women's" -> "women", "dogs'" -> "dogs", "rock 'n' roll" ->
  "rock n roll". Splitting instead would turn every "'s" into the lemma "s".
- Every other character that is not a letter or digit (hyphen, underscore, period, slash, ...)
  separates words, and runs of separators collapse to one space: "St. Bernard" -> "st bernard",
  "U.S." -> "u s", "4-wheel drive" -> "4 wheel drive", "Ctrl-Alt-Del" -> "ctrl alt del".
  Letters outside ASCII that do not decompose stay letters ("ø", "日本").

Inflections (`surface_forms`): every lemma whose last word is lower-case (a common noun) also
gets plural forms of that last word, and of the head before a preposition ("birds of
paradise", "mothers in law"); proper nouns ("Paris", "Saint Bernard", "U.S.") get none.
Regular candidates are generous (extra forms that never occur cost nothing): "s"; "es" after
s/x/z/ch/sh; consonant+y -> "ies"; f/fe -> "ves" besides "s"; o -> "es" besides "s"; -man ->
-men besides "s". Words shorter than three letters get no regular plural, because "a", "i",
"hi" would otherwise claim "as", "is", "his". WordNet's irregular forms (noun.exc) apply to
whole lemmas ("mice" -> "mouse", "aides-de-camp" -> "aide-de-camp", any capitalisation) and to
the same words inside common-noun lemmas ("meadow mice"). A surface form may name several
lemmas ("glasses" is a lemma and the plural of "glass"): it tags the synsets of all of them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from imagenot.bulk import without_gc
from imagenot.wordnet.index import NounIndex

_APOSTROPHES = "'\u2019\u2018\u02bc"  # ' ’ ‘ ʼ
# An apostrophe goes; so does a possessive "'s" when a separator (kept) or the end follows.
_APOSTROPHE_OR_POSSESSIVE = rf"[{_APOSTROPHES}](?:s([^\p{{L}}\p{{N}}{_APOSTROPHES}]|$))?"
_SEPARATORS = r"[^\p{L}\p{N}]+"
_MIN_PLURAL_STEM = 3
_PREPOSITIONS = frozenset({"of", "in", "on", "at", "for", "to", "from", "with", "by", "de"})
_LEMMA_WORDS = re.compile(r"[^A-Za-z0-9']+")


def normalize_text(texts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Normalise a string array (vectorised); nulls stay null."""
    decomposed = pc.utf8_lower(pc.utf8_normalize(texts, form="NFKD"))
    unmarked = pc.replace_substring_regex(decomposed, r"[\p{M}\p{Cf}]+", "")
    joined = pc.replace_substring_regex(unmarked, _APOSTROPHE_OR_POSSESSIVE, r"\1")
    return pc.utf8_trim(pc.replace_substring_regex(joined, _SEPARATORS, " "), " ")


def normalize(text: str) -> str:
    """`normalize_text` for one string."""
    return normalize_text(pa.array([text], pa.string()))[0].as_py()


def regular_plurals(word: str) -> list[str]:
    """Regular plural candidates of a lower-case word (see the module docstring)."""
    if len(word) < _MIN_PLURAL_STEM or not word.isalpha():
        return []
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return [word + "es"]
    if word.endswith("y") and word[-2] not in "aeiou":
        return [word[:-1] + "ies"]
    if word.endswith("fe"):
        return [word + "s", word[:-2] + "ves"]
    if word.endswith("f"):
        return [word + "s", word[:-1] + "ves"]
    if word.endswith("o"):
        return [word + "s", word + "es"]
    if word.endswith("man"):
        return [word + "s", word[:-3] + "men"]
    return [word + "s"]


def is_common_noun(lemma: str) -> bool:
    """True when the lemma's last word, as WordNet spells it, is lower-case ("golden_retriever")."""
    last = _LEMMA_WORDS.split(lemma.strip("_-. "))[-1]
    return last.islower()


@functools.lru_cache(maxsize=1)
@without_gc
def surface_forms(index: NounIndex) -> dict[str, tuple[str, ...]]:
    """Every normalised surface form of every noun lemma -> the sorted wnids it tags: built once per
    index (seconds), shared by every matcher of the process (plan's and tag's in one build), so
    read only."""
    lemma_synsets = index.lemma_synsets
    lemmas = list(lemma_synsets)
    normalised = normalize_all(lemmas)
    table: dict[str, set[str]] = {}
    base_wnids: dict[str, set[str]] = {}  # the lemmas alone, without inflections
    irregular = irregular_forms(index)
    for lemma, form in zip(lemmas, normalised):
        wnids = lemma_synsets[lemma]
        _add(table, form, wnids)
        _add(base_wnids, form, wnids)
        if is_common_noun(lemma):
            for plural in inflections(form, irregular):
                _add(table, plural, wnids)
    # Whole-lemma entries of noun.exc, for bases inflected elsewhere than in their last word
    # ("aides-de-camp") and bases WordNet capitalises ("Ashkenazim" -> "Ashkenazi").
    for base, forms in irregular.items():
        for form in forms:
            _add(table, form, base_wnids.get(base, ()))
    return {form: tuple(sorted(wnids)) for form, wnids in sorted(table.items()) if wnids}


def inflections(word: str, irregular: dict[str, list[str]]) -> set[str]:
    """The plural forms `surface_forms` gives a normalised common-noun lemma ("crane" -> "cranes");
    `irregular`: `irregular_forms(index)`."""
    words = word.split(" ")
    return {
        " ".join([*words[:i], plural, *words[i + 1 :]])
        for i in _inflected_words(words)
        for plural in regular_plurals(words[i]) + irregular.get(words[i], [])
    }


def _inflected_words(words: list[str]) -> set[int]:
    """Which words of a common-noun lemma take the plural: the last, and a head before a
    preposition ("bird of paradise", "mother in law", "man of war")."""
    heads = (i - 1 for i, word in enumerate(words) if i and word in _PREPOSITIONS)
    return {len(words) - 1, next(heads, len(words) - 1)}


def irregular_forms(index: NounIndex) -> dict[str, list[str]]:
    """noun.exc inverted and normalised: base ("mouse", "aide de camp") -> forms ("mice", ...)."""
    pairs = [(form, base) for form, bases in index.irregular.items() for base in bases]
    forms = normalize_all(form for form, _ in pairs)
    inverted: dict[str, list[str]] = {}
    for form, base in zip(forms, normalize_all(base for _, base in pairs)):
        inverted.setdefault(base, []).append(form)
    return inverted


def normalize_all(texts: Iterable[str]) -> list[str]:
    return normalize_text(pa.array(list(texts), pa.string())).to_pylist()


def _add(table: dict[str, set[str]], form: str, wnids: Iterable[str]) -> None:
    if form:
        table.setdefault(form, set()).update(wnids)

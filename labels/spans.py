"""Where a matched surface form stands in a caption as written: its character span.

The tagger matches normalised words (`lemmas.normalize_text`: case, accents, apostrophes and
separators folded), so "Cranes," and "CRANE'S" both match the form "cranes"/"crane". Here each
word of the caption as written (a run of letters, digits, marks and apostrophes) is normalised
on its own, the same way, and the form's words are looked for in that sequence: the span runs
from the first matched word's first character to the last one's end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from imagenot.wordnet.lemmas import normalize_all

_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f\u00ad\u200b-\u200f\u2060\ufeff'\u2019\u2018\u02bc])+")


Words = list[tuple[str, int, int]]  # (normalised word, start, end) of a caption's words, in order


def caption_words(captions: Sequence[str]) -> list[Words]:
    """Per caption, its words normalised; a written word that normalises to several ("½" -> "1 2")
    gives each of them its span. One normalisation call for all the captions' words (pyarrow's
    kernel costs about as much for one string as for thousands)."""
    found = [[(m.group(), m.start(), m.end()) for m in _WORD.finditer(caption)] for caption in captions]
    normalised = iter(normalize_all(text for words in found for text, _, _ in words))
    out = []
    for words in found:
        out.append(
            [(part, start, end) for (_, start, end) in words for part in (next(normalised) or "").split(" ") if part]
        )
    return out


def find_span(caption: str, form: str, occurrence: int = 0, words: Words | None = None) -> tuple[int, int] | None:
    """The character span of the `occurrence`-th (from 0) place where the normalised surface form
    stands in `caption` (its `caption_words`, when already read), or None where it does not."""
    found = _places(caption_words([caption])[0] if words is None else words, form)
    return found[occurrence] if occurrence < len(found) else None


def first_span(words: Words, forms: Iterable[str]) -> tuple[int, int] | None:
    """The span of the first place any of the forms stands among a caption's words."""
    return min((place for form in forms for place in _places(words, form)[:1]), default=None)


def _places(words: Words, form: str) -> list[tuple[int, int]]:
    wanted = form.split(" ")
    return [
        (words[i][1], words[i + len(wanted) - 1][2])
        for i in range(len(words) - len(wanted) + 1)
        if all(words[i + k][0] == w for k, w in enumerate(wanted))
    ]


def form_spans(captions: Sequence[str], forms: Sequence[str]) -> list[tuple[int, int]]:
    """Per caption, where `forms[i]` (a normalised surface form; "" for none) first stands in it;
    (0, 0) where it does not (a span encoder then reads the whole caption)."""
    words = caption_words(captions)
    return [(find_span(c, f, words=w) if f else None) or (0, 0) for c, f, w in zip(captions, forms, words)]

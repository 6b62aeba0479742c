"""Where a matched surface form stands in a caption as written: its character span.

The tagger matches normalised words (`lemmas.normalize_text`: case, accents, apostrophes and
separators folded), so "Cranes," and "CRANE'S" both match the form "cranes"/"crane". Here each
word of the caption as written (a run of letters, digits, marks and apostrophes) is normalised
on its own, the same way, and the form's words are looked for in that sequence: the span runs
from the first matched word's first character to the last one's end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from imagenot.wordnet.lemmas import normalize_all

_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f\u00ad\u200b-\u200f\u2060\ufeff'\u2019\u2018\u02bc])+")


def caption_words(caption: str) -> list[tuple[str, int, int]]:
    """(normalised word, start, end) for each word of the caption, in order; a written word that
    normalises to several ("½" -> "1 2") gives each of them its span."""
    found = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(caption)]
    words = []
    for (_, start, end), normalised in zip(found, normalize_all(text for text, _, _ in found)):
        words += [(part, start, end) for part in (normalised or "").split(" ") if part]
    return words


def find_span(caption: str, form: str, occurrence: int = 0) -> tuple[int, int] | None:
    """The character span of the `occurrence`-th (from 0) place where the normalised surface form
    stands in `caption`, or None where it does not."""
    found = _places(caption_words(caption), form)
    return found[occurrence] if occurrence < len(found) else None


def first_span(caption: str, forms: Iterable[str]) -> tuple[int, int] | None:
    """The span of the first place any of the forms stands in `caption` (the caption read once)."""
    words = caption_words(caption)
    return min((place for form in forms for place in _places(words, form)[:1]), default=None)


def _places(words: list[tuple[str, int, int]], form: str) -> list[tuple[int, int]]:
    wanted = form.split(" ")
    return [
        (words[i][1], words[i + len(wanted) - 1][2])
        for i in range(len(words) - len(wanted) + 1)
        if all(words[i + k][0] == w for k, w in enumerate(wanted))
    ]

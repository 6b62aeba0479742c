"""Per-caption reference matcher: the same rules as `LemmaMatcher`, written the usual way.

Normalisation in Python (`str` methods, `re`, `unicodedata`) and a pyahocorasick automaton
over the same surface forms, one caption at a time. It serves as the independent check of the
vectorised matcher in the tests and as the speed baseline in `benchmarks/bench_tagging.py`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

import ahocorasick

from imagenot.pipeline.tag.markup import strip_markup

_APOSTROPHES = "'\u2019\u2018\u02bc"  # ' ’ ‘ ʼ
# An apostrophe, or a possessive "'s" followed by a separator (not an apostrophe) or the end.
_APOSTROPHE_OR_POSSESSIVE = re.compile(rf"[{_APOSTROPHES}](?:s(?=[^\w{_APOSTROPHES}]|_|$))?")
_SEPARATORS = re.compile(r"[\W_]+")  # anything but a letter or a digit


def normalize_caption(text: str) -> str:
    """`wordnet.lemmas.normalize` for one caption, in plain Python."""
    if not text.isascii():
        decomposed = unicodedata.normalize("NFKD", text).lower()
        text = "".join(c for c in decomposed if not unicodedata.category(c).startswith(("M", "Cf")))
    return _SEPARATORS.sub(" ", _APOSTROPHE_OR_POSSESSIVE.sub("", text.lower())).strip()


class ReferenceMatcher:
    """Leftmost-longest, non-overlapping whole-word matches of surface forms, per caption."""

    def __init__(self, forms: Mapping[str, Sequence[str]]):
        self._automaton = ahocorasick.Automaton()
        for form, wnids in forms.items():
            self._automaton.add_word(f" {form} ", (len(form), form, tuple(wnids)))
        self._automaton.make_automaton()

    def tag(self, caption: str | None) -> tuple[list[str], list[str]]:
        """(sorted unique wnids, matched surface forms unique in caption order) of one caption."""
        text = f" {normalize_caption(strip_markup(caption or ''))} "
        # A key " form " ending at `end` covers the characters end - len(form) ... end - 1.
        spans = sorted(
            (end - length, -length, form, wnids) for end, (length, form, wnids) in self._automaton.iter(text)
        )
        taken_until = 0
        wnids: set[str] = set()
        matched: dict[str, None] = {}
        for start, negative_length, form, form_wnids in spans:
            if start >= taken_until:
                taken_until = start - negative_length
                wnids.update(form_wnids)
                matched[form] = None
        return sorted(wnids), list(matched)

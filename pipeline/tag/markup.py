"""What a reader of a web caption does not read as words: HTML entities and web addresses.

LAION's captions are alt texts and page titles as scraped: "Tom &amp; Jerry", "Caf&eacute;",
"&#39;70s", sometimes escaped twice ("&amp;quot;"), and addresses such as
"https://shop.example/cat-beds-sale" or "www.example.com/recipes/...". Left in, the tagger reads
"amp", "quot", "eacute" and a URL's words ("cat", "beds", "recipes") as caption words. Before
tokenising, entities are decoded (as a browser shows them) and web addresses become a space.

Only captions that can hold either ("&" and a letter or "#", "://", "www." or ".tld/") go
through Python; the rest (nearly all) pass as they are.
"""

from __future__ import annotations

import html
import re

import pyarrow as pa
import pyarrow.compute as pc

# A superset of the captions `strip_markup` changes: html.unescape changes only an "&" followed by
# "#" or a letter ("salt & pepper" passes), and every address below holds one of the other three.
_MAY_HOLD_MARKUP = r"&[#A-Za-z]|://|[Ww][Ww][Ww]\.|\.[A-Za-z]{2,}/"
_WEB_ADDRESS = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://\S*"  # scheme://...
    r"|[Ww][Ww][Ww]\.\S*"  # www.example.com...
    r"|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/\S*"  # example.com/path
)
_UNESCAPE_ROUNDS = 3  # "&amp;amp;quot;" is escaped three times; more is not text


def strip_markup(text: str) -> str:
    """`text` with HTML entities decoded and web addresses replaced by a space."""
    for _ in range(_UNESCAPE_ROUNDS):
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    return _WEB_ADDRESS.sub(" ", text)


def strip_markup_batch(captions: pa.Array) -> pa.Array:
    """`strip_markup` over a large_string array without nulls."""
    flagged = pc.match_substring_regex(captions, _MAY_HOLD_MARKUP)
    if not pc.any(flagged).as_py():
        return captions
    cleaned = pa.array([strip_markup(text) for text in captions.filter(flagged).to_pylist()], captions.type)
    return pc.replace_with_mask(captions, flagged, cleaned)

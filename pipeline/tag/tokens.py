"""Split a whole batch of captions into normalised word tokens.

The result is what `pipeline.tag.markup.strip_markup` (HTML entities decoded, web addresses
out), then `wordnet.lemmas.normalize_text`, then a split on spaces would give,
flattened over the batch. Rows that are pure ASCII (nearly all of a LAION-style corpus) skip
its Unicode regexes: one `bytes.translate` over the batch's character buffer, with a table
derived from `normalize_text` itself, lower-cases, deletes apostrophes and turns separators
into spaces (the "s" of a possessive "'s" is found with numpy first and deleted with its
apostrophe); Arrow's whitespace split then cuts the tokens. Other rows go through
`normalize_text` first; its output (letters, digits, single spaces) the table leaves unchanged.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.pipeline.tag.markup import strip_markup_batch
from imagenot.wordnet.lemmas import normalize_text


def _ascii_table() -> tuple[bytes, bytes]:
    """`bytes.translate` arguments that do to ASCII text what `normalize_text` does.

    Each ASCII character is classified by what `normalize_text` makes of it between two letters:
    kept (possibly lower-cased), deleted, or a separator. Bytes >= 0x80 map to themselves.
    """
    table = bytearray(range(256))
    deleted = bytearray()
    probes = normalize_text(pa.array([f"a{chr(b)}a" for b in range(128)], pa.string()))
    for byte, probe in enumerate(probes.to_pylist()):
        if probe == "aa":
            deleted.append(byte)
        elif probe == "a a":
            table[byte] = ord(" ")
        else:
            table[byte] = ord(probe[1])
    return bytes(table), bytes(deleted)


_TABLE, _DELETED = _ascii_table()
_SEPARATOR_BYTES = np.frombuffer(_TABLE, np.uint8) == ord(" ")
_POSSESSIVE_S = np.frombuffer(b"sS", np.uint8)


class Tokens(NamedTuple):
    """The batch's tokens in caption order; `row[i]` is the caption token `i` comes from."""

    values: pa.Array  # large_string
    row: np.ndarray  # int64


def tokenize(captions: pa.Array | pa.ChunkedArray) -> Tokens:
    """Normalised tokens of every caption of the batch; null captions have none."""
    if isinstance(captions, pa.ChunkedArray):
        captions = captions.combine_chunks()
    captions = strip_markup_batch(pc.fill_null(captions.cast(pa.large_string()), ""))
    non_ascii = pc.invert(pc.string_is_ascii(captions))
    if pc.any(non_ascii).as_py():
        normalised = normalize_text(captions.filter(non_ascii))
        captions = pc.replace_with_mask(captions, non_ascii, normalised)

    offsets = _offsets(captions)
    data = np.frombuffer(captions.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
    offsets = offsets - offsets[0]
    apostrophes = np.flatnonzero(np.isin(data, np.frombuffer(_DELETED, np.uint8)))
    possessive = _possessive_s(data, offsets, apostrophes)
    marked = data.copy()
    marked[possessive] = _DELETED[0]  # so that it goes with its apostrophe
    deleted = np.sort(np.concatenate([apostrophes, possessive]))
    offsets = offsets - np.searchsorted(deleted, offsets)
    text = marked.tobytes().translate(_TABLE, _DELETED)

    spaced = pa.LargeStringArray.from_buffers(len(captions), pa.py_buffer(offsets), pa.py_buffer(text))
    words = pc.ascii_split_whitespace(spaced)
    row = np.repeat(np.arange(len(words)), np.diff(words.offsets.to_numpy()))
    values = words.flatten()
    # The split leaves an empty token where a caption starts or ends with a space.
    nonempty = np.diff(_offsets(values)) > 0
    return Tokens(values.filter(nonempty), row[nonempty])


def _offsets(strings: pa.Array) -> np.ndarray:
    """The value offsets of a large_string array (a slice's own), without copying."""
    first = strings.offset
    return np.frombuffer(strings.buffers()[1], np.int64)[first : first + len(strings) + 1]


def _possessive_s(data: np.ndarray, offsets: np.ndarray, apostrophes: np.ndarray) -> np.ndarray:
    """Positions of the "s" of each "'s" ending a word (a separator or the caption's end next)."""
    row_end = offsets[np.searchsorted(offsets, apostrophes, side="right")]
    s = apostrophes + 1
    s = s[(s < row_end) & np.isin(data[np.minimum(s, len(data) - 1)], _POSSESSIVE_S)]
    row_end = offsets[np.searchsorted(offsets, s, side="right")]
    after = s + 1
    ends_word = after == row_end
    ends_word[~ends_word] = _SEPARATOR_BYTES[data[after[~ends_word]]]
    return s[ends_word]

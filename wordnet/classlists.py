"""Class lists: text files of wnids, and the ImageNet reference sets shipped with the package.

Format: UTF-8 (a BOM is skipped) or UTF-16 with a BOM; one wnid per line (`n` + 8-digit
WordNet 3.0 offset); anything after the first whitespace is ignored, `#` starts a comment,
blank lines are skipped.
"""

from __future__ import annotations

import codecs
from importlib import resources

from imagenot.errors import ImagenotError
from imagenot.wordnet.index import WNID_PATTERN, NounIndex

REFERENCE_SETS = {
    "imagenet1k": "imagenet1k_wnids.txt",
    "imagenet21k": "imagenet21k_wnids.txt",
}


class ClassListError(ImagenotError, ValueError):
    """A class list line is malformed, unknown, not a noun or repeated; names file and line."""


def parse_class_list(data: bytes, source: str, index: NounIndex) -> list[str]:
    """The wnids of a class list's bytes (`source` names it in errors), in file order, each
    checked against WordNet. Reading the file is the caller's: it may sit in a bucket."""
    return _parse(_decode(data, source), source, index)


def _decode(data: bytes, source: str) -> str:
    """The text of a class list saved as UTF-8 (with or without a BOM) or UTF-16 with a BOM,
    as editors on Windows save them."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding, name = "utf-16", "UTF-16"
    else:
        encoding, name = "utf-8-sig", "UTF-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        raise ClassListError(f"{source}: not {name} text (byte {err.start}); save the class list as UTF-8") from err
    if "\x00" in text:
        raise ClassListError(f"{source}: holds NUL characters (UTF-16 without a BOM?); save the class list as UTF-8")
    return text


def builtin_reference(name: str, index: NounIndex) -> list[str]:
    """A reference class set shipped with the package: `imagenet1k` or `imagenet21k`."""
    data = (resources.files("imagenot.wordnet") / "data" / REFERENCE_SETS[name]).read_bytes()
    return parse_class_list(data, name, index)


def _parse(text: str, source: str, index: NounIndex) -> list[str]:
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        value = fields[0]
        match = WNID_PATTERN.match(value)
        where = f"{source}:{number}"
        if match is None:
            raise ClassListError(f"{where}: {value!r} is not a wnid (expected 'n' and 8 digits, e.g. n02084071)")
        if match.group(1) != "n":
            raise ClassListError(f"{where}: {value!r} is not a noun synset (wnids start with 'n')")
        if value not in index:
            raise ClassListError(f"{where}: {value!r} is not a WordNet 3.0 noun synset offset")
        if value in seen:
            raise ClassListError(f"{where}: {value!r} repeats line {seen[value]}")
        seen[value] = number
    return list(seen)

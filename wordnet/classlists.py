"""Class lists: text files of wnids, and the ImageNet reference sets shipped with the package.

Format: one wnid per line (`n` + 8-digit WordNet 3.0 offset); anything after the first
whitespace is ignored, `#` starts a comment, blank lines are skipped.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from imagenot.errors import ImagenotError
from imagenot.wordnet.index import WNID_PATTERN, NounIndex

REFERENCE_SETS = {
    "imagenet1k": "imagenet1k_wnids.txt",
    "imagenet21k": "imagenet21k_wnids.txt",
}


class ClassListError(ImagenotError, ValueError):
    """A class list line is malformed, unknown, not a noun or repeated; names file and line."""


def read_class_list(path: str | Path, index: NounIndex) -> list[str]:
    """The wnids of a class-list file, in file order, each checked against WordNet."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ClassListError(f"{path}: cannot read class list: {err.strerror}") from err
    return _parse(text, str(path), index)


def reference_wnids(name_or_path: str, index: NounIndex) -> list[str]:
    """A reference class set: `imagenet1k`, `imagenet21k`, or a class-list file."""
    if name_or_path in REFERENCE_SETS:
        data = resources.files("imagenot.wordnet") / "data" / REFERENCE_SETS[name_or_path]
        return _parse(data.read_text(encoding="utf-8"), name_or_path, index)
    return read_class_list(name_or_path, index)


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
            raise ClassListError(
                f"{where}: {value!r} is not a wnid (expected 'n' and 8 digits, e.g. n02084071)"
            )
        if match.group(1) != "n":
            raise ClassListError(f"{where}: {value!r} is not a noun synset (wnids start with 'n')")
        if value not in index:
            raise ClassListError(f"{where}: {value!r} is not a WordNet 3.0 noun synset offset")
        if value in seen:
            raise ClassListError(f"{where}: {value!r} repeats line {seen[value]}")
        seen[value] = number
    return list(seen)

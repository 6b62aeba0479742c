"""Class lists and reference sets read from any FileSystems path (local or gs://)."""

from __future__ import annotations

from imagenot.pipeline.run.files import read_bytes
from imagenot.wordnet.classlists import REFERENCE_SETS, ClassListError, builtin_reference, parse_class_list
from imagenot.wordnet.index import NounIndex


def read_class_list(path: str, index: NounIndex) -> list[str]:
    """The wnids of a class-list file, in file order, each checked against WordNet."""
    try:
        data = read_bytes(path)
    except OSError as err:
        raise ClassListError(f"{path}: cannot read class list: {err}") from err
    wnids = parse_class_list(data, path, index)
    if not wnids:
        raise ClassListError(f"{path}: lists no class; write one wnid (like n02084071) a line")
    return wnids


def reference_wnids(name_or_path: str, index: NounIndex) -> list[str]:
    """A reference class set: `imagenet1k`, `imagenet21k`, or a class-list file."""
    if name_or_path in REFERENCE_SETS:
        return builtin_reference(name_or_path, index)
    return read_class_list(name_or_path, index)

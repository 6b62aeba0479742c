"""What the export writes per image: its key, its webdataset sample and its metadata row.

A sample's key is its row id made safe for webdataset, which ends a key at the first dot of a
file name: `%`, `.` and `/` are percent-encoded, so keys stay unique and the row id is readable
(`part-00000:17`). The metadata row is the sample's `.json` plus where the sample lies.
"""

from __future__ import annotations

import json

from imagenot.pipeline.run.layout import SCORE_COLUMN
from imagenot.wordnet.index import NounIndex

# The columns of train.parquet / test.parquet, in order; all but `shard` are also in each sample's .json.
METADATA_COLUMNS = (
    "key",
    "row_id",
    "class_index",
    "wnid",
    "class_name",
    "split",
    "url",
    "caption",
    SCORE_COLUMN,
    "sha256",
    "width",
    "height",
    "original_width",
    "original_height",
    "shard",
)


def sample_key(row_id: str) -> str:
    return row_id.replace("%", "%25").replace(".", "%2E").replace("/", "%2F")


def class_names(wnids: list[str], index: NounIndex) -> list[str]:
    """Per class (in index order) its lemmas as ImageNet's LOC_synset_mapping.txt writes them
    ("tench, Tinca tinca"); a lemma list two classes share gets its synset name added, so names
    stay unique (a ClassLabel maps names back to indices)."""
    lemmas = [", ".join(lemma.replace("_", " ") for lemma in index[w].lemmas) for w in wnids]
    return [name if lemmas.count(name) == 1 else f"{name} ({index[w].name})" for name, w in zip(lemmas, wnids)]


def synset_mapping(wnids: list[str], names: list[str]) -> str:
    """classes.txt: `nXXXXXXXX name, lemmas` per line, line i for class index i."""
    return "".join(f"{wnid} {name}\n" for wnid, name in zip(wnids, names))


def sample_members(row: dict, image: bytes, image_extension: str) -> dict[str, bytes]:
    """The webdataset members of one metadata row."""
    meta = {name: row[name] for name in METADATA_COLUMNS if name != "shard"}
    return {
        image_extension: image,
        "cls": str(row["class_index"]).encode("ascii"),
        "txt": row["caption"].encode("utf-8"),
        "json": json.dumps(meta, sort_keys=True, ensure_ascii=False).encode("utf-8"),
    }

"""What loaders read besides the tars: timm's `_info.json`, and the Hub's parquet shards.

timm's webdataset reader (`timm/data/readers/reader_wds.py`: `_load_info`, `_parse_split_info`)
reads `_info.json` from the dataset's root: `splits` maps a split name to its `name`,
`num_samples`, `filenames` (shard files relative to the root) and `shard_lengths` (samples per
shard, in the same order); without it timm cannot size an epoch.

The Hub's image datasets are parquet files whose `image` column is a struct of the image's
`bytes` and `path`, with the `datasets` features in the schema's `huggingface` metadata (an
`Image` and a `ClassLabel`), so each file reads as images and labels on its own, README or not.
"""

from __future__ import annotations

import json

import pyarrow as pa

from imagenot.pipeline.run.layout import SCORE_COLUMN

HUB_FOLDER = "data"  # RUN/dataset/data/SPLIT-NNNNN.parquet
TIMM_INFO = "_info.json"
# The columns beside image and label, with their `datasets` dtypes.
_HUB_COLUMNS = {
    "key": "string",
    "row_id": "string",
    "wnid": "string",
    "caption": "string",
    "url": "string",
    "sha256": "string",
    SCORE_COLUMN: "float64",
}
_ARROW = {"string": pa.string(), "float64": pa.float64()}


def timm_info(name: str, shards: list[tuple[str, int]], num_classes: int) -> str:
    """`_info.json` for shards named `SPLIT-NNNNN` with their sample counts, in shard order."""
    splits = {}
    for shard, samples in shards:
        split = shard.split("-", 1)[0]
        entry = splits.setdefault(split, {"name": split, "num_samples": 0, "filenames": [], "shard_lengths": []})
        entry["num_samples"] += samples
        entry["filenames"].append(f"{shard}.tar")
        entry["shard_lengths"].append(samples)
    return json.dumps({"name": name, "num_classes": num_classes, "splits": splits}, indent=1, sort_keys=True) + "\n"


def hub_text_types() -> dict[str, str]:
    return dict(_HUB_COLUMNS)


def hub_features(class_names: list[str]) -> dict:
    """The `datasets` features of a hub parquet shard, as `Features.to_dict()` writes them."""
    return {
        "image": {"_type": "Image"},
        "label": {"_type": "ClassLabel", "names": list(class_names)},
        **{name: {"_type": "Value", "dtype": dtype} for name, dtype in _HUB_COLUMNS.items()},
    }


def hub_table(rows: list[dict], images: list[bytes], extension: str, class_names: list[str]) -> pa.Table:
    """One hub parquet shard: the rows' images (bytes, and the key as file name) and labels."""
    paths = pa.array([f"{r['key']}.{extension}" for r in rows], pa.string())
    image = pa.StructArray.from_arrays([pa.array(images, pa.binary()), paths], ["bytes", "path"])
    columns = {"image": image, "label": pa.array([r["class_index"] for r in rows], pa.int64())}
    columns |= {name: pa.array([r[name] for r in rows], _ARROW[dtype]) for name, dtype in _HUB_COLUMNS.items()}
    metadata = {"huggingface": json.dumps({"info": {"features": hub_features(class_names)}}, sort_keys=True)}
    return pa.Table.from_pydict(columns).replace_schema_metadata(metadata)

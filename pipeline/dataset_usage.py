"""How to use an exported dataset: the README.md of `RUN/dataset/` (whose YAML header tells
Hugging Face `datasets` the splits and features) and the "Using the dataset" text it shares with
the dataset card."""

from __future__ import annotations

import yaml

from imagenot.pipeline.layout import SCORE_COLUMN

# Column types of each sample's .json, as Hugging Face `datasets` names them.
_JSON_TYPES = {
    "key": "string", "row_id": "string", "class_index": "int64", "wnid": "string", "class_name": "string",
    "split": "string", "url": "string", "caption": "string", SCORE_COLUMN: "float64", "sha256": "string",
    "width": "int64", "height": "int64", "original_width": "int64", "original_height": "int64",
}  # fmt: skip

FILES = (
    ("train-NNNNN.tar, test-NNNNN.tar", ("webdataset shards; sample KEY has KEY.{ext} (the image), KEY.cls (the "
     "class index), KEY.txt (the caption) and KEY.json (every column of the parquet files but `shard`)")),
    ("train.parquet, test.parquet", ("one row per image, the same keys: `key` (the sample key: the row id with %, . "
     "and / percent-encoded), `row_id` (the corpus row), `class_index`, `wnid`, `class_name`, `split`, `url`, "
     "`caption`, `gloss_similarity` (caption to class gloss, the score that chose it), `sha256` (of the bytes "
     "as downloaded, before resizing), `width`/`height` (stored) and `original_width`/`original_height`, `shard`")),
    ("classes.txt", "ImageNet's LOC_synset_mapping.txt format: `nXXXXXXXX lemma, lemma` per line; line i is class i"),
    ("README.md", "this file; its YAML header makes `datasets.load_dataset` see the splits and class names"),
    ("train/WNID/KEY.{ext}", "with `export.formats: [webdataset, imagefolder]` only: an ImageFolder tree"),
)


def usage_markdown(folder: str, extension: str) -> str:
    """The "Using the dataset" section for an export in `folder`."""
    files = "\n".join(f"- `{name.replace('{ext}', extension)}`: {what.replace('{ext}', extension)}" for name, what in FILES)
    return f"""## Using the dataset

The dataset is in `{folder}/`, written by the `export` stage (rerun by every `--drop`, so it never
holds a dropped image):

{files}

Hugging Face `datasets` (train and test splits, a `{extension}` image column, `cls` a ClassLabel):

```python
from datasets import load_dataset
ds = load_dataset("{folder}")
names = ds["train"].features["cls"].names
example = ds["train"][0]
print(names[example["cls"]], example["{extension}"].size, example["txt"])
```

webdataset:

```python
import glob
import webdataset as wds
shards = sorted(glob.glob("{folder}/train-*.tar"))
pairs = wds.WebDataset(shards, shardshuffle=False).decode("pil").to_tuple("{extension}", "cls")
image, label = next(iter(pairs))
```

PyTorch (no torchvision needed):

```python
import glob, numpy as np, torch, webdataset as wds
to_tensor = lambda image: torch.from_numpy(np.asarray(image.convert("RGB").resize((224, 224)))).permute(2, 0, 1)
data = wds.WebDataset(sorted(glob.glob("{folder}/train-*.tar")), shardshuffle=False).decode("pil")
loader = torch.utils.data.DataLoader(data.to_tuple("{extension}", "cls").map_tuple(to_tensor, int), batch_size=64)
images, labels = next(iter(loader))
```
"""


def hf_readme(class_names: list[str], splits: list[str], extension: str, title: str) -> str:
    """README.md for the export folder: a YAML header for `datasets.load_dataset`, then the usage."""
    header = {
        "pretty_name": title,
        "task_categories": ["image-classification"],
        "configs": [
            {"config_name": "default", "data_files": [{"split": split, "path": f"{split}-*.tar"} for split in splits]}
        ],
        "dataset_info": {
            "features": [
                {"name": "__key__", "dtype": "string"},
                {"name": extension, "dtype": "image"},
                {"name": "cls", "dtype": {"class_label": {"names": {str(i): n for i, n in enumerate(class_names)}}}},
                {"name": "txt", "dtype": "string"},
                {"name": "json", "struct": [{"name": k, "dtype": t} for k, t in _JSON_TYPES.items()]},
            ]
        },
    }
    body = usage_markdown(".", extension).replace('load_dataset(".")', 'load_dataset("path/to/this/folder")')
    return f"---\n{yaml.safe_dump(header, sort_keys=False, allow_unicode=True)}---\n\n# {title}\n\n{body}"

"""How to use an exported dataset: the README.md of `RUN/dataset/` (whose YAML header tells
Hugging Face `datasets` the splits and features) and the "Using the dataset" text it shares with
the dataset card."""

from __future__ import annotations

import yaml

from imagenot.pipeline.dataset.loaders import HUB_FOLDER, hub_text_types
from imagenot.pipeline.run.layout import SCORE_COLUMN

# Column types of each sample's .json, as Hugging Face `datasets` names them.
_JSON_TYPES = {
    "key": "string",
    "row_id": "string",
    "class_index": "int64",
    "wnid": "string",
    "class_name": "string",
    "split": "string",
    "url": "string",
    "caption": "string",
    SCORE_COLUMN: "float64",
    "sha256": "string",
    "width": "int64",
    "height": "int64",
    "original_width": "int64",
    "original_height": "int64",
}

FILES = (
    (
        "train-NNNNN.tar, test-NNNNN.tar",
        (
            "webdataset shards; sample KEY has KEY.{ext} (the image), KEY.cls (the "
            "class index), KEY.txt (the caption) and KEY.json (every column of the parquet files but `shard`)"
        ),
    ),
    (
        "train.parquet, test.parquet",
        (
            "one row per image, the same keys: `key` (the sample key: the row id with %, . "
            "and / percent-encoded), `row_id` (the corpus row), `class_index`, `wnid`, `class_name`, `split`, `url`, "
            "`caption`, `gloss_similarity` (caption to class gloss, the score that chose it), `sha256` (of the bytes "
            "as downloaded, before resizing), `width`/`height` (stored) and `original_width`/`original_height`, `shard`"
        ),
    ),
    ("_info.json", "timm's webdataset index: per split its shard files and their sample counts"),
    ("classes.txt", "ImageNet's LOC_synset_mapping.txt format: `nXXXXXXXX lemma, lemma` per line; line i is class i"),
    ("README.md", "this file; its YAML header makes `datasets.load_dataset` see the splits and class names"),
    (
        "data/train-NNNNN.parquet",
        (
            "with `export.formats` holding `hf-parquet` only: the Hub's layout, the image bytes "
            "in an `image` column (an Image feature) and `label` a ClassLabel; `datasets` then reads these"
        ),
    ),
    ("train/WNID/KEY.{ext}", "with `export.formats` holding `imagefolder` only: an ImageFolder tree"),
)

# Per loader, the two lines that load the training split of the export in "{folder}"; tests run each.
LOADERS = {
    "Hugging Face datasets": ("from datasets import load_dataset", 'train = load_dataset("{folder}", split="train")'),
    "webdataset": (
        "import glob, webdataset as wds",
        'train = wds.WebDataset(sorted(glob.glob("{folder}/train-*.tar")), shardshuffle=False).decode("pil")',
    ),
    "timm": (
        "import timm.data",
        'train = timm.data.create_dataset("wds/imagenot", root="{folder}", split="train", is_training=True)',
    ),
    "PyTorch (no torchvision)": (
        "import glob, torch, webdataset as wds",
        'train = torch.utils.data.DataLoader(wds.WebDataset(sorted(glob.glob("{folder}/train-*.tar")), '
        'shardshuffle=False).decode("torchrgb").to_tuple("{ext}", "cls"), batch_size=64)',
    ),
}
_AFTER = {
    "Hugging Face datasets": "`train[0]` has the image (a PIL image) and its label; `train.features` names the classes",
    "webdataset": 'a sample is a dict: `sample["{ext}"]` a PIL image, `sample["cls"]` the class index',
    "timm": "sizes its epochs from `_info.json`; a sample is a (PIL image, class index) pair",
    "PyTorch (no torchvision)": (
        "batches of (3 x H x W float tensors, class indices); the images share one size "
        "when `download.resize_mode` crops or pads"
    ),
}


def loader_lines(loader: str, folder: str, extension: str) -> tuple[str, str]:
    return tuple(line.replace("{folder}", folder).replace("{ext}", extension) for line in LOADERS[loader])


def usage_markdown(folder: str, extension: str) -> str:
    """The "Using the dataset" section for an export in `folder`."""
    files = "\n".join(
        f"- `{name.replace('{ext}', extension)}`: {what.replace('{ext}', extension)}" for name, what in FILES
    )
    blocks = "\n".join(
        f"{loader}: {_AFTER[loader].replace('{ext}', extension)}\n\n```python\n"
        + "\n".join(loader_lines(loader, folder, extension))
        + "\n```\n"
        for loader in LOADERS
    )
    return f"""## Using the dataset

The dataset is in `{folder}/`, written by the `export` stage (rerun by every `--drop`, so it never
holds a dropped image):

{files}

Each loader in two lines:

{blocks}"""


LICENCE_NOTE = (
    "Images stay under their owners' terms (the corpus's licence column, where it has one, is in the "
    "metadata); class names and glosses come from WordNet 3.0, under the WordNet 3.0 licence."
)


def hf_readme(
    class_names: list[str], splits: dict[str, int], extension: str, title: str, hub_parquet: bool, note: str = ""
) -> str:
    """README.md for the export folder: a YAML header that `datasets.load_dataset` and the Hub read
    (configs, splits, features with the class names, licence), a summary (and `note`, a paragraph
    after it), then the usage."""
    class_label = {"class_label": {"names": {str(i): n for i, n in enumerate(class_names)}}}
    if hub_parquet:
        files = [{"split": split, "path": f"{HUB_FOLDER}/{split}-*.parquet"} for split in splits]
        features = [
            {"name": "image", "dtype": "image"},
            {"name": "label", "dtype": class_label},
            *({"name": n, "dtype": t} for n, t in hub_text_types().items()),
        ]
    else:
        files = [{"split": split, "path": f"{split}-*.tar"} for split in splits]
        features = [
            {"name": "__key__", "dtype": "string"},
            {"name": extension, "dtype": "image"},
            {"name": "cls", "dtype": class_label},
            {"name": "txt", "dtype": "string"},
            {"name": "json", "struct": [{"name": k, "dtype": t} for k, t in _JSON_TYPES.items()]},
        ]
    header = {
        "pretty_name": title,
        "license": "other",
        "license_name": "image-owners-terms",
        "task_categories": ["image-classification"],
        "configs": [{"config_name": "default", "data_files": files}],
        "dataset_info": {"features": features, "splits": [{"name": s, "num_examples": n} for s, n in splits.items()]},
    }
    summary = (
        f"{len(class_names):,} classes (WordNet noun synsets), "
        + ", ".join(f"{n:,} {s} images" for s, n in splits.items())
        + ", labelled from caption text alone by the ImageNot method; the run's report/card.md is "
        "its dataset card."
    )
    body = usage_markdown(".", extension).replace('load_dataset(".",', 'load_dataset("path/to/this/folder",')
    yaml_text = yaml.safe_dump(header, sort_keys=False, allow_unicode=True)
    note = f"{note}\n\n" if note else ""
    return f"---\n{yaml_text}---\n\n# {title}\n\n{summary}\n\n{note}Licence: {LICENCE_NOTE}\n\n{body}"

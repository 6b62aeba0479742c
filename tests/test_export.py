"""The export stage, loaded the way users load it: Hugging Face `datasets`, webdataset, and a
PyTorch DataLoader over the webdataset (no torchvision). Real photos are fetched by img2dataset
from a loopback server; an image dropped from the dataset is replaced from its class's reserve and
never reaches the export.

    class 0: dataset a0 astronaut, a1 coffee, a2 rocket; reserve a3 camera
    class 1: dataset b0 chelsea, b1 coins;                reserve b2 moon
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder: nothing to ask the hub

import io
import json
import shutil
import tarfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from cli_runner import cli_command, invoke
from image_server import LoopbackImageServer, write_sample_stage

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.download.drops import add_drops
from imagenot.pipeline.export import stage as export_stage
from imagenot.pipeline.export.samples import sample_key
from imagenot.pipeline.frame.registry import run_in_folder
from imagenot.wordnet.index import load_index

CLASS_PHOTOS = (
    (["astronaut?id=a0", "coffee?id=a1", "rocket?id=a2"], ["camera?id=a3"]),
    (["chelsea?id=b0", "coins?id=b1"], ["moon?id=b2"]),
)
CONFIG = {
    "sampling": {"images_per_class": 3, "test_per_class": 1},
    "download": {
        "enabled": True,
        "timeout_s": 5,
        "shard_rows": 3,
        "image_size": 32,
        "resize_mode": "center_crop",
        "allowed_networks": ["127.0.0.1/32"],
    },
    "export": {"samples_per_shard": 2},
}


def _tar_members(path) -> list[tarfile.TarInfo]:
    with tarfile.open(path) as tar:
        return tar.getmembers()


def _samples(folder, split: str) -> dict[str, dict[str, bytes]]:
    samples: dict[str, dict[str, bytes]] = {}
    for path in sorted(folder.glob(f"{split}-*.tar")):
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                key, extension = member.name.split(".", 1)
                assert extension not in samples.get(key, {}), f"{member.name} twice"
                samples.setdefault(key, {})[extension] = tar.extractfile(member).read()
    return samples


def _dataset_rows(run_dir) -> list[dict]:
    return pq.read_table(run_dir / "download" / "dataset").to_pylist()


@pytest.fixture(scope="module")
def downloaded(tmp_path_factory):
    """A downloaded run (copied per test) and its server, up for backfills."""
    run_dir = tmp_path_factory.mktemp("export") / "run"
    index = load_index()
    wnids = sorted(index.by_name(name).wnid for name in ("dog.n.01", "cat.n.01"))
    (run_dir / "rank").mkdir(parents=True)
    (run_dir / "rank" / "classes.json").write_text(json.dumps([{"index": i, "wnid": w} for i, w in enumerate(wnids)]))
    config = Config.model_validate(CONFIG)
    with LoopbackImageServer() as server:
        urls = {
            name: server.url(f"/photo/{name.replace('?', '.jpg?')}")
            for pair in CLASS_PHOTOS
            for part in pair
            for name in part
        }
        ids = write_sample_stage(
            run_dir, {w: ([urls[n] for n in d], [urls[n] for n in r]) for w, (d, r) in zip(wnids, CLASS_PHOTOS)}
        )
        run_in_folder(download_stage.DECLARATION, config, str(run_dir))
        yield run_dir, config, {name.split("=")[1]: ids[u] for name, u in urls.items()}, wnids


@pytest.fixture(scope="module")
def exported(downloaded):
    run_dir, config, row_of, wnids = downloaded
    figures = run_in_folder(export_stage.DECLARATION, config, str(run_dir))
    return run_dir, figures, row_of, wnids


def test_the_export_holds_each_dataset_row_once_with_its_label_caption_and_metadata(exported):
    run_dir, figures, _, wnids = exported
    folder = run_dir / "dataset"
    rows = {sample_key(r["row_id"]): r for r in _dataset_rows(run_dir)}
    assert (figures["images"], figures["train"], figures["test"]) == (5, 3, 2)
    assert figures["shards"] == {"train": 2, "test": 1}
    seen = {}
    for split in ("train", "test"):
        samples = _samples(folder, split)
        assert all(sorted(s) == ["cls", "jpg", "json", "txt"] for s in samples.values())
        metadata = pq.read_table(folder / f"{split}.parquet").to_pylist()
        assert [m["key"] for m in metadata] == sorted(samples)
        for m in metadata:
            sample, row = samples[m["key"]], rows[m["key"]]
            assert int(sample["cls"]) == row["class_index"] == m["class_index"] and m["split"] == row["split"] == split
            assert sample["txt"].decode() == row["caption"] and json.loads(sample["json"]) == {
                k: v for k, v in m.items() if k != "shard"
            }
            assert len(m["sha256"]) == 64 and m["wnid"] == wnids[m["class_index"]]
        seen.update(samples)
    assert sorted(seen) == sorted(rows)
    lines = (folder / "classes.txt").read_text().splitlines()
    assert lines == [f"{wnids[0]} dog, domestic dog, Canis familiaris", f"{wnids[1]} cat, true cat"]


def test_tars_are_reproducible_byte_for_byte(exported, tmp_path):
    run_dir, _, _, _ = exported
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    shutil.rmtree(copy / "export")
    run_in_folder(export_stage.DECLARATION, Config.model_validate(CONFIG), str(copy))
    for path in sorted((run_dir / "dataset").iterdir()):
        assert (copy / "dataset" / path.name).read_bytes() == path.read_bytes(), path.name
    for member in _tar_members(run_dir / "dataset" / "train-00000.tar"):
        assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (0, 0, 0, "", "")


def test_hugging_face_datasets_loads_splits_class_names_and_images(exported, tmp_path):
    from datasets import ClassLabel, load_dataset

    run_dir, figures, _, _ = exported
    loaded = load_dataset(str(run_dir / "dataset"), cache_dir=str(tmp_path / "hf"))
    assert sorted(loaded) == ["test", "train"]
    assert (loaded["train"].num_rows, loaded["test"].num_rows) == (figures["train"], figures["test"])
    label = loaded["train"].features["cls"]
    assert isinstance(label, ClassLabel) and label.names == ["dog, domestic dog, Canis familiaris", "cat, true cat"]
    example = loaded["train"][0]
    assert example["jpg"].size == (32, 32) and example["json"]["class_name"] == label.names[example["cls"]]


def test_webdataset_and_a_torch_dataloader_read_the_tars(exported):
    import webdataset as wds

    run_dir, figures, _, _ = exported
    shards = sorted(str(p) for p in (run_dir / "dataset").glob("train-*.tar"))
    pairs = list(wds.WebDataset(shards, shardshuffle=False).decode("pil").to_tuple("jpg", "cls"))
    labels = {sample_key(r["row_id"]): r["class_index"] for r in _dataset_rows(run_dir) if r["split"] == "train"}
    assert sorted(label for _, label in pairs) == sorted(labels.values())
    assert all(image.size == (32, 32) for image, _ in pairs)

    def to_tensor(image):
        return (
            torch.frombuffer(bytearray(image.convert("RGB").tobytes()), dtype=torch.uint8)
            .view(32, 32, 3)
            .permute(2, 0, 1)
        )

    data = wds.WebDataset(shards, shardshuffle=False).decode("pil").to_tuple("jpg", "cls").map_tuple(to_tensor, int)
    batches = list(torch.utils.data.DataLoader(data, batch_size=2))
    assert sum(len(labels) for _, labels in batches) == figures["train"] and batches[0][0].shape == (2, 3, 32, 32)


def test_a_dropped_image_leaves_the_export_and_its_reserve_replacement_arrives(downloaded, tmp_path):
    source, config, row_of, _ = downloaded
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    add_drops(
        str(run_dir / "download"),
        pa.table({"row_id": [row_of["a1"]], "reason": ["duplicate_within_class"], "duplicate_of": [row_of["a0"]]}),
    )
    run_in_folder(download_stage.DECLARATION, config, str(run_dir))
    figures = run_in_folder(export_stage.DECLARATION, config, str(run_dir))
    keys = set(_samples(run_dir / "dataset", "train")) | set(_samples(run_dir / "dataset", "test"))
    assert sample_key(row_of["a1"]) not in keys and sample_key(row_of["a3"]) in keys
    assert keys == {sample_key(r["row_id"]) for r in _dataset_rows(run_dir)} and figures["images"] == 5


def test_imagefolder_format_and_the_export_command(downloaded, tmp_path):
    source = downloaded[0]
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    (run_dir / "config.yaml").write_text(json.dumps({**CONFIG, "export": {"formats": ["webdataset", "imagefolder"]}}))
    result = invoke(cli_command("export"), ["--run", str(run_dir)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    files = sorted(p.relative_to(run_dir / "dataset") for p in (run_dir / "dataset").glob("*/*/*.jpg"))
    rows = _dataset_rows(run_dir)
    assert [str(f) for f in files] == sorted(f"{r['split']}/{r['wnid']}/{sample_key(r['row_id'])}.jpg" for r in rows)
    assert io.BytesIO((run_dir / "dataset" / files[0]).read_bytes()).read(2) == b"\xff\xd8"  # a JPEG


def _rewrite_source_tars(run_dir, keep) -> None:
    """Rewrite the download stage's tars with only the members `keep(name)` accepts."""
    for path in sorted((run_dir / "download" / "rounds").glob("*/*.tar")):
        with tarfile.open(path) as tar:
            members = [(m, tar.extractfile(m).read()) for m in tar.getmembers() if keep(m.name)]
        with tarfile.open(path, "w") as tar:
            for member, data in members:
                tar.addfile(member, io.BytesIO(data))


def test_the_sha256_comes_from_the_download_stages_parquet_not_the_tars_json(downloaded, tmp_path):
    source, config, _, _ = downloaded
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    _rewrite_source_tars(run_dir, lambda name: not name.endswith(".json"))  # the export reads no .json there
    run_in_folder(export_stage.DECLARATION, config, str(run_dir))
    hashes = {sample_key(r["row_id"]): r["sha256"] for r in _dataset_rows(run_dir)}
    exported = {}
    for split in ("train", "test"):
        for key, sample in _samples(run_dir / "dataset", split).items():
            exported[key] = json.loads(sample["json"])["sha256"]
        exported.update(
            (m["key"], m["sha256"]) for m in pq.read_table(run_dir / "dataset" / f"{split}.parquet").to_pylist()
        )
    assert exported == hashes and all(len(h) == 64 for h in hashes.values())


def test_a_dataset_row_without_its_sha256_is_named(downloaded, tmp_path):
    source, config, _, _ = downloaded
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    (part,) = (run_dir / "download" / "dataset").glob("*.parquet")
    table = pq.read_table(part)
    row_id = table.column("row_id")[1].as_py()
    hashes = table.column("sha256").to_pylist()
    hashes[1] = None
    pq.write_table(table.set_column(table.column_names.index("sha256"), "sha256", pa.array(hashes, pa.string())), part)
    with pytest.raises(export_stage.ExportError, match=rf"{part.name}: row\(s\) \['{row_id}'\] have no sha256"):
        run_in_folder(export_stage.DECLARATION, config, str(run_dir))
    pq.write_table(table.drop_columns(["sha256"]), part)
    with pytest.raises(export_stage.ExportError, match=rf"{part.name}: no column\(s\) \['sha256'\]"):
        run_in_folder(export_stage.DECLARATION, config, str(run_dir))


def _timm_split_info(root, split: str) -> tuple:
    """timm's `_load_info` and `_parse_split_info` (timm/data/readers/reader_wds.py) where they read
    `_info.json` for a split given by name: timm cannot be imported here (it needs torchvision, which
    does not load with the pinned torch), so this is its code path on our file."""
    info = json.loads((root / "_info.json").read_text())
    if "splits" not in info or split not in info["splits"]:
        raise RuntimeError(f"split {split} not found in info ({info.get('splits', {}).keys()})")
    d = info["splits"][split]
    return d["num_samples"], tuple(d["filenames"]), tuple(d["shard_lengths"]), d.get("alt_label", ""), d["name"]


def test_timm_reads_split_sizes_and_shard_files_from_info_json(exported):
    run_dir, figures, _, _ = exported
    folder = run_dir / "dataset"
    for split in ("train", "test"):
        num_samples, filenames, lengths, _, name = _timm_split_info(folder, split)
        assert name == split and num_samples == figures[split] == sum(lengths)
        assert filenames == tuple(sorted(p.name for p in folder.glob(f"{split}-*.tar")))
        assert [sum(1 for m in _tar_members(folder / f) if m.name.endswith(".cls")) for f in filenames] == list(lengths)
    try:
        import timm.data  # noqa: F401  (needs a torchvision that loads with the pinned torch)
    except Exception:
        return
    dataset = timm.data.create_dataset("wds/imagenot", root=str(folder), split="train", is_training=True)
    assert len(dataset) == figures["train"]


def test_each_loaders_two_lines_from_the_readme_load_the_export(exported):
    from imagenot.pipeline.dataset.usage import LOADERS, loader_lines

    run_dir, figures, _, _ = exported
    folder = str(run_dir / "dataset")
    readme = (run_dir / "dataset" / "README.md").read_text()
    ran = {}
    for loader in LOADERS:
        lines = loader_lines(loader, folder, "jpg")
        assert "\n".join(loader_lines(loader, "path/to/this/folder" if "datasets" in loader else ".", "jpg")) in readme
        if loader == "timm":
            continue  # timm does not import here: test_timm_reads_split_sizes_and_shard_files_from_info_json
        scope = {}
        exec("\n".join(lines), scope)
        ran[loader] = scope["train"]
    hf = ran["Hugging Face datasets"]
    assert hf.num_rows == figures["train"] and hf[0]["jpg"].size == (32, 32)
    assert sum(1 for sample in ran["webdataset"] if sample["jpg"].size == (32, 32)) == figures["train"]
    images, labels = next(iter(ran["PyTorch (no torchvision)"]))
    assert images.shape == (figures["train"], 3, 32, 32) and images.dtype == torch.float32
    assert len(labels) == figures["train"]


def test_hf_parquet_gives_images_and_class_labels_to_datasets_and_is_reproducible(downloaded, tmp_path):
    from datasets import ClassLabel, Image, load_dataset

    export = {"samples_per_shard": 2, "formats": ["webdataset", "hf-parquet"]}
    config = Config.model_validate({**CONFIG, "export": export})
    folders = []
    for copy in ("one", "two"):
        run_dir = tmp_path / copy
        shutil.copytree(downloaded[0], run_dir)
        figures = run_in_folder(export_stage.DECLARATION, config, str(run_dir))
        folders.append(run_dir / "dataset")
    hub = sorted(p.name for p in (folders[0] / "data").iterdir())
    assert hub == ["test-00000.parquet", "train-00000.parquet", "train-00001.parquet"]
    for name in hub:
        assert (folders[0] / "data" / name).read_bytes() == (folders[1] / "data" / name).read_bytes(), name
    loaded = load_dataset(str(folders[0]), cache_dir=str(tmp_path / "hf"))
    assert (loaded["train"].num_rows, loaded["test"].num_rows) == (figures["train"], figures["test"])
    features = loaded["train"].features
    assert isinstance(features["image"], Image) and isinstance(features["label"], ClassLabel)
    assert features["label"].names == ["dog, domestic dog, Canis familiaris", "cat, true cat"]
    example = loaded["train"][0]
    assert example["image"].size == (32, 32) and example["wnid"] == downloaded[3][example["label"]]
    front = (folders[0] / "README.md").read_text().split("---")[1]
    import yaml

    header = yaml.safe_load(front)
    assert header["license"] == "other" and header["dataset_info"]["splits"] == [
        {"name": "train", "num_examples": figures["train"]},
        {"name": "test", "num_examples": figures["test"]},
    ]


def test_a_class_whose_urls_all_failed_is_said_by_download_and_left_out_of_the_export(tmp_path):
    """Through the commands: `download` ends with the shortfall warning `build` gives, and the
    export lists only the classes with images, its labels contiguous, the class left out named."""
    index = load_index()
    bird, dog, cat = (index.by_name(name).wnid for name in ("bird.n.01", "dog.n.01", "cat.n.01"))
    assert bird < dog < cat  # the empty class comes first: the others' labels move down by one
    run_dir = tmp_path / "run"
    (run_dir / "rank").mkdir(parents=True)
    classes = [
        {"index": i, "wnid": w, "name": n} for i, (w, n) in enumerate(zip((bird, dog, cat), ("bird", "dog", "cat")))
    ]
    (run_dir / "rank" / "classes.json").write_text(json.dumps(classes))
    export = {"samples_per_shard": 2, "formats": ["webdataset", "hf-parquet"]}
    (run_dir / "config.yaml").write_text(json.dumps({**CONFIG, "export": export}))
    with LoopbackImageServer() as server:
        photos = [
            [server.url(f"/photo/{n.replace('?', '.jpg?')}") for n in part] for pair in CLASS_PHOTOS for part in pair
        ]
        failing = [server.url(f"/missing/bird{i}") for i in range(4)]
        sampled = {bird: (failing[:3], failing[3:]), dog: (photos[0], photos[1]), cat: (photos[2], photos[3])}
        write_sample_stage(run_dir, sampled)
        downloaded = invoke(cli_command("download"), ["--run", str(run_dir)])
    assert downloaded.exit_code == 0, downloaded.output
    assert (
        "Warning: 1 of 3 classes have fewer than 3 images (sampling.images_per_class; the reserve ran out): bird 0"
        in downloaded.output
    )
    exported = invoke(cli_command("export"), ["--run", str(run_dir)])
    assert exported.exit_code == 0, exported.output
    folder, kept = run_dir / "dataset", [dog, cat]
    names = ["dog, domestic dog, Canis familiaris", "cat, true cat"]
    assert (folder / "classes.txt").read_text().splitlines() == [f"{w} {n}" for w, n in zip(kept, names)]
    assert json.loads((folder / "_info.json").read_text())["num_classes"] == 2
    for split in ("train", "test"):
        samples = _samples(folder, split)
        for m in pq.read_table(folder / f"{split}.parquet").to_pylist():
            assert m["class_index"] == kept.index(m["wnid"]) == int(samples[m["key"]]["cls"])
            assert m["class_name"] == names[m["class_index"]]
    hub = pq.read_table(folder / "data" / "train-00000.parquet")
    features = json.loads(hub.schema.metadata[b"huggingface"])["info"]["features"]
    assert features["label"]["names"] == names
    assert hub.column("label").to_pylist() == [kept.index(w) for w in hub.column("wnid").to_pylist()]
    readme = (folder / "README.md").read_text()
    assert "# imagenot dataset: 2 classes from run" in readme
    assert "1 class of the build ended with no image and is not part of this dataset" in readme
    assert f"each row's `wnid` names its class): {bird} bird." in readme
    header = readme.split("---")[1]
    assert "bird" not in header and "cat, true cat" in header
    assert json.loads(exported.output.split("export: ", 1)[1])["classes_without_images"] == [bird]

"""The CLIP embeddings stage on a synthetic run directory: real photos in img2dataset-style tars,
a small open_clip ViT with random weights built by open_clip's own create_model."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import shutil
import sys
import tarfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import skimage.data
import torch
from PIL import Image

from imagenot.pipeline.audit import clip_model, embeddings
from imagenot.pipeline.audit.clip_model import ClipModel, preprocess
from imagenot.pipeline.audit.embeddings import ImageAudit, column_vectors, embed_images, embedding_table
from imagenot.pipeline.config.schema import Runner
from imagenot.pipeline.run.stage_dir import finish_stage, open_stage
from imagenot.wordnet.index import load_index

TINY_VIT = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 8, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}
CLASS_SYNSETS = ("dog.n.01", "cat.n.01", "cup.n.01")
ROUND_DIR = "download/rounds/{}"  # each download round's tars restart at 00000.tar


def jpeg(pixels: np.ndarray, quality: int = 90) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


PHOTOS = {
    name: jpeg(getattr(skimage.data, name)())
    for name in ("astronaut", "chelsea", "coffee", "rocket", "camera", "coins", "moon")
}
# (image, class index, split, download round): rows 5 and 7 repeat the bytes of rows 0 and 1, row 9 is row 2's
# photo encoded again, row 10's image is missing from its tar and row 11's bytes are no image.
ROWS = [
    ("astronaut", 0, "train", 0),
    ("chelsea", 1, "train", 0),
    ("coffee", 2, "train", 0),
    ("rocket", 0, "train", 0),
    ("camera", 1, "train", 0),
    ("astronaut", 0, "test", 0),
    ("coins", 2, "train", 1),
    ("chelsea", 1, "train", 1),
    ("moon", 0, "test", 1),
    ("coffee-q40", 2, "test", 1),
    ("missing", 1, "train", 1),
    ("not-an-image", 2, "test", 1),
]


def image_member(key: str, name: str) -> tuple[str, bytes]:
    """The tar member of an image; the camera photo is a PNG (img2dataset's encode_format: png)."""
    if name == "camera":
        buffer = io.BytesIO()
        Image.fromarray(skimage.data.camera()).save(buffer, "PNG")
        return f"{key}.png", buffer.getvalue()
    return f"{key}.jpg", image_bytes(name)


def image_bytes(name: str) -> bytes:
    if name == "coffee-q40":
        return jpeg(skimage.data.coffee(), quality=40)
    return b"these bytes are not an image" if name == "not-an-image" else PHOTOS[name]


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def build_image_run(run_dir: Path, model_dir: Path) -> ImageAudit:
    """A run directory with rank/classes.json and a finished download stage; the settings of a
    tiny random-weight CLIP for it."""
    index = load_index()
    classes = [
        {"index": i, "wnid": w, "name": index[w].name, "lemmas": ", ".join(index[w].lemmas), "gloss": index[w].gloss}
        for i, w in enumerate(sorted(index.by_name(n).wnid for n in CLASS_SYNSETS))
    ]
    (run_dir / "rank").mkdir(parents=True)
    (run_dir / "rank" / "classes.json").write_text(json.dumps(classes))
    open_stage(str(run_dir), "download", {"synthetic": True})
    records = []
    members: dict[int, list[tuple[str, bytes]]] = {t: [] for _, _, _, t in ROWS}
    for position, (image, class_index, split, t) in enumerate(ROWS):
        key = f"{t:05d}{position:04d}"
        caption = f"a picture of {image} number {position}"
        row_id = f"part-00000:{position}"
        if image != "missing":
            meta = {
                "row_id": row_id,
                "class_index": class_index,
                "wnid": classes[class_index]["wnid"],
                "caption": caption,
            }
            members[t] += [
                image_member(key, image),
                (f"{key}.txt", caption.encode()),
                (f"{key}.json", json.dumps(meta).encode()),
            ]
        records.append(
            {
                "row_id": row_id,
                "url": f"http://127.0.0.1:9/{position}.jpg",
                "caption": caption,
                "class_index": class_index,
                "wnid": classes[class_index]["wnid"],
                "split": split,
                "tar": f"{ROUND_DIR.format(t)}/00000.tar",
                "key": key,
            }
        )
    for t, files in members.items():
        (run_dir / ROUND_DIR.format(t)).mkdir(parents=True)
        with tarfile.open(run_dir / ROUND_DIR.format(t) / "00000.tar", "w") as tar:
            for name, data in files:
                _add(tar, name, data)
    (run_dir / "download" / "dataset").mkdir()
    table = pa.Table.from_pylist(records).cast(
        pa.schema(
            [
                ("row_id", pa.string()),
                ("url", pa.string()),
                ("caption", pa.string()),
                ("class_index", pa.int32()),
                ("wnid", pa.string()),
                ("split", pa.string()),
                ("tar", pa.string()),
                ("key", pa.string()),
            ]
        )
    )
    pq.write_table(table, run_dir / "download" / "dataset" / "part-00000.parquet")
    finish_stage(str(run_dir / "download"), {"images": len(ROWS) - 1})
    config = model_dir / "tiny-vit.json"
    config.write_text(json.dumps(TINY_VIT))
    return ImageAudit(clip_model="tiny-vit", clip_model_config=str(config), batch_size=4)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    settings = build_image_run(run_dir, tmp_path_factory.mktemp("model"))
    tally = embed_images(str(run_dir), settings, Runner(workers=1))
    return run_dir, settings, tally


def test_every_row_is_embedded_or_dropped_with_a_reason(embedded):
    run_dir, _, tally = embedded
    assert tally == {
        "images_embedded": 10,
        "dropped": {"image_missing": 1, "image_unreadable": 1},
        "warning": embeddings.RANDOM_WEIGHTS_WARNING,
    }
    table = embedding_table(str(run_dir))
    assert sorted(table.column("row_id").to_pylist()) == sorted(f"part-00000:{i}" for i in range(10))
    assert table.schema.field("image_embedding").type == pa.list_(pa.float32(), 32)


def test_sha256_is_of_the_image_bytes(embedded):
    run_dir, _, _ = embedded
    table = embedding_table(str(run_dir))
    digest = dict(zip(table.column("row_id").to_pylist(), table.column("sha256").to_pylist()))
    assert digest["part-00000:0"] == digest["part-00000:5"] == hashlib.sha256(PHOTOS["astronaut"]).hexdigest()
    assert digest["part-00000:2"] != digest["part-00000:9"]  # the same photo, encoded again


def test_embeddings_are_open_clips_on_the_preprocessed_image(embedded):
    run_dir, settings, _ = embedded
    model = ClipModel(settings.clip_model, None, settings.clip_model_config, settings.seed)
    table = embedding_table(str(run_dir))
    rows = table.column("row_id").to_pylist()
    first = rows.index("part-00000:3")
    with torch.inference_mode():
        pixels = torch.from_numpy(preprocess(Image.open(io.BytesIO(PHOTOS["rocket"])), model.preprocess_cfg))[None]
        expected = model.model.encode_image(pixels, normalize=True).numpy()[0]
        caption = model.model.encode_text(model.tokenizer(["a picture of rocket number 3"]), normalize=True).numpy()[0]
    np.testing.assert_allclose(column_vectors(table.column("image_embedding"))[first], expected, atol=1e-5)
    np.testing.assert_allclose(column_vectors(table.column("caption_embedding"))[first], caption, atol=1e-5)


def test_the_same_settings_give_the_same_bytes(embedded, tmp_path):
    run_dir, settings, _ = embedded
    again = tmp_path / "run"
    build_image_run(again, tmp_path)
    embed_images(str(again), settings, Runner(workers=1))
    for name in ("download-rounds-0-00000.parquet", "download-rounds-1-00000.parquet"):
        assert (again / "audit/embeddings/shards" / name).read_bytes() == (
            run_dir / "audit/embeddings/shards" / name
        ).read_bytes()


def test_class_queries_follow_the_template(embedded):
    run_dir, _, _ = embedded
    queries = pq.read_table(run_dir / "audit/embeddings/class_queries.parquet")
    assert queries.column("class_index").to_pylist() == [0, 1, 2]
    assert all(q.startswith("a photo of a ") and q.endswith(".") for q in queries.column("query").to_pylist())


def test_weights_file_takes_the_same_path_as_real_weights(tmp_path, embedded):
    _, settings, _ = embedded
    random_model = ClipModel(settings.clip_model, None, settings.clip_model_config, seed=7)
    weights = tmp_path / "weights.pt"
    torch.save(random_model.model.state_dict(), weights)
    loaded = ClipModel(settings.clip_model, str(weights), settings.clip_model_config, seed=99)
    pixels = preprocess(Image.open(io.BytesIO(PHOTOS["coffee"])), loaded.preprocess_cfg)[None]
    np.testing.assert_allclose(loaded.encode_pixels(pixels), random_model.encode_pixels(pixels), atol=1e-6)
    with pytest.raises(FileNotFoundError, match="no CLIP weights"):
        ClipModel(settings.clip_model, str(tmp_path / "absent.pt"), settings.clip_model_config)


def test_preprocess_resizes_the_shortest_edge_then_crops_the_centre():
    cfg = {
        "size": (4, 4),
        "mode": "RGB",
        "mean": (0.5, 0.5, 0.5),
        "std": (0.25, 0.25, 0.25),
        "interpolation": "bicubic",
        "resize_mode": "shortest",
    }
    pixels = np.zeros((4, 8, 3), np.uint8)  # height 4, width 8: already 4 on the short edge, no resize
    pixels[:, 2:6] = 255  # the centre 4 columns are white
    out = preprocess(Image.fromarray(pixels), cfg)
    assert out.shape == (3, 4, 4)
    np.testing.assert_allclose(out, (1.0 - 0.5) / 0.25)  # the crop is exactly the white centre
    wide = Image.fromarray(np.arange(10 * 30 * 3, dtype=np.uint32).reshape(10, 30, 3).astype(np.uint8))
    # 30x10 -> short edge 4: 12x4 (int(4 * 30 / 10)), then crop columns 4..8
    expected = np.asarray(wide.resize((12, 4), Image.Resampling.BICUBIC), np.float32)[:, 4:8] / 255.0
    np.testing.assert_allclose(preprocess(wide, cfg), ((expected - 0.5) / 0.25).transpose(2, 0, 1), atol=1e-6)


def test_grayscale_images_become_rgb():
    cfg = {"size": (4, 4), "mode": "RGB", "mean": (0.0, 0.0, 0.0), "std": (1.0, 1.0, 1.0)}
    out = preprocess(Image.fromarray(np.full((6, 6), 51, np.uint8)), cfg)
    np.testing.assert_allclose(out, 0.2, atol=1e-6)
    assert out.shape == (3, 4, 4)


def test_open_clip_loads_without_torchvision_and_leaves_no_placeholder():
    assert importlib.util.find_spec("torchvision") is None  # this environment must not have it
    oc = clip_model.open_clip()
    assert "torchvision" not in sys.modules
    with pytest.raises(ModuleNotFoundError, match="needs torchvision"):
        oc.image_transform(224, is_train=False)
    import sentence_transformers  # noqa: F401 -- still importable beside open_clip
    import transformers

    assert not transformers.utils.is_torchvision_available()


def test_a_tar_refetched_with_other_bytes_is_embedded_again(embedded, tmp_path):
    run_dir, settings, _ = embedded
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    tar_path = copy / ROUND_DIR.format(0) / "00000.tar"
    with tarfile.open(tar_path) as tar:
        members = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
    with tarfile.open(tar_path, "w") as tar:  # the same name, row 3's rocket now the moon
        for name, data in members:
            _add(tar, name, PHOTOS["moon"] if name == "000000003.jpg" else data)
    embed_images(str(copy), settings, Runner(workers=1))
    table = embedding_table(str(copy))
    vectors = dict(zip(table.column("row_id").to_pylist(), column_vectors(table.column("image_embedding"))))
    assert np.array_equal(vectors["part-00000:3"], vectors["part-00000:8"])

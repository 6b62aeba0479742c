"""Exact and near duplicates, split leaks and reference overlap: hand-worked cases on tiny vectors,
then the audit on a synthetic run directory embedded by a random-weight open_clip ViT."""

from __future__ import annotations

import html
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_image_embeddings import build_image_run

from imagenot.errors import ImagenotError
from imagenot.pipeline.audit.duplicates import (
    duplicate_counts,
    duplicate_pairs,
    exact_pairs,
    find_duplicates,
    knn,
    load_reference,
    near_pairs,
    pair_kinds,
)
from imagenot.pipeline.audit.embeddings import ImageAudit, embed_images, embedding_table, vectors_array
from imagenot.pipeline.config.schema import Runner


def unit(*rows):
    vectors = np.array(rows, np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# Cosines: v0.v1 = 0.96, v0.v2 = 0.8, v1.v2 = 0.96*0.8 + 0.28*0.6 = 0.936; v3 is orthogonal to all.
VECTORS = unit([1, 0, 0, 0], [0.96, 0.28, 0, 0], [0.8, 0.6, 0, 0], [0, 0, 0, 1])


def test_knn_finds_the_most_similar_vectors_first():
    cosines, neighbours = knn(VECTORS, VECTORS, 3, exact_search_max=100, probes=1)
    assert neighbours[0].tolist() == [0, 1, 2]
    np.testing.assert_allclose(cosines[0], [1.0, 0.96, 0.8], atol=1e-6)
    assert neighbours[2].tolist() == [2, 1, 0]  # 0.936 beats 0.8


def test_near_pairs_keep_each_pair_once_above_the_threshold():
    cosines, neighbours = knn(VECTORS, VECTORS, 4, exact_search_max=100, probes=1)
    a, b, cos = near_pairs(cosines, neighbours, 0.9)
    assert list(zip(a.tolist(), b.tolist())) == [(0, 1), (1, 2)]
    np.testing.assert_allclose(cos, [0.96, 0.936], atol=1e-6)
    a, _, _ = near_pairs(cosines, neighbours, 0.97)
    assert len(a) == 0


def test_exact_pairs_join_each_copy_to_the_first():
    a, b = exact_pairs(["x", "y", "x", "z", "x", "y"])
    assert list(zip(a.tolist(), b.tolist())) == [(0, 2), (0, 4), (1, 5)]


def test_pair_kinds_put_leaks_first():
    classes = np.array([0, 0, 1, 1])
    splits = np.array(["train", "test", "train", "train"], object)
    kinds = pair_kinds(np.array([0, 0, 2, 1]), np.array([1, 2, 3, 3]), classes, splits)
    assert kinds.tolist() == ["train_test", "cross_class", "within_class", "train_test"]


def images_table(vectors, classes, splits, digests):
    return pa.table(
        {
            "row_id": [f"p:{i}" for i in range(len(vectors))],
            "class_index": pa.array(classes, pa.int32()),
            "split": splits,
            "sha256": digests,
            "image_embedding": vectors_array(vectors),
        }
    )


def test_pairs_and_counts_on_hand_made_embeddings():
    # p:4 is a byte copy of p:0 in the test split; p:1 is near p:0 in another class.
    vectors = np.concatenate([VECTORS, VECTORS[:1]])
    images = images_table(vectors, [0, 1, 1, 2, 0], ["train"] * 4 + ["test"], ["a", "b", "c", "d", "a"])
    pairs = duplicate_pairs(images, ImageAudit(near_duplicate_threshold=0.9, neighbours=3), None)
    found = {(r["row_id_a"], r["row_id_b"]): (r["kind"], r["exact"]) for r in pairs.to_pylist()}
    assert found == {
        ("p:0", "p:4"): ("train_test", True),
        ("p:0", "p:1"): ("cross_class", False),
        ("p:1", "p:4"): ("train_test", False),
        ("p:1", "p:2"): ("within_class", False),
    }
    counts = duplicate_counts(pairs, images)
    assert counts["pairs"] == {"within_class": 1, "cross_class": 1, "train_test": 2, "reference": 0}
    assert counts["exact_pairs"] == {"within_class": 0, "cross_class": 0, "train_test": 1}
    assert counts["test_images_with_train_duplicate"] == 1


def test_copies_beyond_k_neighbours_are_still_exact_pairs():
    vectors = np.repeat(VECTORS[:1], 6, axis=0)
    images = images_table(vectors, [0] * 6, ["train"] * 6, ["same"] * 6)
    pairs = duplicate_pairs(images, ImageAudit(neighbours=1), None)
    exact = {(r["row_id_a"], r["row_id_b"]) for r in pairs.to_pylist() if r["exact"]}
    assert {("p:0", f"p:{i}") for i in range(1, 6)} <= exact


def test_approximate_search_agrees_with_exact_search_on_clustered_vectors():
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((20, 64)).astype(np.float32)
    vectors = unit(*(centres[rng.integers(0, 20, 2000)] + 0.5 * rng.standard_normal((2000, 64))))
    _, flat = knn(vectors, vectors, 5, exact_search_max=10_000, probes=1)
    # 44 lists, all visited; 250 candidates re-ranked: only the product codes are approximate.
    ivf_cos, ivf = knn(vectors, vectors, 5, exact_search_max=100, probes=44, rerank=50)
    assert (flat[:, 0] == np.arange(2000)).all()
    assert np.mean([len(set(x) & set(y)) / 5 for x, y in zip(flat, ivf)]) > 0.99
    exact = np.einsum("ij,ij->i", vectors[np.arange(2000)], vectors[ivf[:, 1]])
    np.testing.assert_allclose(ivf_cos[:, 1], exact, atol=1e-5)  # re-ranked cosines are exact


def test_reference_overlap_counts_test_images_already_in_the_reference(tmp_path):
    images = images_table(VECTORS, [0, 0, 1, 1], ["test", "train", "test", "test"], ["a", "b", "c", "d"])
    reference = np.array([[0.0, 0.0, 1.0, 0.01], [2.0, 0.1, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]], np.float32)
    np.save(tmp_path / "reference.npy", reference)
    pairs = duplicate_pairs(
        images, ImageAudit(near_duplicate_threshold=0.9), load_reference(str(tmp_path / "reference.npy"))
    )
    hits = {(r["row_id_a"], r["row_id_b"]) for r in pairs.to_pylist() if r["kind"] == "reference"}
    # Nearest reference of v0: r1 (0.9988); v1: r1 (0.9728); v2: r1 (0.829, too far); v3: r0 (0.01).
    assert hits == {("p:0", "1"), ("p:1", "1")}
    assert duplicate_counts(pairs, images)["images_in_reference"] == {"test": 1, "train": 1}


def test_a_reference_of_another_dimension_is_an_error(tmp_path):
    np.save(tmp_path / "reference.npy", np.ones((3, 5), np.float32))
    images = images_table(VECTORS, [0, 0, 1, 1], ["test"] * 4, ["a", "b", "c", "d"])
    with pytest.raises(ImagenotError, match="dimension 5, the images 4"):
        duplicate_pairs(images, ImageAudit(), load_reference(str(tmp_path / "reference.npy")))


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    settings = build_image_run(run_dir, tmp_path_factory.mktemp("model"))
    embed_images(str(run_dir), settings, Runner(workers=1))
    # The reference set holds the moon photo's embedding (a test image) and a far-away vector.
    table = embedding_table(str(run_dir), ["row_id", "image_embedding"])
    moon = table.column("row_id").to_pylist().index("part-00000:8")
    vectors = table.column("image_embedding").combine_chunks()[moon].values.to_numpy()
    reference = pa.table({"embedding": [vectors.tolist(), (-vectors).tolist()], "id": ["val_1", "val_2"]})
    pq.write_table(reference, run_dir / "reference.parquet")
    settings = settings.model_copy(
        update={"near_duplicate_threshold": 0.9999, "reference_embeddings": str(run_dir / "reference.parquet")}
    )
    return run_dir, find_duplicates(str(run_dir), settings)


def test_the_audit_finds_the_byte_copies_and_the_reference_image(audited):
    run_dir, counts = audited
    pairs = pq.read_table(run_dir / "audit/duplicates/pairs.parquet").to_pylist()
    exact = {(p["row_id_a"], p["row_id_b"], p["kind"]) for p in pairs if p["exact"]}
    assert exact == {("part-00000:0", "part-00000:5", "train_test"), ("part-00000:1", "part-00000:7", "within_class")}
    assert all(p["cosine"] >= 0.9999 for p in pairs)
    assert ("part-00000:8", "val_1") in {(p["row_id_a"], p["row_id_b"]) for p in pairs if p["kind"] == "reference"}
    assert counts["images"] == 10
    assert counts["test_images_with_train_duplicate"] >= 1
    assert counts["images_in_reference"]["test"] >= 1
    assert counts["warning"].startswith("RANDOM CLIP WEIGHTS")
    assert json.loads((run_dir / "audit/duplicates/figures.json").read_text()) == counts


def test_the_report_shows_thumbnails_of_the_pairs(audited):
    run_dir, _ = audited
    page = (run_dir / "audit/duplicates/pairs.html").read_text()
    assert page.count("data:image/jpeg;base64,") >= 4  # two pairs of real images at least
    assert "part-00000:5" in page and "(reference)" in page


def test_the_pairs_are_labelled_with_class_and_caption(audited):
    run_dir, _ = audited
    page = (run_dir / "audit/duplicates/pairs.html").read_text()
    classes = json.loads((run_dir / "rank/classes.json").read_text())
    assert f"class {classes[0]['index']} {classes[0]['name']} · " in page
    caption = pq.read_table(run_dir / "download/dataset").column("caption")[0].as_py()
    assert html.escape(caption) in page

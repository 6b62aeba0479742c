"""Image-class and image-caption agreement, intra- and inter-class similarity: hand-worked cases,
then the audit on a synthetic run directory embedded by a random-weight open_clip ViT."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_image_embeddings import build_image_run

from imagenot.errors import ImagenotError
from imagenot.pipeline.audit.agreement import agreement_rows, class_similarities, measure_agreement, quantiles
from imagenot.pipeline.audit.embeddings import ImageAudit, embed_images, vectors_array
from imagenot.pipeline.config.schema import Runner


def test_intra_and_inter_class_similarity_by_hand():
    vectors = np.array([[1, 0], [2, 0], [0, 1], [0, 3]], np.float32)  # e1, e1, e2, e2 once normalised
    table = class_similarities(vectors, np.array([0, 0, 1, 1]))
    assert table.column("intra_class_similarity").to_pylist() == [1.0, 1.0]
    assert table.column("inter_class_similarity").to_pylist() == [0.0, 0.0]
    # Class 0 = e1, e1, e2: pairs of distinct images 1, 0, 0 -> 1/3; class 1 = e2 alone: no pair.
    # Between the classes: e1.e2, e1.e2, e2.e2 = 0, 0, 1 -> 1/3 for both.
    table = class_similarities(vectors, np.array([0, 0, 0, 1]))
    assert table.column("images").to_pylist() == [3, 1]
    intra = table.column("intra_class_similarity").to_pylist()
    assert intra[0] == pytest.approx(1 / 3) and intra[1] is None
    assert table.column("inter_class_similarity").to_pylist() == pytest.approx([1 / 3, 1 / 3])


def test_inter_class_similarity_matches_brute_force():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((30, 8)).astype(np.float32)
    labels = rng.integers(0, 4, 30)
    table = class_similarities(vectors, labels)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit.T
    for label, intra, inter in zip(
        *(table.column(c).to_pylist() for c in ("label", "intra_class_similarity", "inter_class_similarity"))
    ):
        inside = labels == label
        block = cosines[np.ix_(inside, inside)]
        assert intra == pytest.approx((block.sum() - np.trace(block)) / (inside.sum() * (inside.sum() - 1)), abs=1e-5)
        assert inter == pytest.approx(cosines[np.ix_(inside, ~inside)].mean(), abs=1e-5)


def _images(image, caption, classes):
    return pa.table(
        {
            "row_id": [f"p:{i}" for i in range(len(classes))],
            "class_index": pa.array(classes, pa.int32()),
            "split": ["train"] * len(classes),
            "image_embedding": vectors_array(np.array(image, np.float32)),
            "caption_embedding": vectors_array(np.array(caption, np.float32)),
        }
    )


QUERIES = pa.table(
    {"class_index": pa.array([0, 1], pa.int32()), "embedding": vectors_array(np.array([[1, 0], [0, 1]], np.float32))}
)


def test_rows_get_cosines_to_their_class_query_and_caption():
    images = _images([[3, 4], [0, 2], [1, 0]], [[3, 4], [1, 0], [-1, 0]], [0, 1, 1])
    rows = agreement_rows(images, QUERIES, ImageAudit())
    assert rows.column("image_class_similarity").to_pylist() == pytest.approx([0.6, 1.0, 0.0])
    assert rows.column("image_caption_similarity").to_pylist() == pytest.approx([1.0, 0.0, -1.0])
    assert rows.column("passes_class_filter").null_count == 3  # filters off
    assert rows.column("kept").to_pylist() == [True, True, True]

    both = ImageAudit(min_image_class_similarity=0.5, min_image_caption_similarity=0.5)
    rows = agreement_rows(images, QUERIES, both)
    assert rows.column("passes_class_filter").to_pylist() == [True, True, False]
    assert rows.column("passes_caption_filter").to_pylist() == [True, False, False]
    assert rows.column("kept").to_pylist() == [True, False, False]


def test_an_image_of_a_class_without_query_is_an_error():
    images = _images([[1, 0]], [[1, 0]], [5])
    with pytest.raises(ImagenotError, match=r"class_index \[5\] have no class query"):
        agreement_rows(images, QUERIES, ImageAudit())


def test_quantiles_ignore_undefined_values():
    assert quantiles(np.array([np.nan, 0.0, 1.0])) == {"p5": 0.05, "p25": 0.25, "p50": 0.5, "p75": 0.75, "p95": 0.95}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    settings = build_image_run(run_dir, tmp_path_factory.mktemp("model"))
    embed_images(str(run_dir), settings, Runner(workers=1))
    rng = np.random.default_rng(1)
    reference = pa.table(
        {"embedding": rng.standard_normal((40, 32)).astype(np.float32).tolist(), "label": rng.integers(0, 5, 40)}
    )
    pq.write_table(reference, run_dir / "reference.parquet")
    settings = settings.model_copy(
        update={"min_image_caption_similarity": 0.0, "reference_embeddings": str(run_dir / "reference.parquet")}
    )
    return run_dir, measure_agreement(str(run_dir), settings)


def test_the_audit_writes_rows_classes_reference_and_figure(measured):
    run_dir, summary = measured
    out = run_dir / "audit/agreement"
    rows = pq.read_table(out / "rows.parquet")
    assert rows.num_rows == summary["images"] == 10
    caption = rows.column("image_caption_similarity").to_numpy()
    assert summary["kept_by_filters"] == int((caption >= 0).sum())
    assert pq.read_table(out / "classes.parquet").column("images").to_pylist() == [4, 3, 3]
    assert pq.read_table(out / "reference_classes.parquet").column("images").to_numpy().sum() == 40
    assert set(summary) >= {"intra_class_similarity", "inter_class_similarity", "reference_intra_class_similarity"}
    assert (out / "similarity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "figures.json").read_text()) == summary

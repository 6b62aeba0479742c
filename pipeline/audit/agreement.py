"""The agreement audit: does each image look like its class and its caption, and how alike are the
images within a class and across classes (ImageNot's Figures 5 and 6)?

Per image: the cosine between its CLIP embedding and its class query's text embedding, and
between it and its caption's embedding; each checked against an optional threshold (LAIONet kept
pairs passing both a text and an image threshold). Per class: the intra-class similarity (mean
cosine over pairs of distinct images of the class) and the inter-class similarity (mean cosine
between the class's images and all images of the other classes), both computed exactly from
per-class sums of the normalised vectors, so no pairwise matrix is built. The same per-class
figures for a labelled reference embedding set, when given, place the dataset beside it.
Outputs in `audit/agreement/`: `rows.parquet`, `classes.parquet`, `reference_classes.parquet`
(with a labelled reference), `similarity.png`; distribution quantiles go to summary.json.
With `--drop` (see `pipeline.audit.drop`), the images that fail a threshold are taken out and
replaced from their class's reserve.
"""

from __future__ import annotations

import io

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from imagenot.errors import ImagenotError
from imagenot.pipeline.audit import embeddings
from imagenot.pipeline.audit.drop import drop_flagged
from imagenot.pipeline.audit.duplicates import load_reference
from imagenot.pipeline.audit.embeddings import ImageAudit, column_vectors
from imagenot.pipeline.audit.faces import audit_command
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.run.files import atomic_output, read_table, write_bytes
from imagenot.pipeline.run.layout import (
    AGREEMENT_PLOT_FILE,
    AUDIT_AGREEMENT,
    AUDIT_EMBEDDINGS,
    CLASS_QUERIES_FILE,
    stage_path,
)
from imagenot.pipeline.run.shards import read_batches
from imagenot.pipeline.run.stage_dir import finish_stage, open_stage, stage_fingerprint

STAGE = AUDIT_AGREEMENT
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, np.float32).copy()
    faiss.normalize_L2(vectors)
    return vectors


def rowwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of `a` with the same row of `b`."""
    return np.einsum("ij,ij->i", normalised(a), normalised(b))


def class_similarities(vectors: np.ndarray, labels: np.ndarray) -> pa.Table:
    """Per label: images, intra-class and inter-class mean cosine (null where undefined).

    With unit vectors x and class sum s_c of n_c images, the sum of cosines over ordered pairs of
    distinct images in c is |s_c|^2 - n_c, and between c and the rest it is s_c . (S - s_c).
    """
    order = np.argsort(labels, kind="stable")
    classes, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    sums = np.add.reduceat(normalised(vectors[order]), starts, axis=0, dtype=np.float64)
    total = sums.sum(0)
    within_pairs = counts * (counts - 1.0)
    across_pairs = counts * (len(labels) - counts.astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        intra = np.where(within_pairs > 0, ((sums * sums).sum(1) - counts) / within_pairs, np.nan)
        inter = np.where(across_pairs > 0, (sums @ total - (sums * sums).sum(1)) / across_pairs, np.nan)
    return pa.table(
        {
            "label": classes,
            "images": pa.array(counts, pa.int64()),
            "intra_class_similarity": pa.array(intra, pa.float32(), mask=np.isnan(intra)),
            "inter_class_similarity": pa.array(inter, pa.float32(), mask=np.isnan(inter)),
        }
    )


def passes(values: np.ndarray, threshold: float | None) -> pa.Array:
    """Per row: value >= threshold, or null when the filter is off."""
    if threshold is None:
        return pa.nulls(len(values), pa.bool_())
    return pa.array(values >= threshold, pa.bool_())


def agreement_rows(images: pa.Table, queries: pa.Table, settings: ImageAudit) -> pa.Table:
    """Per embedded image: cosine to its class query and to its caption, and the filter flags."""
    image = column_vectors(images.column("image_embedding"))
    query_row = {c: i for i, c in enumerate(queries.column("class_index").to_pylist())}
    classes = images.column("class_index").to_pylist()
    unknown = sorted(set(classes) - set(query_row))
    if unknown:
        raise ImagenotError(f"images of class_index {unknown[:5]} have no class query (rank/classes.json)")
    query = column_vectors(queries.column("embedding"))[[query_row[c] for c in classes]]
    to_class = rowwise_cosine(image, query)
    to_caption = rowwise_cosine(image, column_vectors(images.column("caption_embedding")))
    by_class = passes(to_class, settings.min_image_class_similarity)
    by_caption = passes(to_caption, settings.min_image_caption_similarity)
    kept = pc.and_(pc.fill_null(by_class, True), pc.fill_null(by_caption, True))  # a filter that is off passes all
    return pa.table(
        {
            "row_id": images.column("row_id"),
            "class_index": images.column("class_index"),
            "split": images.column("split"),
            "image_class_similarity": pa.array(to_class, pa.float32()),
            "image_caption_similarity": pa.array(to_caption, pa.float32()),
            "passes_class_filter": by_class,
            "passes_caption_filter": by_caption,
            "kept": kept,
        }
    )


def quantiles(values: np.ndarray) -> dict[str, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return {}
    return {f"p{round(q * 100)}": round(float(v), 4) for q, v in zip(QUANTILES, np.quantile(values, QUANTILES))}


def _column(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy().astype(np.float64)  # nulls become nan


def similarity_figure(dataset: pa.Table, reference: pa.Table | None) -> bytes:
    """Histograms of per-class intra- and inter-class similarity, beside the reference's (PNG)."""
    figure = Figure(figsize=(10, 3.5))
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, 2)
    for axis, column, title in zip(
        axes, ("intra_class_similarity", "inter_class_similarity"), ("Intra-class", "Inter-class")
    ):
        for table, name in ((dataset, "this dataset"), (reference, "reference")):
            if table is not None:
                values = _column(table, column)
                axis.hist(values[~np.isnan(values)], bins=30, alpha=0.6, density=True, label=name)
        axis.set(title=f"{title} image similarity", xlabel="mean cosine (CLIP)", ylabel="density")
        axis.legend()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _write_parquet(path: str, table: pa.Table) -> None:
    with atomic_output(path) as stream:
        pq.write_table(table, stream, compression="zstd")


def measure_agreement(run_dir: str, settings: ImageAudit) -> dict:
    """The agreement audit over a finished embeddings stage; returns the summary figures."""
    upstream = stage_fingerprint(run_dir, embeddings.STAGE)
    keys = {"min_image_class_similarity", "min_image_caption_similarity", "reference_embeddings"}
    stage_dir = open_stage(run_dir, STAGE, settings.model_dump(include=keys), upstream)
    images = embeddings.embedding_table(run_dir)
    queries_path = stage_path(run_dir, AUDIT_EMBEDDINGS, CLASS_QUERIES_FILE)
    queries = pa.Table.from_batches(list(read_batches(queries_path)))
    rows = agreement_rows(images, queries, settings)
    classes = class_similarities(
        column_vectors(images.column("image_embedding")), images.column("class_index").to_numpy()
    )
    _write_parquet(FileSystems.join(stage_dir, "rows.parquet"), rows)
    _write_parquet(FileSystems.join(stage_dir, "classes.parquet"), classes)
    summary = {
        "images": rows.num_rows,
        "kept_by_filters": int(np.sum(rows.column("kept").to_numpy(zero_copy_only=False))),
        "image_class_similarity": quantiles(_column(rows, "image_class_similarity")),
        "image_caption_similarity": quantiles(_column(rows, "image_caption_similarity")),
        "intra_class_similarity": quantiles(_column(classes, "intra_class_similarity")),
        "inter_class_similarity": quantiles(_column(classes, "inter_class_similarity")),
    }
    reference_classes = None
    if settings.reference_embeddings:
        reference = load_reference(settings.reference_embeddings)
        if reference.labels is not None:
            reference_classes = class_similarities(reference.vectors, reference.labels)
            _write_parquet(FileSystems.join(stage_dir, "reference_classes.parquet"), reference_classes)
            summary["reference_intra_class_similarity"] = quantiles(
                _column(reference_classes, "intra_class_similarity")
            )
            summary["reference_inter_class_similarity"] = quantiles(
                _column(reference_classes, "inter_class_similarity")
            )
    write_bytes(FileSystems.join(stage_dir, AGREEMENT_PLOT_FILE), similarity_figure(classes, reference_classes))
    if settings.random_weights:
        summary["warning"] = embeddings.RANDOM_WEIGHTS_WARNING
    finish_stage(stage_dir, summary)
    return summary


def failing_rows(rows: pa.Table) -> pa.Table:
    """The rows a threshold rejects: `row_id`, `reason` (the class filter's, else the caption
    filter's), `duplicate_of` (null)."""
    failing = rows.filter(pc.invert(rows.column("kept")))
    by_class = pc.fill_null(failing.column("passes_class_filter"), True)
    reason = pc.if_else(by_class, "image_caption_disagreement", "image_class_disagreement")
    return pa.table(
        {"row_id": failing.column("row_id"), "reason": reason, "duplicate_of": pa.nulls(failing.num_rows, pa.string())}
    )


def choose_drops(run_dir: str, settings: ImageAudit) -> pa.Table:
    return failing_rows(read_table(FileSystems.join(run_dir, STAGE, "rows.parquet")))


def run_agreement(config: Config, run_dir: str, drop: bool = False) -> None:
    settings = config.image_audit
    if not drop:
        measure_agreement(run_dir, settings)
    elif settings.min_image_class_similarity is None and settings.min_image_caption_similarity is None:
        raise ImagenotError(
            "--drop takes out the images that fail a threshold: set image_audit.min_image_class_similarity "
            "or min_image_caption_similarity"
        )
    elif settings.random_weights:
        raise ImagenotError(
            "--drop with random CLIP weights would drop on meaningless similarities: set image_audit.clip_weights"
        )
    else:
        drop_flagged(config, run_dir, STAGE, run_agreement, choose_drops)


DECLARATION = Stage(STAGE, embeddings.STAGE, None, run_agreement)
agreement_command = audit_command("agreement")

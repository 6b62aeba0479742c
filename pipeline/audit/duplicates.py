"""The duplicates audit: exact and near-duplicate images, within and across classes, leaks across
the train/test split, and images that also sit in a reference set (e.g. ImageNet's validation set).

Exact duplicates share the sha256 of their bytes; each copy is paired with the first copy (row
order), so a group of m copies gives m - 1 pairs. Near duplicates come from a faiss k-nearest-
neighbour search over the L2-normalised image embeddings (inner product = cosine): exhaustive
(IndexFlatIP) up to `exact_search_max` vectors; above, an inverted-file index with fast-scan
product codes whose candidates are re-ranked by exact cosine (see `knn`, and
benchmarks/bench_faiss.py for its speed and recall against exhaustive search).
A pair is `train_test` when its splits differ (a leak), else `cross_class` or `within_class`.
Outputs in `audit/duplicates/`: `pairs.parquet` (row_id_a, row_id_b, cosine, kind, exact; for
kind `reference`, row_id_b is the reference vector's id and exact is null) and `pairs.html`
(the closest pairs with thumbnails); the counts go to summary.json.

With `--drop` (see `pipeline.audit.drop`), the pairs of the kinds in `image_audit.drop_kinds` are
resolved by taking images out: an image in the reference set goes, and of each group of images
linked by pairs the first in dataset order (its class's best candidate) stays.
"""

from __future__ import annotations

import html
import io
import logging
import math
from collections import Counter
from dataclasses import dataclass

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from imagenot.errors import ImagenotError
from imagenot.pipeline.audit import embeddings
from imagenot.pipeline.audit.drop import drop_flagged
from imagenot.pipeline.audit.embeddings import ImageAudit, column_vectors
from imagenot.pipeline.audit.faces import audit_command
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.frame.preflight import files_exist
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.report.thumbnails import labelled_thumbnail, read_thumbnails
from imagenot.pipeline.run.files import atomic_output, read_table, write_text
from imagenot.pipeline.run.layout import AUDIT_DUPLICATES, DUPLICATE_PAIRS_HTML_FILE, classes_path, read_classes
from imagenot.pipeline.run.stage_dir import finish_stage, open_stage, stage_fingerprint

log = logging.getLogger(__name__)

STAGE = AUDIT_DUPLICATES
KINDS = ("within_class", "cross_class", "train_test", "reference")
THUMBNAIL_PIXELS = 128


def knn(
    database: np.ndarray, queries: np.ndarray, k: int, exact_search_max: int, probes: int, rerank: int = 4
) -> tuple[np.ndarray, np.ndarray]:
    """The k most similar database rows of each query: (cosines, indices), both (n, k), best first.

    Vectors must be L2-normalised float32. Up to `exact_search_max` database vectors the search
    is exhaustive; above, an IVF index (sqrt(n) lists, `probes` visited) with 4-bit fast-scan
    product codes (dim / 8 sub-quantisers) finds `rerank` * k candidates, which are re-ranked
    by their exact cosines, so the cosines returned are exact. Missing neighbours have index -1.
    """
    count, dim = database.shape
    k = min(k, count)
    if count <= exact_search_max:
        index = faiss.IndexFlatIP(dim)
        index.add(database)
        return index.search(queries, k)
    if dim % 8:
        raise ValueError(
            f"approximate search needs a dimension divisible by 8, got {dim}; raise exact_search_max above {count}"
        )
    lists = int(math.sqrt(count))
    index = faiss.index_factory(dim, f"IVF{lists},PQ{dim // 8}x4fs,RFlat", faiss.METRIC_INNER_PRODUCT)
    sample = np.random.default_rng(0).choice(count, min(count, 64 * lists), replace=False)
    index.train(database[np.sort(sample)])
    index.add(database)
    params = faiss.IndexRefineSearchParameters(
        k_factor=rerank, base_index_params=faiss.SearchParametersIVF(nprobe=probes)
    )
    return index.search(queries, k, params=params)


def near_pairs(
    cosines: np.ndarray, neighbours: np.ndarray, threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique pairs (a < b) of a self-search with cosine >= threshold: (a, b, cosine), sorted by (a, b)."""
    rows = np.repeat(np.arange(len(neighbours)), neighbours.shape[1])
    cols, sims = neighbours.reshape(-1), cosines.reshape(-1)
    keep = (cols >= 0) & (cols != rows) & (sims >= threshold)
    a, b = np.minimum(rows, cols)[keep], np.maximum(rows, cols)[keep]
    pairs, first = np.unique(np.stack([a, b], 1), axis=0, return_index=True)
    return pairs[:, 0], pairs[:, 1], sims[keep][first]


def exact_pairs(digests: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each later copy of the same bytes paired with the first copy: (a, b), a < b."""
    first: dict[str, int] = {}
    a, b = [], []
    for row, digest in enumerate(digests):
        if digest in first:
            a.append(first[digest])
            b.append(row)
        else:
            first[digest] = row
    return np.array(a, np.int64), np.array(b, np.int64)


def pair_kinds(a: np.ndarray, b: np.ndarray, class_index: np.ndarray, split: np.ndarray) -> np.ndarray:
    """train_test when the splits differ (a leak), else cross_class or within_class."""
    return np.where(
        split[a] != split[b], "train_test", np.where(class_index[a] != class_index[b], "cross_class", "within_class")
    )


@dataclass(frozen=True)
class Reference:
    ids: np.ndarray  # str
    vectors: np.ndarray  # float32 (n, d), L2-normalised
    labels: np.ndarray | None  # class of each vector, when the file has them


def load_reference(path: str) -> Reference:
    """A reference embedding set: `.npy` (n, d) or parquet with `embedding` and optional `id`, `label`."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        data = f.read()
    if path.endswith(".npy"):
        vectors = np.load(io.BytesIO(data))
        ids, labels = np.arange(len(vectors)).astype(str), None
    else:
        table = pq.read_table(io.BytesIO(data))
        if "embedding" not in table.column_names:
            raise ImagenotError(
                f"{path}: reference parquet needs an `embedding` list<float> column; has {table.column_names}"
            )
        embedding = table.column("embedding").combine_chunks()
        vectors = np.stack(embedding.to_numpy(zero_copy_only=False)) if len(embedding) else np.zeros((0, 0))
        ids = (
            np.array(table.column("id").to_pylist(), str)
            if "id" in table.column_names
            else np.arange(len(table)).astype(str)
        )
        labels = table.column("label").to_numpy(zero_copy_only=False) if "label" in table.column_names else None
    if vectors.ndim != 2 or not len(vectors):
        raise ImagenotError(
            f"{path}: expected a non-empty (n, d) array of reference embeddings, got shape {vectors.shape}"
        )
    vectors = np.ascontiguousarray(vectors, np.float32)
    faiss.normalize_L2(vectors)
    return Reference(ids, vectors, labels)


def duplicate_pairs(images: pa.Table, settings: ImageAudit, reference: Reference | None) -> pa.Table:
    """All duplicate pairs of the embedded images (`row_id`, `class_index`, `split`, `sha256`,
    `image_embedding`), and of images against the reference set when given."""
    vectors = np.ascontiguousarray(column_vectors(images.column("image_embedding")))
    faiss.normalize_L2(vectors)
    row_ids = np.array(images.column("row_id").to_pylist(), object)
    classes = images.column("class_index").to_numpy()
    splits = np.array(images.column("split").to_pylist(), object)
    digests = images.column("sha256").to_pylist()

    k = settings.neighbours + 1  # the image itself comes back too
    cosines, neighbours = knn(vectors, vectors, k, settings.exact_search_max, settings.ivf_probes, settings.ann_rerank)
    a, b, cos = near_pairs(cosines, neighbours, settings.near_duplicate_threshold)
    exact_a, exact_b = exact_pairs(digests)
    found = set(zip(a.tolist(), b.tolist()))
    extra = [(x, y) for x, y in zip(exact_a.tolist(), exact_b.tolist()) if (x, y) not in found]  # groups larger than k
    if extra:
        ea, eb = np.array(extra).T
        a, b = np.concatenate([a, ea]), np.concatenate([b, eb])
        cos = np.concatenate([cos, np.einsum("ij,ij->i", vectors[ea], vectors[eb])])
    digest_array = np.array(digests, object)
    parts = [
        pa.table(
            {
                "row_id_a": pa.array(row_ids[a], pa.string()),
                "row_id_b": pa.array(row_ids[b], pa.string()),
                "cosine": pa.array(cos, pa.float32()),
                "kind": pa.array(pair_kinds(a, b, classes, splits), pa.string()),
                "exact": pa.array(digest_array[a] == digest_array[b], pa.bool_()),
            }
        )
    ]
    if reference is not None:
        parts.append(reference_pairs(vectors, row_ids, reference, settings))
    pairs = pa.concat_tables(parts)
    return pairs.sort_by(
        [("kind", "ascending"), ("cosine", "descending"), ("row_id_a", "ascending"), ("row_id_b", "ascending")]
    )


def reference_pairs(vectors: np.ndarray, row_ids: np.ndarray, reference: Reference, settings: ImageAudit) -> pa.Table:
    """Each image whose nearest reference vector has cosine >= threshold, with that vector's id."""
    if reference.vectors.shape[1] != vectors.shape[1]:
        raise ImagenotError(
            f"reference embeddings have dimension {reference.vectors.shape[1]}, the images {vectors.shape[1]}"
        )
    cosines, neighbours = knn(
        reference.vectors, vectors, 1, settings.exact_search_max, settings.ivf_probes, settings.ann_rerank
    )
    hit = cosines[:, 0] >= settings.near_duplicate_threshold
    return pa.table(
        {
            "row_id_a": pa.array(row_ids[hit], pa.string()),
            "row_id_b": pa.array(reference.ids[neighbours[hit, 0]], pa.string()),
            "cosine": pa.array(cosines[hit, 0], pa.float32()),
            "kind": pa.array(["reference"] * int(hit.sum()), pa.string()),
            "exact": pa.nulls(int(hit.sum()), pa.bool_()),
        }
    )


def duplicate_counts(pairs: pa.Table, images: pa.Table) -> dict:
    """Pairs by kind (and how many are byte-identical), test images leaked from train, images in the reference."""
    kinds = pairs.column("kind").to_pylist()
    exact = pairs.column("exact").to_pylist()
    split_of = dict(zip(images.column("row_id").to_pylist(), images.column("split").to_pylist()))
    ids_a, ids_b = pairs.column("row_id_a").to_pylist(), pairs.column("row_id_b").to_pylist()
    leaked = {x if split_of[x] == "test" else y for x, y, k in zip(ids_a, ids_b, kinds) if k == "train_test"}
    in_reference = Counter(split_of[x] for x, k in zip(ids_a, kinds) if k == "reference")
    return {
        "images": images.num_rows,
        "pairs": {kind: kinds.count(kind) for kind in KINDS},
        "exact_pairs": {kind: sum(1 for k, e in zip(kinds, exact) if k == kind and e) for kind in KINDS[:3]},
        "test_images_with_train_duplicate": len(leaked),
        "images_in_reference": dict(sorted(in_reference.items())),
    }


def thumbnail_html(pairs: pa.Table, run_dir: str, limit: int) -> str:
    """An HTML table of the `limit` closest pairs, each image a small inline JPEG labelled with
    its class and caption."""
    shown = pairs.sort_by([("cosine", "descending"), ("row_id_a", "ascending"), ("row_id_b", "ascending")]).slice(
        0, limit
    )
    rows_of = {r["row_id"]: r for r in embeddings.dataset_table(run_dir).to_pylist()}
    has_classes = FileSystems.exists(classes_path(run_dir))
    names = {c["index"]: c["name"] for c in read_classes(run_dir)} if has_classes else {}
    needed = {r for r in shown.column("row_id_a").to_pylist() + shown.column("row_id_b").to_pylist() if r in rows_of}
    pictures = read_thumbnails(
        run_dir, [(rows_of[r]["tar"], rows_of[r]["key"]) for r in sorted(needed)], THUMBNAIL_PIXELS
    )

    def cell(row_id: str) -> str:
        row = rows_of.get(row_id)
        if row is None:
            return f"<td>(reference)<br>{html.escape(row_id)}</td>"
        label = (
            f"class {row['class_index']} {names.get(row['class_index'], '')}".rstrip() + f" · {row['split']} · {row_id}"
        )
        return f"<td>{labelled_thumbnail(pictures.get((row['tar'], row['key'])), label, row['caption'])}</td>"

    rows = [
        f"<tr>{cell(r['row_id_a'])}{cell(r['row_id_b'])}<td>{r['cosine']:.4f}</td><td>{r['kind']}</td><td>{r['exact']}</td></tr>"
        for r in shown.to_pylist()
    ]
    header = "<tr><th>image a</th><th>image b</th><th>cosine</th><th>kind</th><th>exact</th></tr>"
    return f'<table class="duplicates">\n{header}\n' + "\n".join(rows) + "\n</table>\n"


def find_duplicates(run_dir: str, settings: ImageAudit) -> dict:
    """The duplicates audit over a finished embeddings stage; returns the counts."""
    upstream = stage_fingerprint(run_dir, embeddings.STAGE)
    keys = {
        "near_duplicate_threshold",
        "neighbours",
        "exact_search_max",
        "ivf_probes",
        "ann_rerank",
        "reference_embeddings",
        "thumbnails",
    }
    stage_dir = open_stage(run_dir, STAGE, settings.model_dump(include=keys), upstream)
    images = embeddings.embedding_table(run_dir, ["row_id", "class_index", "split", "sha256", "image_embedding"])
    reference = load_reference(settings.reference_embeddings) if settings.reference_embeddings else None
    pairs = duplicate_pairs(images, settings, reference)
    with atomic_output(FileSystems.join(stage_dir, "pairs.parquet")) as stream:
        pq.write_table(pairs, stream, compression="zstd")
    write_text(
        FileSystems.join(stage_dir, DUPLICATE_PAIRS_HTML_FILE), thumbnail_html(pairs, run_dir, settings.thumbnails)
    )
    counts = duplicate_counts(pairs, images)
    if settings.random_weights:
        counts["warning"] = embeddings.RANDOM_WEIGHTS_WARNING
    finish_stage(stage_dir, counts)
    return counts


def rows_to_drop(pairs: pa.Table, images: pa.Table, kinds: list[str]) -> pa.Table:
    """The images to take out so that no pair of `kinds` is left: `row_id`, `reason`
    (`in_reference`, or `duplicate_<kind of its pair with the image kept>`), `duplicate_of`.

    `images` (`row_id`, `class_index`, `split`) is in dataset order. Every image with a
    reference pair goes; in each group of images linked by image-image pairs, the first image in
    dataset order that is not in the reference stays and the others go.
    """
    pairs = pairs.filter(pc.is_in(pairs.column("kind"), pa.array(kinds, pa.string())))
    is_reference = pc.equal(pairs.column("kind"), "reference")
    reference = pairs.filter(is_reference)
    linked = pairs.filter(pc.invert(is_reference))
    row_ids = images.column("row_id").to_pylist()
    position = {row_id: i for i, row_id in enumerate(row_ids)}
    in_reference = dict(zip(reference.column("row_id_a").to_pylist(), reference.column("row_id_b").to_pylist()))
    a = np.array([position[r] for r in linked.column("row_id_a").to_pylist()], np.int64)
    b = np.array([position[r] for r in linked.column("row_id_b").to_pylist()], np.int64)
    _, group = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(len(row_ids),) * 2), directed=False)
    members = sorted({*a.tolist(), *b.tolist()})
    keeper: dict[int, int] = {}
    for i in members:
        if row_ids[i] not in in_reference:
            keeper.setdefault(group[i], i)
    duplicates = np.array([i for i in members if row_ids[i] not in in_reference and keeper[group[i]] != i], np.int64)
    kept = np.array([keeper[group[i]] for i in duplicates], np.int64)
    classes, splits = images.column("class_index").to_numpy(), np.array(images.column("split").to_pylist(), object)
    rows = [(row_id, "in_reference", reference_id) for row_id, reference_id in in_reference.items()]
    rows += [
        (row_ids[i], f"duplicate_{kind}", row_ids[k])
        for i, k, kind in zip(duplicates.tolist(), kept.tolist(), pair_kinds(duplicates, kept, classes, splits))
    ]
    rows.sort(key=lambda row: position[row[0]])
    names = ("row_id", "reason", "duplicate_of")
    return pa.table({name: pa.array([row[k] for row in rows], pa.string()) for k, name in enumerate(names)})


def choose_drops(run_dir: str, settings: ImageAudit) -> pa.Table:
    """The rows `--drop` takes out, from the finished audit's pairs; with random CLIP weights,
    only byte-identical copies (the similarities of a random model mean nothing)."""
    pairs = read_table(FileSystems.join(run_dir, STAGE, "pairs.parquet"))
    if settings.random_weights:
        log.warning("random CLIP weights: --drop takes out byte-identical copies only")
        pairs = pairs.filter(pc.fill_null(pairs.column("exact"), False))
    return rows_to_drop(
        pairs, embeddings.embedding_table(run_dir, ["row_id", "class_index", "split"]), settings.drop_kinds
    )


def run_duplicates(config: Config, run_dir: str, drop: bool = False) -> None:
    if drop:
        drop_flagged(config, run_dir, STAGE, run_duplicates, choose_drops)
    else:
        find_duplicates(run_dir, config.image_audit)


DECLARATION = Stage(
    STAGE,
    embeddings.STAGE,
    None,
    run_duplicates,
    preflight=(files_exist("image_audit.reference_embeddings"),),
)
duplicates_command = audit_command("duplicates")

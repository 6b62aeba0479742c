"""The embeddings audit stage: CLIP embeddings of every downloaded image and its caption.

Reads the download stage's dataset table (`download/dataset/*.parquet`: one row per image with
its tar shard and sample key) and the img2dataset tar shards it points to. Beam spreads the tars
over workers, one CLIP model per worker; each tar becomes
`audit/embeddings/shards/<tar path, / as ->.parquet` (e.g. download-rounds-0-00000.parquet), one
row per dataset row of the tar: `row_id`, `sha256` (of the image bytes), `image_embedding` and
`caption_embedding` (fixed-size lists of float32, L2 normalised), and `problem`: null, or why the
row has no embedding (its image is missing from the tar or does not decode; its vectors are then
zeros), so no row is lost.
`class_queries.parquet` holds the CLIP text embedding of each class's query
(`class_query_template` over the class's WordNet synset), for the agreement audit.

The shards hold no class or split: those are the dataset's, joined on read (`embedding_table`).
When audits drop images and the download stage backfills them (its revision changes, see
`pipeline.run.stage_dir`), this folder is kept: a tar's shard is reused while the tar has the same
bytes (its sha256 is in the shard's metadata) and the shard covers every current row of the tar,
so only the new rounds' tars are embedded.
"""

from __future__ import annotations

import functools
import hashlib
import tarfile
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from PIL import Image

from imagenot.errors import ImagenotError
from imagenot.pipeline.audit.clip_model import ClipModel
from imagenot.pipeline.audit.faces import audit_command
from imagenot.pipeline.config.schema import Config, ImageAudit, Runner
from imagenot.pipeline.frame.preflight import check_clip_model
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.frame.runner import make_pipeline
from imagenot.pipeline.run.files import atomic_output, read_table, sha256_file, stage_shards
from imagenot.pipeline.run.layout import (
    AUDIT_EMBEDDINGS,
    CLASS_QUERIES_FILE,
    DATASET_DIR,
    DOWNLOAD,
    dataset_shards,
    read_classes,
)
from imagenot.pipeline.run.progress import watch_shards
from imagenot.pipeline.run.shards import ShardWorker, process_shards, read_batches, resumable_shard, shard_files
from imagenot.pipeline.run.stage_dir import finish_stage, open_stage, stage_fingerprint
from imagenot.wordnet.index import load_index
from imagenot.wordnet.queries import query_text, validate_template

STAGE = AUDIT_EMBEDDINGS
SHARDS_DIR = "shards"
TALLY_FILE = "embeddings_tally.json"
TAR_DIGEST_KEY = "tar_sha256"  # shard metadata: the sha256 of the tar it embeds
RANDOM_WEIGHTS_WARNING = (
    "RANDOM CLIP WEIGHTS (image_audit.clip_weights is not set): every similarity and duplicate here is meaningless"
)
DATASET_COLUMNS = ["row_id", "caption", "class_index", "split", "tar", "key"]
IMAGE_EXTENSIONS = ("jpg", "png", "webp")


def vectors_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    return pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), vectors.shape[1])


def column_vectors(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A fixed-size-list column as a (n, d) float32 array."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return array.flatten().to_numpy().reshape(len(array), array.type.list_size)


def dataset_table(run_dir: str) -> pa.Table:
    """The download stage's rows: one per downloaded image."""
    shards = dataset_shards(run_dir, DOWNLOAD)
    if not shards:
        raise FileNotFoundError(f"{run_dir}: no {DOWNLOAD}/{DATASET_DIR}/*.parquet; run the download stage first")
    tables = []
    for shard in shards:
        batches = list(read_batches(shard, DATASET_COLUMNS))
        table = pa.Table.from_batches(batches)
        missing = sorted(set(DATASET_COLUMNS) - set(table.column_names))
        if missing:
            raise ImagenotError(f"{shard}: dataset table lacks columns {missing}; expected {DATASET_COLUMNS}")
        tables.append(table.select(DATASET_COLUMNS))
    return pa.concat_tables(tables)


def tar_members(path: str, wanted: set[str]) -> Iterator[tuple[str, bytes]]:
    """(key, image bytes) of the image members (`<key>.jpg`, .png or .webp: img2dataset's
    encode formats) of a tar whose key is wanted, in tar order."""
    with (
        FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream,
        tarfile.open(fileobj=stream, mode="r|*") as tar,
    ):
        for member in tar:
            key, dot, extension = member.name.rpartition(".")
            if member.isfile() and dot and extension in IMAGE_EXTENSIONS and key in wanted:
                yield key, tar.extractfile(member).read()


def embed_tar(tar_path: str, rows: pa.Table, model: ClipModel, batch_size: int) -> tuple[pa.Table, dict]:
    """Embed the images of one tar and the captions of `rows` (that tar's dataset rows).

    The table has the embedded rows in tar order, then the rows without an embedding with their
    `problem`; the tally counts rows embedded and rows not embedded by reason.
    """
    row_of = {key: i for i, key in enumerate(rows.column("key").to_pylist())}
    captions = rows.column("caption").to_pylist()
    kept: list[int] = []
    digests: list[str] = []
    pixels: list[np.ndarray] = []
    image_parts: list[np.ndarray] = []
    problems: dict[int, str] = {}
    for key, data in tar_members(tar_path, set(row_of)):
        try:
            pixels.append(model.pixels(data))
        except (OSError, ValueError, Image.DecompressionBombError):  # UnidentifiedImageError is an OSError
            problems[row_of.pop(key)] = "image_unreadable"
            continue
        kept.append(row_of.pop(key))
        digests.append(hashlib.sha256(data).hexdigest())
        if len(pixels) == batch_size:
            image_parts.append(model.encode_pixels(np.stack(pixels)))
            pixels = []
    if pixels:
        image_parts.append(model.encode_pixels(np.stack(pixels)))
    problems.update(dict.fromkeys(row_of.values(), "image_missing"))  # keys the tar did not hold
    caption_parts = [
        model.encode_texts([captions[i] for i in kept[start : start + batch_size]])
        for start in range(0, len(kept), batch_size)
    ]
    unembedded = sorted(problems)
    missing = np.zeros(
        (len(unembedded), model.dim), np.float32
    )  # not null: parquet cannot read back null fixed-size lists
    table = pa.table(
        {
            "row_id": rows.column("row_id").take(pa.array(kept + unembedded, pa.int64())),
            "sha256": pa.array(digests + [None] * len(unembedded), pa.string()),
            "image_embedding": vectors_array(np.concatenate([*image_parts, missing])),
            "caption_embedding": vectors_array(np.concatenate([*caption_parts, missing])),
            "problem": pa.array([None] * len(kept) + [problems[i] for i in unembedded], pa.string()),
        }
    )
    return table, {"images_embedded": len(kept), "dropped": dict(sorted(Counter(problems.values()).items()))}


def new_model(settings: ImageAudit, runner: Runner) -> ClipModel:
    return ClipModel(
        settings.clip_model, settings.clip_weights, settings.clip_model_config, settings.seed, runner.torch_threads
    )


def embed_shard(
    settings: ImageAudit, run_dir: str, stage_dir: str, element: tuple[str, pa.Table], model: ClipModel
) -> dict:
    """Embed one tar's dataset rows into `stage_dir`, or return the tally of an earlier run that
    embedded the same tar bytes."""
    tar, rows = element
    files = shard_files(stage_dir, SHARDS_DIR, output_name(tar))
    tar_path = FileSystems.join(run_dir, tar)
    tar_digest = sha256_file(tar_path)

    def embed() -> dict:
        table, tally = embed_tar(tar_path, rows, model, settings.batch_size)
        with atomic_output(files.data) as stream:
            pq.write_table(table.replace_schema_metadata({TAR_DIGEST_KEY: tar_digest}), stream, compression="zstd")
        return tally

    return resumable_shard(files, embed, lambda _: is_reusable(files.data, rows, tar_digest))


def is_reusable(shard: str, rows: pa.Table, tar_digest: str) -> bool:
    """Whether a finished shard was made from these tar bytes (a refetch can bring others under
    the same name) and has every one of `rows` (audits only ever take rows out of a tar)."""
    stored = read_table(shard, ["row_id"])
    if (stored.schema.metadata or {}).get(TAR_DIGEST_KEY.encode()) != tar_digest.encode():
        return False
    return set(rows.column("row_id").to_pylist()) <= set(stored.column("row_id").to_pylist())


def output_name(tar: str) -> str:
    """The name of a tar's output: its path in the run without the suffix, `/` -> `-`
    (download rounds reuse tar names: download/rounds/0/00000.tar, download/rounds/1/00000.tar)."""
    return tar.rsplit(".", 1)[0].replace("/", "-")


def rows_by_tar(dataset: pa.Table) -> list[tuple[str, pa.Table]]:
    """(tar path relative to the run, its rows), tars sorted."""
    tars = dataset.column("tar")
    return [(tar, dataset.filter(pc.equal(tars, tar))) for tar in sorted(set(tars.to_pylist()))]


def class_queries(run_dir: str, template: str, model: ClipModel) -> pa.Table:
    """Each class's query text and its CLIP text embedding, in class-index order."""
    validate_template(template)
    index = load_index()
    classes = sorted(read_classes(run_dir), key=lambda c: c["index"])
    texts = [query_text(index[c["wnid"]], template) for c in classes]
    return pa.table(
        {
            "class_index": pa.array([c["index"] for c in classes], pa.int32()),
            "wnid": [c["wnid"] for c in classes],
            "query": texts,
            "embedding": vectors_array(model.encode_texts(texts)),
        }
    )


def embed_images(run_dir: str, settings: ImageAudit, runner: Runner) -> dict:
    """The embeddings stage over `run_dir`; returns the summed tally."""
    upstream = stage_fingerprint(run_dir, DOWNLOAD)
    stage_dir = open_stage(run_dir, STAGE, settings.model_dump(include=_EMBEDDING_SETTINGS), upstream)
    queries = class_queries(run_dir, settings.class_query_template, new_model(settings, runner))
    with atomic_output(FileSystems.join(stage_dir, CLASS_QUERIES_FILE)) as stream:
        pq.write_table(queries, stream)
    dataset = dataset_table(run_dir)
    tars = rows_by_tar(dataset)
    total_path = FileSystems.join(stage_dir, TALLY_FILE)
    with (
        watch_shards(stage_dir, [output_name(tar) for tar, _ in tars], STAGE, "images_embedded"),
        make_pipeline(runner) as pipeline,
    ):
        worker = ShardWorker(
            functools.partial(embed_shard, settings, run_dir, stage_dir), functools.partial(new_model, settings, runner)
        )
        process_shards(pipeline, tars, worker, total_path)
    figures = embedding_figures(_dataset_embeddings(run_dir, dataset, ["row_id", "problem"]))
    if settings.random_weights:
        figures["warning"] = RANDOM_WEIGHTS_WARNING
    finish_stage(stage_dir, figures)
    return figures


# The settings that change the embeddings (batch size does not).
_EMBEDDING_SETTINGS = {"clip_model", "clip_model_config", "clip_weights", "seed", "class_query_template"}


def _dataset_embeddings(run_dir: str, dataset: pa.Table, columns: list[str]) -> pa.Table:
    """The shards' rows of the `dataset`'s images (its current rows), in dataset order, beside
    its `class_index` and `split`; rows an audit dropped since are left out."""
    shards = stage_shards(FileSystems.join(run_dir, STAGE), SHARDS_DIR)
    stored = pa.concat_tables(read_table(s, columns) for s in shards)
    position = pc.index_in(dataset.column("row_id"), stored.column("row_id"))
    if position.null_count:
        absent = dataset.column("row_id").filter(pc.is_null(position)).to_pylist()[:5]
        raise ImagenotError(
            f"{run_dir}/{STAGE}: no embedding row for dataset rows {absent}; rerun `imagenot audit embed`"
        )
    taken = stored.take(position)
    taken = taken.add_column(1, "split", dataset.column("split"))
    return taken.add_column(1, "class_index", dataset.column("class_index").cast(pa.int32()))


def embedding_figures(rows: pa.Table) -> dict:
    """Rows embedded, and rows without an embedding by reason."""
    problems = Counter(p for p in rows.column("problem").to_pylist() if p is not None)
    return {"images_embedded": rows.num_rows - problems.total(), "dropped": dict(sorted(problems.items()))}


def embedding_table(run_dir: str, columns: list[str] | None = None) -> pa.Table:
    """The embedded images of the dataset as it is now, in dataset order: `row_id`,
    `class_index`, `split`, `sha256`, `image_embedding`, `caption_embedding` (or `columns`)."""
    stored = ["row_id", "sha256", "image_embedding", "caption_embedding", "problem"]
    table = _dataset_embeddings(run_dir, dataset_table(run_dir), stored)
    table = table.filter(pc.is_null(table.column("problem")))
    return table.select(columns or ["row_id", "class_index", "split", *stored[1:-1]])


def run_embed(config: Config, run_dir: str) -> dict:
    return embed_images(run_dir, config.image_audit, config.runner)


DECLARATION = Stage(
    STAGE,
    DOWNLOAD,
    None,
    run_embed,
    preflight=(check_clip_model,),
)
embed_command = audit_command("embed")

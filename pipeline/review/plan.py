"""`imagenot review plan`: which images people will look at, page by page.

Per class a stratified sample: the images with the smallest keyed hash of their row id
(`review.seed`), as many as the class's precision interval needs (`sizing.sample_size`) or all
of a smaller class. Then every image an audit flagged, when that audit ran and still describes
the dataset: label noise (`audit/label_noise/flagged.parquet`, with its suggested class) and
agreement (images failing a threshold; the suggested class is the other class whose CLIP query
is nearest the image). A flagged image is asked about on a flagged page, beside examples of its
given and suggested classes; a sampled one that is also flagged is asked there too, and that
answer counts for its class's precision.

`review/plan.parquet`: one row per question, in page order. Its `image` column is the id the web
app serves the image under: a digest of the row id and the image's sha256, so a key of another
run's images finds nothing here.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config, Review
from imagenot.pipeline.review.sizing import sample_size
from imagenot.pipeline.run.files import atomic_output, read_table
from imagenot.pipeline.run.filesystems import FileSystems
from imagenot.pipeline.run.keyed_hash import sample_keys
from imagenot.pipeline.run.layout import (
    AUDIT_AGREEMENT,
    AUDIT_EMBEDDINGS,
    AUDIT_LABEL_NOISE,
    CLASS_QUERIES_FILE,
    DOWNLOAD,
    REVIEW,
    REVIEW_PLAN_FILE,
    dataset_shards,
    stage_path,
)
from imagenot.pipeline.run.stage_dir import is_done

DATASET_COLUMNS = ["row_id", "class_index", "wnid", "caption", "split", "order", "tar", "key", "sha256"]
SCHEMA = pa.schema(
    [
        ("task", pa.string()),
        ("kind", pa.string()),
        ("class_index", pa.int32()),
        ("wnid", pa.string()),
        ("row_id", pa.string()),
        ("image", pa.string()),
        ("tar", pa.string()),
        ("key", pa.string()),
        ("caption", pa.string()),
        ("split", pa.string()),
        ("sampled", pa.bool_()),
        ("flagged_by", pa.string()),
        ("suggested_class", pa.int32()),
        ("added_by", pa.string()),
    ]
)
CLASS, FLAGGED = "class", "flagged"  # the two kinds of page


def plan_path(run_dir: str) -> str:
    return stage_path(run_dir, REVIEW, REVIEW_PLAN_FILE)


def image_id(row_id: str, sha256: str | None) -> str:
    """The id an image is served under: run-specific (its bytes' hash), stable, not a path."""
    return hashlib.sha256(f"{row_id}\0{sha256 or ''}".encode()).hexdigest()[:24]


def image_ids(dataset: pa.Table) -> set[str]:
    """The ids the dataset's images are served under."""
    return {image_id(r, s) for r, s in zip(dataset.column("row_id").to_pylist(), dataset.column("sha256").to_pylist())}


def read_dataset(run_dir: str) -> pa.Table:
    """The run's downloaded images (the review shows images: it needs the download stage)."""
    if not is_done(run_dir, DOWNLOAD):
        raise ImagenotError(f"{run_dir}: no finished download/ stage; review shows the images, so download them first")
    tables = [read_table(path, DATASET_COLUMNS) for path in dataset_shards(run_dir, DOWNLOAD)]
    return pa.concat_tables(tables).sort_by([("class_index", "ascending"), ("order", "ascending")])


def _label_noise_flags(run_dir: str) -> dict[str, tuple[str, int | None]]:
    path = stage_path(run_dir, AUDIT_LABEL_NOISE, "flagged.parquet")
    if not FileSystems.exists(path):
        return {}
    rows = read_table(path, ["row_id", "suggested_class"]).to_pylist()
    return {r["row_id"]: ("label_noise", r["suggested_class"]) for r in rows}


def _agreement_flags(run_dir: str) -> dict[str, tuple[str, int | None]]:
    """Images failing an agreement threshold, each with the other class whose query is nearest."""
    from imagenot.pipeline.report.facts import is_current_audit  # with Beam: not for the plan's readers (status)

    if not is_done(run_dir, AUDIT_AGREEMENT) or not is_current_audit(run_dir, AUDIT_AGREEMENT):
        return {}
    rows = read_table(stage_path(run_dir, AUDIT_AGREEMENT, "rows.parquet"), ["row_id", "class_index", "kept"])
    failing = rows.filter(pc.invert(rows.column("kept")))
    if not failing.num_rows:
        return {}
    from imagenot.pipeline.audit.embeddings import column_vectors, embedding_table  # only when something failed

    images = embedding_table(run_dir, ["row_id", "class_index", "image_embedding"])
    images = images.filter(pc.is_in(images.column("row_id"), failing.column("row_id")))
    queries = read_table(stage_path(run_dir, AUDIT_EMBEDDINGS, CLASS_QUERIES_FILE))
    query = column_vectors(queries.column("embedding"))
    query = query / np.linalg.norm(query, axis=1, keepdims=True)
    vectors = column_vectors(images.column("image_embedding"))
    similarity = vectors @ query.T
    class_of = np.array(queries.column("class_index").to_pylist())
    given = images.column("class_index").to_numpy()
    similarity[class_of[None, :] == given[:, None]] = -np.inf
    suggested = class_of[np.argmax(similarity, axis=1)]
    return {r: ("agreement", int(s)) for r, s in zip(images.column("row_id").to_pylist(), suggested)}


def audit_flags(run_dir: str) -> dict[str, tuple[str, int | None]]:
    """row_id -> (the audit that flagged it, its suggested class); label noise wins a tie."""
    return {**_agreement_flags(run_dir), **_label_noise_flags(run_dir)}


def class_sample(dataset: pa.Table, n: int, seed: int) -> set[str]:
    """Each class's `n` images (or all) with the smallest keyed hash of their row id."""
    keys = sample_keys(dataset.column("row_id").to_pylist(), seed)
    classes = dataset.column("class_index").to_numpy()
    chosen: set[str] = set()
    row_ids = dataset.column("row_id").to_pylist()
    for c in np.unique(classes):
        members = np.flatnonzero(classes == c)
        chosen.update(row_ids[i] for i in members[np.argsort(keys[members], kind="stable")[:n]])
    return chosen


def plan_rows(
    dataset: pa.Table,
    sampled: set[str],
    flags: dict,
    settings: Review,
    added_by: str = "plan",
    first_pages: dict[int, int] | None = None,
    first_flagged: int = 0,
) -> pa.Table:
    """The questions: per class its sampled, unflagged images in pages of `page_size`, then one
    flagged page per flagged image. `first_pages` / `first_flagged` number pages after a plan's."""
    rows, per_class, flagged_pages = [], {}, first_flagged
    for r in dataset.to_pylist():
        row_id, flag = r["row_id"], flags.get(r["row_id"])
        if row_id not in sampled and flag is None:
            continue
        base = {
            "class_index": r["class_index"],
            "wnid": r["wnid"],
            "row_id": row_id,
            "image": image_id(row_id, r["sha256"]),
            "tar": r["tar"],
            "key": r["key"],
            "caption": r["caption"],
            "split": r["split"],
            "sampled": row_id in sampled,
            "added_by": added_by,
        }
        if flag is None:
            position = per_class.get(r["class_index"], 0)
            page = (first_pages or {}).get(r["class_index"], 0) + position // settings.page_size
            per_class[r["class_index"]] = position + 1
            rows.append(
                {
                    **base,
                    "task": f"c{r['class_index']}-{page}",
                    "kind": CLASS,
                    "flagged_by": None,
                    "suggested_class": None,
                }
            )
        else:
            rows.append(
                {
                    **base,
                    "task": f"f{flagged_pages}",
                    "kind": FLAGGED,
                    "flagged_by": flag[0],
                    "suggested_class": flag[1],
                }
            )
            flagged_pages += 1
    return pa.Table.from_pylist(rows, SCHEMA)


def make_plan(config: Config, run_dir: str) -> pa.Table:
    """The review plan of the run's dataset as it is now (the same run and settings: the same plan)."""
    settings = config.review
    dataset = read_dataset(run_dir)
    if not dataset.num_rows:
        raise ImagenotError(f"{run_dir}: the dataset has no images to review")
    sampled = class_sample(dataset, sample_size(settings.margin, settings.confidence), settings.seed)
    return plan_rows(dataset, sampled, audit_flags(run_dir), settings)


def write_plan(run_dir: str, plan: pa.Table) -> None:
    with atomic_output(plan_path(run_dir)) as stream:
        pq.write_table(plan, stream)


def read_plan(run_dir: str) -> pa.Table:
    path = plan_path(run_dir)
    if not FileSystems.exists(path):
        raise ImagenotError(f"{path} does not exist: run `imagenot review plan --run {run_dir}` first")
    return read_table(path).cast(SCHEMA)


def extend_plan(config: Config, run_dir: str, new_rows: set[str]) -> int:
    """Put images that joined the dataset (a backfill) up for review, on pages after the plan's;
    the plan's questions on them (those a killed `review apply` added count too: its rerun says
    what the apply did)."""
    plan = read_plan(run_dir)
    dataset = read_dataset(run_dir)
    planned = plan.column("row_id").to_pylist()
    wanted = sorted(new_rows - set(planned))
    fresh = dataset.filter(pc.is_in(dataset.column("row_id"), pa.array(wanted, pa.string())))
    asked = sum(1 for row_id in planned if row_id in new_rows)
    if not fresh.num_rows:
        return asked
    pages: dict[int, int] = {}
    for task in plan.column("task").to_pylist():
        if task.startswith("c"):
            c, page = map(int, task[1:].split("-"))
            pages[c] = max(pages.get(c, 0), page + 1)
    flagged = sum(1 for t in set(plan.column("task").to_pylist()) if t.startswith("f"))
    added = plan_rows(fresh, set(fresh.column("row_id").to_pylist()), {}, config.review, "review_apply", pages, flagged)
    write_plan(run_dir, pa.concat_tables([plan, added]))
    return asked + added.num_rows


def plan_table(plan: pa.Table, classes: list[dict], settings: Review) -> list[dict]:
    """Per class: images on class pages, flagged images, answers wanted, planned rater-minutes."""
    names = {c["index"]: c["name"] for c in classes}
    rows = []
    for c in sorted(set(plan.column("class_index").to_pylist())):
        kinds = plan.filter(pc.equal(plan.column("class_index"), c)).column("kind").to_pylist()
        on_pages, flagged = kinds.count(CLASS), kinds.count(FLAGGED)
        seconds = settings.raters * (
            on_pages * settings.class_seconds_per_image + flagged * settings.flagged_seconds_per_image
        )
        rows.append(
            {
                "class_index": c,
                "name": names.get(c, "?"),
                "images": on_pages,
                "flagged": flagged,
                "tasks": settings.raters * (on_pages + flagged),
                "rater_minutes": seconds / 60,
            }
        )
    return rows

"""Shared test helpers for downloads: the loopback image server and a sample stage to feed it.

`LoopbackImageServer` (see `pipeline.demo.image_server` for its paths) serves real photos and
broken responses on 127.0.0.1; `write_sample_stage` writes the sample stage's contract
(`sample/dataset/` and `sample/reserve/` parquet, fingerprint, DONE) for any URLs, so the
download stage can run without the stages before it:

    with LoopbackImageServer(slow_seconds=2) as server:
        write_sample_stage(run_dir, {"n00000001": ([server.url("/photo/coffee.jpg")], [])})
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.pipeline.demo.image_server import PHOTOS, LoopbackImageServer, bomb_png, photo_jpeg
from imagenot.pipeline.run.stage_dir import finish_stage, open_stage

__all__ = ["PHOTOS", "LoopbackImageServer", "bomb_png", "photo_jpeg", "write_sample_stage"]

SAMPLE_SCHEMA = pa.schema(
    [
        ("row_id", pa.string()),
        ("url", pa.string()),
        ("caption", pa.string()),
        ("class_index", pa.int32()),
        ("wnid", pa.string()),
        ("gloss_similarity", pa.float32()),
        ("split", pa.string()),
        ("order", pa.int32()),
    ]
)


def write_sample_stage(
    run_dir: str | os.PathLike, classes: dict[str, tuple[list[str], list[str]]], test_per_class: int = 1
) -> dict[str, str]:
    """A finished sample stage: `classes` maps wnid -> (dataset URLs, reserve URLs), each list in
    `order`, all distinct; class indices follow wnid order; each class's first `test_per_class` dataset rows
    are "test", the rest "train". Returns url -> row_id (row ids "part-00000:<n>")."""
    stage_dir = open_stage(os.fspath(run_dir), "sample", {"test": "loopback"})
    rows: dict[bool, list[dict]] = {False: [], True: []}
    row_ids: dict[str, str] = {}
    for class_index, wnid in enumerate(sorted(classes)):
        dataset, reserve = classes[wnid]
        for order, url in enumerate(dataset + reserve):
            if url in row_ids:
                raise ValueError(f"URL listed twice: {url} (add a query string such as ?id=2)")
            row_id = row_ids[url] = f"part-00000:{len(row_ids)}"
            in_reserve = order >= len(dataset)
            rows[in_reserve].append(
                {
                    "row_id": row_id,
                    "url": url,
                    "caption": f"a photo of {wnid}, number {order}",
                    "class_index": class_index,
                    "wnid": wnid,
                    "gloss_similarity": 1.0 - order / 100,
                    "split": None if in_reserve else ("test" if order < test_per_class else "train"),
                    "order": order,
                }
            )
    for folder, in_reserve in (("dataset", False), ("reserve", True)):
        os.makedirs(os.path.join(stage_dir, folder), exist_ok=True)
        pq.write_table(
            pa.Table.from_pylist(rows[in_reserve], SAMPLE_SCHEMA), os.path.join(stage_dir, folder, "part-00000.parquet")
        )
    finish_stage(stage_dir, {"rows": len(row_ids)})
    return row_ids

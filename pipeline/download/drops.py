"""Images the audits dropped from the dataset: an input of the download stage, kept in its folder.

`download/dropped.parquet` lists each dropped row with why (e.g. `duplicate_within_class`,
`in_reference`, `image_class_disagreement`), the image or reference vector it duplicates, and the
drop pass that removed it. The download stage passes these rows over as it walks each class's
candidates, so the next ones in the reserve take their place. The list is the stage's revision
(see `pipeline.run.stage_dir`): dropping images reruns what depends on the dataset, and keeps the
fetched rounds. It only grows; when the sample or the download settings change, the stage starts
afresh with the drops of the rows it still has (same row_id and url) carried over
(`pipeline.download.carry`), so a dropped image does not come back.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import atomic_output, read_table
from imagenot.pipeline.run.stage_dir import digest

DROPS_FILE = "dropped.parquet"
REVIEW_REJECTED = "review_rejected"  # `imagenot review apply`'s reason: the raters rejected the image
SCHEMA = pa.schema(
    [("row_id", pa.string()), ("reason", pa.string()), ("duplicate_of", pa.string()), ("pass", pa.int32())]
)


def read_drops(stage_dir: str) -> pa.Table:
    """The dropped rows, in the order they were dropped (empty when none were)."""
    path = FileSystems.join(stage_dir, DROPS_FILE)
    return read_table(path).cast(SCHEMA) if FileSystems.exists(path) else SCHEMA.empty_table()


def reasons(drops: pa.Table) -> dict[str, str]:
    """row_id -> why it was dropped."""
    return dict(zip(drops.column("row_id").to_pylist(), drops.column("reason").to_pylist()))


def passes(drops: pa.Table) -> int:
    return pc.max(drops.column("pass")).as_py() or 0


def revision(stage_dir: str) -> str | None:
    """The download stage's revision: a digest of the dropped rows and reasons, None when none."""
    dropped = reasons(read_drops(stage_dir))
    return digest(sorted(dropped.items())) if dropped else None


def add_drops(stage_dir: str, rows: pa.Table) -> pa.Table:
    """Append the rows (`row_id`, `reason`, `duplicate_of`) not dropped yet, as the next pass;
    returns the rows added."""
    drops = read_drops(stage_dir)
    new = rows.filter(pc.invert(pc.is_in(rows.column("row_id"), drops.column("row_id"))))
    new = (
        new.select(["row_id", "reason", "duplicate_of"])
        .append_column("pass", pa.array([passes(drops) + 1] * new.num_rows, pa.int32()))
        .cast(SCHEMA)
    )
    if new.num_rows:
        with atomic_output(FileSystems.join(stage_dir, DROPS_FILE)) as stream:
            pq.write_table(pa.concat_tables([drops, new]), stream)
    return new


def add_carried(stage_dir: str, carried: pa.Table) -> bool:
    """Add the drops an earlier download carried over, passes as they were; whether any were new."""
    drops = read_drops(stage_dir)
    new = carried.filter(pc.invert(pc.is_in(carried.column("row_id"), drops.column("row_id")))).cast(SCHEMA)
    if new.num_rows:
        with atomic_output(FileSystems.join(stage_dir, DROPS_FILE)) as stream:
            pq.write_table(pa.concat_tables([drops, new]), stream)
    return bool(new.num_rows)

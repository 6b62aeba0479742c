"""Take rows out of a finished dataset and backfill each class from its reserve, pass after pass.

The one loop behind an audit's `--drop` and `imagenot blocklist apply`. A pass asks what is
flagged, adds it to the download stage's dropped list (`pipeline.download.drops`) and reruns
the download stage: each class walks on to its next reserve candidates and fetches them. A
replacement can be flagged in turn, so passes repeat until nothing new is flagged or
`image_audit.drop_passes` ran. A pass killed part way resumes: the dropped list is the stage's
revision, what each pass drops is recorded in the run's journal before it is dropped
(`pipeline.run.journal`: a rerun of the killed command reads it back and redoes the pass's
download), and what the caller does before a drop (`before_drop`) must be safe to repeat. Once the
caller has recorded what it did, `refresh_outputs` writes the report and the export again, so the
card and `RUN/dataset/` never describe images that are gone.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.download import drops
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.download.shortfall import image_shortfall
from imagenot.pipeline.export import stage as export_stage
from imagenot.pipeline.frame.registry import run_stage
from imagenot.pipeline.report import stage as report_stage
from imagenot.pipeline.run import journal
from imagenot.pipeline.run.journal import checkpoint
from imagenot.pipeline.run.layout import DOWNLOAD, stage_path
from imagenot.pipeline.run.stage_dir import is_done, made_from

log = logging.getLogger(__name__)  # each pass's download and each output written again (`review apply` shows them)

Flagged = Callable[[], pa.Table]  # rows to drop now: row_id, reason, duplicate_of (more columns allowed)
DROP_COLUMNS = ("row_id", "reason", "duplicate_of")
ROW_ID = re.compile(r".+:\d+")  # `<corpus file stem>:<position>`, as the corpus reader names rows


@dataclass(frozen=True)
class Backfilled:
    passes: int
    dropped: dict[str, int]  # reason -> rows
    still_flagged: int  # flagged after the last pass (passes ran out)


def require_download(config: Config, run_dir: str, command: str) -> None:
    """Refuse `command` unless the run fetches images and its download stage finished, or a rerun
    of `command` finishes a killed one (which may have killed a download). Called before the
    command records its intent too (a refused command leaves nothing to finish), the rerun is the
    journal's unfinished entry of `command`."""
    if not config.download.enabled:
        raise ImagenotError(f"{command} replaces images by downloading from the reserve: it needs download.enabled")
    intent = journal.current()
    resuming = intent.resumed if intent is not None else journal.resuming(run_dir, command)
    if not is_done(run_dir, download_stage.STAGE) and not resuming:
        raise ImagenotError(f"{run_dir}: no finished download/ stage; run `imagenot download` first")


def _flagged(key: str, flagged: Flagged) -> pa.Table:
    """What `flagged` returns, recorded in the run's journal before any of it is dropped, so that a
    rerun of a killed command drops what it had set out to (read back, not asked again)."""
    return journal.remembered(key, lambda: _as_json(flagged()), read=_rows_to_drop)


def _as_json(table: pa.Table) -> dict:
    return {"types": {field.name: str(field.type) for field in table.schema}, "columns": table.to_pydict()}


def _rows_to_drop(recorded: object) -> pa.Table:
    """The table `_as_json` recorded, checked as the dropped list needs it: each row id
    (`<shard>:<position>`) once, with a reason and maybe the row it duplicates, all texts."""
    types = recorded.get("types") if isinstance(recorded, dict) else None
    columns = recorded.get("columns") if isinstance(recorded, dict) else None
    if not (isinstance(types, dict) and isinstance(columns, dict) and set(types) == set(columns)):
        raise ValueError("not a table's columns with their types")
    if any(types.get(name) not in ("string", "null") for name in DROP_COLUMNS):
        raise ValueError(f"the columns {', '.join(DROP_COLUMNS)} are not all there as texts")
    table = pa.table({name: pa.array(values, pa.type_for_alias(types[name])) for name, values in columns.items()})
    row_ids = table.column("row_id").to_pylist()
    if bad := [row_id for row_id in row_ids if not (isinstance(row_id, str) and ROW_ID.fullmatch(row_id))]:
        raise ValueError(f"row id {bad[0]!r} is not <shard>:<position>")
    if len(set(row_ids)) != len(row_ids):
        raise ValueError("a row id is listed twice")
    if not all(table.column("reason").to_pylist()):
        raise ValueError("a row has no reason")
    return table


def drop_and_backfill(
    config: Config,
    run_dir: str,
    command: str,
    flagged: Flagged,
    before_drop: Callable[[pa.Table], None] = lambda rows: None,
    after_backfill: Callable[[], None] = lambda: None,
) -> Backfilled:
    """Drop what `flagged` returns and backfill, until it returns nothing or the passes run out.
    `before_drop(rows)` runs before rows join the dropped list, `after_backfill()` after the
    download stage ran again (an audit reruns itself there). Each pass's rows and its download are
    steps of the command's journal entry: a rerun of a killed command finishes its passes."""
    require_download(config, run_dir, command)
    download_dir = stage_path(run_dir, DOWNLOAD)
    earlier = journal.remembered(
        "drop passes before", lambda: drops.passes(drops.read_drops(download_dir)), read=journal.count
    )
    passes = 0
    pending = _flagged("drop pass 1", flagged)
    while pending.num_rows and passes < config.image_audit.drop_passes:
        passes += 1
        before_drop(pending)
        drops.add_drops(download_dir, pending)
        log.info(
            "drop pass %d: %d images dropped; download: running (backfilling from the reserve)", passes, len(pending)
        )
        checkpoint("backfill dropped")
        journal.once(f"drop pass {passes}: download", lambda: run_stage(download_stage.DECLARATION, config, run_dir))
        after_backfill()
        pending = _flagged(f"drop pass {passes + 1}", flagged)
    dropped_now = drops.read_drops(download_dir)  # counted from the list, whichever run of the command added them
    dropped = Counter(dropped_now.filter(pc.greater(dropped_now.column("pass"), earlier)).column("reason").to_pylist())
    return Backfilled(passes, dict(sorted(dropped.items())), pending.num_rows)


def refresh_outputs(config: Config, run_dir: str) -> str | None:
    """Write the report, then the export, again where they no longer describe the download stage
    as it is now (a run built stage by stage without them is left alone); then the warning about
    classes short of images, or None."""
    for stage in (report_stage.DECLARATION, export_stage.DECLARATION):
        upstream = stage.upstream_of(config)
        if FileSystems.exists(stage_path(run_dir, stage.name)) and not made_from(run_dir, stage.name, upstream):
            log.info("%s: running", stage.name)
            run_stage(stage, config, run_dir)
    return image_shortfall(config, run_dir)

"""`--drop`: take the images an audit flags out of the dataset and backfill them from the reserve.

A pass runs the audit, chooses the rows it flags, adds them to the download stage's dropped list
(`pipeline.download.drops`), then reruns the download stage (each class walks on to its next
reserve candidates and fetches them) and the embeddings stage (only the new tars are embedded);
once the passes end, the export stage writes `RUN/dataset/` again.
Replacements can be flagged in turn, so passes repeat until the audit flags nothing new or
`image_audit.drop_passes` ran. The audit's outputs always describe the final dataset; its
figures gain a `drop` section: passes run, rows dropped by reason, rows still flagged.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

import click
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.atomic import write_json
from imagenot.pipeline.audit import embeddings
from imagenot.pipeline.config import Config, ImageAudit
from imagenot.pipeline.download import drops
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.export import stage as export_stage
from imagenot.pipeline.layout import DOWNLOAD, stage_path
from imagenot.pipeline.stage_dir import FIGURES_FILE, stage_figures
from imagenot.pipeline.summary import run_and_record

log = logging.getLogger(__name__)

drop_option = click.option(
    "--drop",
    is_flag=True,
    help="take the flagged images out of the dataset and backfill each class from its reserve, "
    "pass after pass (image_audit.drop_passes); needs download.enabled",
)
Chooser = Callable[[str, ImageAudit], pa.Table]  # (run dir, settings) -> rows to drop: row_id, reason, duplicate_of


def drop_and_backfill(config: Config, run_dir: str, stage: str, audit: Callable[[Config, str], object], choose: Chooser) -> None:
    """Audit, drop what it flags and backfill, until nothing new is flagged or the passes run out."""
    if not config.download.enabled:
        raise ImagenotError("--drop replaces images by downloading from the reserve: it needs download.enabled")
    download_dir = stage_path(run_dir, DOWNLOAD)
    dropped: Counter[str] = Counter()
    passes = 0
    audit(config, run_dir)
    pending = choose(run_dir, config.image_audit)
    while pending.num_rows and passes < config.image_audit.drop_passes:
        passes += 1
        dropped.update(drops.add_drops(download_dir, pending).column("reason").to_pylist())
        run_and_record(download_stage.STAGE, download_stage.run_download, config, run_dir)
        run_and_record(embeddings.STAGE, embeddings.run_embed, config, run_dir)
        audit(config, run_dir)
        pending = choose(run_dir, config.image_audit)
    export_stage.refresh_export(config, run_dir)
    if pending.num_rows:
        log.warning("%s: %d images still flagged after %d drop passes; run --drop again", stage, pending.num_rows, passes)
    summary = {"passes": passes, "dropped": dict(sorted(dropped.items())), "still_flagged": pending.num_rows}
    write_json(FileSystems.join(run_dir, stage, FIGURES_FILE), {**stage_figures(run_dir, stage), "drop": summary})

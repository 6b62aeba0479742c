"""`--drop`: take the images an audit flags out of the dataset and backfill them from the reserve.

The passes are `pipeline.amend.backfill`'s: after each rerun of the download stage, the
embeddings stage (only the new tars are embedded) and the audit run again, and the audit
flags what remains. The audit's outputs always describe the final dataset; its figures gain a
`drop` section: passes run, rows dropped by reason, rows still flagged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict

import click
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.amend import backfill
from imagenot.pipeline.audit import embeddings
from imagenot.pipeline.config.schema import Config, ImageAudit
from imagenot.pipeline.frame.registry import run_stage
from imagenot.pipeline.run.files import write_json
from imagenot.pipeline.run.layout import FIGURES_FILE
from imagenot.pipeline.run.stage_dir import stage_figures

log = logging.getLogger(__name__)

Chooser = Callable[[str, ImageAudit], pa.Table]  # (run dir, settings) -> rows to drop: row_id, reason, duplicate_of


def drop_flagged(
    config: Config, run_dir: str, stage: str, audit: Callable[[Config, str], object], choose: Chooser
) -> None:
    """Audit, drop what it flags and backfill, until nothing new is flagged or the passes run out."""

    def flagged() -> pa.Table:
        audit(config, run_dir)
        return choose(run_dir, config.image_audit)

    def embed_new_tars() -> None:
        run_stage(embeddings.DECLARATION, config, run_dir)

    result = backfill.drop_and_backfill(config, run_dir, "--drop", flagged, after_backfill=embed_new_tars)
    if result.still_flagged:
        log.warning(
            "%s: %d images still flagged after %d drop passes; run --drop again",
            stage,
            result.still_flagged,
            result.passes,
        )
    write_json(
        FileSystems.join(run_dir, stage, FIGURES_FILE), {**stage_figures(run_dir, stage), "drop": asdict(result)}
    )
    if shortfall := backfill.refresh_outputs(config, run_dir):
        click.echo(f"Warning: {shortfall}", err=True)

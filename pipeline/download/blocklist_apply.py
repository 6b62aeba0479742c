"""`imagenot blocklist apply --run DIR --list FILE`: clean a finished dataset against a new list.

A pass matches the dataset's images against the list: their URL and host (url, domain
entries) and the sha256 of their original bytes, which the dataset records (sha256 entries;
md5 entries cannot be checked without the original bytes, and are counted as such). Matching
images, and reserve candidates whose URL or host is listed, join the download stage's dropped
list (`pipeline.download.drops`, as an audit's `--drop` does) under their `blocklist_<kind>`
reason; the matching images' samples are taken out of their tars (no bytes of them stay in the
run); then the download stage runs again and each class walks on to its next reserve candidates.
A replacement can match a hash in turn, so passes repeat until none does or
`image_audit.drop_passes` ran. Each application is recorded in
`download/blocklists_applied.json` (the list's name, size, sha256, entries, and what it removed),
which the dataset card shows. Last, the export (`RUN/dataset/`) is written again without them.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict

import click
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.atomic import write_json
from imagenot.pipeline.config import RUN_CONFIG, Config, load_config
from imagenot.pipeline.download import drops
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.download.blocklists import APPLIED_FILE, Blocklist, load_blocklists, read_applied
from imagenot.pipeline.download.tars import remove_samples
from imagenot.pipeline.export import stage as export_stage
from imagenot.pipeline.layout import DATASET_DIR, DOWNLOAD, stage_path
from imagenot.pipeline.shards import read_table, stage_shards
from imagenot.pipeline.stage_dir import FIGURES_FILE, is_done, stage_figures
from imagenot.pipeline.summary import run_and_record

log = logging.getLogger(__name__)

def _matches(run_dir: str, blocklist: Blocklist, candidates: pa.Table) -> tuple[pa.Table, dict[str, set[str]]]:
    """Rows to drop (row_id, reason, duplicate_of) and, per tar, the keys of matching images."""
    download_dir = stage_path(run_dir, DOWNLOAD)
    reasons = download_stage.blocked_rows(candidates, blocklist)
    tars: dict[str, set[str]] = defaultdict(set)
    for path in stage_shards(download_dir, DATASET_DIR):
        for row in read_table(path, ["row_id", "url", "tar", "key", "sha256"]).to_pylist():
            if row["sha256"] in blocklist.entries["sha256"]:
                reasons[row["row_id"]] = "blocklist_sha256"
            if row["row_id"] in reasons:
                tars[row["tar"]].add(row["key"])
    already = set(drops.reasons(drops.read_drops(download_dir)))
    rows = [(row_id, reason) for row_id, reason in sorted(reasons.items()) if row_id not in already]
    table = pa.table(
        {
            "row_id": pa.array([r for r, _ in rows], pa.string()),
            "reason": pa.array([reason for _, reason in rows], pa.string()),
            "duplicate_of": pa.nulls(len(rows), pa.string()),
        }
    )
    return table, tars


def apply_blocklist(config: Config, run_dir: str, list_path: str) -> dict:
    """Apply the list to the run's dataset, backfilling from the reserve; what it removed."""
    if not config.download.enabled:
        raise ImagenotError("blocklist apply replaces images by downloading from the reserve: it needs download.enabled")
    if not is_done(run_dir, download_stage.STAGE):
        raise ImagenotError(f"{run_dir}: no finished download/ stage; run `imagenot download` first")
    blocklist = load_blocklists([list_path])
    download_dir = stage_path(run_dir, DOWNLOAD)
    candidates, _ = download_stage.load_candidates(run_dir)
    removed: Counter[str] = Counter()
    samples_removed = passes = 0
    while passes < config.image_audit.drop_passes:
        rows, tars = _matches(run_dir, blocklist, candidates)
        if not rows.num_rows:
            break
        passes += 1
        for tar, keys in sorted(tars.items()):
            samples_removed += remove_samples(FileSystems.join(run_dir, tar), keys)
        removed.update(drops.add_drops(download_dir, rows).column("reason").to_pylist())
        run_and_record(download_stage.STAGE, download_stage.run_download, config, run_dir)
    source = blocklist.sources[0]
    record = {
        **source,
        "passes": passes,
        "removed": dict(sorted(removed.items())),
        "tar_members_removed": samples_removed,
        "md5_not_checked": source["entries"]["md5"],
    }
    applied = [*read_applied(download_dir), record]
    write_json(FileSystems.join(download_dir, APPLIED_FILE), applied)
    figures = {**stage_figures(run_dir, download_stage.STAGE), "blocklists_applied": applied}
    write_json(FileSystems.join(download_dir, FIGURES_FILE), figures)
    export_stage.refresh_export(config, run_dir)
    return record


@click.group("blocklist")
def blocklist_command() -> None:
    """Blocklists of URLs, domains and image hashes (see download.blocklists)."""


@blocklist_command.command("apply")
@click.option("--run", "run_dir", required=True, help="run directory holding a finished download/ stage")
@click.option("--list", "list_path", required=True, help="blocklist file (local or gs://): `url|domain|sha256|md5 VALUE` lines")
@click.option("--config", "config_path", help=f"YAML run configuration (local or gs://) [default: RUN/{RUN_CONFIG}]")
def apply_command(run_dir: str, list_path: str, config_path: str | None) -> None:
    """Take a new list's matches out of a finished dataset and backfill them from the reserve."""
    run_config = FileSystems.join(run_dir, RUN_CONFIG)
    config = load_config(config_path or (run_config if FileSystems.exists(run_config) else None))
    record = apply_blocklist(config, run_dir, list_path)
    if record["md5_not_checked"]:
        log.warning("%s: %d md5 entries cannot be checked without the original bytes", list_path, record["md5_not_checked"])
    click.echo(f"blocklist apply: {json.dumps(record, indent=2)}")

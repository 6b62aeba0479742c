"""`imagenot blocklist apply --run DIR --list FILE`: clean a finished dataset against a new list.

A pass matches the dataset's images against the list: their URL and host (url, domain
entries) and the sha256 of their original bytes, which the dataset records (sha256 entries;
md5 entries cannot be checked without the original bytes, and are counted as such). Matching
images, and reserve candidates whose URL or host is listed, join the download stage's dropped
list (`pipeline.download.drops`, as an audit's `--drop` does) under their `blocklist_<kind>`
reason; the matching images' samples are taken out of their tars (no bytes of them stay in the
run); then the download stage runs again and each class walks on to its next reserve candidates.
A replacement can match a hash in turn, so passes repeat (`pipeline.amend.backfill`, the loop
an audit's `--drop` uses too). Each application is recorded in `download/blocklists_applied.json`
(the list's name, size, sha256, entries, what it removed, and what stayed listed when the passes
ran out), which the dataset card shows. The list itself is copied into the run
(`download/applied_lists/<sha256>.txt`, named in the run's journal) before its first pass, so a
killed apply is finished by its rerun even once the list file it was given is gone.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
from collections import defaultdict
from typing import TYPE_CHECKING

import click

from imagenot.pipeline.frame.lock_option import absolute_paths, break_lock_option, run_config_option

if TYPE_CHECKING:  # the work's modules load when the command runs, so that `blocklist --help` loads no Beam
    import pyarrow as pa

    from imagenot.pipeline.config.schema import Config
    from imagenot.pipeline.download.blocklists import Blocklist

log = logging.getLogger(__name__)

APPLIED_LISTS_DIR = "applied_lists"  # in the download stage: each applied list's bytes, by sha256


def _matches(run_dir: str, blocklist: Blocklist, candidates: pa.Table) -> pa.Table:
    """Rows to drop (row_id, reason, duplicate_of), with the tar and key of those in the dataset."""
    import pyarrow as pa

    from imagenot.pipeline.download import drops
    from imagenot.pipeline.download import stage as download_stage
    from imagenot.pipeline.run.files import read_table, stage_shards
    from imagenot.pipeline.run.layout import DATASET_DIR, DOWNLOAD, stage_path

    download_dir = stage_path(run_dir, DOWNLOAD)
    reasons = download_stage.blocked_rows(candidates, blocklist)
    samples: dict[str, tuple[str, str]] = {}
    for path in stage_shards(download_dir, DATASET_DIR):
        for row in read_table(path, ["row_id", "url", "tar", "key", "sha256"]).to_pylist():
            if row["sha256"] in blocklist.entries["sha256"]:
                reasons[row["row_id"]] = "blocklist_sha256"
            if row["row_id"] in reasons:
                samples[row["row_id"]] = (row["tar"], row["key"])
    already = set(drops.reasons(drops.read_drops(download_dir)))
    rows = [(row_id, reason) for row_id, reason in sorted(reasons.items()) if row_id not in already]
    return pa.table(
        {
            "row_id": pa.array([r for r, _ in rows], pa.string()),
            "reason": pa.array([reason for _, reason in rows], pa.string()),
            "duplicate_of": pa.nulls(len(rows), pa.string()),
            "tar": pa.array([samples.get(r, (None, None))[0] for r, _ in rows], pa.string()),
            "key": pa.array([samples.get(r, (None, None))[1] for r, _ in rows], pa.string()),
        }
    )


def _kept_list(run_dir: str, list_path: str) -> Blocklist:
    """The list given, as the run keeps it: copied into the run the first time (after it parsed),
    read from the copy the run's journal names on a rerun (the file given may be gone by then)."""
    from imagenot.pipeline.download.blocklists import Blocklist, load_blocklists
    from imagenot.pipeline.run import journal
    from imagenot.pipeline.run.files import read_bytes, write_bytes
    from imagenot.pipeline.run.layout import DOWNLOAD, stage_path
    from imagenot.pipeline.run.paths import from_run, run_relative

    def keep() -> str:
        source = load_blocklists([list_path], "--list").sources[0]
        copy = stage_path(run_dir, DOWNLOAD, APPLIED_LISTS_DIR, f"{source['sha256']}.txt")
        write_bytes(copy, read_bytes(list_path))
        return run_relative(copy, run_dir)

    kept = from_run(journal.remembered("list", keep, read=journal.text), run_dir)
    blocklist = Blocklist()
    blocklist.add(list_path, read_bytes(kept))  # recorded under the name it was given
    return blocklist


def apply_blocklist(config: Config, run_dir: str, list_path: str) -> dict:
    """Apply the list to the run's dataset, backfilling from the reserve; what it removed."""
    from apache_beam.io.filesystems import FileSystems

    from imagenot.pipeline.amend.backfill import drop_and_backfill, require_download
    from imagenot.pipeline.download import stage as download_stage
    from imagenot.pipeline.download.blocklists import APPLIED_FILE, read_applied
    from imagenot.pipeline.download.tars import remove_samples, sample_members
    from imagenot.pipeline.run import journal
    from imagenot.pipeline.run.files import write_json
    from imagenot.pipeline.run.layout import DOWNLOAD, FIGURES_FILE, stage_path
    from imagenot.pipeline.run.stage_dir import digest, stage_figures

    blocklist = _kept_list(run_dir, list_path)
    candidates = functools.cache(lambda: download_stage.load_candidates(run_dir)[0])  # once the stage is known done
    samples_removed = images_removed = 0

    def remove_from_tars(rows: pa.Table) -> None:
        """No bytes of a listed image stay in the run (safe to repeat: a removed member is gone)."""
        nonlocal samples_removed, images_removed
        keys: dict[str, set[str]] = defaultdict(set)
        for row in rows.select(["tar", "key"]).to_pylist():
            if row["tar"] is not None:
                keys[row["tar"]].add(row["key"])
        images_removed += sum(len(tar_keys) for tar_keys in keys.values())  # an image is several tar members
        for tar, tar_keys in sorted(keys.items()):
            path = FileSystems.join(run_dir, tar)
            # counted before they go (a rerun of a killed apply reads the count back)
            count = journal.remembered(
                f"members of {tar}: {digest(sorted(tar_keys))}",
                lambda path=path, tar_keys=tar_keys: sample_members(path, tar_keys),
                read=journal.count,
            )
            remove_samples(path, tar_keys)
            samples_removed += count

    require_download(config, run_dir, "blocklist apply")
    images_before = journal.remembered(
        "images before", lambda: stage_figures(run_dir, download_stage.STAGE)["images"], read=journal.count
    )
    applied_at = journal.remembered(
        "applied at", lambda: datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), read=journal.text
    )
    result = drop_and_backfill(
        config,
        run_dir,
        "blocklist apply",
        lambda: _matches(run_dir, blocklist, candidates()),
        before_drop=remove_from_tars,
    )
    source = blocklist.sources[0]
    record = {
        **source,
        "passes": result.passes,
        "removed": result.dropped,
        "still_listed": result.still_flagged,
        "images_removed": images_removed,
        "tar_members_removed": samples_removed,
        # each image taken out of the dataset left a place the reserve filled, or did not
        "backfilled": stage_figures(run_dir, download_stage.STAGE)["images"] - images_before + images_removed,
        "applied_at": applied_at,
        "md5_not_checked": source["entries"]["md5"],
    }
    download_dir = stage_path(run_dir, DOWNLOAD)
    earlier = [
        a for a in read_applied(download_dir) if (a["sha256"], a["applied_at"]) != (source["sha256"], applied_at)
    ]
    applied = [*earlier, record]  # a rerun of a killed apply replaces its own record
    write_json(FileSystems.join(download_dir, APPLIED_FILE), applied)
    figures = {**stage_figures(run_dir, download_stage.STAGE), "blocklists_applied": applied}
    write_json(FileSystems.join(download_dir, FIGURES_FILE), figures)
    return record


@click.group("blocklist")
def blocklist_command() -> None:
    """Blocklists of URLs, domains and image hashes (see download.blocklists)."""


@blocklist_command.command("apply")
@click.option(
    "--run", "run_dir", required=True, callback=absolute_paths, help="run directory holding a finished download/ stage"
)
@click.option(
    "--list",
    "list_path",
    required=True,
    callback=absolute_paths,
    help="blocklist file (local or gs://): `url|domain|sha256|md5 VALUE` lines",
)
@run_config_option
@break_lock_option
def apply_command(run_dir: str, list_path: str, config_path: str | None, break_lock: bool) -> None:
    """Take a new list's matches out of a finished dataset and backfill them from the reserve."""
    from imagenot.pipeline.amend.backfill import refresh_outputs, require_download
    from imagenot.pipeline.config.schema import load_run_config
    from imagenot.pipeline.download.blocklists import load_blocklists
    from imagenot.pipeline.run.journal import left_to_finish, rewriting

    config = load_run_config(run_dir, config_path)
    args = {"--run": run_dir, "--list": list_path, "--config": config_path}

    def check() -> None:  # under the lock, before the intent: a refused apply leaves the run nothing to finish
        left = left_to_finish(run_dir, "blocklist apply", args)
        if left is None or "list" not in left["remembered"]:  # else the rerun reads the run's copy of the list
            load_blocklists([list_path], "--list")
        require_download(config, run_dir, "blocklist apply")

    with rewriting(run_dir, config.runner.lock_stale_after_s, break_lock, "blocklist apply", args, check=check):
        record = apply_blocklist(config, run_dir, list_path)
        shortfall = refresh_outputs(config, run_dir)  # the card and export follow what the list removed
    if record["still_listed"]:
        log.warning(
            "%s: %d listed images remain after %d passes; run blocklist apply again",
            list_path,
            record["still_listed"],
            record["passes"],
        )
    if record["md5_not_checked"]:
        log.warning(
            "%s: %d md5 entries cannot be checked without the original bytes", list_path, record["md5_not_checked"]
        )
    click.echo(f"blocklist apply: {json.dumps(record, indent=2)}")
    if shortfall:
        click.echo(f"Warning: {shortfall}", err=True)

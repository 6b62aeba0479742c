"""The download stage: the sampled images fetched with img2dataset, failures backfilled.

Reads `sample/dataset/*.parquet` (per class, its first N candidates) and `sample/reserve/*.parquet`
(the rest, in `order`). Round 0 fetches the dataset rows; each later round fetches, per class,
the next reserve candidates replacing the failures so far (`rounds.walk_class`), until every
class has N images, its reserve is spent, or `max_rounds` ran. Images an audit dropped
(`download/dropped.parquet`, see `pipeline.download.drops`) are passed over the same way, and
each drop pass allows `max_rounds` more rounds. URLs other than http/https are never handed to
img2dataset (`url_not_http`), nor are those a blocklist names (`blocklist_url`,
`blocklist_domain`, see `pipeline.download.blocklists`). A round's rows are grouped by host, so
each host's rows fall into as few shards (and so worker processes) as they fill, which is what
bounds the per-host limits across workers (see README). Each round's img2dataset output stays in
`download/rounds/<k>/`; a rerun reads the outcomes of the rows already tried there and fetches
only the rows never tried (and the shards of a killed round that did not finish). When a new
sample (a class vetoed, say) clears the folder, what it fetched for the new sample's rows is
carried over first, and the rounds take those outcomes rather than fetch them again, writing
the same bytes a fresh fetch would (`pipeline.download.carry`).

Outputs in `download/`: `dataset/part-NNNNN.parquet`, one row per final image (where its sample
is: `tar`, relative to the run dir, and `key`); `class_downloads.tsv` (per class: target, images,
failed, dropped, reserve_used, shortfall); figures for the summary (per-class images, failures by
reason, URL success rate, rounds, tar bytes, the busiest hosts). Each image's row has the sha256 of
its original bytes, so a hash list can be applied later without fetching again.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from typing import NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config, Download, Runner, Sampling
from imagenot.pipeline.download import carry, drops, fetch, fetch_log
from imagenot.pipeline.download.blocklists import Blocklist, load_blocklists, read_applied
from imagenot.pipeline.download.class_fates import write_class_fates
from imagenot.pipeline.download.fetch import ROUNDS_DIR
from imagenot.pipeline.download.hosts import busiest_hosts, host_of, malformed_signals, run_totals
from imagenot.pipeline.download.reasons import failure_reason
from imagenot.pipeline.download.rounds import ClassCandidates, ClassWalk, next_fetch, walk_class
from imagenot.pipeline.download.shortfall import image_shortfall
from imagenot.pipeline.frame.preflight import files_exist
from imagenot.pipeline.frame.registry import Stage, download_enabled
from imagenot.pipeline.run.files import atomic_output, read_table, stage_shards, write_tsv
from imagenot.pipeline.run.layout import DATASET_DIR, DOWNLOAD, RESERVE_DIR, SAMPLE, SCORE_COLUMN, stage_path
from imagenot.pipeline.run.stage_dir import stage_fingerprint
from imagenot.pipeline.sample.splits import assign_splits

log = logging.getLogger(__name__)

STAGE = DOWNLOAD
UPSTREAM = SAMPLE
PART_ROWS = 100_000  # rows per dataset/part-NNNNN.parquet
SAMPLE_COLUMNS = ("row_id", "url", "caption", "class_index", "wnid", SCORE_COLUMN, "split", "order")
IMAGE_SIZE_COLUMNS = ("width", "height", "original_width", "original_height")
BUSIEST_HOSTS = 10  # hosts listed in the figures
CLASS_FILE = "class_downloads.tsv"
CLASS_COLUMNS = ("class_index", "wnid", "target", "images", "failed", "dropped", "reserve_used", "shortfall")


class SampleError(ImagenotError, ValueError):
    """The sample stage's output is not what this stage reads; names the file and the problem."""


class Attempt(NamedTuple):
    """One fetched row's outcome, from a round's img2dataset parquet."""

    round: int
    ok: bool
    reason: str | None
    tar: str  # relative to the run dir
    key: str
    width: int | None
    height: int | None
    original_width: int | None
    original_height: int | None
    sha256: str | None


def _read_sample(path: str, reserve: bool) -> pa.Table:
    table = read_table(path)
    missing = [c for c in SAMPLE_COLUMNS if c not in table.column_names]
    if missing:
        raise SampleError(f"{path}: missing column(s) {missing}; the sample stage writes {list(SAMPLE_COLUMNS)}")
    table = table.select(list(SAMPLE_COLUMNS))
    return table.append_column("reserve", pa.array([reserve] * table.num_rows, pa.bool_()))


def load_candidates(run_dir: str) -> tuple[pa.Table, list[ClassCandidates]]:
    """The sample stage's rows, by class, dataset rows then reserve rows, each in `order`."""
    sample_dir = stage_path(run_dir, UPSTREAM)
    tables = [_read_sample(p, False) for p in stage_shards(sample_dir, DATASET_DIR)]
    tables += [_read_sample(p, True) for p in stage_shards(sample_dir, RESERVE_DIR)]
    if not tables:
        raise SampleError(f"{sample_dir}: no dataset/*.parquet")
    table = pa.concat_tables(tables, promote_options="permissive")
    table = table.sort_by([("class_index", "ascending"), ("reserve", "ascending"), ("order", "ascending")])
    row_ids = table.column("row_id").to_pylist()
    if len(set(row_ids)) != len(row_ids):
        twice = sorted(r for r, n in Counter(row_ids).items() if n > 1)[:5]
        raise SampleError(f"{sample_dir}: row_id(s) listed twice across dataset/ and reserve/, e.g. {twice}")
    return table, _by_class(table)


def _by_class(table: pa.Table) -> list[ClassCandidates]:
    columns = {
        name: table.column(name).to_pylist() for name in ("row_id", "url", "class_index", "wnid", "split", "reserve")
    }
    classes, start = [], 0
    while start < table.num_rows:
        class_index = columns["class_index"][start]
        end = start
        while end < table.num_rows and columns["class_index"][end] == class_index:
            end += 1
        reserve = columns["reserve"][start:end]
        classes.append(
            ClassCandidates(
                class_index=class_index,
                wnid=columns["wnid"][start],
                row_ids=columns["row_id"][start:end],
                urls=columns["url"][start:end],
                target=reserve.count(False),
            )
        )
        start = end
    return classes


def _round_attempts(round_dir: str, k: int, rows: int, shard_rows: int) -> dict[str, Attempt]:
    attempts = {}
    for tar, table in fetch.read_results(round_dir, rows, shard_rows):
        relative_tar = FileSystems.join(STAGE, ROUNDS_DIR, str(k), FileSystems.split(tar)[1])
        for r in table.to_pylist():
            ok = r["status"] == "success"
            attempts[r["row_id"]] = Attempt(
                k,
                ok,
                None if ok else failure_reason(r["error_message"]),
                relative_tar,
                r["key"],
                r["width"],
                r["height"],
                r["original_width"],
                r["original_height"],
                r["sha256"],
            )
    return attempts


def run_rounds(
    stage_dir: str,
    table: pa.Table,
    classes: list[ClassCandidates],
    dropped: dict[str, str],
    blocked: dict[str, str],
    max_rounds: int,
    settings: Download,
    runner: Runner,
    blocklist: Blocklist,
    carried: carry.Carried,
) -> tuple[dict[str, Attempt], list[tuple[int, int]]]:
    """Fetch round after round, resuming the stored ones, taking `carried` outcomes rather than
    fetching them; every attempt, and per round the rows this call fetched and carried."""
    offsets = [0]
    for candidates in classes:
        offsets.append(offsets[-1] + len(candidates.row_ids))
    attempts: dict[str, Attempt] = {}
    fetched_now = []
    for k in range(max_rounds):
        round_dir = FileSystems.join(stage_dir, ROUNDS_DIR, str(k))
        if not fetch.plan_reads(round_dir):
            _forget_rounds(stage_dir, k)
        if not FileSystems.exists(FileSystems.join(round_dir, fetch.FETCH_FILE)):
            planned = next_fetch(classes, _outcomes(attempts), dropped, blocked)
            if not planned:
                break
            chosen = _by_host(table.take(pa.array([offsets[c] + position for c, position in planned], pa.int64())))
            fetch_log.plan_round(round_dir)  # first: a round whose plan is written has its command
            with atomic_output(FileSystems.join(round_dir, fetch.FETCH_FILE)) as f:
                pq.write_table(chosen.select(list(SAMPLE_COLUMNS)), f)
        rows = fetch.read_fetch(round_dir).num_rows
        fetched_now.append(fetch.fetch_round(round_dir, settings, runner, blocklist, carried.rows))
        log.info("download round %d: %d rows, %d fetched and %d carried over by this run", k, rows, *fetched_now[-1])
        tried = _round_attempts(round_dir, k, rows, settings.shard_rows)
        fetch_log.finish_round(round_dir, {row_id: attempt.ok for row_id, attempt in tried.items()}, carried.parts)
        attempts.update(tried)
    return attempts, fetched_now


def _forget_rounds(stage_dir: str, first: int) -> None:
    """Delete round `first` and those after it (their plans follow from it): planned again."""
    for k in itertools.count(first):
        round_dir = FileSystems.join(stage_dir, ROUNDS_DIR, str(k))
        if not FileSystems.exists(round_dir):
            return
        patterns = [FileSystems.join(round_dir, "*"), FileSystems.join(round_dir, fetch.INPUT_DIR, "*")]
        files = [m.path for result in FileSystems.match(patterns) for m in result.metadata_list]
        FileSystems.delete([f for f in files if FileSystems.split(f)[1] != fetch.INPUT_DIR])


def _by_host(rows: pa.Table) -> pa.Table:
    """The rows grouped by host (hosts in order of first appearance, rows in order within one)."""
    first: dict[str, int] = {}
    hosts = [first.setdefault(host_of(url), len(first)) for url in rows.column("url").to_pylist()]
    order = sorted(range(rows.num_rows), key=lambda i: (hosts[i], i))
    return rows.take(pa.array(order, pa.int64()))


def blocked_rows(table: pa.Table, blocklist: Blocklist) -> dict[str, str]:
    """row_id -> `blocklist_url` or `blocklist_domain`, for the candidates a blocklist names."""
    blocked = {}
    for row_id, url in zip(table.column("row_id").to_pylist(), table.column("url").to_pylist()):
        reason = blocklist.row_reason(url)
        if reason:
            blocked[row_id] = reason
    return blocked


def _outcomes(attempts: dict[str, Attempt]) -> dict[str, bool]:
    return {row_id: attempt.ok for row_id, attempt in attempts.items()}


def _class_row(c: ClassCandidates, walk: ClassWalk) -> dict:
    tried = walk.succeeded + walk.failed + walk.not_http + walk.blocked + walk.dropped
    return {
        "class_index": c.class_index,
        "wnid": c.wnid,
        "target": c.target,
        "images": len(walk.succeeded),
        "failed": len(walk.failed) + len(walk.not_http) + len(walk.blocked),
        "dropped": len(walk.dropped),
        "reserve_used": sum(c.is_reserve(p) for p in tried),
        "shortfall": c.target - len(walk.succeeded),
    }


def _final_images(
    table: pa.Table, offset: int, c: ClassCandidates, walk: ClassWalk, attempts: dict[str, Attempt], sampling: Sampling
) -> pa.Table:
    """The class's images that arrived, split anew over this final set (`assign_splits`)."""
    rows = table.take(pa.array([offset + p for p in walk.succeeded], pa.int64())).select(list(SAMPLE_COLUMNS))
    done = [attempts[c.row_ids[p]] for p in walk.succeeded]
    rows = rows.set_column(
        rows.column_names.index("split"),
        "split",
        pa.array(
            assign_splits([c.row_ids[p] for p in walk.succeeded], sampling.test_per_class, sampling.seed), pa.string()
        ),
    )
    extra = {
        "round": pa.array([a.round for a in done], pa.int32()),
        "tar": pa.array([a.tar for a in done], pa.string()),
        "key": pa.array([a.key for a in done], pa.string()),
        **{name: pa.array([getattr(a, name) for a in done], pa.int32()) for name in IMAGE_SIZE_COLUMNS},
        "sha256": pa.array([a.sha256 for a in done], pa.string()),
    }
    for name, column in extra.items():
        rows = rows.append_column(name, column)
    return rows


def _write_dataset(stage_dir: str, images: pa.Table) -> None:
    folder = FileSystems.join(stage_dir, DATASET_DIR)
    for part, start in enumerate(range(0, max(images.num_rows, 1), PART_ROWS)):
        with atomic_output(FileSystems.join(folder, f"part-{part:05d}.parquet")) as f:
            pq.write_table(images.slice(start, PART_ROWS), f)


def _tar_bytes(stage_dir: str) -> int:
    pattern = FileSystems.join(stage_dir, ROUNDS_DIR, "*", "*.tar")
    return sum(m.size_in_bytes for m in FileSystems.match([pattern])[0].metadata_list)


def settings(config: Config) -> dict:
    """What the stage records: the output settings, each blocklist named with its sha256 (a
    changed list reruns the stage)."""
    return _recorded(config.download, load_blocklists(config.download.blocklists))


def _recorded(download: Download, blocklist: Blocklist) -> dict:
    return {**download.output_settings(), "blocklists": [(s["path"], s["sha256"]) for s in blocklist.sources]}


def carry_over(config: Config, run_dir: str) -> dict:
    """Before the stage's folder is opened (a new sample clears it): what an earlier download fetched
    for the new sample's rows is carried over (`pipeline.download.carry`). The sample's candidates
    and the blocklists, read once here, go on to the run."""
    table, classes = load_candidates(run_dir)
    blocklist = load_blocklists(config.download.blocklists)
    recorded = _recorded(config.download, blocklist)
    carry.retire(run_dir, recorded, stage_fingerprint(run_dir, UPSTREAM), table, config.download.encode_format)
    return {"table": table, "classes": classes, "recorded": recorded, "blocklist": blocklist}


def download_images(
    run_dir: str,
    settings: Download,
    sampling: Sampling,
    runner: Runner,
    table: pa.Table,
    classes: list[ClassCandidates],
    recorded: dict,
    blocklist: Blocklist,
) -> dict:
    """Fetch the sample stage's images (`table`, `classes`: its candidates) into `<run_dir>/download/`,
    taking the outcomes carried over under the settings it records (`recorded`) and passing over
    what `blocklist` (`download.blocklists`, loaded) names; the stage's figures."""
    stage_dir = stage_path(run_dir, STAGE)
    drops.add_carried(stage_dir, carry.carried_drops(run_dir))  # a new revision: recorded as the stage finishes
    drop_table = drops.read_drops(stage_dir)
    dropped = drops.reasons(drop_table)
    max_rounds = settings.max_rounds * (1 + drops.passes(drop_table))
    blocked = blocked_rows(table, blocklist)
    carried = carry.load(run_dir, table, recorded)
    attempts, fetched_now = run_rounds(
        stage_dir, table, classes, dropped, blocked, max_rounds, settings, runner, blocklist, carried
    )
    outcomes = _outcomes(attempts)
    offsets, class_table, parts, failures, dropped_by, fates = 0, [], [], Counter(), Counter(), {}
    for c in classes:
        walk = walk_class(c, outcomes, dropped, blocked)
        class_table.append(_class_row(c, walk))
        parts.append(_final_images(table, offsets, c, walk, attempts, sampling))
        not_kept = Counter(attempts[c.row_ids[p]].reason for p in walk.failed)
        not_kept.update(["url_not_http"] * len(walk.not_http))
        not_kept.update(blocked[c.row_ids[p]] for p in walk.blocked)
        failures.update(not_kept)
        class_dropped = Counter(dropped[c.row_ids[p]] for p in walk.dropped)
        dropped_by.update(class_dropped)
        fates[c.wnid] = {
            "images": len(walk.succeeded),
            "target": c.target,
            "not_kept": dict(sorted((not_kept + class_dropped).items())),
        }
        offsets += len(c.row_ids)
    _write_dataset(stage_dir, pa.concat_tables(parts))
    write_class_fates(stage_dir, fates)
    write_tsv(FileSystems.join(stage_dir, CLASS_FILE), CLASS_COLUMNS, class_table)
    carry.keep_earlier(run_dir, stage_dir)
    carry.clear(run_dir)  # what was carried over is in the stage's own files now
    return _figures(stage_dir, class_table, failures, dropped_by, fetched_now, blocklist)


def _figures(
    stage_dir: str,
    class_table: list[dict],
    failures: Counter,
    dropped_by: Counter,
    fetched_now: list[tuple[int, int]],
    blocklist: Blocklist,
) -> dict:
    """The stage's figures: per class and in all, what was fetched, failed and dropped, and how."""
    images = sum(row["images"] for row in class_table)
    hosts = run_totals(stage_dir, FileSystems.join(stage_dir, ROUNDS_DIR))
    fetches = fetch_log.download_fetches(stage_dir, len(fetched_now))
    arrived = images + sum(dropped_by.values())  # a dropped image was fetched fine
    tried = arrived + sum(row["failed"] for row in class_table)
    return {
        "classes": len(class_table),
        "target": sum(row["target"] for row in class_table),
        "images": images,
        "classes_short": sum(row["shortfall"] > 0 for row in class_table),
        "short_classes": {row["wnid"]: row["images"] for row in class_table if row["shortfall"] > 0},
        "images_per_class": {row["wnid"]: row["images"] for row in class_table},
        "failures": dict(sorted(failures.items())),
        # `imagenot blocklist apply` drops images the way the audits do; counted apart
        "dropped_by_audits": {
            r: n for r, n in sorted(dropped_by.items()) if not r.startswith("blocklist_") and r != drops.REVIEW_REJECTED
        },
        "dropped_by_review": dropped_by.get(
            drops.REVIEW_REJECTED, 0
        ),  # review apply drops the way the audits do; counted apart
        "dropped_by_blocklists": {r: n for r, n in sorted(dropped_by.items()) if r.startswith("blocklist_")},
        "urls_tried": tried,  # the dataset's candidates' URLs, fetched by this download or carried over
        "url_success_rate": round(arrived / tried, 4) if tried else None,
        "rounds": len(fetched_now),  # this download's, its drop passes' included
        # every fetch of the run, the downloads a new sample retired included, by the command whose rounds made it
        "fetches": fetches,
        "urls_fetched": sum(f["urls"] for f in fetches),
        "images_fetched": sum(f["images"] for f in fetches),
        "fetched_by_this_run": sum(fetched for fetched, _ in fetched_now),
        "carried_over": sum(carried for _, carried in fetched_now),  # fetched by an earlier download
        "tar_bytes": _tar_bytes(stage_dir),
        "busiest_hosts": busiest_hosts(hosts, BUSIEST_HOSTS),
        "requests": sum(h["requests"] for h in hosts.values()),  # every download of the run, to every host
        "hosts": len(hosts),
        "malformed_signals": malformed_signals(FileSystems.join(stage_dir, ROUNDS_DIR)),
        "blocklists": blocklist.sources,
        "blocklists_applied": read_applied(stage_dir),
    }


NOT_ENABLED = "download.enabled is false: the download stage fetches images from the web; enable it in the config"


def run_download(
    config: Config,
    run_dir: str,
    table: pa.Table,
    classes: list[ClassCandidates],
    recorded: dict,
    blocklist: Blocklist,
) -> dict:
    settings = config.download
    if not settings.enabled:
        raise ImagenotError(NOT_ENABLED)
    return download_images(run_dir, settings, config.sampling, config.runner, table, classes, recorded, blocklist)


DECLARATION = Stage(
    STAGE,
    UPSTREAM,
    settings,
    run_download,
    wanted=download_enabled,
    revision=drops.revision,
    unwanted=NOT_ENABLED,
    preflight=(files_exist("download.blocklists"),),
    closing=(image_shortfall,),  # what `imagenot build` also says
    prepare=carry_over,
)

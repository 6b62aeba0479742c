"""One fetch round through img2dataset: its shards, which of them are finished, their results.

A round folder `rounds/<k>/` holds `fetch.parquet` (the rows to fetch, written before any fetch)
and, per shard of `shard_rows` of those rows, img2dataset's own outputs: `<shard>.tar`
(webdataset), `<shard>.parquet` (every row with status and error_message) and
`<shard>_stats.json`. A row an earlier download fetched (`pipeline.download.carry`) is not handed
to img2dataset: the shard's writer writes its carried outcome under the row's key in the plan
(`tars.SortedSampleWriter`). img2dataset writes the stats after closing the tar and the parquet, so a
shard is finished exactly when its stats parse (and its parquet reads); a killed round resumes
by refetching only its unfinished shards (their partial tar and parquet are overwritten). A
round whose `fetch.parquet` does not read is named in the log and planned and fetched again.

The shards are spread over Beam workers; each runs img2dataset's Downloader (threads inside)
through the process's crawler (`pipeline.download.crawler`: robots.txt, per-host limits, the
address guard, the body cap, the fetch deadline), with `GuardedResizer` and tars written sorted
(`pipeline.download.tars`), not img2dataset's `download()`, whose process pool, logger process
and SIGINT handler a library stage should not own. Beside each shard's stats, the worker writes
`<shard>_hosts.json`: the requests it sent per host while fetching that shard.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import time
from collections.abc import Callable

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # albumentations would check for updates online

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Download, Runner
from imagenot.pipeline.download.blocklists import Blocklist
from imagenot.pipeline.download.crawler import process_crawler
from imagenot.pipeline.download.hosts import shard_hosts
from imagenot.pipeline.frame.runner import make_pipeline
from imagenot.pipeline.run.files import atomic_output, read_schema, read_table, write_bytes, write_json

log = logging.getLogger(__name__)

ROUNDS_DIR = "rounds"  # in the stage folder: rounds/<k>/
FETCH_FILE = "fetch.parquet"
INPUT_DIR = "_input"
SHARD_DIGITS = 5  # img2dataset's oom_shard_count: shard names 00000, 00001, ...
# Fetched columns, in img2dataset's column_list order; all but url land in each sample's json.
SAVED_COLUMNS = ["row_id", "class_index", "wnid"]
FETCH_COLUMNS = ["url", "caption", *SAVED_COLUMNS]
RESULT_COLUMNS = [
    "row_id",
    "key",
    "status",
    "error_message",
    "width",
    "height",
    "original_width",
    "original_height",
    "sha256",
]


class FetchError(ImagenotError, RuntimeError):
    """img2dataset did not finish a shard."""


def shard_name(shard: int) -> str:
    return f"{shard:0{SHARD_DIGITS}d}"


def shard_count(rows: int, shard_rows: int) -> int:
    return math.ceil(rows / shard_rows)


def is_finished(round_dir: str, shard: int) -> bool:
    """img2dataset wrote the shard's tar, parquet and (last) a readable stats file, and the
    parquet reads."""
    name = FileSystems.join(round_dir, shard_name(shard))
    if not all(FileSystems.exists(f"{name}{suffix}") for suffix in (".tar", ".parquet", "_stats.json")):
        return False
    try:
        with FileSystems.open(f"{name}_stats.json") as f:
            if "successes" not in json.load(f):
                return False
    except ValueError:  # cut short while being written
        return False
    try:  # a parquet cut short (a crash, a second writer) is fetched again, not read later
        read_schema(f"{name}.parquet")
    except (OSError, pa.ArrowException) as err:
        log.warning("%s.parquet does not read (%s): its shard is fetched again", name, err)
        return False
    return True


def unfinished_shards(round_dir: str, rows: int, shard_rows: int) -> list[int]:
    return [s for s in range(shard_count(rows, shard_rows)) if not is_finished(round_dir, s)]


def plan_reads(round_dir: str) -> bool:
    """The round has no plan yet, or one that reads; a plan that does not read is named in the
    log (its round is then planned and fetched again)."""
    path = FileSystems.join(round_dir, FETCH_FILE)
    if not FileSystems.exists(path):
        return True
    try:
        read_schema(path)
        return True
    except (OSError, pa.ArrowException) as err:
        log.warning("%s does not read (%s): the round is planned and fetched again, with those after it", path, err)
        return False


def read_fetch(round_dir: str) -> pa.Table:
    path = FileSystems.join(round_dir, FETCH_FILE)
    try:
        return read_table(path)
    except (OSError, pa.ArrowException) as err:
        raise FetchError(f"{path}: cannot read the round's rows ({err})") from err


def _arrow_file(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


class _FetchShard(beam.DoFn):
    """Fetches one shard of a round with img2dataset's Downloader."""

    def __init__(self, round_dir: str, settings: Download, blocklist: Blocklist):
        self._round_dir, self._settings, self._blocklist = round_dir, settings, blocklist
        self._stage_dir = FileSystems.split(FileSystems.split(round_dir)[0])[0]  # <stage>/rounds/<k>

    def setup(self):
        # Here, not at the top: img2dataset loads webdataset, torch and albumentations (seconds), and
        # checking a config (`pipeline.frame.preflight`) imports this module without fetching.
        from img2dataset.downloader import Downloader

        from imagenot.pipeline.download.image_guard import GuardedResizer
        from imagenot.pipeline.download.tars import SortedSampleWriter

        s = self._settings
        self._crawler = process_crawler(self._round_dir, s, self._stage_dir, self._blocklist)
        resizer = GuardedResizer(
            s.max_image_pixels,
            self._blocklist.hashes(),
            image_size=s.image_size,
            resize_mode=s.resize_mode,
            resize_only_if_bigger=False,
            encode_format=s.encode_format,
            encode_quality=s.encode_quality,
        )
        self._writer = SortedSampleWriter
        self._downloader = Downloader(
            sample_writer_class=SortedSampleWriter,
            resizer=resizer,
            thread_count=s.threads,
            save_caption=True,
            extract_exif=False,
            output_folder=self._round_dir,
            column_list=FETCH_COLUMNS,
            timeout=s.timeout_s,
            number_sample_per_shard=s.shard_rows,
            oom_shard_count=SHARD_DIGITS,
            compute_hash="sha256",
            verify_hash_type=None,
            encode_format=s.encode_format,
            retries=s.retries,
            user_agent_token=s.user_agent_token,
            disallowed_header_directives=s.disallowed_header_directives or None,
        )

    def process(self, shard: int):
        started, before = time.time(), self._crawler.politeness.stats()
        malformed_before = self._crawler.signals.malformed()
        rows = self._settings.shard_rows
        self._downloader.sample_writer_class = functools.partial(  # the writer img2dataset makes for this shard
            self._writer,
            planned=read_fetch(self._round_dir).slice(shard * rows, rows).select(FETCH_COLUMNS).to_pylist(),
            carried=read_table(carried_path(self._round_dir, shard)).to_pylist(),
            shard_rows=rows,
        )
        with self._crawler.installed():
            self._downloader((shard, input_path(self._round_dir, shard)))
        hosts = shard_hosts(before, self._crawler.politeness.stats(), started)
        robots = self._crawler.robots.fetched() if self._crawler.robots else {}
        malformed = dict(self._crawler.signals.malformed() - malformed_before)
        record = {"hosts": hosts, "robots": robots, "malformed_signals": malformed}
        write_json(hosts_path(self._round_dir, shard), record)
        yield shard


def hosts_path(round_dir: str, shard: int) -> str:
    return FileSystems.join(round_dir, f"{shard_name(shard)}_hosts.json")


def input_path(round_dir: str, shard: int) -> str:
    return FileSystems.join(round_dir, INPUT_DIR, f"{shard_name(shard)}.arrow")


def carried_path(round_dir: str, shard: int) -> str:
    return FileSystems.join(round_dir, INPUT_DIR, f"{shard_name(shard)}.carried.parquet")


def fetch_round(
    round_dir: str,
    settings: Download,
    runner: Runner,
    blocklist: Blocklist,
    carried: Callable[[list[str]], pa.Table],
) -> tuple[int, int]:
    """Fetch the round's unfinished shards but for the rows an earlier download fetched
    (`carried(row_ids)`: their outcomes, `pipeline.download.carry`); (rows fetched, rows carried)."""
    table = read_fetch(round_dir)
    todo = unfinished_shards(round_dir, table.num_rows, settings.shard_rows)
    fetched = carried_rows = 0
    for shard in todo:  # img2dataset reads a shard from an Arrow file, and deletes it when done
        rows = table.slice(shard * settings.shard_rows, settings.shard_rows).select(FETCH_COLUMNS)
        outcomes = carried(rows.column("row_id").to_pylist())
        with atomic_output(carried_path(round_dir, shard)) as stream:
            pq.write_table(outcomes, stream)
        rows = rows.filter(pc.invert(pc.is_in(rows.column("row_id"), outcomes.column("row_id"))))
        write_bytes(input_path(round_dir, shard), _arrow_file(rows))
        fetched, carried_rows = fetched + rows.num_rows, carried_rows + outcomes.num_rows
    if todo:
        with make_pipeline(runner) as pipeline:
            _ = (
                pipeline
                | "Shards" >> beam.Create(todo)
                | "Spread" >> beam.Reshuffle()
                | "Fetch" >> beam.ParDo(_FetchShard(round_dir, settings, blocklist))
            )
    failed = unfinished_shards(round_dir, table.num_rows, settings.shard_rows)
    if failed:
        names = ", ".join(FileSystems.join(round_dir, shard_name(s)) for s in failed)
        raise FetchError(f"img2dataset did not finish shards {names}; rerun to fetch them again")
    FileSystems.delete([p for p in (carried_path(round_dir, s) for s in todo) if FileSystems.exists(p)])
    return fetched, carried_rows


def read_results(round_dir: str, rows: int, shard_rows: int) -> list[tuple[str, pa.Table]]:
    """(tar path, img2dataset's result table) per shard of a finished round."""
    results = []
    for shard in range(shard_count(rows, shard_rows)):
        name = FileSystems.join(round_dir, shard_name(shard))
        try:
            results.append((f"{name}.tar", read_table(f"{name}.parquet", RESULT_COLUMNS)))
        except (OSError, pa.ArrowException) as err:
            raise FetchError(
                f"{name}.parquet: cannot read img2dataset's results ({err}); rerun to fetch the shard again"
            ) from err
    return results

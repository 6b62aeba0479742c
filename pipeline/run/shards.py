"""Stages that work shard by shard: one output file and one tally per input shard, resumable.

A tally is a JSON object of counts (nested dicts of ints). A shard's tally is written after its
output file, so an existing tally means the shard is done and a rerun after a crash skips it
(`resumable_shard`, the one place that rule lives). The Beam graph only spreads shards over
workers (`ShardWorker`) and sums their tallies (`process_shards`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import atomic_output, read_json, write_json
from imagenot.pipeline.run.paths import stem
from imagenot.pipeline.run.shard_progress import progress_path, reporting, rows_read

TALLIES_DIR = "tallies"
BATCH_ROWS = 65_536  # rows per batch when a stage reads a file the pipeline wrote


class ShardFiles(NamedTuple):
    data: str  # <stage dir>/<data folder>/<stem>.parquet
    tally: str  # <stage dir>/tallies/<stem>.json


def shard_files(stage_dir: str, data_folder: str, shard: str, part: str = "") -> ShardFiles:
    """A shard's output and tally; `part` tells apart several outputs of one shard (rank's rounds)."""
    return ShardFiles(
        FileSystems.join(stage_dir, data_folder, f"{stem(shard)}{part}.parquet"),
        FileSystems.join(stage_dir, TALLIES_DIR, tally_name(shard, part)),
    )


def tally_name(shard: str, part: str = "") -> str:
    """The file name of a shard's tally (of its `part`), in the stage's tallies folder."""
    return f"{stem(shard)}{part}.json"


def read_batches(path: str, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The record batches of a parquet file the pipeline wrote (local or gs://)."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_rows, columns=columns):
            rows_read(batch.num_rows)
            yield batch


def resumable_shard(
    files: ShardFiles, work: Callable[[], dict], reusable: Callable[[dict], bool] = lambda _: True
) -> dict:
    """The tally of a shard an earlier run finished (and `reusable` accepts), else that of
    `work()`, which writes `files.data`; the tally is written last, so it marks the shard done."""
    done = read_json(files.tally) if FileSystems.exists(files.tally) else None
    if done is not None and reusable(done):
        return done
    with reporting(progress_path(files.tally)):
        tally = work()
    write_json(files.tally, tally)
    return tally


def write_batches(path: str, batches: Iterable[pa.RecordBatch], empty_schema: Callable[[], pa.Schema]) -> None:
    """`batches` as one parquet file, written atomically; with no batch, an empty file with
    `empty_schema()`, so every input shard has its output shard."""
    with atomic_output(path) as stream:
        writer = None
        for batch in batches:
            if writer is None:
                writer = pq.ParquetWriter(stream, batch.schema, compression="zstd")
            writer.write_batch(batch)
        if writer is None:
            writer = pq.ParquetWriter(stream, empty_schema(), compression="zstd")
        writer.close()


class ShardWorker(beam.DoFn):
    """Processes whole shards: each element's tally is `process_shard(element)`, or, given
    `worker_state` (built once per worker process: a matcher, a model), `process_shard(element,
    state)`. Both must pickle (module-level functions or functools.partial of them)."""

    def __init__(self, process_shard: Callable, worker_state: Callable[[], object] | None = None):
        self._process_shard, self._worker_state = process_shard, worker_state

    def setup(self):
        self._state = self._worker_state() if self._worker_state else None

    def process(self, element):
        yield self._process_shard(element) if self._worker_state is None else self._process_shard(element, self._state)


def sum_tallies(tallies: Iterable[dict]) -> dict:
    """Tallies added key by key, nested dicts included; keys come out sorted."""
    totals: dict = {}
    for tally in tallies:
        for key, value in tally.items():
            if isinstance(value, dict):
                totals[key] = Counter(totals.get(key, {})) + Counter(value)
            else:
                totals[key] = totals.get(key, 0) + value
    return {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in sorted(totals.items())}


def process_shards(
    pipeline: beam.Pipeline, shards: list[str], do_fn: beam.DoFn, total_path: str, hints: dict | None = None
) -> None:
    """Run `do_fn` (shard path -> tally) over every shard; the summed tally goes to `total_path`.
    `hints`: Beam resource hints for the processing step (a GPU for scoring on Dataflow)."""
    _ = (
        pipeline
        | "Shards" >> beam.Create(shards)
        | "Spread" >> beam.Reshuffle()
        | "Process" >> beam.ParDo(do_fn).with_resource_hints(**(hints or {}))
        | "Sum" >> beam.CombineGlobally(sum_tallies)
        | "Write" >> beam.Map(lambda total: write_json(total_path, total))
    )

"""Stages that work shard by shard: one output file and one tally per input shard, resumable.

A tally is a JSON object of counts (nested dicts of ints). A shard's tally is written after its
output file, so an existing tally means the shard is done and a rerun after a crash skips it.
The Beam graph only spreads shards over workers and sums their tallies.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import PurePosixPath
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.atomic import write_json

TALLIES_DIR = "tallies"


class ShardFiles(NamedTuple):
    data: str  # <stage dir>/<data folder>/<stem>.parquet
    tally: str  # <stage dir>/tallies/<stem>.json


def shard_files(stage_dir: str, data_folder: str, shard: str) -> ShardFiles:
    return ShardFiles(
        FileSystems.join(stage_dir, data_folder, f"{PurePosixPath(shard).stem}.parquet"),
        FileSystems.join(stage_dir, TALLIES_DIR, tally_name(shard)),
    )


def tally_name(shard: str) -> str:
    """The file name of a shard's tally, in the stage's tallies folder."""
    return f"{PurePosixPath(shard).stem}.json"


def read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read()


def read_json(path: str):
    return json.loads(read_bytes(path))


def read_tsv(path: str) -> list[dict[str, str]]:
    """The rows of a tab-separated table with a header."""
    return list(csv.DictReader(io.StringIO(read_bytes(path).decode("utf-8")), delimiter="\t"))


def stage_shards(stage_dir: str, data_folder: str) -> list[str]:
    """The data files an earlier stage wrote, sorted."""
    pattern = FileSystems.join(stage_dir, data_folder, "*.parquet")
    return sorted(meta.path for meta in FileSystems.match([pattern])[0].metadata_list)


def read_batches(path: str, columns: list[str] | None = None, batch_rows: int = 65_536) -> Iterator[pa.RecordBatch]:
    """The record batches of a parquet file the pipeline wrote (local or gs://)."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        yield from pq.ParquetFile(f).iter_batches(batch_size=batch_rows, columns=columns)


def read_table(path: str, columns: list[str] | None = None) -> pa.Table:
    """A parquet file the pipeline wrote, in full (an empty one keeps its schema)."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pq.read_table(f, columns=columns)


def sha256_file(path: str) -> str:
    """The sha256 of a file, streamed (local or gs://)."""
    digest = hashlib.sha256()
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def read_schema(path: str) -> pa.Schema:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pq.read_schema(f)


def finished_tally(files: ShardFiles) -> dict | None:
    """The tally of a shard an earlier run finished, else None."""
    return read_json(files.tally) if FileSystems.exists(files.tally) else None


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

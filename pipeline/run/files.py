"""Reading and writing the run's files. Writes are atomic: a file is complete under its final name
or absent, never half written. JSON is written and read strictly: no NaN or Infinity (which JSON
has no words for), and a file that does not parse is an error naming it.

Goes through Beam's FileSystems, so the same code writes local paths and gs:// objects: the data
goes to a temporary name in the same folder and is renamed into place once closed. A writer
killed mid-write leaves that staging file behind; `remove_partials` clears them when the stage
that owns the folder resumes.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.errors import ImagenotError
from imagenot.pipeline.run.filesystems import UNCOMPRESSED, FileSystems

PARTIAL_SUFFIX = ".partial"  # a staging file: `.<final name>.<random>.partial`


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary stream whose contents appear at `path` only if the block completes."""
    path = os.fspath(path)
    folder, name = FileSystems.split(path)
    if not FileSystems.exists(folder):
        try:
            FileSystems.mkdirs(folder)
        except OSError:
            if not FileSystems.exists(folder):  # else another worker made it just now
                raise
    staging = FileSystems.join(folder, f".{name}.{uuid.uuid4().hex}{PARTIAL_SUFFIX}")
    stream = FileSystems.create(staging, compression_type=UNCOMPRESSED)
    try:
        yield stream
        stream.close()
    except BaseException:
        stream.close()
        FileSystems.delete([staging])
        raise
    FileSystems.rename([staging], [path])


def remove_partials(folder: str) -> int:
    """Delete the staging files that writers killed mid-write left anywhere under `folder`
    (call only while no writer is at work there: the run lock ensures it); returns how many."""
    pattern = FileSystems.join(folder, f"**{PARTIAL_SUFFIX}")
    found = FileSystems.match([pattern])[0].metadata_list
    leftovers = [m.path for m in found if FileSystems.split(m.path)[1].startswith(".")]
    if leftovers:
        FileSystems.delete(leftovers)
    return len(leftovers)


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_output(path) as stream:
        stream.write(data)


def write_text(path: str | os.PathLike, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_tsv(path: str | os.PathLike, columns: Sequence[str], rows: Iterable[Sequence | Mapping]) -> None:
    """A tab-separated table with a header; a row is a sequence, or a mapping read by `columns`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([row[c] for c in columns] if isinstance(row, Mapping) else row for row in rows)
    write_text(path, buffer.getvalue())


class RunFileError(ImagenotError, ValueError):
    """A file of the run that is not as imagenot writes it (damaged, edited by hand)."""


def write_json(path: str | os.PathLike, payload: object) -> None:
    """Pretty, key-sorted JSON: the same data gives the same bytes."""
    write_text(path, json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n")


def read_bytes(path: str) -> bytes:
    with FileSystems.open(path, compression_type=UNCOMPRESSED) as f:
        return f.read()


def read_json(path: str):
    """The JSON file's value; refused in one line naming the file when it does not parse or holds
    NaN or Infinity, which no imagenot figure is."""
    try:
        return json.loads(read_bytes(path), parse_constant=_no_constant)
    except ValueError as err:  # JSONDecodeError, UnicodeDecodeError
        raise RunFileError(f"{path}: not JSON as imagenot writes it ({err})") from err


def _no_constant(word: str) -> object:
    raise ValueError(f"{word} is not a finite number")


def read_tsv(path: str) -> list[dict[str, str]]:
    """The rows of a tab-separated table with a header."""
    return list(csv.DictReader(io.StringIO(read_bytes(path).decode("utf-8")), delimiter="\t"))


def stage_shards(stage_dir: str, data_folder: str) -> list[str]:
    """The data files an earlier stage wrote, sorted."""
    pattern = FileSystems.join(stage_dir, data_folder, "*.parquet")
    return sorted(meta.path for meta in FileSystems.match([pattern])[0].metadata_list)


def read_table(path: str, columns: list[str] | None = None) -> pa.Table:
    """A parquet file the pipeline wrote, in full (an empty one keeps its schema)."""
    with FileSystems.open(path, compression_type=UNCOMPRESSED) as f:
        return pq.read_table(f, columns=columns)


def sha256_file(path: str) -> str:
    """The sha256 of a file, streamed (local or gs://)."""
    digest = hashlib.sha256()
    with FileSystems.open(path, compression_type=UNCOMPRESSED) as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def read_schema(path: str) -> pa.Schema:
    with FileSystems.open(path, compression_type=UNCOMPRESSED) as f:
        return pq.read_schema(f)

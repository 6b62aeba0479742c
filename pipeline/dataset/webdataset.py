"""Webdataset tars through Beam's FileSystems (local or gs://): reading chosen samples out of
img2dataset's tars, and writing new ones byte for byte reproducibly.

A webdataset sample is the tar members sharing a key (`KEY.jpg`, `KEY.cls`, ...). Written tars
hold their samples in the order given and each sample's members sorted by extension, with a fixed
mtime, uid/gid 0 and no user names, so the same samples give the same bytes.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterable, Mapping

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import atomic_output

MTIME = 0  # every member's modification time: tars do not change with the day they were written


def split_member(name: str) -> tuple[str, str]:
    """(key, extension) of a member: webdataset's rule, the key ends at the first dot of the file name."""
    folder, _, file_name = name.rpartition("/")
    stem, _, extension = file_name.partition(".")
    return (f"{folder}/{stem}" if folder else stem), extension


def read_samples(path: str, keys: set[str], extensions: set[str]) -> dict[str, dict[str, bytes]]:
    """key -> {extension: bytes} for the samples of `keys` in the tar at `path`, streamed once."""
    found: dict[str, dict[str, bytes]] = {}
    with (
        FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream,
        tarfile.open(fileobj=stream, mode="r|") as tar,
    ):
        for member in tar:
            key, extension = split_member(member.name)
            if member.isfile() and key in keys and extension in extensions:
                found.setdefault(key, {})[extension] = tar.extractfile(member).read()
    return found


def _member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, MTIME, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_tar(path: str, samples: Iterable[tuple[str, Mapping[str, bytes]]]) -> None:
    """Write (key, {extension: bytes}) samples as a webdataset tar at `path`, atomically."""
    with atomic_output(path) as stream, tarfile.open(fileobj=stream, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for key, members in samples:
            for extension in sorted(members):
                data = members[extension]
                tar.addfile(_member(f"{key}.{extension}", len(data)), io.BytesIO(data))

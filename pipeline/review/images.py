"""The review's images, read out of the run's own tars (local or gs://) by their plan id.

A request names an image id; the plan (or the dataset, for a flagged page's examples) maps it to
a tar of the run and a key inside it. Nothing from the request ever becomes a path. Each tar's
member offsets are read once (one pass over its headers: the server starts it for every tar in a
thread of its own, and a request for a tar not indexed yet waits for that tar alone); after that
an image is one positioned read of a local tar (opened for the read: a run may hold more tars than a
process may keep open), or one seek and read of a bucket's. A local tar written again since it was
indexed (`blocklist apply` takes samples out of tars) is seen at the read (its descriptor's inode,
size and time) and indexed again, so stale offsets never serve another member's bytes; a bucket's
tars are watched by the server (`run_state`).
"""

from __future__ import annotations

import logging
import os
import tarfile
import threading

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.dataset.webdataset import split_member
from imagenot.pipeline.report.thumbnails import IMAGE_EXTENSIONS

log = logging.getLogger(__name__)
MEDIA_TYPES = {"jpg": "image/jpeg", "png": "image/png", "webp": "image/webp"}


class ImageSource:
    """image id -> (bytes, media type), for the ids it was given and no others."""

    def __init__(self, run_dir: str, where: dict[str, tuple[str, str]]):
        self.run_dir, self.where = run_dir, where  # id -> (tar relative to the run, key)
        self.local = FileSystems.get_filesystem(run_dir).has_dirs()
        self.tars = sorted({tar for tar, _ in where.values()})
        self._offsets: dict[str, dict[str, tuple[int, int, str]]] = {}
        self._identity: dict[str, tuple[int, int, int]] = {}  # a local tar's (inode, size, mtime) when indexed
        self._locks = {tar: threading.Lock() for tar in self.tars}  # one tar indexed at a time, others read on

    def path(self, tar: str) -> str:
        return FileSystems.join(self.run_dir, tar)

    def _index(self, tar: str, stale: tuple[int, int, int] | None = None) -> dict[str, tuple[int, int, str]]:
        """key -> (offset, size, extension) of the tar's image members (indexed again when it was
        indexed as the local file of identity `stale`)."""
        found = self._offsets.get(tar)
        if found is not None and (stale is None or self._identity.get(tar) != stale):
            return found
        with self._locks[tar]:
            if tar not in self._offsets or (stale is not None and self._identity.get(tar) == stale):
                if self.local:  # seeks past each member's data
                    with (
                        os.fdopen(os.open(self.path(tar), os.O_RDONLY), "rb") as file,
                        tarfile.open(fileobj=file, mode="r:") as members,
                    ):
                        self._identity[tar] = _identity(os.fstat(file.fileno()))
                        found = _image_members(members)
                else:  # a bucket's object: one streamed pass
                    with (
                        FileSystems.open(self.path(tar), compression_type=CompressionTypes.UNCOMPRESSED) as stream,
                        tarfile.open(fileobj=stream, mode="r|") as members,
                    ):
                        found = _image_members(members)
                self._offsets[tar] = found
            return self._offsets[tar]

    def index_all(self) -> None:
        """Index every tar now (the server does so in a thread as it starts); a tar that cannot
        be read is left for the request that needs it, which then fails as it would have."""
        for tar in self.tars:
            try:
                self._index(tar)
            except Exception as err:  # noqa: BLE001  (the request for one of its images reports it)
                log.warning("review: cannot index %s yet (%s); its images are read on request", tar, err)

    def read(self, image: str) -> tuple[bytes, str] | None:
        """The image's bytes and media type; None for an id this review does not show."""
        if image not in self.where:
            return None
        tar, key = self.where[image]
        if not self.local:
            place = self._index(tar).get(key)
            if place is None:
                return None
            offset, size, extension = place
            with FileSystems.open(self.path(tar), compression_type=CompressionTypes.UNCOMPRESSED) as f:
                f.seek(offset)
                return f.read(size), MEDIA_TYPES[extension]
        try:
            descriptor = os.open(self.path(tar), os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            index, identity = self._index(tar), _identity(os.fstat(descriptor))
            if self._identity.get(tar) != identity:  # written again since it was indexed
                index = self._index(tar, stale=self._identity.get(tar))
                if self._identity.get(tar) != identity:  # and again since: this descriptor's file is gone
                    return None
            place = index.get(key)
            if place is None:
                return None
            offset, size, extension = place
            return os.pread(descriptor, size, offset), MEDIA_TYPES[extension]
        finally:
            os.close(descriptor)


def _identity(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _image_members(members: tarfile.TarFile) -> dict[str, tuple[int, int, str]]:
    found = {}
    for member in members:
        key, extension = split_member(member.name)
        if member.isfile() and extension in IMAGE_EXTENSIONS:
            found[key] = (member.offset_data, member.size, extension)
    return found

"""The review's images, read out of the run's own tars (local or gs://) by their plan id.

A request names an image id; the plan (or the dataset, for a flagged page's examples) maps it to
a tar of the run and a key inside it. Nothing from the request ever becomes a path. Each tar's
member offsets are read once, on first use (one pass over its headers); after that an image is
one seek and one read.
"""

from __future__ import annotations

import tarfile
import threading

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.dataset.webdataset import split_member
from imagenot.pipeline.report.thumbnails import IMAGE_EXTENSIONS

MEDIA_TYPES = {"jpg": "image/jpeg", "png": "image/png", "webp": "image/webp"}


class ImageSource:
    """image id -> (bytes, media type), for the ids it was given and no others."""

    def __init__(self, run_dir: str, where: dict[str, tuple[str, str]]):
        self.run_dir, self.where = run_dir, where  # id -> (tar relative to the run, key)
        self._offsets: dict[str, dict[str, tuple[int, int, str]]] = {}
        self._lock = threading.Lock()

    def _index(self, tar: str) -> dict[str, tuple[int, int, str]]:
        """key -> (offset, size, extension) of the tar's image members."""
        with self._lock:
            if tar not in self._offsets:
                found = {}
                path = FileSystems.join(self.run_dir, tar)
                with (
                    FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as stream,
                    tarfile.open(fileobj=stream, mode="r|") as members,
                ):
                    for member in members:
                        key, extension = split_member(member.name)
                        if member.isfile() and extension in IMAGE_EXTENSIONS:
                            found[key] = (member.offset_data, member.size, extension)
                self._offsets[tar] = found
            return self._offsets[tar]

    def read(self, image: str) -> tuple[bytes, str] | None:
        """The image's bytes and media type; None for an id this review does not show."""
        if image not in self.where:
            return None
        tar, key = self.where[image]
        place = self._index(tar).get(key)
        if place is None:
            return None
        offset, size, extension = place
        with FileSystems.open(FileSystems.join(self.run_dir, tar), compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.seek(offset)
            return f.read(size), MEDIA_TYPES[extension]

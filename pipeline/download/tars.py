"""Webdataset tars with the same bytes for the same images: members sorted by name, mtime 0,
owner root (uid/gid 0, no user or group names).

img2dataset writes a sample when its fetch completes, so member order, and every member's
mtime, differ between two fetches of the same URLs. `SortedSampleWriter` is its
WebDatasetSampleWriter with a tar writer that keeps the shard's samples (the resized images, a
few MB a shard) and writes them sorted when the shard closes. It also writes each sample under the
key its row has in the round's plan (img2dataset numbers the rows it was handed, which leave out
the carried ones), and at close the shard's carried rows (`pipeline.download.carry`) as img2dataset
writes a fetched row: the same `.json` fields in the same order, so a tar is the same bytes whether
its rows were fetched now or earlier. `remove_samples` writes a tar
again without some samples, the same way (a blocklist applied after the fact).
"""

from __future__ import annotations

import io
import math
import os
import tarfile

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # albumentations would check for updates online

import webdataset as wds
from img2dataset.downloader import compute_key
from img2dataset.writer import WebDatasetSampleWriter

from imagenot.pipeline.run.files import read_bytes, write_bytes

_FIXED = {"user": "", "group": "", "mtime": 0}


class _SortedTarWriter:
    def __init__(self, stream):
        self._stream, self._samples = stream, []

    def write(self, sample: dict) -> None:
        self._samples.append(sample)

    def close(self) -> None:
        with wds.TarWriter(self._stream, **_FIXED) as writer:
            for sample in sorted(self._samples, key=lambda s: s["__key__"]):
                writer.write(sample)


class SortedSampleWriter(WebDatasetSampleWriter):
    """img2dataset's webdataset writer, writing each tar sorted and with fixed metadata; each
    sample under the key of its row's place in `planned` (the shard's rows of the round's plan),
    and at close the `carried` outcomes (dicts with the fields img2dataset writes and `image`)."""

    def __init__(
        self,
        shard_id,
        output_folder,
        save_caption,
        oom_shard_count,
        schema,
        encode_format,
        *,
        planned: list[dict],
        carried: list[dict],
        shard_rows: int,
    ):
        super().__init__(shard_id, output_folder, save_caption, oom_shard_count, schema, encode_format)
        self.tarwriter = _SortedTarWriter(self.tar_fd)
        self._fields = schema.names  # img2dataset's meta, in its order
        digits = math.ceil(math.log10(shard_rows))  # img2dataset's oom_sample_per_shard
        self._plan = {
            row["row_id"]: (compute_key(i, shard_id, digits, oom_shard_count), row) for i, row in enumerate(planned)
        }
        self._carried = carried

    def write(self, img_str, key, caption, meta):
        key = self._plan[meta["row_id"]][0]
        super().write(img_str, key, caption, {**meta, "key": key})

    def close(self):
        for outcome in self._carried:
            key, row = self._plan[outcome["row_id"]]
            meta = {**outcome, **row, "key": key}
            super().write(outcome["image"], key, row["caption"], {name: meta[name] for name in self._fields})
        super().close()


def _key(member_name: str) -> str:
    return member_name.split(".", 1)[0]


def sample_members(tar_path: str, keys: set[str]) -> int:
    """How many of the tar's members are files of the samples of `keys`."""
    with tarfile.open(fileobj=io.BytesIO(read_bytes(tar_path))) as source:
        return sum(1 for m in source.getmembers() if m.isfile() and _key(m.name) in keys)


def remove_samples(tar_path: str, keys: set[str]) -> int:
    """Write the tar again without the samples of `keys` (atomically); the members removed."""
    with tarfile.open(fileobj=io.BytesIO(read_bytes(tar_path))) as source:
        members = [(m.name, source.extractfile(m).read()) for m in source.getmembers() if m.isfile()]
    kept = sorted((name, data) for name, data in members if _key(name) not in keys)
    if len(kept) == len(members):
        return 0
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in kept:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), _FIXED["mtime"], 0o444
            tar.addfile(info, io.BytesIO(data))
    write_bytes(tar_path, buffer.getvalue())
    return len(members) - len(kept)

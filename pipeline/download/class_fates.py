"""What the download stage did for each class, for `imagenot why`: images kept of the target,
and the candidates not kept by reason (failures, blocklists, audit drops).

The stage writes `download/class_fates.json`; reading it needs neither Beam's pipeline nor
img2dataset, so `why` stays quick.
"""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import read_json, write_json
from imagenot.pipeline.run.layout import DOWNLOAD, stage_path

FATES_FILE = "class_fates.json"


def write_class_fates(stage_dir: str, fates: dict[str, dict]) -> None:
    """`fates`: wnid -> {"images", "target", "not_kept": {reason: count}}."""
    write_json(FileSystems.join(stage_dir, FATES_FILE), fates)


def download_fate(run_dir: str, wnid: str) -> str | None:
    """One line on the class's images, or None when the download stage has not run."""
    path = stage_path(run_dir, DOWNLOAD, FATES_FILE)
    if not FileSystems.exists(path):
        return None
    fate = read_json(path).get(wnid)
    if fate is None:
        return None
    not_kept = ", ".join(f"{reason} {n:,}" for reason, n in fate["not_kept"].items()) or "none"
    return f"download: {fate['images']:,} of {fate['target']:,} images; candidates not kept, by reason: {not_kept}"

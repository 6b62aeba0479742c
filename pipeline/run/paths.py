"""Run paths on any Beam FileSystems scheme: local folders and object stores (gs://, s3://).

An object store has no folders, only names with a common prefix, so `FileSystems.exists` on a
folder is false there and `FileSystems.delete` removes only the one object of that exact name.
These helpers give folders the same meaning on every scheme. Name helpers split at the last "/"
instead of going through pathlib, which collapses the "//" of "gs://bucket".
"""

from __future__ import annotations

import os
import posixpath

from imagenot.pipeline.run.filesystems import FileSystems


def _has_dirs(path: str) -> bool:
    return FileSystems.get_filesystem(path).has_dirs()


def folder_exists(path: str) -> bool:
    """Whether the folder exists (on an object store: whether any object lies under it)."""
    if _has_dirs(path):
        return FileSystems.exists(path)
    return bool(FileSystems.match([path.rstrip("/") + "/**"], limits=[1])[0].metadata_list)


def delete_folder(path: str) -> None:
    """Delete the folder and everything under it; nothing happens if there is none."""
    if _has_dirs(path):
        if FileSystems.exists(path):
            FileSystems.delete([path])
    elif folder_exists(path):
        FileSystems.delete([path.rstrip("/") + "/"])  # a trailing "/" deletes the prefix


def name(path: str) -> str:
    """The last component of a path: `gs://b/run/part-1.parquet` -> `part-1.parquet`."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def stem(path: str) -> str:
    """The last component without its last suffix: `gs://b/run/part-1.parquet` -> `part-1`."""
    base = name(path)
    return base.rsplit(".", 1)[0] if "." in base.lstrip(".") else base


def absolute(path: str) -> str:
    """`path` as it names the same place from any working folder: a local path made absolute
    against this process's working folder (`..` and `.` resolved), a scheme path (gs://) as it is."""
    if FileSystems.get_scheme(path) is not None:
        return path
    return posixpath.normpath(posixpath.join(os.getcwd(), path))  # names only: no file is touched


def run_relative(path: str, run_dir: str) -> str:
    """What a run records of `path` (both absolute): relative to the run folder when it lies inside
    it (`corpus/part-00000.parquet`), so the record holds wherever the run is moved; else as it is."""
    inside = run_dir.rstrip("/") + "/"
    return path[len(inside) :] if path.startswith(inside) else path


def from_run(recorded: str, run_dir: str) -> str:
    """The path a run recorded (`run_relative`), found from the run folder as it is now."""
    if FileSystems.get_scheme(recorded) is not None or recorded.startswith("/"):
        return recorded
    return FileSystems.join(run_dir, recorded)

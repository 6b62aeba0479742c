"""Beam's FileSystems, loaded at its first use, so that a module of the run's files costs nothing to
import; a local path's scheme (none); and, inside `local_reads()`, a local path's reads (exists,
open, match, join, split) answered by the standard library as Beam's local file system answers them,
so that a command that only reads a local run (`review status`, `review classes status`) prints its table in a second
rather than after Beam's import (about 2.5 s of CPU). Every other call, and every call on a
`gs://` path, is Beam's own.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import NamedTuple

UNCOMPRESSED = "uncompressed"  # apache_beam.io.filesystem.CompressionTypes.UNCOMPRESSED
SCHEME = re.compile(r"[a-zA-Z][-a-zA-Z0-9+.]*://")  # Beam's URI_SCHEMA_PATTERN: no scheme is a local path
_LOCAL_READS: ContextVar[bool] = ContextVar("imagenot_local_reads", default=False)


def is_local(path: str) -> bool:
    return SCHEME.match(path.strip()) is None


@contextlib.contextmanager
def local_reads() -> Iterator[None]:
    """Within the block, local paths are read without Beam."""
    token = _LOCAL_READS.set(True)
    try:
        yield
    finally:
        _LOCAL_READS.reset(token)


class FileMetadata(NamedTuple):  # as Beam's: what a match gives of each file
    path: str
    size_in_bytes: int
    last_updated_in_seconds: float


class MatchResult(NamedTuple):
    pattern: str
    metadata_list: list[FileMetadata]


def _pattern(glob: str) -> re.Pattern | None:
    """Beam's translation of a pattern (`*` within a folder, `**` across them, `?` one character);
    None for one with a character class, left to Beam."""
    if "[" in glob:
        return None
    parts = re.split(r"(\*\*|\*|\?)", glob)
    translated = {"**": ".*", "*": r"[^/\\]*", "?": "."}
    return re.compile("(?ms)" + "".join(translated.get(p, re.escape(p)) for p in parts) + r"\Z")


def _match(pattern: str) -> MatchResult:
    """Beam's local match: the file itself without a glob, else every file under the folder before
    the first glob character whose path fits."""
    if pattern.endswith(("/", "\\")):
        pattern += "*"
    prefix = re.match(r"^[^[*?]*", pattern).group(0)
    if prefix == pattern:
        found = [pattern] if os.path.exists(pattern) else []
    else:
        fits = _pattern(pattern).match
        found = [
            path
            for folder, _, files in os.walk(os.path.dirname(prefix))
            for path in (os.path.join(folder, name) for name in files)
            if fits(path)
        ]
    return MatchResult(pattern, [FileMetadata(p, os.path.getsize(p), os.path.getmtime(p)) for p in found])


class _FileSystems:
    """`FileSystems` as Beam's, with the local reads above inside `local_reads()`."""

    @staticmethod
    def _beam():
        from apache_beam.io.filesystems import FileSystems

        return FileSystems

    def __getattr__(self, name: str):
        return getattr(self._beam(), name)

    @staticmethod
    def _fast(*paths: str) -> bool:
        return _LOCAL_READS.get() and all(is_local(p) for p in paths)

    def join(self, basepath: str, *paths: str) -> str:
        return os.path.join(basepath, *paths) if self._fast(basepath) else self._beam().join(basepath, *paths)

    def split(self, path: str) -> tuple[str, str]:
        return os.path.split(os.path.abspath(path)) if self._fast(path) else self._beam().split(path)

    def get_scheme(self, path: str) -> str | None:  # a path without one needs no Beam to say so
        return None if is_local(path) else self._beam().get_scheme(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path) if self._fast(path) else self._beam().exists(path)

    def open(self, path: str, mime_type: str = "application/octet-stream", compression_type: str = "auto"):
        if compression_type == UNCOMPRESSED and self._fast(path):
            return open(path, "rb")  # the caller closes it, as Beam's
        return self._beam().open(path, mime_type, compression_type)

    def match(self, patterns: list[str], limits: list[int] | None = None) -> list[MatchResult]:
        if limits is None and self._fast(*patterns) and all(_pattern(p) for p in patterns):
            return [_match(p) for p in patterns]
        return self._beam().match(patterns, limits)


FileSystems = _FileSystems()

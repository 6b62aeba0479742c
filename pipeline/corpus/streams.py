"""A corpus file's bytes, through FileSystems (local or gs://): as stored, or gunzipped for a
name that ends in `.gz`.

A gzipped file is read to its end-of-stream marker: one that stops early (cut in a copy or an
upload) is an error naming the file, never a silent partial read; a file named `.gz` that is not
gzip is one too. (Beam's own gzip reader returns what it got and stops without a word, and raises
zlib's error on data that is not gzip.)
"""

from __future__ import annotations

import contextlib
import gzip
import zlib
from collections.abc import Iterator

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError


class CorpusError(ImagenotError, ValueError):
    """A shard cannot be used; the message names the shard and, for schema errors, the column,
    the type found and the type expected."""


def is_gzipped(path: str) -> bool:
    return path.lower().endswith(".gz")


def file_size(path: str) -> int:
    return FileSystems.match([path])[0].metadata_list[0].size_in_bytes


@contextlib.contextmanager
def open_stored(path: str) -> Iterator:
    """The file's bytes as stored."""
    try:
        raw = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    except Exception as err:  # OSError, BeamIOError, permission: all mean "cannot open"
        raise CorpusError(f"shard {path}: cannot open: {type(err).__name__}: {err}") from err
    with raw:
        yield raw


@contextlib.contextmanager
def open_text(path: str) -> Iterator:
    """The file's text bytes: gunzipped (and checked to the end) when its name ends in `.gz`."""
    with open_stored(path) as raw:
        yield _Gunzipped(path, raw) if is_gzipped(path) else raw


def gunzipped_head(path: str, head: bytes, whole: bool) -> bytes:
    """What the first bytes of a gzipped file hold; `whole`: they are the whole file, whose
    stream must then end in them."""
    text, left = [], head
    try:
        while left:  # a gzip file may be several streams one after the other
            stream = zlib.decompressobj(wbits=47)
            text.append(stream.decompress(left))
            if not stream.eof:
                if whole:
                    raise _truncated(path)
                break
            left = stream.unused_data
    except zlib.error as err:
        raise _not_gzip(path, err) from err
    return b"".join(text)


def _truncated(path: str) -> CorpusError:
    return CorpusError(
        f"shard {path}: ends early: the gzip stream stops before its end (the file is truncated); copy it again"
    )


def _not_gzip(path: str, err: Exception) -> CorpusError:
    return CorpusError(f"shard {path}: its name ends in .gz but it is not gzip data ({err}); name it without .gz")


class _Gunzipped:
    """A gzipped stream's text, read as the corpus reader reads: `read(size)` and `readline()`."""

    def __init__(self, path: str, raw):
        self.path, self.file, self.given = path, gzip.GzipFile(fileobj=raw, mode="rb"), 0

    def read(self, size: int = -1) -> bytes:
        with self._checked():
            data = self.file.read(size)
        self.given += len(data)
        return data

    def readline(self) -> bytes:
        with self._checked():
            line = self.file.readline()
        self.given += len(line)
        return line

    @contextlib.contextmanager
    def _checked(self) -> Iterator[None]:
        try:
            yield
        except EOFError as err:  # the stream stops before its end-of-stream marker
            raise _truncated(self.path) from err
        except (gzip.BadGzipFile, zlib.error) as err:
            if not self.given:
                raise _not_gzip(self.path, err) from err
            raise CorpusError(f"shard {self.path}: corrupt gzip data after {self.given:,} bytes: {err}") from err

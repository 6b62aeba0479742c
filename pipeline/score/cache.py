"""An embedding cache keyed by (model, text), so a rerun embeds nothing again.

The cache lives on any Beam FileSystems path: a local folder, or a bucket (gs://) that every
Dataflow worker shares, so a rerun on fresh workers embeds nothing twice.

Layout: one folder per model (named by a hash of its model id, which is written inside), holding
immutable chunk files. Each chunk is one .npy array of (sha1(text), vector) records sorted by
key, named by a hash of its bytes, written once under a temporary name and renamed into place:
several workers can add chunks at the same time, two writers of the same chunk write the same
bytes to the same name, and a reader sees either a whole chunk or none. Lookups search each
chunk's sorted keys (vectorised), and pick up chunks other writers added since the last look.
"""

from __future__ import annotations

import hashlib
import io
import os

import numpy as np
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.labels.senses.encoders import TextEncoder
from imagenot.pipeline.run.files import atomic_output, read_bytes, write_text
from imagenot.pipeline.run.paths import name

KEY_BYTES = 20  # sha1


def _records(dim: int) -> np.dtype:
    return np.dtype([("key", f"S{KEY_BYTES}"), ("vector", "<f4", (dim,))])


def text_keys(texts: list[str]) -> np.ndarray:
    return np.array([hashlib.sha1(t.encode("utf-8")).digest() for t in texts], dtype=f"S{KEY_BYTES}")


class EmbeddingCache:
    """Embeddings of one model, stored under `root`; `dim`, the vectors' length, or None to learn
    it from the first chunk read or added (so a cached run needs no model to know it)."""

    def __init__(self, root: str | os.PathLike, model_id: str, dim: int | None = None):
        self.model_id = model_id
        self.dtype = None if dim is None else _records(dim)
        self.folder = FileSystems.join(os.fspath(root), hashlib.sha1(model_id.encode("utf-8")).hexdigest()[:16])
        self._check_model_file()
        self._chunks: dict[str, np.ndarray] = {}

    def _check_model_file(self) -> None:
        marker = FileSystems.join(self.folder, "MODEL")
        if FileSystems.exists(marker):
            found = read_bytes(marker).decode("utf-8")
            if found != self.model_id:
                raise ImagenotError(f"{marker}: cache folder holds model {found!r}, not {self.model_id!r}")
            return
        write_text(marker, self.model_id)  # racing writers write the same text

    def _refresh(self) -> None:
        matched = FileSystems.match([FileSystems.join(self.folder, "chunk-*.npy")])[0].metadata_list
        for path in sorted(m.path for m in matched):
            if name(path) not in self._chunks:
                chunk = np.load(io.BytesIO(read_bytes(path)))
                self.dtype = self.dtype or chunk.dtype
                if chunk.dtype != self.dtype:
                    raise ImagenotError(f"{path}: expected records {self.dtype}, found {chunk.dtype}")
                self._chunks[name(path)] = chunk

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, vectors) for `keys`; rows not found are zero (no columns while the
        vectors' length is unknown: nothing is cached)."""
        self._refresh()
        found = np.zeros(len(keys), dtype=bool)
        vectors = np.zeros((len(keys), 0 if self.dtype is None else self.dtype["vector"].shape[0]), dtype=np.float32)
        for chunk in self._chunks.values():
            todo = np.flatnonzero(~found)
            if not len(todo) or not len(chunk):
                continue
            chunk_keys = chunk["key"]
            at = np.minimum(np.searchsorted(chunk_keys, keys[todo]), len(chunk) - 1)
            hit = chunk_keys[at] == keys[todo]
            vectors[todo[hit]] = chunk["vector"][at[hit]]
            found[todo[hit]] = True
        return found, vectors

    def add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        """Store a new chunk (keys unique)."""
        if not len(keys):
            return
        self.dtype = self.dtype or _records(vectors.shape[1])
        if vectors.shape[1:] != self.dtype["vector"].shape:
            raise ImagenotError(
                f"{self.folder}: holds vectors of length {self.dtype['vector'].shape[0]}, "
                f"given {vectors.shape[1]} for model {self.model_id!r}"
            )
        records = np.empty(len(keys), dtype=self.dtype)
        order = np.argsort(keys, kind="stable")
        records["key"] = keys[order]
        records["vector"] = vectors[order]
        path = FileSystems.join(self.folder, f"chunk-{hashlib.sha1(records.tobytes()).hexdigest()[:16]}.npy")
        if FileSystems.exists(path):  # another worker stored these very records
            return
        with atomic_output(path) as out:
            np.save(out, records)


class CachedEncoder:
    """An encoder that embeds each distinct text once and, given a cache folder, never again.

    Counters: `requested` texts asked for, `embedded` texts actually sent to the model,
    `cache_hits` distinct texts read from the cache.
    """

    def __init__(self, encoder: TextEncoder, cache_dir: str | os.PathLike | None = None):
        self.encoder = encoder  # asked for its dim only on a miss: a lazy one loads no model for a cached run
        self.model_id = encoder.model_id
        self.cache = None if cache_dir is None else EmbeddingCache(cache_dir, encoder.model_id)
        self.requested = 0
        self.embedded = 0
        self.cache_hits = 0

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, texts: list[str]) -> np.ndarray:
        unique: dict[str, int] = {}
        inverse = np.fromiter((unique.setdefault(t, len(unique)) for t in texts), dtype=np.int64, count=len(texts))
        distinct = list(unique)
        self.requested += len(texts)
        if self.cache is None:
            vectors = self.encoder.encode(distinct)
            self.embedded += len(distinct)
            return vectors[inverse]
        keys = text_keys(distinct)
        found, vectors = self.cache.lookup(keys)
        misses = np.flatnonzero(~found)
        if len(misses):
            fresh = self.encoder.encode([distinct[i] for i in misses])
            self.cache.add(keys[misses], fresh)
            if len(misses) == len(distinct):  # `vectors` may have no columns yet
                vectors = fresh
            else:
                vectors[misses] = fresh
        elif not vectors.shape[1]:  # no text, and nothing cached to tell the vectors' length
            vectors = np.zeros((0, self.encoder.dim), np.float32)
        self.embedded += len(misses)
        self.cache_hits += int(found.sum())
        return vectors[inverse]

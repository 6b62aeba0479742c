"""Sense vectors from SemCor's training documents (LMMS, Loureiro & Jorge 2019): a noun synset's
vector is the mean contextual embedding (`labels.encoders.spans.SpanEncoder`) of its annotated occurrences
in `wordnet.semcor`'s `train` documents; a synset with none takes the mean vector of the synsets
with occurrences under its nearest hypernym (itself first, then its hypernyms, their hypernyms...).

Built once per model and layer count, offline, into `<IMAGENOT_CACHE>/sense_vectors/<hash>/`
(`imagenot prepare-models` does it at set-up; a worker that finds none builds it: about three
minutes on one core). The folder holds `wnids.json`, `vectors.npy` (float32, one unit row per
synset of `wnids.json`, sorted) and `counts.npy`; `PROVENANCE.json` names the encoder, the SemCor
file's and the vectors' sha256. The build is deterministic: one torch thread, sums in file order.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from imagenot.errors import ImagenotError
from imagenot.labels.encoders.spans import SpanEncoder
from imagenot.pipeline.score.model_cache import PROVENANCE_FILE, announce, is_prepared, publish, staging_folder
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.nltk_data import cache_dir
from imagenot.wordnet.semcor import SEMCOR_FILE, semcor_rows

WNIDS_FILE, VECTORS_FILE, COUNTS_FILE = "wnids.json", "vectors.npy", "counts.npy"


def _semcor_sha256() -> str:
    return hashlib.sha256(SEMCOR_FILE.read_bytes()).hexdigest()


def sense_vectors_dir(encoder: SpanEncoder) -> Path:
    """Where the sense vectors of `encoder` (its model, layers and length) are cached."""
    name = hashlib.sha1(f"{encoder.model_id}|semcor={_semcor_sha256()}|train".encode()).hexdigest()[:16]
    return cache_dir() / "sense_vectors" / name


def prepare_sense_vectors(encoder: SpanEncoder) -> Path:
    """Build the sense vectors of `encoder` once and cache them; returns their folder."""
    target = sense_vectors_dir(encoder)
    if is_prepared(target):
        return target
    announce("the context method's sense vectors (SemCor's training documents embedded: about 3 minutes)", target)
    rows = semcor_rows("train")
    index = load_index()
    synsets = [index.by_name(name).wnid for name in rows.column("synset").to_pylist()]
    spans = list(zip(rows.column("start").to_pylist(), rows.column("end").to_pylist()))
    embedded = encoder.encode_spans(rows.column("sentence").to_pylist(), spans).astype(np.float64)
    wnids = sorted(set(synsets))
    at = {wnid: i for i, wnid in enumerate(wnids)}
    sums = np.zeros((len(wnids), encoder.dim))
    counts = np.zeros(len(wnids), np.int32)
    for wnid, vector in zip(synsets, embedded):  # file order: the same sums on every machine
        sums[at[wnid]] += vector
        counts[at[wnid]] += 1
    vectors = (sums / np.linalg.norm(sums, axis=1, keepdims=True)).astype(np.float32)
    staging = staging_folder(target)
    (staging / WNIDS_FILE).write_text(json.dumps(wnids), encoding="utf-8")
    np.save(staging / VECTORS_FILE, vectors)
    np.save(staging / COUNTS_FILE, counts)
    provenance = {
        "method": "LMMS-style sense vectors: mean contextual embedding of SemCor 3.0's train-document annotations",
        "encoder": encoder.model_id,
        "semcor_sha256": _semcor_sha256(),
        "annotations": len(synsets),
        "synsets": len(wnids),
        "vectors_sha256": hashlib.sha256((staging / VECTORS_FILE).read_bytes()).hexdigest(),
    }
    publish(staging, target, provenance)
    return target


class SenseVectors:
    """The cached sense vectors, with the hypernym back-off for synsets SemCor never annotated."""

    def __init__(self, folder: Path, index: NounIndex | None = None):
        if not is_prepared(folder):
            raise ImagenotError(
                f"{folder}: no prepared sense vectors (no {PROVENANCE_FILE}); run imagenot prepare-models"
            )
        self.provenance = json.loads((folder / PROVENANCE_FILE).read_text(encoding="utf-8"))
        wnids = json.loads((folder / WNIDS_FILE).read_text(encoding="utf-8"))
        matrix = np.load(folder / VECTORS_FILE)
        self._seen = dict(zip(wnids, matrix))
        self.index = index or load_index()
        self._backed_off: dict[str, np.ndarray] = {}

    def __contains__(self, wnid: str) -> bool:
        """Whether SemCor's training documents annotate the synset."""
        return wnid in self._seen

    def vector(self, wnid: str) -> np.ndarray:
        """The synset's unit vector (float32): its own, else its nearest hypernym's back-off."""
        if wnid in self._seen:
            return self._seen[wnid]
        if wnid not in self._backed_off:
            self._backed_off[wnid] = self._back_off(wnid)
        return self._backed_off[wnid]

    def _back_off(self, wnid: str) -> np.ndarray:
        level, visited = [wnid], set()
        while level:
            for synset in level:  # sorted: the same ancestor wins on every machine
                below = sorted(w for w in self.index.descendants(synset) | {synset} if w in self._seen)
                if below:
                    mean = np.sum([self._seen[w].astype(np.float64) for w in below], axis=0)
                    return (mean / np.linalg.norm(mean)).astype(np.float32)
            visited.update(level)
            level = sorted({h for synset in level for h in self.index[synset].hypernyms} - visited)
        raise ImagenotError(f"sense vectors: no synset under any hypernym of {wnid} is annotated")


def load_sense_vectors(encoder: SpanEncoder) -> SenseVectors:
    """The sense vectors of `encoder`, built now if set-up has not built them yet."""
    return SenseVectors(prepare_sense_vectors(encoder))

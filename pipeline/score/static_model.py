"""The first phase's cheap ranker: a static embedding model distilled from the scoring encoder.

model2vec distils a transformer into one vector per vocabulary token (it embeds the vocabulary
through the model, then reduces it with PCA); a caption's embedding is the mean of its tokens'
vectors, tens of thousands of captions a second on one core. The distillation runs offline on
the local model, once per source model, into `<IMAGENOT_CACHE>/static/<hash>/` (set-up runs it
for the default model, as it prepares WordNet); `PROVENANCE.json` there names the source model,
the model2vec version, the PCA size and the weights' sha256, and goes into the dataset card.

A caption's static embedding depends on its own tokens alone (model2vec averages each caption's
token rows on its own, in float32), so its score is the same bits whatever batch it met.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from imagenot.errors import ImagenotError
from imagenot.labels.encoders.models import resolve_model
from imagenot.pipeline.score.model_cache import PROVENANCE_FILE, announce, is_prepared, publish, staging_folder
from imagenot.wordnet.nltk_data import cache_dir

PCA_DIMS = 256
WEIGHTS_FILE = "model.safetensors"


def static_model_dir(source_model: str) -> Path:
    """Where the model distilled from `source_model` (a scoring.model value) is cached."""
    source_id = resolve_model(source_model)[1]
    name = hashlib.sha1(f"{source_id}|pca={PCA_DIMS}".encode()).hexdigest()[:16]
    return cache_dir() / "static" / name


def prepare_static_model(source_model: str) -> Path:
    """Distil `source_model` once (offline) and cache it; returns its folder."""
    target = static_model_dir(source_model)
    if is_prepared(target):
        return target
    from model2vec.distill import distill

    path, source_id = resolve_model(source_model)
    announce(f"the static model distilled from {source_id} (about 30 s)", target)
    try:
        model = distill(model_name=path, pca_dims=PCA_DIMS)
    except (OSError, ValueError) as err:
        raise ImagenotError(f"scoring.first_phase: cannot distil a static model from {source_model!r}: {err}") from err
    staging = staging_folder(target)
    model.save_pretrained(staging)
    provenance = {
        "method": "model2vec distillation",
        "source_model": source_id,
        "model2vec": importlib.metadata.version("model2vec"),
        "pca_dims": PCA_DIMS,
        "weights_sha256": hashlib.sha256((staging / WEIGHTS_FILE).read_bytes()).hexdigest(),
    }
    publish(staging, target, provenance)
    return target


def describe(provenance: dict) -> str:
    """One line naming a static model and where it came from, for the card."""
    return (
        f"{provenance['method']} of {provenance['source_model']} (model2vec {provenance['model2vec']}, "
        f"PCA {provenance['pca_dims']}, weights sha256 {provenance['weights_sha256'][:16]})"
    )


@dataclass
class StaticEncoder:
    """A model2vec static model from a folder: L2-normalised float32 caption embeddings."""

    folder: Path

    def __post_init__(self):
        from model2vec import StaticModel

        provenance_path = Path(self.folder) / PROVENANCE_FILE
        if not provenance_path.exists():
            raise ImagenotError(f"{self.folder}: not a prepared static model (no {PROVENANCE_FILE})")
        self.provenance = json.loads(provenance_path.read_text(encoding="utf-8"))
        self.model = StaticModel.from_pretrained(str(self.folder), normalize=True, force_download=False)
        self.model_id = f"static:{self.provenance['weights_sha256']}"
        self.dim = int(self.model.dim)

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # One process: model2vec's own pool would start processes inside a Beam worker.
        return np.asarray(self.model.encode(list(texts), use_multiprocessing=False), dtype=np.float32)


def load_static_encoder(source_model: str, folder: str | None = None) -> StaticEncoder:
    """The static model at `folder`, or the one distilled from `source_model` (distilled now if
    set-up has not done it yet)."""
    return StaticEncoder(Path(folder) if folder else prepare_static_model(source_model))

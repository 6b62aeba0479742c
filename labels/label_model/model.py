"""The label model's weights and the arithmetic that applies them: a logistic model of whether a
caption's picture shows its class (the readers' `picturable`, `benchmarks/data/real_dev_guide.md`),
over the pair's features (`features.FEATURES`, standardised) and the caption's embedding projected
on its first principal components; beside it a multinomial head of what the word is where it
stands (`USES`: the readers' `use`), which names the reason of a pair the model drops.

`weights.npz` holds the arrays, `card.json` what they were trained on and over (`train.py` writes
both). Everything is numpy, row by row in float64 (no BLAS), so a caption's probability does not
depend on the captions batched with it.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import PairScores
from imagenot.labels.label_model.features import pair_features
from imagenot.wordnet.index import NounIndex

MODEL_DIR = Path(__file__).parent
WEIGHTS_FILE, CARD_FILE = "weights.npz", "card.json"
# What the word is where it stands, as the use head names a dropped pair (the guide's `use`, with the
# right sense of a thing the picture does not show as `not_shown`, and the word that is not a noun,
# a letter or a foreign word as `not_a_noun`).
USES = ("not_shown", "other_sense", "name", "missing_sense", "modifier", "not_a_noun")
ARRAYS = ("mean", "scale", "coef", "intercept", "use_coef", "use_intercept", "components", "center")


@dataclass(frozen=True)
class LabelModel:
    features: tuple[str, ...]
    mean: np.ndarray  # (features,): the standardisation
    scale: np.ndarray
    coef: np.ndarray  # (features + components,)
    intercept: float
    use_coef: np.ndarray  # (uses, features + components)
    use_intercept: np.ndarray  # (uses,)
    components: np.ndarray  # (components, dim): the caption embeddings' principal axes
    center: np.ndarray  # (dim,)
    card: dict

    def digest(self) -> str:
        """The weights' and card's digest: what a stage that applied them records."""
        digest = hashlib.sha256(json.dumps(self.card, sort_keys=True).encode())
        for name in ARRAYS:
            digest.update(np.ascontiguousarray(getattr(self, name), np.float64).tobytes())
        return digest.hexdigest()[:16]

    @property
    def margin_clip(self) -> float:
        return float(self.card["margin_clip"])

    def inputs(self, features: np.ndarray, caption_vectors: np.ndarray) -> np.ndarray:
        """The standardised features beside the projected caption embeddings, float64."""
        z = (np.asarray(features, np.float64) - self.mean) / self.scale
        projected = np.einsum("nd,kd->nk", np.asarray(caption_vectors, np.float64) - self.center, self.components)
        return np.hstack([z, projected])

    def probability(self, features: np.ndarray, caption_vectors: np.ndarray) -> np.ndarray:
        """float64 (pairs,): the probability that each caption's picture shows its class."""
        logits = np.einsum("nf,f->n", self.inputs(features, caption_vectors), self.coef) + self.intercept
        return 1.0 / (1.0 + np.exp(-logits))

    def uses(self, features: np.ndarray, caption_vectors: np.ndarray) -> list[str]:
        """Per pair, the likeliest of `USES`: what the word is where it stands."""
        logits = np.einsum("nf,uf->nu", self.inputs(features, caption_vectors), self.use_coef) + self.use_intercept
        return [USES[i] for i in logits.argmax(axis=1)]

    def judge(
        self,
        captions: Sequence[str],
        spans: Sequence[tuple[int, int]],
        wnids: Sequence[str],
        scores: PairScores,
        none_scores: Sequence[float | None],
        matched: Sequence[Sequence[str]],
        caption_vectors: np.ndarray,
        index: NounIndex,
    ) -> tuple[np.ndarray, list[str]]:
        """(float32 probability that each caption's picture shows its class, what its word is there)."""
        if not len(captions):
            return np.zeros(0, np.float32), []
        features = pair_features(captions, spans, wnids, scores, none_scores, matched, index, self.margin_clip)
        return self.probability(features, caption_vectors).astype(np.float32), self.uses(features, caption_vectors)


def save_model(folder: Path, model: LabelModel) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / WEIGHTS_FILE, **{name: np.asarray(getattr(model, name)) for name in ARRAYS})
    card = {**model.card, "features": list(model.features)}
    (folder / CARD_FILE).write_text(json.dumps(card, indent=1) + "\n", encoding="utf-8")


def read_model(folder: Path) -> LabelModel:
    card = json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))
    with np.load(folder / WEIGHTS_FILE) as arrays:
        values = {name: arrays[name] for name in ARRAYS}
    values["intercept"] = float(values["intercept"])
    return LabelModel(tuple(card["features"]), card=card, **values)


@functools.cache
def read_model_folder(folder: str) -> LabelModel:
    """A model trained elsewhere (a local folder with `weights.npz` and `card.json`), read once per
    process; a folder that holds none is an error naming it."""
    path = Path(folder).expanduser()
    missing = [name for name in (WEIGHTS_FILE, CARD_FILE) if not (path / name).is_file()]
    if missing:
        raise ImagenotError(f"scoring.label_model: {folder} holds no {' and no '.join(missing)}")
    return read_model(path)


@functools.cache
def load_model() -> LabelModel:
    """The shipped model (this folder's), read once per process."""
    return read_model(MODEL_DIR)

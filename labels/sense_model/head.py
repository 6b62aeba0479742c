"""The trained sense head's weights and the arithmetic that applies them. The training script
(`train.py`) writes `head.npz` (the bilinear map W and the cosine's scale in float32; where training
tuned them, the encoder's top layers in float16) and `head.json` (what they were trained on and over,
and how long it took). Scoring is numpy; the tuned layers go into (a copy of) the span encoder's torch
model once, at load."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HEAD_DIR = Path(__file__).parent
WEIGHTS_FILE, CARD_FILE = "head.npz", "head.json"
LAYER_PREFIX = "encoder.layer."  # the tuned layers' parameters, named as in the encoder's state dict


@dataclass(frozen=True)
class SenseHead:
    """`logits(word, gloss) = scale x cos(word, gloss) + gloss' W word` over unit vectors."""

    weights: np.ndarray  # float64 (dim, dim): W
    scale: float
    encoder: str  # the text encoder's model id the head was trained over
    layers: int  # the span encoder's last layers summed
    templates: tuple[str, ...]  # the sense queries whose mean embedding is a sense's gloss vector
    card: dict
    tuned: dict[str, np.ndarray] = field(default_factory=dict)  # encoder parameter name -> its tuned value

    def mapped(self, gloss: np.ndarray) -> np.ndarray:
        """W' times one gloss vector (float64), computed once per sense: `gloss' W word` is its dot
        product with the word's vector."""
        return np.einsum("de,d->e", self.weights, np.asarray(gloss, np.float64))

    def logits(self, vectors: np.ndarray, glosses: np.ndarray, mapped: np.ndarray) -> np.ndarray:
        """float64 (rows, senses): each row's word vector against each sense (its gloss vector and W'
        times it), row by row."""
        return self.scale * np.einsum("nd,sd->ns", vectors, glosses) + np.einsum("nd,sd->ns", vectors, mapped)


def read_card(folder: Path = HEAD_DIR) -> dict:
    """`head.json`: what the weights were trained on and over."""
    return json.loads((folder / CARD_FILE).read_text(encoding="utf-8"))


def load_head(folder: Path = HEAD_DIR) -> SenseHead:
    card = read_card(folder)
    arrays = np.load(folder / WEIGHTS_FILE)
    return SenseHead(
        weights=arrays["weights"].astype(np.float64),
        scale=float(arrays["scale"]),
        encoder=card["encoder"],
        layers=int(card["layers"]),
        templates=tuple(card["templates"]),
        card=card,
        tuned={name: arrays[name].astype(np.float32) for name in arrays.files if name.startswith(LAYER_PREFIX)},
    )


def save_head(folder: Path, weights: np.ndarray, scale: float, card: dict, tuned: dict[str, np.ndarray]) -> None:
    arrays = {name: np.asarray(value, np.float16) for name, value in tuned.items()}  # half the bytes in git
    np.savez(folder / WEIGHTS_FILE, weights=np.asarray(weights, np.float32), scale=np.float32(scale), **arrays)
    (folder / CARD_FILE).write_text(json.dumps(card, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def head_scoring(folder: Path = HEAD_DIR) -> dict[str, str]:
    """The scoring settings (`encoder`, `model`, `runtime`) whose text encoder the head was trained
    over: the trained method reads glosses and captions through that encoder alone."""
    return read_card(folder)["scoring"]


def head_digest(folder: Path = HEAD_DIR) -> str:
    """The shipped weights' sha256 (first 16 hex digits): a retrained head reruns the score stage."""
    return hashlib.sha256((folder / WEIGHTS_FILE).read_bytes()).hexdigest()[:16]

"""What the sense scorers read of the config (`scoring.sense_*`), as plain values: the pipeline
builds them (`Scoring.sense_settings`), a benchmark or a test may build its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SenseSettings:
    templates: tuple[str, ...] = (  # the query texts of each noun sense (`wordnet.queries` fields)
        "{lemma}: {gloss}",
        "{lemmas}, a kind of {hypernym}: {gloss}",
        "{lemma}, a kind of {hypernym} ({category}): {hyponyms}",
    )
    pooling: Literal["max", "mean"] = "mean"  # how a sense's query similarities are pooled
    prior: float = 0.03  # the weight of log P(sense | word)
    sentence_weight: float = 20.0  # trained method: the weight of the sentence method's similarity

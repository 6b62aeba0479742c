"""Run configuration: YAML validated into pydantic models before any work starts.

Every section forbids unknown keys, so a typo is an error naming the key, not a silent default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Columns(Section):
    """Where each field lives in the corpus; defaults fit LAION-5B's metadata.

    `url` and `caption` are required; an optional column set to null is not read.
    """

    url: str = "URL"
    caption: str = "TEXT"
    width: str | None = "WIDTH"
    height: str | None = "HEIGHT"
    similarity: str | None = "similarity"
    punsafe: str | None = "punsafe"
    nsfw: str | None = "NSFW"
    sample_id: str | None = "SAMPLE_ID"
    license: str | None = "LICENSE"

    def source_columns(self) -> dict[str, str]:
        """Canonical name -> corpus column, for the columns this mapping reads."""
        return {name: column for name, column in self.model_dump().items() if column is not None}


class Corpus(Section):
    paths: list[str] = Field(default_factory=list, description="parquet paths, globs or URLs")
    columns: Columns = Columns()


# English function words that are also WordNet noun lemmas or their plurals ("a": the letter,
# vitamin A, adenine; "in": inch, indium; "it": information technology; "as": plural of "a").
# Matched, they would tag nearly every caption with synsets it is not about.
FUNCTION_WORDS = (
    "a an i me he it us who in at as or so then while be am are do have one no none same more "
    "least few much here there why out over down may might must will"
).split()


class Tagging(Section):
    batch_rows: int = Field(65_536, ge=1_000, le=1_000_000, description="rows per Arrow batch")
    ignore_forms: list[str] = Field(
        default_factory=lambda: list(FUNCTION_WORDS),
        description="normalised surface forms never matched (multi-word lemmas holding them still are)",
    )


class Selection(Section):
    """Steps 2-6 of the method: which synsets may become classes, which captions they keep."""

    reference: str = Field("imagenet1k", description="imagenet1k, imagenet21k or a class-list file")
    overlap: Literal["paper", "strict"] = Field(
        "paper", description="paper: drop reference synsets and shared lemmas; strict: also their ancestors and descendants"
    )
    min_captions: int = Field(1000, ge=1, le=100_000_000, description="usable captions a synset needs")
    nsfw_synset_threshold: float | None = Field(
        0.5, gt=0, le=1, description="alt-profanity-check score over lemmas and gloss; null: off"
    )
    allowed_nsfw_tags: list[Literal["UNLIKELY", "UNSURE", "NSFW"]] | None = Field(
        default_factory=lambda: ["UNLIKELY"], description="LAION NSFW tags a row may carry; null: off"
    )
    max_punsafe: float | None = Field(None, ge=0, le=1, description="highest LAION punsafe kept; null: off")
    keep_unrated: bool = Field(False, description="keep rows with no NSFW tag or punsafe value")


class Scoring(Section):
    """Step 7's similarity: captions against a query text per synset, with a text encoder."""

    encoder: Literal["sentence-transformers", "transformers"] = "sentence-transformers"
    model: str = Field("packaged:all-MiniLM-L6-v2", description="local path, cached hub id, or the packaged MiniLM")
    pooling: Literal["mean", "cls"] = Field("mean", description="transformers encoder only")
    max_length: int = Field(128, ge=8, le=4096, description="tokens per caption, transformers encoder only")
    batch_size: int = Field(128, ge=1, le=8192, description="texts per model call")
    query_template: str = Field("{lemma}: {gloss}", description="fields: {name} {lemma} {lemmas} {gloss}")
    cache_dir: str | None = Field(None, description="embedding cache; null: <IMAGENOT_CACHE>/embeddings")
    first_pass_captions: int = Field(
        200, ge=1, le=1_000_000, description="captions per candidate synset scored to rank the classes"
    )
    seed: int = Field(0, description="picks the first-pass captions (by a keyed hash of row ids)")


class Ranking(Section):
    """Step 8: the classes are the best `classes` synsets by mean top-n caption similarity."""

    top_n: int = Field(50, ge=1, le=100_000, description="captions averaged for a synset's score")
    thresholds: dict[str, float] = Field(
        default_factory=lambda: {"packaged:all-MiniLM-L6-v2": 0.5},
        description="per scoring model: the lowest synset score kept (a threshold means something for one encoder only)",
    )
    classes: int = Field(1000, ge=1, le=100_000, description="K, the number of classes")


class Runner(Section):
    kind: Literal["local"] = "local"
    workers: int = Field(1, ge=1, le=64, description="local worker processes")


class Config(Section):
    corpus: Corpus = Corpus()
    tagging: Tagging = Tagging()
    selection: Selection = Selection()
    scoring: Scoring = Scoring()
    ranking: Ranking = Ranking()
    runner: Runner = Runner()

    @model_validator(mode="after")
    def _threshold_for_the_encoder(self) -> Config:
        if self.scoring.model not in self.ranking.thresholds:
            raise ValueError(
                f"ranking.thresholds has no entry for scoring.model {self.scoring.model!r} "
                f"(it has {sorted(self.ranking.thresholds)}); a threshold only means something for one encoder"
            )
        return self

    @property
    def threshold(self) -> float:
        return self.ranking.thresholds[self.scoring.model]


class ConfigError(ValueError):
    """A config file is unreadable or invalid; the message names the file and each bad key."""


def load_config(path: str | Path | None) -> Config:
    """The validated config from a YAML file, or the defaults when `path` is None."""
    if path is None:
        return Config()
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read config: {err}") from err
    try:
        return Config.model_validate(raw)
    except ValidationError as err:
        problems = "\n".join(
            f"  {'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            + (f" (got {e['input']!r})" if e["type"] != "missing" else "")
            for e in err.errors()
        )
        raise ConfigError(f"{path}: invalid config:\n{problems}") from err

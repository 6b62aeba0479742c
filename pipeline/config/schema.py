"""Run configuration: YAML validated into pydantic models before any work starts.

Every section forbids unknown keys, so a typo is an error naming the key, not a silent default.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import types
import typing
from itertools import pairwise
from typing import Annotated, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import FUNCTION_WORDS, SenseDecision
from imagenot.labels.caption_rules import RULES as CAPTION_RULES
from imagenot.labels.label_model.model import LabelModel, load_model, read_model_folder
from imagenot.labels.senses.settings import SenseSettings
from imagenot.labels.web_senses import lexicon_digest
from imagenot.pipeline.config.corpus_presets import PRESET_NAMES, apply_preset
from imagenot.pipeline.config.given_paths import absolute_config_paths
from imagenot.pipeline.config.networks import parse_networks
from imagenot.pipeline.config.yaml_file import parse_yaml, suggestion
from imagenot.pipeline.run.filesystems import UNCOMPRESSED, FileSystems
from imagenot.pipeline.run.layout import RUN_CONFIG
from imagenot.wordnet.classlists import REFERENCE_SETS
from imagenot.wordnet.index import WNID_PATTERN
from imagenot.wordnet.nltk_data import is_noun_offset, is_noun_synset_name
from imagenot.wordnet.queries import validate_template


class Section(BaseModel):
    # strict: a number is a number ("12" and 12.0 are no count), and every float is finite (a NaN
    # floor is never crossed: `fit < nan` is false), in every section and inside lists and mappings
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: object, info: ValidationInfo) -> object:
        """YAML's `true` where a number is wanted is an error (pydantic would read it as 1)."""
        if _boolean_for_number(value, cls.model_fields[info.field_name].annotation):
            raise ValueError("a boolean where a number is wanted (true and false are not 1 and 0)")
        return value


def _alternatives(annotation: object) -> list:
    """A field annotation's alternatives: a union's members, Annotated opened."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [alternative for arg in typing.get_args(annotation) for alternative in _alternatives(arg)]
    if origin is typing.Annotated:
        return _alternatives(typing.get_args(annotation)[0])
    return [annotation]


def _boolean_for_number(value: object, annotation: object) -> bool:
    """Whether `value` holds a boolean where `annotation` wants a number (also in a list or a mapping)."""
    alternatives = _alternatives(annotation)
    if isinstance(value, bool):
        admitted = set()
        for alternative in alternatives:
            literal = typing.get_origin(alternative) is typing.Literal
            admitted |= {type(v) for v in typing.get_args(alternative)} if literal else {alternative}
        return bool not in admitted and bool(admitted & {int, float})
    for alternative in alternatives:
        origin, args = typing.get_origin(alternative), typing.get_args(alternative)
        if isinstance(value, list) and origin is list and args:
            return any(_boolean_for_number(v, args[0]) for v in value)
        if isinstance(value, dict) and origin is dict and len(args) == 2:
            return any(_boolean_for_number(v, args[1]) for v in value.values())
    return False


def _known_template_fields(template: str) -> str:
    validate_template(template)
    return template


# A synset query template, checked when the config loads rather than when its stage first uses it.
QueryTemplate = Annotated[str, AfterValidator(_known_template_fields)]


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

    @model_validator(mode="after")
    def _url_is_not_the_caption(self) -> Columns:
        if self.url == self.caption:
            raise ValueError(
                f"corpus.columns.url and corpus.columns.caption both name column {self.url!r}; "
                "map each to its own column"
            )
        return self

    def source_columns(self) -> dict[str, str]:
        """Canonical name -> corpus column, for the columns this mapping reads."""
        return {name: column for name, column in self.model_dump().items() if column is not None}


class Synth(Section):
    """A synthetic LAION-style corpus generated into the run directory (`imagenot synth`)."""

    rows: int = Field(ge=1, le=100_000_000)
    seed: int = Field(0, ge=0, lt=2**32)
    url_base: str = Field("http://127.0.0.1:8000/img", description="image URLs start here")
    shard_rows: int = Field(100_000, ge=1)
    captions: Literal["realistic", "compact"] = Field(
        "realistic",
        description="realistic: captions as long and naming as many noun synsets as real LAION captions, for "
        "benchmarks and plans; compact: the shorter captions of earlier versions, byte for byte (small builds "
        "that need full classes from few rows)",
    )


class Corpus(Section):
    paths: list[str] = Field(
        default_factory=list,
        description="paths, globs or URLs of parquet, csv, tsv, json or jsonl files (text ones also .gz)",
    )
    synth: Synth | None = Field(None, description="generate the corpus instead of reading paths")
    preset: Literal[PRESET_NAMES] | None = Field(  # type: ignore[valid-type]
        None, description="a published corpus's column map and row NSFW settings; keys set here override it"
    )
    format: Literal["parquet", "csv", "tsv", "json", "jsonl"] | None = Field(
        None,
        description="the files' format; null: from each file's extension "
        "(.parquet .csv .tsv .json .jsonl, text ones also .gz)",
    )
    columns: Columns = Columns()
    column_names: list[str] | None = Field(
        None,
        description="csv/tsv files without a header: their columns in order (a first line spelling them is a header)",
    )
    strict: bool = Field(False, description="a malformed line of a text file is an error naming it, not a counted drop")
    work_unit_rows: int = Field(
        1_000_000,
        ge=1_000,
        le=100_000_000,
        description="the most rows of one work unit (parquet row groups, text byte ranges)",
    )

    @model_validator(mode="after")
    def _one_source(self) -> Corpus:
        if self.synth is not None and self.paths:
            raise ValueError("give corpus.paths or corpus.synth, not both")
        return self


class Tagging(Section):
    batch_rows: int = Field(65_536, ge=1_000, le=1_000_000, description="rows per Arrow batch")
    ignore_forms: list[str] = Field(  # normalised surface forms; multi-word lemmas holding them still match
        default_factory=lambda: list(FUNCTION_WORDS),
        description="words never matched as lemmas (function words that are also nouns)",
    )


# Function words of other languages that are also WordNet noun forms ("de" -> Delaware, "en" ->
# the printer's unit, "te" -> the note ti); words that are English nouns too ("die", "van") are not.
FOREIGN_FUNCTION_WORDS = "de del des du en el la le les los las te dos da di il et und der das het y".split()


# The picturable step's roots: things, and the symbols and cards people photograph (logo, business
# card, postcard), which WordNet files under communication (filters/picturable.py).
log = logging.getLogger(__name__)


def _label_model_weights(label_model: str) -> LabelModel:
    """The label model a config names: the packaged one, or a folder (each read once a process)."""
    return load_model() if label_model == "packaged" else read_model_folder(label_model)


@functools.cache
def _warn_other_lexicon(label_model: str, trained: str) -> None:
    """Once a process: the label model read web senses from another lexicon than the packaged one."""
    log.warning(
        "scoring.label_model %r was trained with another web-sense lexicon (digest %s, now %s): retrain it "
        "(python -m imagenot.labels.label_model.train) for its web-sense margins to mean what they did",
        label_model,
        trained,
        lexicon_digest(),
    )


WEB_SENSE_METHODS = ("sentence", "trained")  # the sense methods that score web senses: they read glosses
PICTURABLE_ROOTS = ("physical_entity.n.01", "symbol.n.01", "card.n.02", "card.n.03")


class CaptionRules(Section):
    """Which pairs step 6 keeps the caption rules drop: the caption's word, where it matched, does
    not name the synset (labels/caption_rules.py)."""

    rules: list[Literal[CAPTION_RULES]] = Field(  # []: all off
        default_factory=lambda: list(CAPTION_RULES),
        description="caption rules: a step-6 caption is dropped where one says its word does not name the synset",
    )
    foreign_words: list[str] = Field(
        default_factory=lambda: list(FOREIGN_FUNCTION_WORDS), description="the foreign_word rule's words"
    )
    given_names: str = Field(
        "/usr/share/dict/propernames.gz",
        description="given names, one a line (Debian's miscfiles): name, title and none_of_these rules",
    )
    none_of_these_threshold: float = Field(  # labels/none_of_these.py
        0.8,
        gt=0,
        le=1,
        description="none_of_these rule: the fitted probability that the word names none of its noun senses at "
        "which a caption is dropped",
    )


class Selection(Section):
    """Steps 2-6 of the method: which synsets may become classes, which captions they keep."""

    reference: str = Field(  # imagenet1k, imagenet21k or a class-list file
        "imagenet1k", description="the class set the classes must differ from (step 2)"
    )
    overlap: Literal["paper", "strict", "within"] = Field(
        "paper",
        description="paper: drop reference synsets and shared lemmas; strict: also their ancestors and "
        "descendants; within: keep only reference synsets (LAIONet)",
    )
    min_captions: int = Field(1000, ge=1, le=100_000_000, description="usable captions a synset needs (step 3)")
    nsfw_synset_threshold: float | None = Field(
        0.5,
        gt=0,
        le=1,
        description="alt-profanity-check score over lemmas and gloss above which a synset is dropped "
        "(step 5; null: off)",
    )
    offensive_synsets: bool = Field(  # false: the card warns
        True,
        description="drop synsets WordNet marks offensive: usage domain ethnic slur, disparagement or obscenity, "
        "or a gloss calling them an offensive term (before step 2)",
    )
    person_synsets: Literal["identity", "all", "keep"] = Field(  # all: every noun.person synset; keep: the card warns
        "identity",
        description="identity: drop person synsets that name people by race, ethnicity, nationality, religion, "
        "sexual orientation, sex or gender, disability; all: every person synset; keep: none (before step 2)",
    )
    instance_synsets: bool = Field(
        False,
        description="false: drop WordNet instance synsets, named individuals (people, places, works: "
        "armstrong.n.02 Louis Armstrong) that are no class of things; true: keep them (before step 2)",
    )
    allowed_nsfw_tags: list[Literal["UNLIKELY", "UNSURE", "NSFW"]] | None = Field(
        default_factory=lambda: ["UNLIKELY"], description="LAION NSFW tags a caption row may carry (null: off)"
    )
    max_punsafe: float | None = Field(None, ge=0, le=1, description="highest LAION punsafe a row may have (null: off)")
    keep_unrated: bool = Field(False, description="keep rows with no NSFW tag or punsafe value")
    picturable_roots: list[str] | None = Field(
        default_factory=lambda: list(PICTURABLE_ROOTS), description="a candidate descends from one of these; null: off"
    )
    picturable_excluded_lexnames: list[str] = Field(
        default_factory=lambda: ["noun.location"], description="lexicographer files never picturable (places)"
    )

    @field_validator("picturable_roots")
    @classmethod
    def _synset_names(cls, roots: list[str] | None) -> list[str] | None:
        for name in roots or ():  # in the config's order, so the error names the first wrong one
            if name not in PICTURABLE_ROOTS and not is_noun_synset_name(name):  # the defaults are known good
                raise ValueError(
                    f"selection.picturable_roots holds {name!r}: not a WordNet 3.0 noun synset (lemma.n.NN, like "
                    "physical_entity.n.01)"
                )
        return roots

    caption_rules: CaptionRules = Field(
        default_factory=CaptionRules, description="drop kept pairs whose word is not the synset"
    )

    def row_nsfw_columns(self) -> dict[str, str]:
        """The enabled row NSFW checks (setting -> the corpus column, by canonical name, it reads)."""
        needs = {"allowed_nsfw_tags": "nsfw", "max_punsafe": "punsafe"}
        return {setting: column for setting, column in needs.items() if getattr(self, setting) is not None}


class Scoring(Section):
    """Step 7's similarity: captions against a query text per synset, with a text encoder."""

    encoder: Literal["sentence-transformers", "transformers"] = Field(
        "sentence-transformers", description="text encoder library (the paper used RoBERTa)"
    )
    model: str = Field(  # a local path, a cached hub id, or the packaged MiniLM
        "packaged:all-MiniLM-L6-v2", description="text encoder model"
    )
    runtime: Literal["torch", "onnx"] = Field(  # onnx: a local export of the same weights
        "torch",
        description="what runs the encoder: torch, or ONNX Runtime on an export of the same weights; each gives a "
        "caption the same bits whatever its batch, the two differ in the last bits (cosine >= 0.999)",
    )
    pooling: Literal["mean", "cls"] = Field("mean", description="transformers encoder only")
    max_length: int = Field(
        128, ge=8, le=4096, description="tokens per caption: the transformers encoder, and the context sense method"
    )
    batch_size: int = Field(128, ge=1, le=8192, description="texts per model call")
    query_template: QueryTemplate = Field(  # fields: {name} {lemma} {lemmas} {gloss} {hypernym} {examples}
        "{lemma}: {gloss}", description="the text each caption is compared with, per synset (step 7)"
    )
    # sentence: trained is better on every dev set, by a little on the real captions (benchmarks/README.md, issue
    # 44), and costs the score stage a second encoder pass a caption; it needs the encoder its head was trained over.
    # context's sense vectors are LMMS-style with hypernym back-off, built by `imagenot prepare-models`
    sense_method: Literal["sentence", "context", "both", "trained"] = Field(
        "sentence",
        description="sense contrast: context, the matched word's contextual embedding against sense vectors from "
        "SemCor's training documents; sentence, the caption's embedding against each sense's query texts; both, "
        "the two added; trained, a head trained on SemCor's training documents reads the word where it stands "
        "against each sense's gloss (labels/sense_model)",
    )
    sense_layers: int = Field(
        1,
        ge=1,
        le=48,
        description="the encoder's last hidden layers summed for the word's contextual embedding (context method)",
    )
    # the best on benchmarks/data/sense_dev (benchmarks/README.md); fields as query_template's
    sense_templates: list[QueryTemplate] = Field(
        default_factory=lambda: [
            "{lemma}: {gloss}",
            "{lemmas}, a kind of {hypernym}: {gloss}",
            "{lemma}, a kind of {hypernym} ({category}): {hyponyms}",
        ],
        min_length=1,
        max_length=8,
        description="the query texts of every noun sense of a caption's word (sentence method)",
    )
    sense_pooling: Literal["max", "mean"] = Field(
        "mean", description="how a sense's query similarities are pooled (sentence method)"
    )
    # chosen on the caption sense dev set with SemCor's dev documents beside it (benchmarks/README.md)
    sense_sentence_weight: float = Field(
        20.0,
        ge=0,
        le=1000,
        description="trained method: the weight of the sentence method's similarity (the caption's embedding "
        "against each sense's query texts) added to the head's log-probability of each sense",
    )
    sense_prior: float = Field(
        0.03,
        ge=0,
        le=1,
        description="weight of log P(sense | word) from WordNet's tagged counts in a sense's score",
    )
    sense_margin: float | None = Field(  # a caption that loses is dropped as other_sense
        0.0,
        ge=-2,
        le=2,
        description="a caption stays in its class only when the class's sense beats every other sense of its word "
        "by this much (null: off)",
    )
    # per sense method, as a fit's scale is the method's: the trained head's logit floor chosen out of fold on the
    # real dev set (benchmarks/quality_none_of_these_fit.py); the other methods have none
    none_of_these_fit: dict[Literal["sentence", "context", "both", "trained"], float] = Field(
        default_factory=lambda: {"trained": 2.9},
        description="with sense contrast on, a caption whose word fits none of its noun senses where it stands (the "
        "best sense's sense_fit under this floor, for the sense method in use) is dropped as none_of_these_fit; a "
        "method not listed: off",
    )
    web_senses: bool = Field(
        True,
        description="sense contrast (sentence and trained methods): also score the word's senses WordNet 3.0 lacks "
        "(labels/web_senses.tsv: desktop wallpaper, stock photo, the brands a word names...)",
    )
    web_sense_margin: float | None = Field(  # a caption a web sense wins is dropped as web_sense
        0.0,
        ge=-2,
        le=2,
        allow_inf_nan=False,
        description="with web senses scored, a caption stays in its class only when the class's sense beats every "
        "web sense of its word by this much (null: scored, never dropped for it)",
    )
    label_model: str | None = Field(  # labels/label_model: trained on judged captions (benchmarks/README.md)
        "packaged",
        description="the label model, which reads each scored caption's similarity, sense margins, none-of-these "
        "score, place and synset and says how likely its picture shows its class: packaged (labels/label_model), "
        "a folder with weights.npz and card.json (its train.py writes them), or null: off",
    )
    label_floor: float = Field(  # chosen out of fold, folds by class (benchmarks/quality_labels.py)
        0.5,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="with the label model on, a caption whose probability is under this floor is dropped as "
        "label_model (named by what the model says its word is there: modifier, name, not shown...)",
    )
    cache_dir: str | None = Field(None, description="embedding cache; null: <IMAGENOT_CACHE>/embeddings")
    first_pass_captions: int = Field(
        200, ge=1, le=1_000_000, description="captions per candidate synset scored to rank the synsets"
    )
    seed: int = Field(0, ge=-(2**63), lt=2**63, description="picks those first-pass captions (keyed hash of row ids)")
    first_phase: Literal["off", "static", "priority"] = Field(  # in the rank stage; static: the best exact_per_class
        "off",
        description="off: the encoder scores every caption of the classes; static: a static model distilled from it "
        "picks each class's best captions for the encoder; priority: the encoder scores each class's captions in the "
        "sample's order until its list is settled (same list as off)",
    )
    first_phase_model: str | None = Field(
        None, description="a model2vec model folder; null: distilled from scoring.model"
    )
    exact_per_class: int | None = Field(
        None,
        ge=1,
        le=100_000_000,
        description="captions per class the encoder scores after the first phase (priority: in the first round) "
        "(null: 2 x (N + reserve))",
    )
    exact_cap: int | None = Field(
        None,
        ge=1,
        le=100_000_000,
        description="priority: the most captions per class the encoder scores (null: no cap, every list exact)",
    )

    @model_validator(mode="after")
    def _trained_head_s_encoder(self) -> Scoring:
        from imagenot.labels.sense_model.head import head_scoring

        if self.sense_method == "trained":
            trained = head_scoring()
            given = {name: getattr(self, name) for name in trained}
            if given != trained:
                settings = ", ".join(f"scoring.{name}: {value}" for name, value in trained.items())
                raise ValueError(
                    f"scoring.sense_method trained reads words and glosses with the encoder its head was trained "
                    f"over ({settings}); with another encoder set scoring.sense_method: sentence (or context)"
                )
        return self

    @model_validator(mode="before")
    @classmethod
    def _label_model_on_where_it_reads(cls, data: object) -> object:
        """The label model is on by default only where a config reads pairs as it was trained on: one
        that reads them otherwise (another encoder or query template, the trained or context method,
        no sense contrast or web senses) has it off, as `label_model: null` says; a config that names
        a model is held to it (below)."""
        if not isinstance(data, dict) or "label_model" in data:
            return data
        try:
            without = cls.model_validate({**data, "label_model": None})
        except ValidationError:
            return data  # the validation proper names what is wrong
        default = cls.model_fields["label_model"].default
        return data if without.label_model_misreads(default) is None else {**data, "label_model": None}

    @model_validator(mode="after")
    def _label_model_reads_as_trained(self) -> Scoring:
        if self.label_model is None:
            return self
        if wrong := self.label_model_misreads(self.label_model):
            raise ValueError(wrong)
        trained_lexicon = self.label_model_weights().card["reads_with"]["web_senses"]
        if trained_lexicon != lexicon_digest():  # an edited lexicon: the model still reads, a little off
            _warn_other_lexicon(self.label_model, trained_lexicon)
        return self

    def label_model_misreads(self, label_model: str) -> str | None:
        """Why the label model `label_model` cannot read this config's pairs (None: it can)."""
        if self.sense_margin is None:
            return f"scoring.label_model {label_model!r} reads sense margins: it needs scoring.sense_margin (or null)"
        reads = dict(_label_model_weights(label_model).card["reads_with"])
        reads.pop("web_senses")
        given = {name: getattr(self, name) for name in reads}
        if given != reads:
            wrong = ", ".join(f"scoring.{k}: {reads[k]} (not {given[k]})" for k in reads if given[k] != reads[k])
            return (
                f"scoring.label_model {label_model!r} was trained on pairs read with other settings: {wrong}; "
                "use them, train a model for these (labels/label_model/train.py) or set scoring.label_model: null"
            )
        if not self.scores_web_senses():
            return (
                f"scoring.label_model {label_model!r} reads the web senses' margins: it needs "
                "scoring.web_senses (or label_model: null)"
            )
        return None

    def label_model_weights(self) -> LabelModel:
        """The label model `label_model` names (read once per process)."""
        return _label_model_weights(self.label_model)

    def sense_decision(self) -> SenseDecision:
        """The sense decision's floors: the margin, and the fit floor of the method in use (both
        only with sense contrast on, where the score stage records margins and fits)."""
        if self.sense_margin is None:
            return SenseDecision()
        web = self.web_sense_margin if self.scores_web_senses() else None
        label = None if self.label_model is None else self.label_floor
        return SenseDecision(self.sense_margin, self.none_of_these_fit.get(self.sense_method), web, label)

    def scores_web_senses(self) -> bool:
        """Whether the score stage scores web senses: asked for, with sense contrast, by a method that
        reads glosses (the context method's sense vectors come from SemCor, which has none)."""
        return self.web_senses and self.sense_margin is not None and self.sense_method in WEB_SENSE_METHODS

    def sense_settings(self) -> SenseSettings:
        """What the sense scorers (`imagenot.labels.senses`) read of this section."""
        return SenseSettings(
            tuple(self.sense_templates), self.sense_pooling, self.sense_prior, self.sense_sentence_weight
        )


class Ranking(Section):
    """Step 8: the classes are the best `classes` synsets by mean top-n caption similarity."""

    top_n: int = Field(50, ge=1, le=100_000, description="captions averaged for a synset's score (step 7)")
    min_captions: int | None = Field(  # N: sampling.images_per_class
        None, ge=1, le=100_000_000, description="single-synset captions a class needs (null: N)"
    )
    thresholds: dict[str, float] = Field(  # per scoring model: a threshold means something for one encoder only
        # MiniLM: 0.45 keeps 1.7x the right-sense pairs 0.5 did in the build's judged labels, as right (issue 44)
        default_factory=lambda: {"packaged:all-MiniLM-L6-v2": 0.45},
        description="lowest synset score kept, for this encoder (the paper's 0.82 is RoBERTa's)",
    )
    classes: int = Field(1000, ge=1, le=100_000, description="K, the number of classes (step 8)")
    # pipeline/rank/pass_share.py; `audit classes` flags under it. 0.5: chosen out of fold with the label model's
    # floor, folds by class, on the build's judged labels (benchmarks/quality_labels.py; 0.7 before issue 51)
    min_pass_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="share of a synset's captions that must pass the caption rules and the sense decision for it to "
        "be a class (0: off)",
    )
    vetoed: list[str] = Field(
        default_factory=list,
        description="wnids people dropped from the class list (`imagenot review classes apply` adds them): "
        "never classes, the next candidates take their places",
    )

    @field_validator("vetoed")
    @classmethod
    def _wnids(cls, vetoed: list[str]) -> list[str]:
        for wnid in vetoed:
            if not ((match := WNID_PATTERN.match(wnid)) and match.group(1) == "n"):
                raise ValueError(f"ranking.vetoed holds {wnid!r}: a WordNet noun id is n and 8 digits, like n02084071")
            if not is_noun_offset(int(match.group(2))):
                raise ValueError(f"ranking.vetoed holds {wnid!r}: no WordNet 3.0 noun synset has that id")
        return sorted(set(vetoed))

    @field_validator("thresholds")
    @classmethod
    def _cosines(cls, thresholds: dict[str, float]) -> dict[str, float]:
        for model, value in thresholds.items():
            if not -1 <= value <= 1:
                raise ValueError(f"ranking.thresholds[{model!r}] is {value}: a cosine similarity lies in [-1, 1]")
        return thresholds


Strategy = Literal["top", "threshold", "matched"]


class Sampling(Section):
    """Step 8's images: per class, N captions by one of ImageNetV2's three strategies.

    top: highest gloss similarity (TopImages); threshold: uniform among captions at or above
    `threshold` (Threshold0.7); matched: the similarity distribution of a reference, given as
    quantiles or another run's scores (MatchedFrequency).
    """

    images_per_class: int = Field(1000, ge=1, le=1_000_000, description="N, images per class (step 8)")
    strategy: Strategy = Field(
        "top", description="how a class's images are picked: top (TopImages), threshold or matched (ImageNetV2)"
    )
    threshold: float | None = Field(None, ge=-1, le=1, description="lowest gloss similarity sampled from")
    # Strategy matched's reference, one of: quantiles at equally spaced probabilities 0..1, or another
    # run's sample/dataset folder or a parquet with gloss_similarity
    reference_quantiles: list[float] | None = Field(None, description="the similarity distribution matched")
    reference_scores: str | None = Field(None, description="the similarity distribution matched")
    reserve_factor: float = Field(
        0.3,
        ge=0,
        le=100,
        description="reserve = ceil(factor * N) extra candidates per class, to replace images that fail to download",
    )
    test_per_class: int = Field(100, ge=0, le=1_000_000, description="images per class in the test split")
    seed: int = Field(  # a keyed hash of row ids
        0, ge=-(2**63), lt=2**63, description="fixes the random orders and the train/test split"
    )
    shard_rows: int = Field(10_000, ge=1, le=10_000_000, description="rows per output parquet shard")

    @model_validator(mode="after")
    def _strategy_settings(self) -> Sampling:
        if (self.strategy == "threshold") != (self.threshold is not None):
            raise ValueError(
                "sampling.threshold is required by strategy 'threshold'"
                if self.threshold is None
                else f"sampling.threshold is only used by strategy 'threshold' (strategy is {self.strategy!r})"
            )
        references = [key for key in ("reference_quantiles", "reference_scores") if getattr(self, key) is not None]
        if self.strategy == "matched" and len(references) != 1:
            raise ValueError(
                "strategy 'matched' needs exactly one of sampling.reference_quantiles, sampling.reference_scores"
            )
        if self.strategy != "matched" and references:
            raise ValueError(
                f"sampling.{references[0]} is only used by strategy 'matched' (strategy is {self.strategy!r})"
            )
        quantiles = self.reference_quantiles
        if quantiles is not None and (len(quantiles) < 2 or any(b < a for a, b in pairwise(quantiles))):
            raise ValueError(f"sampling.reference_quantiles must hold >= 2 non-decreasing values, got {quantiles}")
        if self.test_per_class > self.images_per_class:
            raise ValueError(
                f"sampling.test_per_class ({self.test_per_class}) exceeds "
                f"sampling.images_per_class ({self.images_per_class})"
            )
        return self

    @property
    def reserve(self) -> int:
        """Extra candidates kept per class to replace images that fail to download."""
        return math.ceil(round(self.reserve_factor * self.images_per_class, 6))  # 0.3 * 1000 is 300.00000000000006


class Download(Section):
    """How images are fetched with img2dataset, guarded, and backfilled from the reserve."""

    enabled: bool = Field(  # the stage fetches from the open web: it runs only when set
        False, description="whether the images were fetched"
    )
    threads: int = Field(16, ge=1, le=1024, description="concurrent fetches per shard (img2dataset thread_count)")
    timeout_s: float = Field(10, gt=0, le=600, description="seconds a connection or read may stall")
    retries: int = Field(0, ge=0, le=10, description="extra attempts per URL inside a round")
    max_rounds: int = Field(
        5, ge=1, le=100, description="fetch rounds: the dataset rows, then backfills from the reserve"
    )
    max_response_bytes: int = Field(20_000_000, ge=1_000, description="largest response body read")
    # Pillow, which reads the header, refuses more than twice its MAX_IMAGE_PIXELS (89,478,485).
    max_image_pixels: int = Field(50_000_000, ge=1, le=178_956_970, description="largest width x height decoded")
    image_size: int = Field(
        256, ge=8, le=8192, description="pixels images are resized to, as resize_mode says (img2dataset image_size)"
    )
    resize_mode: Literal["no", "keep_ratio", "center_crop", "border", "keep_ratio_largest"] = Field(
        "keep_ratio", description="how images are resized to image_size (img2dataset resize_mode)"
    )
    encode_format: Literal["jpg", "png", "webp"] = Field("jpg", description="the format images are stored in")
    encode_quality: int = Field(95, ge=0, le=100, description="jpg/webp quality; png compression 0-9")
    shard_rows: int = Field(1_000, ge=1, le=1_000_000, description="URLs per img2dataset shard (tar)")
    user_agent_token: str = Field("imagenot", description="names the crawler in the User-Agent, so sites can opt out")
    demo_server_port: int | None = Field(
        None,
        ge=1024,
        le=65535,
        description="demo only: serve a synthetic corpus's /img/<n>.jpg URLs on 127.0.0.1:<port> while fetching",
    )
    disallowed_header_directives: list[str] = Field(  # []: X-Robots-Tag not read
        default_factory=lambda: ["noai", "noimageai", "noindex", "noimageindex"],
        description="X-Robots-Tag directives that put a site's images off limits",
    )
    tdmrep: bool = Field(True, description="honour TDMRep: a host's /.well-known/tdmrep.json, tdm-reservation headers")
    ai_preferences: bool = Field(True, description="honour IETF AI Preferences: Content-Usage in robots.txt, headers")
    ai_preferences_categories: list[str] = Field(
        default_factory=lambda: ["train-ai", "bots"],
        min_length=1,
        description="AI Preferences categories building the dataset falls under, most specific first: the first one "
        "a site states decides (train-ai: AI training; bots: automated processing, the earlier drafts' root)",
    )
    content_signal: bool = Field(True, description="honour Content-Signal lines in robots.txt (ai-train=no)")
    fetch_deadline_s: float | None = Field(
        None, gt=0, description="seconds a whole fetch may take, connection and redirects included; null: 3 x timeout_s"
    )
    robots_txt: bool = Field(
        True, description="read each host's robots.txt (RFC 9309) and never fetch what it disallows"
    )
    robots_max_bytes: int = Field(
        524_288, ge=512_000, le=10_000_000, description="robots.txt bytes parsed (RFC 9309: at least 500 KiB)"
    )
    per_host_connections: int = Field(
        4, ge=1, le=1024, description="concurrent requests to one host, per worker process"
    )
    per_host_rate: float = Field(
        20, gt=0, le=100_000, description="requests per second to one host, per worker process"
    )
    backoff_base_s: float = Field(
        1, gt=0, le=3600, description="first wait after a 429/503 without Retry-After; doubles in a row"
    )
    max_backoff_s: float = Field(
        120, gt=0, le=86_400, description="longest wait a host may ask for; longer gives the host up for the round"
    )
    host_max_failures: int = Field(
        10, ge=1, le=1_000_000, description="failures in a row (429, 5xx, no answer) that give a host up for the round"
    )
    allowed_networks: list[str] = Field(
        default_factory=list,
        description="CIDR networks the crawler may reach although not public, e.g. a test's 127.0.0.2/32",
    )
    blocklists: list[str] = Field(
        default_factory=list,
        description="files (local or gs://) of `url|domain|sha256|md5 VALUE` lines: rows and images never kept",
    )

    @model_validator(mode="after")
    def _deadline_and_networks(self) -> Download:
        if self.fetch_deadline_s is not None and not self.timeout_s <= self.fetch_deadline_s <= 5 * self.timeout_s:
            raise ValueError(
                f"download.fetch_deadline_s ({self.fetch_deadline_s}) must lie between timeout_s and "
                f"5 x timeout_s ({5 * self.timeout_s:g})"
            )
        parse_networks(self.allowed_networks)
        return self

    def fetch_deadline(self) -> float:
        """Seconds a whole fetch may take."""
        return self.fetch_deadline_s if self.fetch_deadline_s is not None else 3 * self.timeout_s

    def output_settings(self) -> dict:
        """The settings that shape the stored images and the rounds; the stage is redone when
        they change. Throughput settings (threads, timeout, retries, max_rounds) are not among
        them: changing those resumes the finished work."""
        speed = {"enabled", "threads", "timeout_s", "retries", "max_rounds", "demo_server_port", "fetch_deadline_s"}
        speed |= {"per_host_connections", "per_host_rate", "backoff_base_s", "max_backoff_s", "host_max_failures"}
        return {k: v for k, v in self.model_dump().items() if k not in speed}


class Datasheet(Section):
    """What the dataset card states that no stage can know (Datasheets for Datasets, Gebru et al.)."""

    corpus_provenance: str | None = Field(
        None, description="where the corpus came from, e.g. 'Re-LAION-5B research-safe (LAION, August 2024)'"
    )
    maintainer_contact: str | None = Field(
        None, description="who takes takedown requests and questions, e.g. an e-mail address"
    )
    motivation: str | None = Field(None, description="why the dataset was built and by whom")
    intended_uses: str | None = Field(None, description="what it is for, beyond being a contrast to ImageNet")
    distribution: str | None = Field(None, description="how and under what terms it is shared")


class Dataflow(Section):
    """Google Cloud Dataflow: where the job runs and on what workers (see the README)."""

    project: str
    region: str
    temp_location: str = Field(pattern=r"^gs://", description="gs:// folder for Beam's temporary files")
    staging_location: str | None = Field(None, pattern=r"^gs://")
    machine_type: str = "n1-standard-4"
    max_workers: int = Field(100, ge=1, le=4000)
    worker_image: str = Field(description="the worker image built from the Dockerfile, pushed to a registry")
    scoring_accelerator: str | None = Field(
        None, description='GPU for the score and rank stages, e.g. "type:nvidia-tesla-t4;count:1;install-nvidia-driver"'
    )
    service_account: str | None = None


class Portable(Section):
    """A Beam portable job server the user runs (Flink, Spark or Prism), and how it starts the
    Python workers (see the README's "Portable runner")."""

    job_endpoint: str = Field(pattern=r"^[^\s:/]+:\d+$", description="the job server's HOST:PORT")
    environment_type: Literal["EXTERNAL", "PROCESS", "LOOPBACK", "DOCKER"] = Field(
        "DOCKER", description="EXTERNAL: a worker pool at environment_config; PROCESS: a boot command; DOCKER: an image"
    )
    environment_config: str | None = Field(
        None,
        description="EXTERNAL: the worker pool's HOST:PORT; PROCESS: JSON with the boot command; DOCKER: the image",
    )

    @model_validator(mode="after")
    def _config_where_needed(self) -> Portable:
        if self.environment_type in ("EXTERNAL", "PROCESS") and not self.environment_config:
            raise ValueError(
                f"runner.portable.environment_config is required with environment_type {self.environment_type}"
            )
        return self


class ImageAudit(Section):
    """The image audits: CLIP embeddings, duplicates and leakage, image-caption agreement."""

    clip_model: str = Field(
        "ViT-B-32", description="open_clip model name, or local-dir:<folder> with config and weights"
    )
    clip_model_config: str | None = Field(
        None, description="an open_clip model-config JSON to register (its file stem is the name)"
    )
    clip_weights: str | None = Field(
        None, description="CLIP checkpoint file; null: RANDOM weights, for tests and demos only"
    )
    seed: int = Field(0, description="seeds the random weights when clip_weights is null")
    batch_size: int = Field(64, ge=1, le=4096, description="images per model call")
    class_query_template: QueryTemplate = Field(
        "a photo of a {lemma}.", description="fields: {name} {lemma} {lemmas} {gloss}"
    )
    near_duplicate_threshold: float = Field(
        0.95, gt=0, le=1, description="lowest image-image cosine of a near duplicate"
    )
    neighbours: int = Field(10, ge=1, le=1000, description="nearest neighbours searched per image")
    exact_search_max: int = Field(
        20_000, ge=1, description="above this many vectors, search an IVF index instead of exhaustively"
    )
    ivf_probes: int = Field(16, ge=1, le=4096, description="inverted lists an approximate search visits")
    ann_rerank: int = Field(
        4, ge=1, le=100, description="approximate search: candidates per neighbour re-ranked by exact cosine"
    )
    reference_embeddings: str | None = Field(
        None,
        description=".npy (n, d) or parquet with `embedding` (and optional `id`, `label`) of a reference set, "
        "e.g. ImageNet val",
    )
    min_image_class_similarity: float | None = Field(
        None, ge=-1, le=1, description="image-to-class-query filter; null: off"
    )
    min_image_caption_similarity: float | None = Field(
        None, ge=-1, le=1, description="image-to-caption filter; null: off"
    )
    thumbnails: int = Field(50, ge=0, le=10_000, description="duplicate pairs shown with thumbnails in the report")
    drop_kinds: list[Literal["within_class", "cross_class", "train_test", "reference"]] = Field(
        default_factory=lambda: ["within_class", "cross_class", "train_test", "reference"],
        description="duplicate pairs `audit duplicates --drop` removes: each group keeps its first image; "
        "a reference hit goes",
    )
    drop_passes: int = Field(3, ge=1, le=50, description="audit, drop and backfill passes one `--drop` runs at most")

    @property
    def random_weights(self) -> bool:
        return self.clip_weights is None and not self.clip_model.startswith("local-dir:")


class Export(Section):
    """The export stage's `RUN/dataset/`: the final images as webdataset tars with parquet metadata."""

    formats: list[Literal["webdataset", "imagefolder", "hf-parquet"]] = Field(
        ["webdataset"],
        description="webdataset: train-/test-NNNNN.tar (always written); imagefolder: also train/<wnid>/<key>.<ext>; "
        "hf-parquet: also data/train-NNNNN.parquet with an Image and a ClassLabel column, the Hub's layout",
    )
    samples_per_shard: int = Field(5_000, ge=1, le=1_000_000, description="samples per train-/test-NNNNN.tar")

    @model_validator(mode="after")
    def _webdataset_always(self) -> Export:
        if "webdataset" not in self.formats:
            raise ValueError(
                "export.formats must include 'webdataset': the train/test tars are always written (the metadata's "
                "`shard` column and timm's _info.json name them); list imagefolder or hf-parquet beside it"
            )
        return self


class Report(Section):
    """The HTML report's picture of the dataset."""

    thumbnails_per_class: int = Field(
        6, ge=0, le=100, description="images shown per class (its best by sampling order)"
    )
    thumbnail_pixels: int = Field(112, ge=16, le=512, description="a thumbnail's longer side")


class Review(Section):
    """Human review of the labels (`imagenot review`): what raters see and how answers become figures."""

    margin: float = Field(
        0.05, gt=0, lt=0.5, description="worst-case Clopper-Pearson half-width a class's sample is sized for"
    )
    confidence: float = Field(
        0.95, gt=0, lt=1, description="confidence of that interval, and of the card's precision intervals"
    )
    raters: int = Field(3, ge=1, le=50, description="answers wanted per image, each from another rater")
    class_raters: int = Field(
        2, ge=1, le=50, description="answers wanted per candidate class on the class review's pages"
    )
    unsure_classes_again: bool = Field(
        True,
        description="a candidate class with only unsure answers is offered to more raters (each once) until one "
        "keeps or drops it; false: its class_raters answers close it, undecided",
    )
    extra_candidates: int = Field(
        0,
        ge=0,
        le=100_000,
        description="the class review also offers this many candidates next in rank order after the classes, "
        "so that the ones `review classes apply` promotes in place of vetoed classes were reviewed too",
    )
    seed: int = Field(0, ge=-(2**63), lt=2**63, description="picks each class's sample (a keyed hash of row ids)")
    page_size: int = Field(24, ge=1, le=200, description="images on one class page")
    examples: int = Field(
        4, ge=1, le=24, description="example images of the given and of the suggested class on a flagged page"
    )
    show_captions: bool = Field(False, description="show each image's caption to raters (captions bias the answer)")
    class_seconds_per_image: float = Field(
        2.5, gt=0, description="planned pace on class pages, for the plan's rater-minutes"
    )
    flagged_seconds_per_image: float = Field(15, gt=0, description="planned pace on flagged pages")
    min_selection: float = Field(0.5, ge=0, le=1, description="an image is kept when yes / (yes + no) reaches this")
    min_decided_images: int = Field(
        30,
        ge=1,
        description="the card states an overall label precision once this many sampled images have every answer "
        "wanted; below it the figure is withheld, with the reason",
    )
    max_body_bytes: int = Field(
        65_536, ge=1_024, le=10_000_000, description="largest request body the review server reads"
    )


class Runner(Section):
    kind: Literal["local", "dataflow", "portable"] = "local"
    workers: int = Field(1, ge=1, le=64, description="local worker processes")
    torch_threads: int = Field(
        1,
        ge=1,
        le=256,
        description="torch threads per worker process (text and CLIP encoders). With 1, an embedding has the same "
        "bits whatever shares its batch and on any machine; more threads can move its last bit. "
        "Workers give parallelism",
    )
    dataflow: Dataflow | None = None
    portable: Portable | None = None
    lock_stale_after_s: float = Field(
        7 * 24 * 3600,
        gt=0,
        description="a run directory's lock older than this counts as stale: --break-lock may remove it",
    )

    @model_validator(mode="after")
    def _dataflow_settings(self) -> Runner:
        if (self.kind == "dataflow") != (self.dataflow is not None):
            raise ValueError("runner.dataflow is required with kind 'dataflow', and only then")
        if (self.kind == "portable") != (self.portable is not None):
            raise ValueError("runner.portable is required with kind 'portable', and only then")
        return self


class Config(Section):
    corpus: Corpus = Corpus()
    tagging: Tagging = Tagging()
    selection: Selection = Selection()
    scoring: Scoring = Scoring()
    ranking: Ranking = Ranking()
    sampling: Sampling = Sampling()
    download: Download = Download()
    image_audit: ImageAudit = ImageAudit()
    export: Export = Export()
    report: Report = Report()
    runner: Runner = Runner()
    datasheet: Datasheet = Datasheet()
    review: Review = Review()

    @model_validator(mode="before")
    @classmethod
    def _corpus_preset(cls, data: object) -> object:
        return apply_preset(data)

    @model_validator(mode="after")
    def _threshold_for_the_encoder(self) -> Config:
        if self.scoring.model not in self.ranking.thresholds:
            raise ValueError(
                f"ranking.thresholds has no entry for scoring.model {self.scoring.model!r} "
                f"(it has {sorted(self.ranking.thresholds)}); a threshold only means something for one encoder"
            )
        return self

    @model_validator(mode="after")
    def _priority_path_needs_a_prefix_strategy(self) -> Config:
        if self.scoring.first_phase == "priority" and self.sampling.strategy == "top":
            raise ValueError(
                "scoring.first_phase 'priority' needs sampling.strategy 'threshold' or 'matched' (their lists are a "
                "prefix of the sample's order); with 'top' use 'off' or 'static'"
            )
        return self

    @model_validator(mode="after")
    def _row_nsfw_columns_are_read(self) -> Config:
        for setting, column in self.selection.row_nsfw_columns().items():
            if getattr(self.corpus.columns, column) is None:
                raise ValueError(
                    f"selection.{setting} needs the corpus's {column} column, but corpus.columns.{column} is null; "
                    f"map corpus.columns.{column} to the corpus column that holds it, or set selection.{setting}: null"
                )
        return self

    @property
    def threshold(self) -> float:
        return self.ranking.thresholds[self.scoring.model]

    @property
    def exact_per_class(self) -> int:
        """Captions per class the encoder scores when the first phase is on: by default twice the
        images and reserve, so sampling picks from exact scores with room to spare."""
        sampling = self.sampling
        return self.scoring.exact_per_class or 2 * (sampling.images_per_class + sampling.reserve)

    @property
    def min_class_captions(self) -> int:
        """Captions a class needs: by default enough to fill its images."""
        return self.ranking.min_captions or self.sampling.images_per_class


class ConfigError(ImagenotError, ValueError):
    """A config file is unreadable or invalid; the message names the file and each bad key."""


def load_config(
    path: str | os.PathLike | None, corpus_paths: list[str] | None = None, needs_corpus: bool = False
) -> Config:
    """The validated config from a YAML file (any FileSystems path), or the defaults when `path`
    is None; `corpus_paths` replaces corpus.paths (`imagenot tag --input`). Every path it names is
    made absolute (`given_paths`): a run records none that changes meaning with the working folder.

    Checked here, before any work: the document is a non-empty mapping with no key twice, every
    key is known (a near miss is suggested), a class-list file named by selection.reference
    exists, and, for a command that reads the corpus (`needs_corpus`), a corpus is given."""
    source = "(defaults)" if path is None else os.fspath(path)
    raw = {} if path is None else _read_mapping(source)
    if corpus_paths:
        corpus = raw.get("corpus") if isinstance(raw.get("corpus"), dict) else {}
        raw = {**raw, "corpus": {**corpus, "paths": list(corpus_paths)}}
    try:
        config = Config.model_validate(absolute_config_paths(raw))
    except ValidationError as err:
        problems = "\n".join(
            f"  {'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            + (f" (got {e['input']!r})" if e["type"] != "missing" else "")
            + (suggestion(Config, e["loc"]) if e["type"] == "extra_forbidden" else "")
            for e in err.errors()
        )
        raise ConfigError(f"{source}: invalid config:\n{problems}") from err
    if needs_corpus and not config.corpus.paths and config.corpus.synth is None:
        raise ConfigError(
            f"{source}: corpus: no corpus given; set corpus.paths (paths or globs of corpus files) or corpus.synth"
        )
    _check_reference(source, config.selection.reference)
    return config


def load_run_config(run_dir: str, config_path: str | None = None) -> Config:
    """The config of a command over an existing run: the one given, else the run's own
    RUN/config.yaml (so finished stages stay current), else the defaults (a run built stage by
    stage has none)."""
    if config_path is None:
        own = FileSystems.join(run_dir, RUN_CONFIG)
        config_path = own if FileSystems.exists(own) else None
    return load_config(config_path)


def _read_mapping(path: str) -> dict:
    try:
        with FileSystems.open(path, compression_type=UNCOMPRESSED) as f:
            raw = parse_yaml(f.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot read config: {err}") from err
    if raw is None:
        raise ConfigError(f"{path}: the config is empty; it needs at least corpus.paths or corpus.synth")
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: a config is a mapping of sections (corpus:, selection:, ...), not a {type(raw).__name__}"
        )
    return raw


def _check_reference(source: str, reference: str) -> None:
    """A class-list file named as the reference must be there before tag runs for an hour."""
    if reference in REFERENCE_SETS or FileSystems.exists(reference):
        return
    raise ConfigError(
        f"{source}: selection.reference: {reference!r} is neither {' nor '.join(REFERENCE_SETS)} "
        "nor an existing class-list file"
    )

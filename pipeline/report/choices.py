"""The choices the ImageNot paper leaves open, as this run made them: (setting, value, meaning).

The card and the report both show this table; the full resolved config follows it in the card.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from imagenot.pipeline.config.schema import Config, Download, Sampling, Scoring, Selection


class Choice(NamedTuple):
    setting: str  # the config key, dotted
    value: str
    meaning: str


def show(value: object) -> str:
    """A config value as it reads in YAML: null, true/false, numbers, lists comma-separated."""
    if isinstance(value, list):
        return ", ".join(show(v) for v in value) if value else "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def open_choices(config: Config, model_id: str) -> list[Choice]:
    """Every threshold, model and choice the paper leaves open, with this run's value."""
    rows = [
        (
            "tagging.ignore_forms",
            show(config.tagging.ignore_forms),
            "words never matched as lemmas (function words that are also nouns)",
        ),
        *_selection(config.selection),
        *_scoring(config, model_id),
        *_ranking(config),
        *_sampling(config.sampling),
        *_download(config.download),
    ]
    return [Choice(*row) for row in rows]


def _selection(s: Selection) -> list[tuple]:
    """Steps 2-6 and the safety rules."""
    return [
        ("selection.reference", s.reference, "the class set the classes must differ from (step 2)"),
        (
            "selection.overlap",
            s.overlap,
            "paper: drop reference synsets and shared lemmas; strict: also their ancestors and descendants; "
            "within: keep only reference synsets (LAIONet)",
        ),
        ("selection.min_captions", show(s.min_captions), "usable captions a synset needs (step 3)"),
        (
            "selection.offensive_synsets",
            show(s.offensive_synsets),
            "drop synsets WordNet marks offensive: usage domain ethnic slur, disparagement or obscenity, "
            "or a gloss calling them an offensive term (before step 2)",
        ),
        (
            "selection.person_synsets",
            s.person_synsets,
            "identity: drop person synsets that name people by race, ethnicity, nationality, religion, "
            "sexual orientation, sex or gender, disability; all: every person synset; keep: none (before step 2)",
        ),
        (
            "selection.nsfw_synset_threshold",
            show(s.nsfw_synset_threshold),
            "alt-profanity-check score over lemmas and gloss above which a synset is dropped (step 5; null: off)",
        ),
        (
            "selection.allowed_nsfw_tags",
            show(s.allowed_nsfw_tags),
            "LAION NSFW tags a caption row may carry (null: off)",
        ),
        ("selection.max_punsafe", show(s.max_punsafe), "highest LAION punsafe a row may have (null: off)"),
        ("selection.keep_unrated", show(s.keep_unrated), "keep rows with no NSFW tag or punsafe value"),
        (
            "selection.caption_rules.rules",
            show(s.caption_rules.rules),
            "caption rules: a step-6 caption is dropped where one says its word does not name the synset",
        ),
        (
            "selection.caption_rules.none_of_these_threshold",
            show(s.caption_rules.none_of_these_threshold),
            "none_of_these rule: the fitted probability that the word names none of its noun senses at which a "
            "caption is dropped",
        ),
    ]


def _scoring(config: Config, model_id: str) -> list[tuple]:
    """The text encoder, sense contrast, the first pass and the rank stage's first phase."""
    sc = config.scoring
    rows = [
        ("scoring.encoder", sc.encoder, "text encoder library (the paper used RoBERTa)"),
        ("scoring.model", sc.model, f"text encoder model; resolved to {model_id}"),
        (
            "scoring.runtime",
            sc.runtime,
            "what runs the encoder: torch, or ONNX Runtime on an export of the same weights; "
            "each gives a caption the same bits whatever its batch, the two differ in the last bits (cosine >= 0.999)",
        ),
        ("scoring.query_template", sc.query_template, "the text each caption is compared with, per synset (step 7)"),
        *_sense_contrast(sc),
        (
            "scoring.first_pass_captions",
            show(sc.first_pass_captions),
            "captions per candidate synset scored to rank the synsets",
        ),
        ("scoring.seed", show(sc.seed), "picks those first-pass captions (keyed hash of row ids)"),
        (
            "scoring.first_phase",
            sc.first_phase,
            "off: the encoder scores every caption of the classes; "
            "static: a static model distilled from it picks each class's best captions for the encoder; "
            "priority: the encoder scores each class's captions in the sample's order until its list is settled "
            "(same list as off)",
        ),
    ]
    if sc.first_phase != "off":
        rows.append(
            (
                "scoring.exact_per_class",
                show(sc.exact_per_class),
                "captions per class the encoder scores after the first phase (priority: in the first round) "
                f"(null: 2 x (N + reserve)); {config.exact_per_class:,} here",
            )
        )
    if sc.first_phase == "priority":
        rows.append(
            (
                "scoring.exact_cap",
                show(sc.exact_cap),
                "priority: the most captions per class the encoder scores (null: no cap, every list exact)",
            )
        )
    return rows


def _sense_contrast(sc: Scoring) -> list[tuple]:
    """How a caption's own sense is told from the other senses of its word."""
    return [
        (
            "scoring.sense_method",
            sc.sense_method,
            "sense contrast: context, the matched word's contextual embedding against sense vectors from SemCor's "
            "training documents; sentence, the caption's embedding against each sense's query texts",
        ),
        (
            "scoring.sense_layers",
            show(sc.sense_layers),
            "the encoder's last hidden layers summed for the word's contextual embedding (context method)",
        ),
        (
            "scoring.sense_templates",
            show(sc.sense_templates),
            "the query texts of every noun sense of a caption's word (sentence method)",
        ),
        ("scoring.sense_pooling", sc.sense_pooling, "how a sense's query similarities are pooled (sentence method)"),
        (
            "scoring.sense_prior",
            show(sc.sense_prior),
            "weight of log P(sense | word) from WordNet's tagged counts in a sense's score",
        ),
        (
            "scoring.sense_margin",
            show(sc.sense_margin),
            "a caption stays in its class only when the class's sense beats every other sense of its word "
            "by this much (null: off)",
        ),
    ]


def _ranking(config: Config) -> list[tuple]:
    """Steps 7-8: the class list."""
    return [
        ("ranking.top_n", show(config.ranking.top_n), "captions averaged for a synset's score (step 7)"),
        (
            f"ranking.thresholds[{config.scoring.model}]",
            show(config.threshold),
            "lowest synset score kept, for this encoder (the paper's 0.82 is RoBERTa's)",
        ),
        (
            "ranking.min_captions",
            show(config.ranking.min_captions),
            f"single-synset captions a class needs (null: N); {config.min_class_captions:,} here",
        ),
        (
            "ranking.min_pass_share",
            show(config.ranking.min_pass_share),
            "share of a synset's captions that must pass the caption rules and the sense decision for it to be a "
            "class (0: off)",
        ),
        ("ranking.classes", show(config.ranking.classes), "K, the number of classes (step 8)"),
    ]


def _sampling(sa: Sampling) -> list[tuple]:
    """Step 8: each class's images, reserve and split."""
    rows = [
        ("sampling.images_per_class", show(sa.images_per_class), "N, images per class (step 8)"),
        (
            "sampling.strategy",
            sa.strategy,
            "how a class's images are picked: top (TopImages), threshold or matched (ImageNetV2)",
        ),
    ]
    if sa.strategy == "threshold":
        rows.append(("sampling.threshold", show(sa.threshold), "lowest gloss similarity sampled from"))
    if sa.strategy == "matched":
        key = "reference_quantiles" if sa.reference_quantiles is not None else "reference_scores"
        rows.append((f"sampling.{key}", show(getattr(sa, key)), "the similarity distribution matched"))
    rows += [
        (
            "sampling.reserve_factor",
            show(sa.reserve_factor),
            f"reserve of {sa.reserve} candidates per class, to replace images that fail to download",
        ),
        ("sampling.test_per_class", show(sa.test_per_class), "images per class in the test split"),
        ("sampling.seed", show(sa.seed), "fixes the random orders and the train/test split"),
    ]
    return rows


def _download(d: Download) -> list[tuple]:
    """Whether and how the images were fetched."""
    rows = [
        ("download.enabled", show(d.enabled), "whether the images were fetched"),
    ]
    if d.enabled:
        rows += [
            (
                "download.max_rounds",
                show(d.max_rounds),
                "fetch rounds: the dataset rows, then backfills from the reserve",
            ),
            ("download.max_response_bytes", show(d.max_response_bytes), "largest response body read"),
            ("download.max_image_pixels", show(d.max_image_pixels), "largest width x height decoded"),
            (
                "download.image_size",
                show(d.image_size),
                f"images resized ({d.resize_mode}) and stored as {d.encode_format}",
            ),
            (
                "download.disallowed_header_directives",
                show(d.disallowed_header_directives),
                "X-Robots-Tag directives that put a site's images off limits",
            ),
        ]
    return rows

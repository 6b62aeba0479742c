"""The choices the ImageNot paper leaves open, as this run made them: (setting, value, meaning).

The card and the report both show this table; the full resolved config follows it in the card.
A setting's meaning is its schema Field description (pipeline/config/schema.py), the one wording
of it; this module picks which settings are listed, in which order, and appends what only the
run knows ("; 60 here").
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from pydantic import BaseModel

from imagenot.pipeline.config.schema import Config, Download, Ranking, Sampling, Selection


class Choice(NamedTuple):
    setting: str  # the config key, dotted
    value: str
    meaning: str


NULL_MEANS = re.compile(r"\bleft empty: ([^;)]+)")  # a description's "(null: off)": what an empty setting does


def show(value: object, meaning: str = "") -> str:
    """A config value as a person reads it: true/false, numbers, lists comma-separated, and an empty
    (null) setting as what its `meaning` says it does ("off"), else "none"."""
    if value is None:
        found = NULL_MEANS.search(meaning)
        return found.group(1) if found else "none"
    if isinstance(value, list):
        return ", ".join(show(v) for v in value) if value else "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def describe(section: type[BaseModel], name: str) -> str:
    """The schema's description of setting `name` of `section`; the table has no wording of its own
    but "left empty" for YAML's null."""
    field = section.model_fields.get(name)
    if field is None or not field.description:
        raise ValueError(
            f"pipeline/config/schema.py: {section.__name__}.{name} needs a Field description: "
            "the choices table (pipeline/report/choices.py) shows it as the setting's meaning"
        )
    return re.sub(r"\bnull\b", "left empty", field.description)


def _row(section: BaseModel, key: str, name: str, fact: str = "") -> Choice:
    """Setting `name` of `section` (at dotted `key` in the config), with `fact` appended to its meaning."""
    meaning = describe(type(section), name)
    return Choice(f"{key}.{name}", show(getattr(section, name), meaning), meaning + fact)


def _rows(section: BaseModel, key: str, *names: str) -> list[Choice]:
    return [_row(section, key, name) for name in names]


def open_choices(config: Config, model_id: str) -> list[Choice]:
    """Every threshold, model and choice the paper leaves open, with this run's value."""
    return [
        _row(config.tagging, "tagging", "ignore_forms"),
        *_selection(config.selection),
        *_scoring(config, model_id),
        *_ranking(config),
        *_sampling(config.sampling),
        *_download(config.download),
    ]


def _selection(s: Selection) -> list[Choice]:
    """Steps 2-6, the safety rules and the instance rule."""
    return [
        *_rows(s, "selection", "reference", "overlap", "min_captions"),
        *_rows(s, "selection", "offensive_synsets", "person_synsets", "instance_synsets"),
        *_rows(s, "selection", "nsfw_synset_threshold", "allowed_nsfw_tags", "max_punsafe", "keep_unrated"),
        *_rows(s.caption_rules, "selection.caption_rules", "rules", "none_of_these_threshold"),
    ]


# How a caption's own sense is told from the other senses of its word.
_SENSE_CONTRAST = (
    "sense_method",
    "sense_layers",
    "sense_templates",
    "sense_pooling",
    "sense_sentence_weight",
    "sense_prior",
    "sense_margin",
    "none_of_these_fit",
    "web_senses",
    "web_sense_margin",
    "label_model",
    "label_floor",
)


def _scoring(config: Config, model_id: str) -> list[Choice]:
    """The text encoder, sense contrast, the first pass and the rank stage's first phase."""
    sc = config.scoring
    rows = [
        _row(sc, "scoring", "encoder"),
        _row(sc, "scoring", "model", f"; resolved to {model_id}"),
        *_rows(sc, "scoring", "runtime", "query_template", *_SENSE_CONTRAST, "first_pass_captions", "seed"),
        _row(sc, "scoring", "first_phase"),
    ]
    if sc.first_phase != "off":
        rows.append(_row(sc, "scoring", "exact_per_class", f"; {config.exact_per_class:,} here"))
    if sc.first_phase == "priority":
        rows.append(_row(sc, "scoring", "exact_cap"))
    return rows


def _ranking(config: Config) -> list[Choice]:
    """Steps 7-8: the class list; the threshold is the one entry of its table this encoder reads."""
    r = config.ranking
    threshold = Choice(
        f"ranking.thresholds[{config.scoring.model}]", show(config.threshold), describe(Ranking, "thresholds")
    )
    return [
        _row(r, "ranking", "top_n"),
        threshold,
        _row(r, "ranking", "min_captions", f"; {config.min_class_captions:,} here"),
        *_rows(r, "ranking", "min_pass_share", "classes"),
    ]


def _sampling(sa: Sampling) -> list[Choice]:
    """Step 8: each class's images, reserve and split."""
    rows = _rows(sa, "sampling", "images_per_class", "strategy")
    if sa.strategy == "threshold":
        rows.append(_row(sa, "sampling", "threshold"))
    if sa.strategy == "matched":
        rows.append(
            _row(sa, "sampling", "reference_quantiles" if sa.reference_quantiles is not None else "reference_scores")
        )
    return [
        *rows,
        _row(sa, "sampling", "reserve_factor", f"; {sa.reserve:,} here"),
        *_rows(sa, "sampling", "test_per_class", "seed"),
    ]


def _download(d: Download) -> list[Choice]:
    """Whether and how the images were fetched."""
    fetching = ("max_rounds", "max_response_bytes", "max_image_pixels", "image_size", "resize_mode", "encode_format")
    fetching += ("disallowed_header_directives",)
    return _rows(d, "download", "enabled", *(fetching if d.enabled else ()))

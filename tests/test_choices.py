"""The open-choices table's meanings are the config schema's Field descriptions."""

import re

import pytest

from imagenot.pipeline.config.schema import Config, Runner
from imagenot.pipeline.report.choices import describe, open_choices

# Configs that between them reach every row the table can list.
VARIANTS = [
    {},
    {"download": {"enabled": True}},
    {"scoring": {"first_phase": "static"}},
    {"scoring": {"first_phase": "priority"}, "sampling": {"strategy": "threshold", "threshold": 0.3}},
    {"sampling": {"strategy": "matched", "reference_quantiles": [0.1, 0.9]}},
    {"sampling": {"strategy": "matched", "reference_scores": "other/sample/dataset"}},
]


def _field(config: Config, setting: str) -> tuple[type, str]:
    """The model class and field name a dotted setting (`ranking.thresholds[model]`) names."""
    *path, name = re.sub(r"\[.*\]$", "", setting).split(".")
    section = config
    for part in path:
        section = getattr(section, part)
    return type(section), name


@pytest.mark.parametrize("raw", VARIANTS)
def test_every_listed_setting_means_what_its_schema_description_says(raw):
    config = Config.model_validate(raw)
    for choice in open_choices(config, "model-id"):
        description = describe(*_field(config, choice.setting))
        assert choice.meaning.startswith(description), choice.setting
        assert choice.meaning[len(description) :] in ("", "; resolved to model-id") or re.fullmatch(
            r"; [\d,]+ here", choice.meaning[len(description) :]
        ), choice


def test_the_run_facts_follow_the_description():
    config = Config.model_validate({"scoring": {"first_phase": "static"}, "sampling": {"images_per_class": 1000}})
    meanings = {choice.setting: choice.meaning for choice in open_choices(config, "gt-minilm==1")}
    assert meanings["scoring.model"] == "text encoder model; resolved to gt-minilm==1"
    assert meanings["sampling.reserve_factor"].endswith("; 300 here")
    assert meanings["scoring.exact_per_class"].endswith("; 2,600 here")
    assert meanings["ranking.min_captions"].endswith("; 1,000 here")


def test_a_setting_without_a_description_is_refused_by_name():
    with pytest.raises(ValueError, match=r"pipeline/config/schema.py: Runner.kind needs a Field description"):
        describe(Runner, "kind")
    with pytest.raises(ValueError, match=r"Runner.no_such_key needs a Field description"):
        describe(Runner, "no_such_key")

"""Each stage is declared once (pipeline/frame/registry.py): the declarations are in build order, each
reads an earlier stage, and what a stage records as its settings is what the registry (and so the
report's config check and the stage commands) computes for the same config."""

import importlib

import pytest

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config, load_config
from imagenot.pipeline.frame.registry import declared, module_of, settings_differences, stage_config, stages
from imagenot.pipeline.frame.stage_order import FACES, STAGE_NAMES
from imagenot.pipeline.report.stage import check_config
from imagenot.pipeline.run.stage_dir import is_done


@pytest.mark.parametrize("download", [False, True])
def test_each_stage_is_declared_in_its_module_and_reads_an_earlier_stage(download):
    config = Config.model_validate({"download": {"enabled": download}})
    for position, stage in enumerate(stages()):
        assert stage.name == STAGE_NAMES[position] == importlib.import_module(module_of(stage.name)).STAGE
        upstream = stage.upstream_of(config)
        assert upstream is None or STAGE_NAMES.index(upstream) < position, stage.name
        assert stage.settings is not None and FACES[stage.name].doc


def test_stages_before_a_stage_are_those_earlier_in_the_order():
    assert [stage.name for stage in stages(before="score")] == ["corpus", "tag", "select"]
    with pytest.raises(KeyError, match="no stage 'scores'"):
        declared("scores")


def test_every_stage_of_a_built_run_recorded_the_settings_the_registry_computes(small_run):
    """The walk that keeps a stage's recorded settings and the report's check the same function."""
    config, run_dir = load_config(small_run.config), str(small_run.run)
    walked = [stage.name for stage in stages() if stage.wanted(config)]
    assert walked == ["corpus", "tag", "select", "score", "rank", "sample", "report"]
    for stage in stages():
        if stage.wanted(config):
            assert is_done(run_dir, stage.name)
            assert settings_differences(stage, config, run_dir) == [], stage.name


def test_a_changed_setting_is_named_by_its_key_and_the_synthetic_corpus_is_the_runs_own(small_run):
    config = load_config(small_run.config)
    changed = config.model_copy(update={"selection": config.selection.model_copy(update={"min_captions": 99})})
    assert settings_differences(declared("select"), changed, str(small_run.run)) == ["min_captions"]
    seen = stage_config(config, str(small_run.run), "tag").corpus.paths
    assert seen == [f"{small_run.run}/corpus/part-*.parquet"]
    assert stage_config(config, str(small_run.run), "corpus") is config


def test_the_report_refuses_a_run_built_with_other_settings_naming_the_stage_and_key(small_run):
    config = load_config(small_run.config)
    changed = config.model_copy(update={"sampling": config.sampling.model_copy(update={"test_per_class": 2})})
    refusal = r"/sample ran with other settings than the config gives \(test_per_class\)"
    with pytest.raises(ImagenotError, match=refusal):
        check_config(changed, str(small_run.run))

"""The README's "every stage alone" recipe with a non-default config: the first command writes
RUN/config.yaml, the later ones run with it, and the run comes out as `imagenot build` makes it.
A later --config that changes an earlier stage's settings is refused; one that changes only the
stage's own settings updates RUN/config.yaml and reruns it."""

import json

import pytest
import yaml
from cli_runner import cli_command, invoke

from imagenot.pipeline.cli import main  # noqa: F401 (the commands are found through it)

rank_command = cli_command("rank")
sample_command = cli_command("sample")
score_command = cli_command("score")
select_command = cli_command("select")
tag_command = cli_command("tag")


def _fingerprint(run, stage: str) -> dict:
    return json.loads((run / stage / "fingerprint.json").read_text())


@pytest.fixture(scope="module")
def stage_by_stage(small_run, tmp_path_factory):
    """small_run's config (not the defaults) over its corpus, run one command per stage."""
    folder = tmp_path_factory.mktemp("stage_by_stage")
    settings = yaml.safe_load(small_run.config.read_text())
    del settings["corpus"]  # the corpus is small_run's synthetic one, given with --input
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(settings))
    run = folder / "run"
    corpus = str(small_run.run / "corpus" / "part-*.parquet")
    first = invoke(tag_command, ["--input", corpus, "--out", str(run), "--config", str(config)])
    outputs = [first]
    for command in (select_command, score_command, rank_command, sample_command):
        outputs.append(invoke(command, ["--run", str(run)]))
    return run, config, outputs


def test_the_first_command_writes_the_run_config_and_later_ones_use_it(stage_by_stage, small_run):
    run, config, outputs = stage_by_stage
    assert [result.exit_code for result in outputs] == [0] * 5, [result.output for result in outputs]
    assert f"{run}/config.yaml: written from {config}" in outputs[0].output
    assert yaml.safe_load((run / "config.yaml").read_text())["selection"]["min_captions"] == 8  # not the default
    for stage in ("select", "score", "rank", "sample"):  # the same settings and inputs as the build's
        assert _fingerprint(run, stage)["digest"] == _fingerprint(small_run.run, stage)["digest"], stage
    assert (run / "rank" / "classes.json").read_bytes() == (small_run.run / "rank" / "classes.json").read_bytes()


def test_each_stage_command_records_its_cpu_per_corpus_row(stage_by_stage):
    run, _, _ = stage_by_stage
    summary = json.loads((run / "summary.json").read_text())
    for stage in ("tag", "select", "score", "rank", "sample"):
        figures = summary[stage]
        assert figures["rows"] == 12_000 and figures["cpu_seconds"] > 0, stage
        assert figures["cpu_us_per_row"] == pytest.approx(figures["cpu_seconds"] / 12_000 * 1e6, abs=1), stage


def test_a_config_changing_an_earlier_stage_is_refused_naming_the_keys_and_the_stage(stage_by_stage, tmp_path):
    run, config, _ = stage_by_stage
    changed = yaml.safe_load(config.read_text())
    changed["selection"]["min_captions"] = 9
    (tmp_path / "changed.yaml").write_text(yaml.safe_dump(changed))
    result = invoke(sample_command, ["--run", str(run), "--config", str(tmp_path / "changed.yaml")])
    assert result.exit_code == 1
    assert "changes settings the select stage already ran with" in result.output
    assert "(min_captions)" in result.output and "--from select" in result.output
    assert yaml.safe_load((run / "config.yaml").read_text())["selection"]["min_captions"] == 8  # left as it was


def test_a_config_changing_only_this_stage_updates_the_run_config_and_reruns_it(stage_by_stage, tmp_path):
    run, config, _ = stage_by_stage
    changed = yaml.safe_load(config.read_text())
    changed["sampling"]["test_per_class"] = 2
    (tmp_path / "changed.yaml").write_text(yaml.safe_dump(changed))
    result = invoke(sample_command, ["--run", str(run), "--config", str(tmp_path / "changed.yaml")])
    assert result.exit_code == 0, result.output
    assert f"{run}/config.yaml: updated from {tmp_path / 'changed.yaml'}" in result.output
    assert yaml.safe_load((run / "config.yaml").read_text())["sampling"]["test_per_class"] == 2
    assert _fingerprint(run, "sample")["settings"]["test_per_class"] == 2

"""Numbers and texts read strictly, each refused in one line naming the field before any work:
every number of a config is finite, in range and of its type; `plan`'s rates, given or read from
a build's summary.json; a journal entry from a damaged or older file, and a value a killed command
remembered there that was edited by hand; a text argument whose bytes are not the locale's."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke
from shared_runs import copy_run

from imagenot.pipeline.amend.blocklist import blocklist_command
from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.commands.senses import senses_command
from imagenot.pipeline.commands.why import why
from imagenot.pipeline.plan.command import plan_command

export_command = cli_command("export")


def _error_line(result) -> str:
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    [line] = [said for said in result.output.splitlines() if said.startswith("Error: ")]
    return line


@pytest.mark.parametrize(
    ("section", "named"),
    [
        # a NaN floor is never crossed (`fit < nan` is false): it turned the floor off
        (
            {"scoring": {"none_of_these_fit": {"trained": float("nan")}}},
            "scoring.none_of_these_fit.trained: Input should be a finite number",
        ),
        ({"ranking": {"min_pass_share": float("inf")}}, "ranking.min_pass_share: Input should be a finite number"),
        ({"download": {"timeout_s": "5"}}, "download.timeout_s: Input should be a valid number"),
        ({"sampling": {"images_per_class": 5.0}}, "sampling.images_per_class: Input should be a valid integer"),
        ({"corpus": {"synth": {"rows": "12000"}}}, "corpus.synth.rows: Input should be a valid integer"),
    ],
)
def test_a_config_number_that_is_not_finite_or_not_of_its_type_is_refused(tmp_path, section, named):
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"corpus": {"paths": ["x.parquet"]}, **section}))
    result = invoke(build_command, ["--config", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 1 and named in result.output, result.output
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--price-vcpu-hour", "nan", "'nan' is not a finite number 0 or more"),
        ("--tag-us-per-row", "-1", "'-1' is not a finite number 0 or more"),
        ("--encoder-captions-per-s", "0", "'0' is not a finite number above 0"),
        ("--dead-url-share", "2", "'2' is not a finite number 0 or more and at most 1"),
        ("--candidates", "1.5", "'1.5' is not an integer"),
    ],
)
def test_a_plan_rate_that_is_not_a_finite_number_in_its_range_is_refused(small_run, flag, value, said):
    result = invoke(plan_command, ["--config", str(small_run.config), flag, value])
    assert result.exit_code == 2 and flag in result.output and said in result.output, result.output


@pytest.mark.parametrize(
    ("summary", "said"),
    [
        ("{not json", "not JSON as imagenot writes it"),
        ('{"tag": {"cpu_seconds": NaN, "rows": 12000}}', "NaN is not a finite number"),
        (
            '{"tag": {"cpu_seconds": "12.5", "rows": 12000}}',
            "tag.cpu_seconds is '12.5', not a finite number of 0 or more",
        ),
        (
            '{"select": {"cpu_seconds": -3, "rows": 12000}}',
            "select.cpu_seconds is -3, not a finite number of 0 or more",
        ),
        ('{"sample": {"cpu_seconds": 3, "rows": 1.5}}', "sample.rows is 1.5, not a finite number of 0 or more"),
        ('{"tag": [1, 2]}', "tag: a list, not the stage's figures"),
        ("[1, 2]", "a list, not a mapping of stages"),
    ],
)
def test_plan_rates_from_a_damaged_summary_are_refused_in_one_line(small_run, tmp_path, summary, said):
    (tmp_path / "summary.json").write_text(summary)
    result = invoke(plan_command, ["--config", str(small_run.config), "--sample", "0", "--rates-from", str(tmp_path)])
    line = _error_line(result)
    assert result.exit_code == 1 and said in line and str(tmp_path) in line, result.output


ENTRY = {
    "command": "blocklist apply",
    "line": "imagenot blocklist apply --run RUN --list LIST",
    "args": {"--run": "RUN", "--list": "LIST", "--config": None},
    "started": "2026-01-01 00:00:00 UTC",
    "finished": None,
    "resumed": False,
    "remembered": {},
    "steps": [],
}


@pytest.mark.parametrize(
    ("journal", "said"),
    [
        ([{k: v for k, v in ENTRY.items() if k != "line"}], "entry 1 has no 'line'"),  # an older file's
        ([{**ENTRY, "remembered": []}], "entry 1 holds [] as 'remembered'"),
        ([{**ENTRY, "finished": 3}], "entry 1 holds 3 as 'finished'"),
        ([{**ENTRY, "line": "imagenot 'blocklist apply"}], "entry 1 holds \"imagenot 'blocklist apply\" as 'line'"),
        (["blocklist apply"], "entry 1 is a str, not a mapping"),
        ({"command": "build"}, "not imagenot's journal of the run (a list of commands)"),
    ],
)
def test_a_journal_from_a_damaged_or_older_file_is_refused_in_one_line(downloaded_run, tmp_path, journal, said):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    (run_dir / "journal.json").write_text(json.dumps(journal))
    for command, args in ((export_command, ["--run", str(run_dir)]), (why, ["crane", "--run", str(run_dir)])):
        line = _error_line(invoke(command, args))
        assert f"{run_dir}/journal.json" in line and said in line and "restore it or delete it" in line, line
    assert json.loads((run_dir / "journal.json").read_text()) == journal  # left for the user to restore


@pytest.mark.parametrize(
    ("memo", "said"),
    [
        ({"images before": "31"}, "remembered 'images before' is not what it recorded ('31' is not a count)"),
        (
            {"drop pass 1": {"row_id": ["part-00000:1"]}},
            "remembered 'drop pass 1' is not what it recorded (not a table",
        ),
        ({"drop pass 1": "rows"}, "remembered 'drop pass 1' is not what it recorded (not a table"),
        (
            "bad row id",
            "remembered 'drop pass 1' is not what it recorded (row id 'part-00000' is not <shard>:<position>)",
        ),
        ("twice", "remembered 'drop pass 1' is not what it recorded (a row id is listed twice)"),
        ("no reason", "remembered 'drop pass 1' is not what it recorded (a row has no reason)"),
    ],
)
def test_a_remembered_value_edited_by_hand_is_refused_before_it_is_used(downloaded_run, tmp_path, memo, said):
    """A killed `blocklist apply`'s entry, its values edited by hand: its rerun refuses, naming the
    value, before it drops anything; its list is the run's copy (the file it was given is gone)."""
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    listed = tmp_path / "gone.txt"
    row = pq.read_table(run_dir / "download/dataset", columns=["row_id"]).column("row_id")[0].as_py()
    (run_dir / "download/applied_lists").mkdir()
    (run_dir / "download/applied_lists/copy.txt").write_text("domain example.org\n")
    rows = {"row_id": [row], "reason": ["blocklist_domain"], "duplicate_of": [None]}
    edited = {"bad row id": {**rows, "row_id": ["part-00000"]}, "twice": {**rows, "row_id": [row, row]}}
    edited["twice"] |= {"reason": ["blocklist_domain"] * 2, "duplicate_of": [None, None]}
    edited["no reason"] = {**rows, "reason": [""]}
    remembered = {"list": "download/applied_lists/copy.txt", "images before": 31, "applied at": "2026-01-01 00:00 UTC"}
    remembered |= {"drop passes before": 0}
    if isinstance(memo, str):
        memo = {"drop pass 1": {"types": dict.fromkeys(rows, "string"), "columns": edited[memo]}}
    args = {"--run": str(run_dir), "--list": str(listed), "--config": None}
    line = f"imagenot blocklist apply --run {run_dir} --list {listed}"
    (run_dir / "journal.json").write_text(
        json.dumps([{**ENTRY, "line": line, "args": args, "remembered": remembered | memo}])
    )
    result = invoke(blocklist_command, ["apply", "--run", str(run_dir), "--list", str(listed)])
    error = _error_line(result)
    assert f"{run_dir}/journal.json: `blocklist apply`'s {said}" in error, result.output
    assert not (run_dir / "download/dropped.parquet").exists()


def test_a_text_argument_whose_bytes_are_not_the_locale_s_is_read_as_they_came(small_run):
    """Python hands the command line's undecodable bytes on as lone surrogates, which no UTF-8
    encoder takes (the tokenizer's, the terminal's): they are read as U+FFFD."""
    said = invoke(senses_command, ["a red \udcff\udcfe crane on a pier"])
    assert said.exit_code == 0 and "crane at 9:14 ('crane')" in said.output, said.output  # 2 characters for 2 bytes
    refused = invoke(why, ["cr\udcffane", "--run", str(small_run.run)])
    assert refused.exit_code == 2 and "'cr\ufffdane' is neither a wnid" in refused.output, refused.output

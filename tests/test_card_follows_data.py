"""A command that changes a finished run leaves its card, report and export true when it exits, and
says so when classes end short of images or the dataset ends empty."""

import json

import pyarrow.parquet as pq

from imagenot.pipeline.amend.blocklist import blocklist_command
from imagenot.pipeline.run.stage_dir import is_done, made_from
from tests.cli_runner import invoke
from tests.shared_runs import copy_run


def _apply(run_dir, listed) -> str:
    result = invoke(blocklist_command, ["apply", "--run", str(run_dir), "--list", str(listed)])
    assert result.exit_code == 0, result.output
    return result.output


def test_blocklist_apply_rewrites_the_card_naming_the_list_when_and_what_it_removed(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    dataset = pq.read_table(sorted((run_dir / "download" / "dataset").glob("*.parquet"))[0]).to_pylist()
    listed = tmp_path / "takedown.txt"
    listed.write_text(f"sha256 {dataset[0]['sha256']}\n")
    _apply(run_dir, listed)
    card = (run_dir / "report" / "card.md").read_text()
    applied = json.loads((run_dir / "download" / "blocklists_applied.json").read_text())[0]
    assert "No blocklist was applied" not in card
    assert str(listed) in card and applied["sha256"] in card and f"`blocklist apply`, {applied['applied_at']}" in card
    assert "blocklist_sha256 1" in card and "The reserve put " in card
    assert is_done(str(run_dir), "report") and made_from(str(run_dir), "report", "download")
    assert made_from(str(run_dir), "export", "download")


def test_a_list_that_empties_the_dataset_is_said_in_the_command_summary_and_card(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    listed = tmp_path / "everything.txt"
    listed.write_text("domain 127.0.0.1\n")
    output = _apply(run_dir, listed)
    assert "Warning: the dataset is empty: none of its " in output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["download"]["images"] == 0 and summary["download"]["short_classes"]
    assert "blocklist_domain" in (run_dir / "report" / "card.md").read_text()

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
    card = (run_dir / "report" / "card.md").read_text()
    assert "blocklist_domain" in card
    classes = json.loads((run_dir / "rank" / "classes.json").read_text())
    assert f"{len(classes)} classes ended with no image and are not part of the exported dataset" in card
    assert (run_dir / "dataset" / "classes.txt").read_text() == ""
    readme = (run_dir / "dataset" / "README.md").read_text()
    assert (
        "imagenot dataset: 0 classes" in readme and f"{len(classes)} classes of the build ended with no image" in readme
    )


def test_a_class_a_list_empties_is_named_and_left_out_of_the_export(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    classes = json.loads((run_dir / "rank" / "classes.json").read_text())
    gone, kept = classes[0], [c["wnid"] for c in classes[1:]]
    sampled = (
        pq.read_table(run_dir / "sample" / "dataset").to_pylist()
        + pq.read_table(run_dir / "sample" / "reserve").to_pylist()
    )
    listed = tmp_path / "one-class.txt"
    listed.write_text("".join(f"url {row['url']}\n" for row in sampled if row["wnid"] == gone["wnid"]))
    output = _apply(run_dir, listed)
    assert f": {gone['name']} 0" in output  # the shortfall warning, with its count
    card = (run_dir / "report" / "card.md").read_text()
    assert (
        "1 class ended with no image and is not part of the exported dataset; the export (`RUN/dataset/`) has " in card
    )
    assert f"indexed 0 to {len(kept) - 1} in the same order" in card and f"(`{gone['wnid']}`)" in card
    exported = run_dir / "dataset"
    assert [line.split()[0] for line in (exported / "classes.txt").read_text().splitlines()] == kept
    rows = pq.read_table(exported / "train.parquet").to_pylist() + pq.read_table(exported / "test.parquet").to_pylist()
    assert rows and all(row["class_index"] == kept.index(row["wnid"]) for row in rows)
    assert json.loads((exported / "_info.json").read_text())["num_classes"] == len(kept)
    readme = (exported / "README.md").read_text()
    assert "1 class of the build ended with no image and is not part of this dataset" in readme
    assert f"): {gone['wnid']} " in readme and f"imagenot dataset: {len(kept)} classes" in readme

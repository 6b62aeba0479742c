"""A command that rewrites a run, killed outright (SIGKILL) at a named point of its work and run
again, leaves the run as an uninterrupted run of it does; until then every other command refuses
the run, naming the command to run again (`pipeline.run.journal`). Each test works on copies of the
session's shared runs; `review classes apply`'s is in test_class_vetoes.py, beside its uninterrupted
apply."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from cli_runner import cli_command, invoke, killed_at
from shared_runs import copy_run

from imagenot.pipeline.amend.blocklist import blocklist_command
from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.commands.why import why

export_command, rank_command = cli_command("export"), cli_command("rank")


def _dataset(run_dir: Path) -> dict[str, bytes]:
    """The download's dataset, drops, per-class table and tars, and the export, by path."""
    paths = [
        *(run_dir / "download").glob("dataset/*.parquet"),
        *(run_dir / "download").glob("rounds/*/*.tar"),
        run_dir / "download/class_downloads.tsv",
        run_dir / "download/dropped.parquet",
        *(p for p in (run_dir / "dataset").rglob("*") if p.is_file()),
    ]
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(paths) if p.exists()}


def _applied(run_dir: Path) -> list[dict]:
    """`download/blocklists_applied.json` without the times."""
    return [
        {k: v for k, v in a.items() if k != "applied_at"}
        for a in json.loads((run_dir / "download/blocklists_applied.json").read_text())
    ]


@pytest.fixture(scope="module")
def takedown(downloaded_run, tmp_path_factory) -> tuple[Path, Path]:
    """A blocklist of three dataset images, and a copy of the downloaded run it was applied to whole."""
    folder = tmp_path_factory.mktemp("takedown")
    listed = folder / "takedown.txt"
    rows = pq.read_table(downloaded_run / "download/dataset", columns=["sha256"]).to_pylist()
    listed.write_text("".join(f"sha256 {row['sha256']}\n" for row in rows[:3]))
    whole = copy_run(downloaded_run, folder / "whole" / "run")  # the same name: the export names its run
    assert invoke(blocklist_command, ["apply", "--run", str(whole), "--list", str(listed)]).exit_code == 0
    return listed, whole


@pytest.mark.parametrize("point", ["backfill dropped", "download ran"])
def test_a_killed_blocklist_apply_is_finished_by_its_rerun(downloaded_run, takedown, tmp_path, point):
    """Killed with the images on the dropped list but not yet replaced, or inside the download that
    replaces them, the apply run again leaves the uninterrupted apply's run; meanwhile a reader and
    another writer name it."""
    listed, whole = takedown
    killed = copy_run(downloaded_run, tmp_path / "killed" / "run")
    killed_at(point, ["blocklist", "apply", "--run", str(killed), "--list", str(listed)])

    line = f"`imagenot blocklist apply --run {killed} --list {listed}` has not finished rewriting this run"
    for command, args in ((export_command, ["--run", str(killed)]), (why, ["dog", "--run", str(killed)])):
        refused = invoke(command, args)
        assert refused.exit_code == 1 and line in refused.output and "run it again to finish it" in refused.output

    rerun = invoke(blocklist_command, ["apply", "--run", str(killed), "--list", str(listed)])
    assert rerun.exit_code == 0, rerun.output
    mine, uninterrupted = _dataset(killed), _dataset(whole)
    assert sorted(mine) == sorted(uninterrupted)
    assert [name for name in mine if mine[name] != uninterrupted[name]] == []
    assert _applied(killed) == _applied(whole)  # one record, its counts those of the uninterrupted apply
    assert json.loads((killed / "journal.json").read_text())[-1]["finished"] is not None


def test_an_export_killed_inside_is_finished_by_its_rerun(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    killed_at("export ran", ["export", "--run", str(run_dir)])
    assert not (run_dir / "export/DONE").exists()
    refused = invoke(why, ["dog", "--run", str(run_dir)])
    assert refused.exit_code == 1 and f"`imagenot export --run {run_dir}` has not finished" in refused.output
    assert invoke(export_command, ["--run", str(run_dir)]).exit_code == 0
    assert _dataset(run_dir) == _dataset(downloaded_run)


def test_a_build_killed_once_it_holds_the_lock_is_finished_by_its_rerun(small_run, tmp_path):
    run_dir = copy_run(small_run.run, tmp_path / "run")
    report = (run_dir / "report/card.md").read_bytes()
    args = ["--config", str(small_run.config), "--out", str(run_dir), "--from", "report"]
    killed_at("journal", ["build", *args])
    refused = invoke(rank_command, ["--run", str(run_dir)])
    assert refused.exit_code == 1
    assert f"`imagenot build --config {small_run.config} --out {run_dir} --from report` has not finished" in (
        refused.output
    )
    rerun = invoke(build_command, args)
    assert rerun.exit_code == 0, rerun.output
    assert (run_dir / "report/card.md").read_bytes() == report
    journal = json.loads((run_dir / "journal.json").read_text())
    assert [(e["command"], e["resumed"], e["steps"]) for e in journal] == [("build", True, ["cleared report"])]

"""A command that rewrites a run, killed outright (SIGKILL) at a named point of its work and run
again, leaves the run as an uninterrupted run of it does; until then every other command refuses
the run, naming the command to run again (`pipeline.run.journal`). Each test works on copies of the
session's shared runs; `review classes apply`'s is in test_class_vetoes.py, beside its uninterrupted
apply."""

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke, killed_at
from shared_runs import copy_run

from imagenot.pipeline.amend.blocklist import blocklist_command
from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.commands.why import why
from imagenot.pipeline.review.command import review_command
from imagenot.pipeline.review.store import Store

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


def _refused_naming(run_dir: Path, line: str) -> None:
    """A reader (`why`) and another writer (`export`) refuse the run, naming the command to run again."""
    for command, args in ((export_command, ["--run", str(run_dir)]), (why, ["dog", "--run", str(run_dir)])):
        refused = invoke(command, args)
        assert refused.exit_code == 1 and f"`{line}` has not finished rewriting this run" in refused.output
        assert "run it again to finish it" in refused.output


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
    replaces them, the apply run again leaves the uninterrupted apply's run, even once the list file
    it was given is gone (it reads the run's copy, which its journal names); meanwhile a reader and
    another writer name it."""
    listed, whole = takedown
    killed = copy_run(downloaded_run, tmp_path / "killed" / "run")
    killed_at(point, ["blocklist", "apply", "--run", str(killed), "--list", str(listed)])

    _refused_naming(killed, f"imagenot blocklist apply --run {killed} --list {listed}")

    listed.rename(tmp_path / "away.txt")  # the module's other tests read it: put back below
    try:
        rerun = invoke(blocklist_command, ["apply", "--run", str(killed), "--list", str(listed)])
    finally:
        (tmp_path / "away.txt").rename(listed)
    assert rerun.exit_code == 0, rerun.output
    mine, uninterrupted = _dataset(killed), _dataset(whole)
    assert sorted(mine) == sorted(uninterrupted)
    assert [name for name in mine if mine[name] != uninterrupted[name]] == []
    assert _applied(killed) == _applied(whole)  # one record, its counts those of the uninterrupted apply
    assert json.loads((killed / "journal.json").read_text())[-1]["finished"] is not None


def _tsv(path: Path) -> list[dict]:
    return list(csv.DictReader(path.read_text().splitlines(), delimiter="\t"))


def _reviewed(downloaded_run: Path, dest: Path) -> Path:
    """A copy of the downloaded run whose review plan two raters answered: no to the first image of
    each class with reserve left (apply drops them and fetches their replacements), yes to the rest."""
    run_dir = copy_run(downloaded_run, dest)
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**config, "review": {"raters": 2}}))
    assert invoke(review_command, ["plan", "--run", str(run_dir)]).exit_code == 0
    reserve = {r["class_index"]: int(r["reserve"]) for r in _tsv(run_dir / "sample/class_sampling.tsv")}
    with_reserve = {
        int(r["class_index"])
        for r in _tsv(run_dir / "download/class_downloads.tsv")
        if reserve[r["class_index"]] > int(r["reserve_used"])
    }
    plan = pq.read_table(run_dir / "review/plan.parquet").to_pylist()
    first: dict[int, str] = {}
    for row in plan:
        first.setdefault(row["class_index"], row["image"])
    rejected = {first[c] for c in with_reserve}
    assert rejected, "the shared run has no class with reserve left: nothing to backfill"
    store = Store(str(run_dir))
    for name in ("Ann", "Bo"):
        rater = store.rater(name)
        for row in plan:
            store.save(rater, row["task"], [(row["image"], "no" if row["image"] in rejected else "yes")])
    store.close()
    return run_dir


def _review_files(run_dir: Path) -> dict[str, bytes]:
    """The dataset's files and the review plan (the replacements put up for review)."""
    return {**_dataset(run_dir), "review/plan.parquet": (run_dir / "review/plan.parquet").read_bytes()}


def test_a_review_apply_killed_anywhere_is_finished_by_its_rerun(downloaded_run, tmp_path, monkeypatch):
    """Killed with the rejected images on the dropped list, again inside the download that replaces
    them (the rerun redoes it), again inside the export that follows (the rerun writes it again):
    each rerun takes the unfinished entry over, and the last leaves the uninterrupted apply's run
    and says what it did. Meanwhile a reader and another writer name the command to run again.
    Each run of it names the run from another folder (relatively, then as `.`), as a user of a
    copied run may."""
    whole = _reviewed(downloaded_run, tmp_path / "whole" / "run")  # the same name: the export names its run
    applied = invoke(review_command, ["apply", "--run", str(whole)])
    assert applied.exit_code == 0, applied.output
    killed = _reviewed(downloaded_run, tmp_path / "killed" / "run")
    (tmp_path / "third").mkdir()
    args = ["review", "apply", "--run", "../killed/run"]
    for point in ("backfill dropped", "download ran", "export ran"):
        killed_at(point, args, cwd=tmp_path / "third")
        _refused_naming(killed, f"imagenot review apply --run {killed}")
    monkeypatch.chdir(killed)
    rerun = invoke(review_command, ["apply", "--run", "."])
    assert rerun.exit_code == 0, rerun.output
    said = [line for line in applied.output.splitlines() if line.startswith("review apply:")]
    assert said and said[0] in rerun.output  # the same counts: dropped, backfilled, put up for review
    mine, uninterrupted = _review_files(killed), _review_files(whole)
    assert sorted(mine) == sorted(uninterrupted)
    assert [name for name in mine if mine[name] != uninterrupted[name]] == []
    journal = json.loads((killed / "journal.json").read_text())
    assert [(e["command"], e["resumed"], e["finished"] is not None) for e in journal] == [("review apply", True, True)]


def test_an_apply_an_error_stops_part_way_says_how_to_finish_and_is_finished_by_its_rerun(
    downloaded_run, takedown, tmp_path
):
    """An error part way through (the listed images out of their tars and on the dropped list, the
    download that replaces them reads a broken list the config names) leaves the apply's entry
    unfinished, and its one error line says to run the same command again once the cause is fixed;
    so run, it leaves the uninterrupted apply's run."""
    listed, whole = takedown
    run_dir = copy_run(downloaded_run, tmp_path / "stopped" / "run")
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    broken, other = tmp_path / "broken.txt", tmp_path / "other.yaml"
    broken.write_text("bogus\n")
    other.write_text(yaml.safe_dump({**config, "download": {**config["download"], "blocklists": [str(broken)]}}))
    args = ["apply", "--run", str(run_dir), "--list", str(listed), "--config", str(other)]
    stopped = invoke(blocklist_command, args)
    line = f"imagenot blocklist apply --run {run_dir} --list {listed} --config {other}"
    assert stopped.exit_code == 1
    [error] = [said for said in stopped.output.splitlines() if said.startswith("Error: ")]
    assert f"{broken}:1: expected `KIND VALUE`" in error
    assert error.endswith(
        f"; `{line}` stopped part way through rewriting {run_dir}: once that is fixed, run it again to finish it "
        "(until then other commands refuse the run)"
    )
    [entry] = json.loads((run_dir / "journal.json").read_text())
    assert entry["line"] == line and entry["finished"] is None and "drop pass 1" in entry["remembered"]
    _refused_naming(run_dir, line)
    other.write_text(yaml.safe_dump(config))  # the cause fixed: the broken list out of the config
    rerun = invoke(blocklist_command, args)
    assert rerun.exit_code == 0, rerun.output
    assert _dataset(run_dir) == _dataset(whole) and _applied(run_dir) == _applied(whole)


def test_an_apply_refused_at_its_checks_leaves_nothing_to_finish(downloaded_run, tmp_path):
    """A list that does not parse, or a review apply before any review plan, is refused before the
    run's journal records the command: nothing is written, and no later command is refused for it."""
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    bad = tmp_path / "bad.txt"
    bad.write_text("bogus line\n")
    refused = invoke(blocklist_command, ["apply", "--run", str(run_dir), "--list", str(bad)])
    assert refused.exit_code == 1 and f"{bad}:1: expected `KIND VALUE`" in refused.output
    refused = invoke(review_command, ["apply", "--run", str(run_dir)])
    assert refused.exit_code == 1 and "review/plan.parquet does not exist" in refused.output
    assert "stopped part way" not in refused.output
    assert not (run_dir / "journal.json").exists() and not (run_dir / "review").exists()


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

"""`imagenot build`: all stages in order, skipping what is current, resuming what was killed."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import invoke
from shared_runs import copy_run

from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.commands.why import why
from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.frame.build import build
from imagenot.pipeline.run.files import read_tsv

OUTPUTS = ("tag/tagged", "select/selected", "score/first_pass", "rank/scored", "sample/dataset", "sample/reserve")


@pytest.fixture(scope="module")
def config_file(small_run):
    return small_run.config


@pytest.fixture(scope="module")
def uninterrupted(small_run):
    """The session's small run (read only here) and the stages its build ran."""
    return small_run.run, small_run.ran


def _files(run_dir: Path) -> dict[str, bytes]:
    found = {}
    for folder in OUTPUTS:
        for path in sorted((run_dir / folder).iterdir()):
            found[f"{folder}/{path.name}"] = path.read_bytes()
    for name in (
        "rank/class_list.tsv",
        "rank/ranking.tsv",
        "select/funnel.tsv",
        "select/synset_fates.tsv",
        "sample/class_sampling.tsv",
    ):
        found[name] = (run_dir / name).read_bytes()
    return found


def test_build_runs_every_stage_and_records_the_summary(config_file, uninterrupted):
    run_dir, ran = uninterrupted
    assert ran == ["corpus", "tag", "select", "score", "rank", "sample", "report"]
    summary = yaml.safe_load((run_dir / "summary.json").read_text())
    assert list(summary) == ["corpus", "rank", "report", "sample", "score", "select", "tag", "totals"]
    totals = summary["totals"]
    assert totals["captions_embedded"] == summary["score"]["captions_embedded"] + summary["rank"]["captions_embedded"]
    assert totals["images"] == summary["sample"]["images"] > 0
    assert summary["tag"]["rows_read"] == 12_000
    assert summary["rank"]["classes"] == 8
    assert all(summary[stage]["seconds"] >= 0 for stage in summary)
    stages = [stage for stage in summary if stage != "totals"]
    assert all(summary[stage]["rows"] == 12_000 and summary[stage]["cpu_seconds"] > 0 for stage in stages)
    assert totals["cpu_seconds"] == pytest.approx(sum(summary[stage]["cpu_seconds"] for stage in stages), abs=0.01)
    assert totals["cpu_us_per_row"] == pytest.approx(totals["cpu_seconds"] / 12_000 * 1e6, abs=1)
    assert load_config(run_dir / "config.yaml") == load_config(config_file)  # the resolved config


def test_a_second_build_does_nothing(config_file, uninterrupted, tmp_path):
    run_dir = copy_run(uninterrupted[0], tmp_path / "run")
    before = _files(run_dir)
    assert build(load_config(config_file), str(run_dir)) == []
    assert _files(run_dir) == before


def test_a_killed_build_resumes_to_the_same_dataset(config_file, uninterrupted, tmp_path):
    run_dir, _ = uninterrupted
    resumed = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "imagenot.pipeline.cli",
        "build",
        "--config",
        str(config_file),
        "--out",
        str(resumed),
    ]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while not (resumed / "score" / "fingerprint.json").exists() and process.poll() is None:
        assert time.monotonic() < deadline, "the build never reached the score stage"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not (resumed / "rank").exists()

    ran = build(load_config(config_file), str(resumed))
    assert ran == ["score", "rank", "sample", "report"]
    assert _files(resumed) == _files(run_dir)


def test_a_changed_late_setting_reruns_only_the_stages_after_it(config_file, uninterrupted, tmp_path):
    run_dir, _ = uninterrupted
    copy = copy_run(run_dir, tmp_path / "run")
    config = load_config(config_file)
    changed = config.model_copy(update={"ranking": config.ranking.model_copy(update={"classes": 4})})
    assert build(changed, str(copy)) == ["rank", "sample", "report"]
    assert len((copy / "rank" / "class_list.tsv").read_text().splitlines()) == 1 + 4
    assert build(config, str(copy), from_stage="score") == ["score", "rank", "sample", "report"]
    assert _files(copy) == _files(run_dir)


def test_a_changed_sense_decision_reruns_only_the_stages_that_read_its_value(config_file, uninterrupted, tmp_path):
    """The score stage records only whether sense contrast is on; the rank stage's pass shares and
    the sample's lists are cut at the margin and the fit floor (`scoring.none_of_these_fit`), and
    `imagenot why` and the card name the captions the floor dropped."""
    run_dir, _ = uninterrupted
    copy = copy_run(run_dir, tmp_path / "run")
    config = load_config(config_file)
    assert config.scoring.sense_margin == 0.0 and config.scoring.first_phase == "off"
    assert config.scoring.sense_decision().min_fit is None  # no floor for the default sentence method
    fit = pq.read_table(run_dir / "rank" / "scored", columns=["sense_fit"]).column("sense_fit").to_numpy()
    floor = float(np.quantile(fit, 0.2))  # about a fifth of the classes' captions fit no sense so well
    update = {"sense_margin": 0.02, "none_of_these_fit": {"sentence": floor}}
    changed = config.model_copy(update={"scoring": config.scoring.model_copy(update=update)})
    assert build(changed, str(copy)) == ["rank", "sample", "report"]
    before, after = _files(run_dir), _files(copy)
    assert {name for name in before if before[name] != after[name]} <= {
        name for name in before if name.startswith(("rank/", "sample/"))
    }
    shares = {r["wnid"]: r["pass_share"] for r in read_tsv(str(run_dir / "rank" / "ranking.tsv")) if r["pass_share"]}
    lower = {r["wnid"]: r["pass_share"] for r in read_tsv(str(copy / "rank" / "ranking.tsv")) if r["pass_share"]}
    assert all(float(lower[w]) <= float(shares[w]) for w in shares) and lower != shares
    scored = pq.read_table(copy / "rank" / "scored", columns=["wnid", "sense_fit"]).to_pydict()
    unfit = Counter(w for w, f in zip(scored["wnid"], scored["sense_fit"]) if f < floor)
    sample = json.loads((copy / "sample" / "figures.json").read_text())
    assert sample["none_of_these_fit"] == sum(unfit.values()) > 0 and sample["none_of_these_fit_by_class"] == unfit
    wnid = unfit.most_common(1)[0][0]
    said = invoke(why, [wnid, "--run", str(copy)])
    assert f"{unfit[wnid]:,} captions name none of its senses (none_of_these_fit)" in said.output, said.output
    assert "`scoring.none_of_these_fit`" in (copy / "report" / "card.md").read_text()
    assert build(config, str(copy)) == ["rank", "sample", "report"]
    assert _files(copy) == _files(run_dir)


def test_build_command_names_a_bad_config(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("ranking:\n  classes: 0\n")
    result = invoke(build_command, ["--config", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code != 0
    assert "ranking.classes: Input should be greater than or equal to 1" in result.output


def test_the_build_command_ends_with_what_came_out_and_where(config_file, uninterrupted, tmp_path):
    run_dir = copy_run(uninterrupted[0], tmp_path / "run")
    result = invoke(build_command, ["--config", str(config_file), "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{run_dir}: 8 classes, ") and "ran:     nothing (all stages up to date)" in lines[1]
    assert "Warning" not in result.output and f"report:  {run_dir}/report/report.html" in result.output


def test_why_gives_index_counts_and_reference_relation(uninterrupted, index):
    import csv
    import json

    from imagenot.pipeline.commands.why import why

    run_dir, _ = uninterrupted
    c = json.loads((run_dir / "rank" / "classes.json").read_text())[1]
    answer = invoke(why, [c["name"], "--run", str(run_dir)]).output
    assert f"{c['wnid']} {c['name']}: a class, index 1 of 8 (gloss similarity score" in answer
    assert " of 5 images (" in answer and "\n  reference: " in answer
    with open(run_dir / "rank" / "ranking.tsv", newline="") as f:
        ranking = list(csv.DictReader(f, delimiter="\t"))
    below = next(r for r in ranking if r["fate"] == "below_threshold")
    answer = invoke(why, [below["wnid"], "--run", str(run_dir)]).output
    assert (
        f"score {below['score']} below the threshold 0.32 for packaged:all-MiniLM-L6-v2 (ranking.thresholds)" in answer
    )
    beyond = next(r for r in ranking if r["fate"] == "beyond_top_k")
    answer = invoke(why, [beyond["wnid"], "--run", str(run_dir)]).output
    assert "only the best 8 become classes (ranking.classes)" in answer
    answer = invoke(why, ["Crane", "--run", str(run_dir)]).output  # a bare word, any case: every noun sense
    assert answer.startswith("'Crane' has 5 noun senses:") and answer.count("\n  reference: ") == 5
    assert "is in the reference set imagenet1k" in answer and "shares a lemma with imagenet1k's" in answer

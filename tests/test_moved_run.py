"""A run is a folder that can be moved: a copy of the session's downloaded run, elsewhere, is built
again from its sample stage, cleaned against a blocklist, audited with `--drop` and exported, each
command run from a third folder that names the run relatively or as `.`; the copy ends as the
original's bytes where it should, and no file of it names where it was built or the folders its
commands ran in. A moved run whose corpus is gone is refused before anything is written, naming the
file and how to give its new place, and goes on from there; a build killed inside its corpus stage
is finished by its rerun on the run moved elsewhere, which runs every stage up to the sample's
there. (`review apply` and `review classes apply` run from a third folder on their copies in
test_crash_safety.py and test_class_vetoes.py; a run copied into a bucket and back in
test_bucket.py.)"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke, killed_at
from shared_runs import copy_run
from test_image_embeddings import TINY_VIT

from imagenot.pipeline.amend.blocklist import blocklist_command
from imagenot.pipeline.audit.duplicates import duplicates_command
from imagenot.pipeline.audit.embeddings import embed_command
from imagenot.pipeline.corpus.synth import ground_truth_path, synth_corpus

build_command, corpus_command, export_command = (cli_command(name) for name in ("build", "corpus", "export"))
sample_command = cli_command("sample")
TEXT_FILES = (".json", ".yaml", ".tsv", ".md", ".html", ".txt")
# What stays the same when the run is built again from its sample stage: the dataset, row for row.
REBUILT_FILES = ("sample/dataset/*.parquet", "download/dataset/*.parquet", "dataset/*.parquet", "dataset/classes.txt")


def _ok(command, args: list[str]) -> str:
    result = invoke(command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _naming(run_dir: Path, places: list[Path]) -> dict[str, list[str]]:
    """The text files of the run that name one of `places`, with the places each names."""
    found = {}
    for path in sorted(run_dir.rglob("*")):
        if path.suffix in TEXT_FILES and path.is_file():
            text = path.read_text(errors="replace")
            if named := [str(place) for place in places if str(place) in text]:
                found[str(path.relative_to(run_dir))] = named
    return found


def _files(run_dir: Path, patterns: tuple[str, ...]) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for pattern in patterns for p in sorted(run_dir.glob(pattern))}


@pytest.fixture
def moved(downloaded_run, tmp_path) -> Path:
    """A copy of the shared downloaded run, named `run` as the original is (the export names its run)."""
    return copy_run(downloaded_run, tmp_path / "moved" / "run")


def test_every_command_that_writes_a_run_works_on_a_moved_copy_from_a_third_folder(
    downloaded_run, small_run, moved, tmp_path, monkeypatch
):
    built_in = [downloaded_run, small_run.run]  # the run's stages ran in both (the download's copied the small's)
    assert _naming(moved, built_in) == {}
    third, inputs = tmp_path / "third", tmp_path / "inputs"
    third.mkdir(), inputs.mkdir()
    monkeypatch.chdir(third)
    run = os.path.relpath(moved, third)

    # the run's config with the image audits' tiny CLIP, its model file named from this folder
    (inputs / "tiny-vit.json").write_text(json.dumps(TINY_VIT))
    config = yaml.safe_load((moved / "config.yaml").read_text())
    audit = {"clip_model": "tiny-vit", "clip_model_config": os.path.relpath(inputs / "tiny-vit.json"), "batch_size": 16}
    (inputs / "audit.yaml").write_text(yaml.safe_dump({**config, "image_audit": audit}))

    before = _files(moved, REBUILT_FILES)
    # from the sample stage, which reads the corpus the tag stage read (the stages before it: below)
    said = _ok(build_command, ["--config", os.path.relpath(inputs / "audit.yaml"), "--out", run, "--from", "sample"])
    assert "ran:     sample, download, report, export" in said
    assert f"dataset: {moved}/dataset/" in said
    assert _files(moved, REBUILT_FILES) == before  # its own corpus, read where the run is now

    first = pq.read_table(moved / "download/dataset", columns=["sha256"]).column("sha256")[0].as_py()
    (inputs / "takedown.txt").write_text(f"sha256 {first}\n")
    said = _ok(blocklist_command, ["apply", "--run", run, "--list", os.path.relpath(inputs / "takedown.txt")])
    assert '"images_removed": 1' in said

    _ok(embed_command, ["--run", run])
    _ok(duplicates_command, ["--run", run, "--drop"])  # the demo's stock photos recur: some are dropped
    dropped = json.loads((moved / "audit/duplicates/figures.json").read_text())["drop"]["dropped"]
    assert sum(dropped.values()) > 0

    monkeypatch.chdir(moved)
    _ok(export_command, ["--run", "."])
    exported = json.loads((moved / "export/figures.json").read_text())
    assert exported["path"] == "dataset" and json.loads((moved / "dataset/_info.json").read_text())["name"] == "run"

    journal = json.loads((moved / "journal.json").read_text())
    assert [entry["command"] for entry in journal] == [
        "build",
        "blocklist apply",
        "audit embed",
        "audit duplicates",
        "export",
    ]
    assert all(
        entry["finished"] and f" {moved} " in f"{entry['line']} " for entry in journal
    )  # named as given: absolute
    assert journal[1]["args"]["--list"] == str(inputs / "takedown.txt")  # as given, from the folder it was given in
    assert yaml.safe_load((moved / "config.yaml").read_text())["image_audit"]["clip_model_config"] == str(
        inputs / "tiny-vit.json"
    )
    assert _naming(moved, [*built_in, third]) == {}  # nothing recorded from the folder a command ran in
    assert list(_naming(moved, [moved])) == ["journal.json"]  # its own files by their places in it: the commands


def test_a_moved_run_whose_corpus_is_gone_is_refused_before_it_writes_and_goes_on_from_its_new_place(
    moved, tmp_path, monkeypatch
):
    """The moved copy's corpus taken out of it, to a folder of its own that corpus.paths names (as a
    run built from a corpus on disk), then moved again: every command that would read it refuses
    in one line, naming the place and how to give the new one, and leaves the run as it was; given
    the new place, the run goes on."""
    old, new = tmp_path / "disk-a" / "corpus", tmp_path / "disk-b" / "corpus"
    old.mkdir(parents=True)
    for part in (moved / "corpus").glob("part-*.parquet"):
        shutil.move(part, old / part.name)  # its times kept, as a copy that keeps them (cp -a, rsync -a) does
    config = yaml.safe_load((moved / "config.yaml").read_text())
    config["corpus"] = {**config["corpus"], "synth": None, "paths": [f"{old}/part-*.parquet"]}
    (moved / "config.yaml").write_text(yaml.safe_dump(config))
    shutil.move(old, new)
    third = tmp_path / "third"
    third.mkdir()
    monkeypatch.chdir(third)
    run = os.path.relpath(moved, third)
    untouched = {p: p.read_bytes() for p in sorted(moved.rglob("*")) if p.is_file()}
    for command, args in (
        (build_command, ["--config", f"{run}/config.yaml", "--out", run, "--from", "sample"]),
        (sample_command, ["--run", run]),
        (cli_command("review"), ["classes", "apply", "--run", run]),
    ):
        refused = invoke(command, args)
        assert refused.exit_code == 1, refused.output
        [line] = [said for said in refused.output.splitlines() if said.startswith("Error: ")]
        assert f"corpus path '{old}/part-*.parquet' matches no file" in line
        assert (
            f"if the corpus moved, name its new place in corpus.paths: imagenot build --config CONFIG --out {moved}"
            in line
        )
        assert "run it again" not in line
        assert {p: p.read_bytes() for p in sorted(moved.rglob("*")) if p.is_file()} == untouched

    (tmp_path / "new.yaml").write_text(
        yaml.safe_dump({**config, "corpus": {**config["corpus"], "paths": [f"{new}/part-*.parquet"]}})
    )
    said = _ok(build_command, ["--config", str(tmp_path / "new.yaml"), "--out", run])
    assert "ran:     report" in said  # the corpus is the one the tag stage read: nothing else to redo
    _ok(sample_command, ["--run", run])
    manifest = json.loads((moved / "sample/manifest.json").read_text())
    assert [entry["path"] for entry in manifest["corpus_shards"]] == [
        str(p) for p in sorted(new.glob("part-*.parquet"))
    ]


def test_a_build_killed_inside_its_corpus_stage_is_finished_by_its_rerun_wherever_the_run_went(
    tmp_path, monkeypatch, index
):
    """Killed with its synthetic corpus written but the stage not marked done, the build run again,
    on the run moved elsewhere, writes the corpus whole (the same bytes as written in one go, the
    ground truth beside the corpus, not in it) and goes on."""
    tiny = {"corpus": {"synth": {"rows": 300, "seed": 3, "shard_rows": 100}}, "scoring": {"cache_dir": str(tmp_path)}}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    built = tmp_path / "a" / "run"
    killed_at("corpus ran", ["build", "--config", str(tmp_path / "tiny.yaml"), "--out", str(built)])
    assert not (built / "corpus/DONE").exists() and list((built / "corpus").glob("part-*.parquet"))
    moved = tmp_path / "b" / "run"
    shutil.move(built.parent, moved.parent)
    monkeypatch.chdir(moved)
    said = _ok(build_command, ["--config", "../../tiny.yaml", "--out", "."])
    assert "ran:     corpus, tag, select, score, rank, sample, report" in said and (moved / "corpus/DONE").exists()
    synth_corpus(tmp_path / "direct", 300, 3, shard_rows=100, index=index)
    assert _files(moved / "corpus", ("part-*.parquet",)) == _files(tmp_path / "direct", ("part-*.parquet",))
    truth = Path(ground_truth_path(str(moved / "corpus")))
    assert truth.read_bytes() == (tmp_path / "direct_ground_truth.parquet").read_bytes()
    assert json.loads((moved / "journal.json").read_text())[-1]["finished"] is not None

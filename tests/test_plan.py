"""`imagenot plan`: footers only, per-stage work and cost, and refusals before any worker starts."""

import json
import math

import pytest
import yaml
from cli_runner import invoke

from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.plan.command import plan_command


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, index):
    folder = tmp_path_factory.mktemp("plan-corpus")
    synth_corpus(folder, 700, 1, shard_rows=300, index=index)
    return folder


def _config(folder, **sections) -> str:
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(sections))
    return str(path)


def test_the_plan_counts_rows_from_the_footers_and_prices_each_stage(corpus, tmp_path):
    config = _config(
        tmp_path,
        corpus={"paths": [str(corpus / "part-*.parquet")]},
        ranking={"classes": 10},
        download={"enabled": True, "max_rounds": 3},
    )
    args = [
        "--config",
        config,
        "--out",
        str(tmp_path / "run"),
        "--json",
        "--sample",
        "0",
        "--candidates",
        "2",
        "--price-vcpu-hour",
        "1",
    ]
    result = invoke(plan_command, args)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["corpus"] == {"rows": 700, "shards": 3}
    stages = plan["stages"]
    assert list(stages) == ["tag", "select", "score", "rank", "sample", "download"]
    # 3 files of at most 1,000,000 rows (corpus.work_unit_rows): grouped into one work unit
    assert stages["tag"]["work"] == {"rows": 700, "shards": 3, "work_units": 1, "work_unit_rows": 1_000_000}
    assert stages["score"]["work"]["captions_scored"] == 2 * 200 * 0.4  # candidates x first-pass captions x fill
    # N / (1 - the dead URL share) requests a class, the reserve at most; at the measured fetch rate
    fetch = {"images_to_fetch_at_most": 10 * 1300, "requests": 10 * 1250, "bytes": 10 * 1250 * 150_000}
    assert stages["download"]["work"] == fetch and stages["download"]["jobs"] == 3
    assert stages["download"]["process_seconds"] == round(12_500 / 107.0, 1)
    assert plan["cost_usd"] == pytest.approx(plan["vcpu_hours"] + 1.875 * 0.045, abs=0.01)  # and Cloud NAT's bytes
    assert plan["jobs"] == 1 + 2 + 2 + 1 + 1 + 3
    assert plan["assumptions"]["candidates"] == 2
    assert not (tmp_path / "run").exists()  # the write probe is gone, and the folder it made


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_a_local_plan_counts_the_command_process_and_each_local_worker_once(corpus, tmp_path, workers):
    """Locally each worker is one process (not Dataflow's processes per worker), and one worker runs
    in the command's process: tag's fixed CPU is its driver part plus its part per worker process."""
    config = _config(tmp_path, corpus={"paths": [str(corpus / "part-*.parquet")]}, runner={"workers": workers})
    result = invoke(plan_command, ["--config", config, "--sample", "0", "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    rates, tag = plan["assumptions"], plan["stages"]["tag"]
    apart = workers if workers > 1 else 0
    fixed = rates["tag_driver_s"] + rates["tag_fixed_s"] * apart
    assert tag["process_seconds"] == round(fixed + 700 * rates["tag_us_per_row"] / 1e6, 1)


def test_a_gpu_moves_the_encoder_work_to_gpu_hours(tmp_path):
    dataflow = {
        "project": "p",
        "region": "r",
        "temp_location": "gs://b/tmp",
        "worker_image": "w",
        "scoring_accelerator": "type:nvidia-tesla-t4;count:1",
    }
    config = _config(tmp_path, corpus={"synth": {"rows": 1_000_000}}, runner={"kind": "dataflow", "dataflow": dataflow})
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.plan.estimate import Rates, make_plan

    on_gpu = make_plan(load_config(config), 1_000_000, 10, Rates(), workers=10)["stages"]["rank"]
    on_cpu = make_plan(
        load_config(_config(tmp_path, corpus={"synth": {"rows": 1_000_000}})), 1_000_000, 10, Rates(), workers=10
    )["stages"]["rank"]
    assert on_gpu["gpu_hours"] > 0 and on_cpu["gpu_hours"] == 0
    assert on_gpu["vcpu_hours"] < on_cpu["vcpu_hours"] / 10  # the process's own start stays on its CPU


def _rank_and_score(tmp_path, rows: int, first_phase: str, rates, **sampling) -> dict:
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.plan.estimate import make_plan

    config = _config(
        tmp_path,
        scoring={"first_phase": first_phase},
        ranking={"classes": 10},
        sampling={"images_per_class": 100, "reserve_factor": 0.5, **sampling},
    )
    return make_plan(load_config(config), rows, 10, rates, workers=1)["stages"]


def test_the_encoder_embeds_each_distinct_caption_once_and_not_again_in_rank(tmp_path):
    from imagenot.pipeline.plan.estimate import Rates

    rates = Rates(
        candidates=100,
        first_pass_fill=0.5,
        class_share=1e-3,
        first_pass_duplicate_share=0.1,
        class_duplicate_share=0.25,
    )
    stages = _rank_and_score(tmp_path, 1_000_000, "off", rates)
    assert stages["score"]["work"]["captions_scored"] == 100 * 200 * 0.5
    assert stages["score"]["work"]["captions_to_embed"] == 100 * 200 * 0.5 * 0.9
    # 1,000 captions a class on average; the first 200 of each (a random sample) embedded by score
    assert stages["rank"]["work"]["captions_scored"] == 10 * 1000
    assert stages["rank"]["work"]["captions_to_embed"] == round(10 * 1000 * math.exp(-200 / 1000) * 0.75)


def test_a_sense_method_that_reads_the_word_pays_its_pass_over_every_scored_caption(tmp_path):
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.plan.estimate import Rates, make_plan

    rates = Rates(candidates=100, class_share=1e-3)
    methods = ("sentence", "trained")
    configs = {method: load_config(_config(tmp_path, scoring={"sense_method": method})) for method in methods}
    stages = {method: make_plan(config, 10**6, 10, rates, workers=1)["stages"] for method, config in configs.items()}
    for stage in ("score", "rank"):
        extra = stages["trained"][stage]["process_seconds"] - stages["sentence"][stage]["process_seconds"]
        assert extra == pytest.approx(stages["trained"][stage]["work"]["captions_scored"] * 2.2e-3, abs=0.1)
    assert stages["trained"]["tag"] == stages["sentence"]["tag"]


def test_the_static_first_phase_bounds_the_encoder_whatever_the_corpus_size(tmp_path):
    from imagenot.pipeline.plan.estimate import Rates

    rates = Rates(class_share=1e-3)
    small, large = (_rank_and_score(tmp_path, rows, "static", rates)["rank"] for rows in (1_000_000, 10_000_000))
    exact = _rank_and_score(tmp_path, 10_000_000, "off", rates)["rank"]
    m = 2 * (100 + 50)  # Config.exact_per_class: 2 x (N + reserve)
    assert large["work"]["captions_scored"] == round(10 * 10_000 * (1 - math.exp(-m / 10_000))) < 10 * m
    assert large["work"]["captions_scored"] == pytest.approx(small["work"]["captions_scored"], rel=0.15)
    assert large["work"]["first_phase_captions"] == exact["work"]["captions_scored"] == 10 * 10_000
    assert large["work"]["captions_to_embed"] < exact["work"]["captions_to_embed"] / 30
    # the static pass reads every class caption: its cost grows, at the static model's rate
    growth = large["process_seconds"] - small["process_seconds"]
    assert growth == pytest.approx(
        (10 * 10_000 - 10 * 1_000) / rates.static_captions_per_s
        + (large["work"]["captions_to_embed"] - small["work"]["captions_to_embed"]) / rates.encoder_captions_per_s,
        abs=0.2,
    )


def test_a_shard_without_a_mapped_column_is_refused(corpus, tmp_path):
    config = _config(tmp_path, corpus={"paths": [str(corpus / "part-*.parquet")], "columns": {"caption": "CAPTION"}})
    result = invoke(plan_command, ["--config", config])
    assert result.exit_code == 1
    assert "part-00000.parquet" in result.output and "CAPTION" in result.output


def test_a_threshold_table_without_the_model_is_refused(tmp_path):
    config = _config(tmp_path, scoring={"model": "other-model"})
    result = invoke(plan_command, ["--config", config])
    assert result.exit_code == 1 and "ranking.thresholds has no entry for scoring.model 'other-model'" in result.output


def test_a_bucket_it_cannot_write_is_refused(gcs_bucket, corpus, tmp_path):
    config = _config(tmp_path, corpus={"paths": [str(corpus / "part-*.parquet")]})
    assert invoke(plan_command, ["--config", config, "--out", f"{gcs_bucket}/plan-run"]).exit_code == 0
    result = invoke(plan_command, ["--config", config, "--out", "gs://no-such-bucket/run"])
    assert result.exit_code == 1 and "gs://no-such-bucket/run: cannot write and list there" in result.output


def test_the_priority_path_scores_a_multiple_of_m_and_embeds_what_the_first_pass_did_not(tmp_path):
    from imagenot.pipeline.plan.estimate import Rates

    rates = Rates(class_share=1e-3, priority_rounds=3.0, priority_miss_share=0.2)
    small, large = (
        _rank_and_score(tmp_path, rows, "priority", rates, strategy="threshold", threshold=0.5)["rank"]
        for rows in (10_000_000, 100_000_000)
    )
    bound = 3.0 * 2 * (100 + 50)  # priority_rounds x Config.exact_per_class
    assert large["work"]["captions_scored"] == round(10 * 100_000 * -math.expm1(-bound / 100_000)) < 10 * bound
    assert large["work"]["captions_to_embed"] == round(large["work"]["captions_scored"] * 0.2)
    assert large["work"]["captions_scored"] == pytest.approx(small["work"]["captions_scored"], rel=0.05)
    # its passes read every class caption, at their own rate
    growth = large["process_seconds"] - small["process_seconds"]
    assert growth == pytest.approx(
        (10 * 100_000 - 10 * 10_000) / rates.priority_pass_captions_per_s
        + (large["work"]["captions_to_embed"] - small["work"]["captions_to_embed"]) / rates.encoder_captions_per_s,
        abs=0.2,
    )


def _build_figures(run) -> dict:
    """What the finished build found: candidates, classes, captions scored and embedded (score + rank,
    its embedding cache fresh), and the classes that any K would get (those past the threshold and
    min_captions: `class` or `beyond_top_k` in ranking.tsv)."""
    summary = json.loads((run / "summary.json").read_text())
    fates = [line.split("\t")[3] for line in (run / "rank" / "ranking.tsv").read_text().splitlines()[1:]]
    return {
        "candidates": summary["select"]["candidates"],
        "classes": summary["rank"]["classes"],
        "captions_scored": summary["score"]["rows_scored"] + summary["rank"]["rows_scored"],
        "captions_embedded": summary["score"]["captions_embedded"] + summary["rank"]["captions_embedded"],
        "passing": sum(fate in ("class", "beyond_top_k") for fate in fates),
    }


@pytest.mark.parametrize("more_classes", [False, True])
def test_the_sampled_plan_matches_the_build_and_warns_when_and_only_when_it_falls_short(
    small_run, tmp_path, more_classes
):
    import yaml as yaml_lib

    built = _build_figures(small_run.run)
    settings = yaml_lib.safe_load(small_run.config.read_text())
    asked = built["passing"] * 3 if more_classes else settings["ranking"]["classes"]  # a class pool too small for K
    settings["ranking"]["classes"] = asked
    config = _config(tmp_path, **settings)
    result = invoke(plan_command, ["--config", config, "--json"])
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["sample"]["rows"] == 12_000  # the whole small corpus: the projection is exact
    assert plan["candidates"]["mid"] == built["candidates"]
    expected_classes = min(asked, built["passing"])
    # the label model's pass share is a range no sample knows (Rates.label_keep_*): the build within it
    assert plan["classes"]["low"] <= expected_classes <= plan["classes"]["high"], plan["classes"]
    if not more_classes:  # the build ranked K = 8: its captions are those of 8 classes
        for key in ("captions_scored", "captions_embedded"):
            assert abs(plan[key]["mid"] - built[key]) <= 0.15 * built[key], (key, plan[key], built[key])
            assert plan[key]["low"] <= built[key] <= plan[key]["high"], (key, plan[key], built[key])
    cannot = [w for w in plan["warnings"] if w.startswith("cannot fill")]
    assert bool(cannot) == (expected_classes < asked)
    if cannot:
        assert "binding step" in cannot[0]
    for key in (
        "candidates",
        "classes",
        "captions_scored",
        "captions_embedded",
        "images",
        "download_requests",
        "download_bytes",
        "vcpu_hours",
        "gpu_hours",
        "cost_usd",
    ):
        assert plan[key]["low"] <= plan[key]["mid"] <= plan[key]["high"], key


def test_the_sample_is_spread_over_shards_and_seeded(corpus):
    from imagenot.pipeline.config.schema import Config
    from imagenot.pipeline.plan.sample import sample_batches

    config = Config.model_validate({"corpus": {"paths": [str(corpus / "part-*.parquet")]}})
    ids = [b.batch.column("row_id").to_pylist() for b in sample_batches(config, 90, seed=1)]
    again = [b.batch.column("row_id").to_pylist() for b in sample_batches(config, 90, seed=1)]
    assert ids == again and len(ids) == 3  # one row group of each shard
    assert {row.split(":")[0] for batch in ids for row in batch} == {"part-00000", "part-00001", "part-00002"}
    other_seed = [b.batch.column("row_id").to_pylist() for b in sample_batches(config, 90, seed=2)]
    assert sum(map(len, ids)) <= 90 and ids != other_seed


def test_broad_candidates_are_the_last_taken_as_classes():
    from imagenot.pipeline.plan.projection import broad_fence, choice_spread, class_weights

    eligible = [float(c) for c in range(20, 60, 2)] + [5_000.0]  # 20 typical candidates and a broad word
    assert 58 < broad_fence(eligible) < 5_000
    few = class_weights(eligible, classes=10, keep=0.8, broad=True)  # K binds: 16 typical ones pass, 10 taken
    assert sum(w for _, w in few) == pytest.approx(10) and dict(few)[5_000.0] == 0
    many = class_weights(eligible, classes=17, keep=0.8, broad=True)  # K does not: the broad one passes too
    assert dict(many)[5_000.0] == pytest.approx(1) and sum(w for _, w in many) == pytest.approx(17)
    blind = class_weights(eligible, classes=10, keep=0.8, broad=False)  # the high end: all alike
    assert dict(blind)[5_000.0] == pytest.approx(10 / 21)
    # the classes' mean captions: the narrower, the more classes are drawn from the pool
    assert choice_spread(few, 10) > choice_spread(few, 19) > 0 == choice_spread(few, 0)


def test_the_plan_projects_from_the_cpu_a_build_measured(small_run, tmp_path):
    summary = json.loads((small_run.run / "summary.json").read_text())
    args = ["--config", str(small_run.config), "--sample", "0", "--json", "--rates-from", str(small_run.run)]
    result = invoke(plan_command, args)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assumed = plan["assumptions"]
    for stage in ("tag", "select", "sample"):  # the build's CPU per corpus row, less its one process's fixed part
        driver = assumed.get(f"{stage}_driver_s", assumed[f"{stage}_fixed_s"])  # one local worker: no other process
        own = max(summary[stage]["cpu_seconds"] - driver, 0)
        assert assumed[f"{stage}_us_per_row"] == round(own / 12_000 * 1e6, 2), stage
    for stage, figures in plan["stages"].items():  # each stage's CPU as summary.json gives a build's
        assert figures["rows"] == 12_000, stage
        assert figures["cpu_us_per_row"] == pytest.approx(figures["process_seconds"] / 12_000 * 1e6, abs=5), stage
    refused = invoke(plan_command, [*args[:-1], str(tmp_path)])
    assert refused.exit_code == 1 and "--rates-from" in refused.output and "no summary.json" in refused.output

"""`imagenot plan`: footers only, per-stage work and cost, and refusals before any worker starts."""

import json
import math

import pytest
import yaml
from cli_runner import invoke

from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.plan import plan_command


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
    config = _config(tmp_path, corpus={"paths": [str(corpus / "part-*.parquet")]}, ranking={"classes": 10},
                     download={"enabled": True, "max_rounds": 3})  # fmt: skip
    args = ["--config", config, "--out", str(tmp_path / "run"), "--json", "--candidates", "2", "--price-vcpu-hour", "1"]
    result = invoke(plan_command, args)
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["corpus"] == {"rows": 700, "shards": 3}
    stages = plan["stages"]
    assert list(stages) == ["tag", "select", "score", "rank", "sample", "download"]
    assert stages["tag"]["work"] == {"rows": 700, "shards": 3}
    assert stages["score"]["work"]["captions_scored"] == 2 * 200 * 0.4  # candidates x first-pass captions x fill
    assert stages["download"] == {"work": {"images_to_fetch_at_most": 10 * 1300}, "jobs": 3, "process_seconds": None, "vcpu_hours": None, "gpu_hours": 0.0}
    assert plan["jobs"] == 1 + 2 + 2 + 1 + 1 + 3
    assert plan["cost_usd"] == pytest.approx(plan["vcpu_hours"], abs=0.01)  # at USD 1 per vCPU-hour, no GPU
    assert plan["assumptions"]["candidates"] == 2
    assert not (tmp_path / "run").exists()  # the write probe is gone, and the folder it made


def test_a_gpu_moves_the_encoder_work_to_gpu_hours(tmp_path):
    dataflow = {"project": "p", "region": "r", "temp_location": "gs://b/tmp", "worker_image": "w",
                "scoring_accelerator": "type:nvidia-tesla-t4;count:1"}  # fmt: skip
    config = _config(tmp_path, corpus={"synth": {"rows": 1_000_000}}, runner={"kind": "dataflow", "dataflow": dataflow})
    from imagenot.pipeline.config import load_config
    from imagenot.pipeline.plan import Rates, make_plan

    on_gpu = make_plan(load_config(config), 1_000_000, 10, Rates(), workers=10)["stages"]["rank"]
    on_cpu = make_plan(load_config(_config(tmp_path, corpus={"synth": {"rows": 1_000_000}})), 1_000_000, 10, Rates(), workers=10)["stages"]["rank"]
    assert on_gpu["gpu_hours"] > 0 and on_cpu["gpu_hours"] == 0
    assert on_gpu["vcpu_hours"] < on_cpu["vcpu_hours"] / 10  # the process's own start stays on its CPU


def _rank_and_score(tmp_path, rows: int, first_phase: str, rates, **sampling) -> dict:
    from imagenot.pipeline.config import load_config
    from imagenot.pipeline.plan import make_plan

    config = _config(tmp_path, scoring={"first_phase": first_phase}, ranking={"classes": 10},
                     sampling={"images_per_class": 100, "reserve_factor": 0.5, **sampling})  # fmt: skip
    return make_plan(load_config(config), rows, 10, rates, workers=1)["stages"]


def test_the_encoder_embeds_each_distinct_caption_once_and_not_again_in_rank(tmp_path):
    from imagenot.pipeline.plan import Rates

    rates = Rates(candidates=100, first_pass_fill=0.5, class_share=1e-3, first_pass_duplicate_share=0.1, class_duplicate_share=0.25)
    stages = _rank_and_score(tmp_path, 1_000_000, "off", rates)
    assert stages["score"]["work"]["captions_scored"] == 100 * 200 * 0.5
    assert stages["score"]["work"]["captions_to_embed"] == 100 * 200 * 0.5 * 0.9
    # 1,000 captions a class on average; the first 200 of each (a random sample) embedded by score
    assert stages["rank"]["work"]["captions_scored"] == 10 * 1000
    assert stages["rank"]["work"]["captions_to_embed"] == round(10 * 1000 * math.exp(-200 / 1000) * 0.75)


def test_the_static_first_phase_bounds_the_encoder_whatever_the_corpus_size(tmp_path):
    from imagenot.pipeline.plan import Rates

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
    assert growth == pytest.approx((10 * 10_000 - 10 * 1_000) / rates.static_captions_per_s
                                           + (large["work"]["captions_to_embed"] - small["work"]["captions_to_embed"]) / rates.encoder_captions_per_s, abs=0.2)  # fmt: skip


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
    from imagenot.pipeline.plan import Rates

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
    assert growth == pytest.approx((10 * 100_000 - 10 * 10_000) / rates.priority_pass_captions_per_s
                                   + (large["work"]["captions_to_embed"] - small["work"]["captions_to_embed"]) / rates.encoder_captions_per_s, abs=0.2)  # fmt: skip

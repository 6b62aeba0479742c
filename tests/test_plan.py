"""`imagenot plan`: footers only, per-stage work and cost, and refusals before any worker starts."""

import json

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
    assert stages["score"]["work"]["captions_to_embed"] == 2 * 200  # candidates x first-pass captions
    assert stages["download"] == {"work": {"images_to_fetch_at_most": 10 * 1300}, "jobs": 3, "process_seconds": None, "vcpu_hours": None, "gpu_hours": 0.0}
    assert plan["jobs"] == 1 + 2 + 2 + 1 + 1 + 3
    assert plan["cost_usd"] == pytest.approx(plan["vcpu_hours"], abs=0.01)  # at USD 1 per vCPU-hour, no GPU
    assert plan["assumptions"]["candidates"] == 2
    assert not list((tmp_path / "run").iterdir())  # the write probe is gone


def test_a_gpu_moves_the_encoder_work_to_gpu_hours(tmp_path):
    dataflow = {"project": "p", "region": "r", "temp_location": "gs://b/tmp", "worker_image": "w",
                "scoring_accelerator": "type:nvidia-tesla-t4;count:1"}  # fmt: skip
    config = _config(tmp_path, corpus={"synth": {"rows": 1_000_000}}, runner={"kind": "dataflow", "dataflow": dataflow})
    from imagenot.pipeline.config import load_config
    from imagenot.pipeline.plan import Rates, make_plan

    plan = make_plan(load_config(config), 1_000_000, 10, Rates(), workers=10)
    assert plan["stages"]["rank"]["gpu_hours"] > 0 and plan["stages"]["rank"]["vcpu_hours"] == 0
    assert plan["stages"]["tag"]["vcpu_hours"] > 0 and plan["gpu_hours"] > 0


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
    assert result.exit_code == 1 and "gs://no-such-bucket/run: cannot write and list the run folder" in result.output

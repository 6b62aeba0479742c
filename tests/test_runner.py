"""Runner options as documented: local in-process FnApiRunner, or Dataflow (never submitted here)."""

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import GoogleCloudOptions, StandardOptions, WorkerOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.environments import EmbeddedPythonEnvironment

from imagenot.pipeline.config.schema import ConfigError, Dataflow, Runner, load_config
from imagenot.pipeline.frame.runner import make_pipeline, pipeline_options, scoring_hints

DATAFLOW = Dataflow(
    project="my-project",
    region="europe-west4",
    temp_location="gs://my-bucket/tmp",
    machine_type="n1-standard-8",
    max_workers=250,
    worker_image="europe-west4-docker.pkg.dev/my-project/imagenot/worker:1",
    scoring_accelerator="type:nvidia-tesla-t4;count:1;install-nvidia-driver",
)


def test_local_runs_on_the_in_process_fn_api_runner():
    pipeline = make_pipeline(Runner(workers=2))
    assert isinstance(pipeline.runner, FnApiRunner)
    assert pipeline_options(Runner(workers=2)).get_all_options()["direct_num_workers"] == 2
    # several workers: Beam's worker processes, their stderr (tracebacks it prints) kept for -v
    assert pipeline.runner._default_environment.command_string.endswith("sdk_worker_main 2>/dev/null")
    assert isinstance(make_pipeline(Runner()).runner._default_environment, EmbeddedPythonEnvironment)  # in-process
    assert scoring_hints(Runner()) == {}


def test_dataflow_options_are_assembled_as_documented():
    options = pipeline_options(Runner(kind="dataflow", dataflow=DATAFLOW))
    cloud, worker = options.view_as(GoogleCloudOptions), options.view_as(WorkerOptions)
    assert options.view_as(StandardOptions).runner == "DataflowRunner"
    assert (cloud.project, cloud.region, cloud.temp_location) == ("my-project", "europe-west4", "gs://my-bucket/tmp")
    assert (worker.machine_type, worker.max_num_workers) == ("n1-standard-8", 250)
    assert worker.sdk_container_image == DATAFLOW.worker_image
    assert options.get_all_options()["experiments"] == ["use_runner_v2"]
    assert options.get_all_options()["sdk_location"] == "container"


def test_the_scoring_gpu_is_a_resource_hint_on_the_scoring_step():
    runner = Runner(kind="dataflow", dataflow=DATAFLOW)
    assert scoring_hints(runner) == {"accelerator": DATAFLOW.scoring_accelerator}
    step = beam.ParDo(lambda x: [x]).with_resource_hints(**scoring_hints(runner))
    assert step.get_resource_hints() == {"beam:resources:accelerator:v1": DATAFLOW.scoring_accelerator.encode()}


def test_dataflow_needs_its_section(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("runner:\n  kind: dataflow\n")
    with pytest.raises(ConfigError, match="runner.dataflow is required"):
        load_config(path)
    path.write_text(
        "runner:\n  kind: dataflow\n  dataflow: {project: p, region: r, temp_location: /tmp, worker_image: i}\n"
    )
    with pytest.raises(ConfigError, match="runner.dataflow.temp_location: String should match pattern"):
        load_config(path)

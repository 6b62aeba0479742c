"""Beam pipelines on the configured runner.

Locally, Beam's DirectRunner first tries the Prism runner, which downloads a Go binary and so
fails offline before falling back, with other behaviour and metric names. We pin the
in-process FnApiRunner instead: deterministic and offline, one process or several.

On a portable job server (Flink, Spark, Prism, or Beam's own Python job service), the workers
are started as the job server's environment says; they see only what the options and the
pipeline carry, so runs and corpora must live where they can reach them (a bucket).

On Dataflow, the workers run the image built from the Dockerfile (Runner v2 custom container);
the scoring transforms ask for the configured GPU through a Beam resource hint, so only the
workers that embed captions carry one.
"""

from __future__ import annotations

import logging
import sys

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.transforms.environments import SubprocessSDKEnvironment

from imagenot.pipeline.config.schema import Runner


def pipeline_options(runner: Runner) -> PipelineOptions:
    """The Beam options for `runner`."""
    if runner.kind == "local":  # several workers: the subprocess environment of `make_pipeline`
        return _options({"direct_num_workers": runner.workers})
    if runner.kind == "portable":
        portable = runner.portable
        options = {
            "runner": "PortableRunner",
            "job_endpoint": portable.job_endpoint,
            "environment_type": portable.environment_type,
            "environment_config": portable.environment_config,
        }
        return _options(options)
    dataflow = runner.dataflow
    options = {
        "runner": "DataflowRunner",
        "project": dataflow.project,
        "region": dataflow.region,
        "temp_location": dataflow.temp_location,
        "staging_location": dataflow.staging_location,
        "machine_type": dataflow.machine_type,
        "max_num_workers": dataflow.max_workers,
        "sdk_container_image": dataflow.worker_image,
        "sdk_location": "container",  # the image already holds Beam and imagenot
        "experiments": ["use_runner_v2"],
        "service_account_email": dataflow.service_account,
    }
    return _options(options)


def _options(options: dict) -> PipelineOptions:
    """Beam options from the set values (None: Beam's default); flags=[] keeps Beam from parsing
    the program's own argv."""
    return PipelineOptions(flags=[], **{key: value for key, value in options.items() if value is not None})


def make_pipeline(runner: Runner) -> beam.Pipeline:
    """A pipeline for `runner`; locally with several workers, each is its own process."""
    if runner.kind == "local":
        environment = _worker_processes() if runner.workers > 1 else None
        return beam.Pipeline(runner=FnApiRunner(default_environment=environment), options=pipeline_options(runner))
    return beam.Pipeline(options=pipeline_options(runner))


class _WithoutModeWarning(logging.Filter):
    """Drops the FnApiRunner's warning that several workers want another running mode: the
    subprocess environment given here is that mode's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("If direct_num_workers is not equal to 1")


logging.getLogger("apache_beam.runners.portability.fn_api_runner.fn_runner").addFilter(_WithoutModeWarning())


def _worker_processes() -> SubprocessSDKEnvironment:
    """Beam's local worker processes, as its multi_processing mode starts them, except that a
    worker's stderr (where it prints the traceback of an error it raised, which the driver then
    raises again) is kept off the terminal unless the command runs with -v (INFO logging)."""
    command = f"{sys.executable} -m apache_beam.runners.worker.sdk_worker_main"
    quiet = not logging.getLogger().isEnabledFor(logging.INFO)
    return SubprocessSDKEnvironment.from_command_string(command + (" 2>/dev/null" if quiet else ""))


def scoring_hints(runner: Runner) -> dict:
    """Resource hints for transforms that run a text encoder: a GPU on Dataflow when configured."""
    if runner.kind == "dataflow" and runner.dataflow.scoring_accelerator:
        return {"accelerator": runner.dataflow.scoring_accelerator}
    return {}

"""Beam pipelines on the configured runner.

Locally, Beam's DirectRunner first tries the Prism runner, which downloads a Go binary and so
fails offline before falling back, with other behaviour and metric names. We pin the
in-process FnApiRunner instead: deterministic and offline, one process or several.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from pipeline.config import Runner


def make_pipeline(runner: Runner) -> beam.Pipeline:
    """A pipeline for `runner`; with several local workers, each is its own process."""
    mode = "in_memory" if runner.workers == 1 else "multi_processing"
    # flags=[]: Beam would otherwise parse the command line of whatever program builds it.
    options = PipelineOptions(flags=[], direct_num_workers=runner.workers, direct_running_mode=mode)
    return beam.Pipeline(runner=FnApiRunner(), options=options)

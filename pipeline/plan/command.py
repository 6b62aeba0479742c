"""The `imagenot plan` command: checks the config, corpus and run folder (`pipeline.frame.preflight`), then
prints the plan, projected from a sample of the corpus (`projection.py`) or from the footers alone (`estimate.py`)."""

from __future__ import annotations

import json
import math

import click

from imagenot.errors import ImagenotError
from imagenot.pipeline.plan.estimate import SAMPLE_ROWS, Rates

SHARES = ("_share", "_low", "_high", "_fill")  # a rate named so is a share of something: in [0, 1]
DIVISORS = ("_per_s", "_per_worker")  # one the plan divides by: above 0


class RateType(click.ParamType):
    """A rate flag's value: a finite number (an int where the rate counts), in the rate's range."""

    def __init__(self, kind: type, name: str):
        self.kind, self.low_open = kind, name.endswith(DIVISORS)
        self.high = 1 if name.endswith(SHARES) else math.inf
        self.name = kind.__name__

    def convert(self, value, param, ctx):
        try:
            number = value if isinstance(value, self.kind) else self.kind(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not {'an integer' if self.kind is int else 'a number'}", param, ctx)
        low = "above 0" if self.low_open else "0 or more"
        if not math.isfinite(number) or number < 0 or (self.low_open and number == 0) or number > self.high:
            self.fail(f"{value!r} is not a finite number {low}{' and at most 1' if self.high == 1 else ''}", param, ctx)
        return number


def _rate_options(command):
    for field in reversed(list(Rates.__dataclass_fields__.values())):
        flag = "--" + field.name.replace("_", "-")
        kind = type(field.default)
        option = click.option(
            flag, field.name, type=RateType(kind, field.name), default=field.default, show_default=True
        )
        command = option(command)
    return command


@click.command("plan")
@click.option("--config", "config_path", required=True, help="YAML run configuration (any FileSystems path)")
@click.option("--out", "run_dir", help="the run folder the build will write: checked for write and list")
@click.option(
    "--workers", type=click.IntRange(min=1), help="workers [default: runner.dataflow.max_workers, else runner.workers]"
)
@click.option("--json", "as_json", is_flag=True, help="print the plan as one JSON object")
@click.option(
    "--sample",
    "sample_rows",
    type=click.IntRange(min=0),
    default=SAMPLE_ROWS,
    show_default=True,
    help="corpus rows to tag and select (spread over the shards); 0: the footers only, candidates a guess",
)
@click.option("--sample-seed", type=int, default=0, show_default=True, help="which rows the sample reads")
@click.option(
    "--rates-from",
    "measured_run",
    help="a finished build's run folder: its summary.json's CPU per corpus row of tag, select and sample "
    "replaces those rates (their fixed parts stay the flags')",
)
@_rate_options
def plan_command(
    config_path: str,
    run_dir: str | None,
    workers: int | None,
    as_json: bool,
    sample_rows: int,
    sample_seed: int,
    measured_run: str | None,
    **rates: float,
) -> None:
    """Project a build's work, jobs and cost from a sample of the corpus; refuse what will fail."""
    # the config, the corpus and the sample (read through the tag and select stages) load Beam: imported
    # when the command runs, not for --help
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.corpus.units import text_ranges
    from imagenot.pipeline.frame.preflight import build_stages, preflight
    from imagenot.pipeline.plan.estimate import corpus_units, make_plan, render
    from imagenot.pipeline.plan.projection import plan_from_sample, summary

    config = load_config(config_path)
    assumed = Rates(**rates) if measured_run is None else _measured_rates(measured_run, Rates(**rates))
    preflight(config, run_dir, build_stages(config))
    rows, shards, units = corpus_units(config)
    dataflow = config.runner.dataflow
    workers = workers or (dataflow.max_workers if dataflow else config.runner.workers)
    if sample_rows:
        plan = plan_from_sample(config, rows, shards, assumed, workers, sample_rows, sample_seed)
    else:
        plan = make_plan(config, rows, shards, assumed, workers)
        plan = {**plan, **summary(plan, config, rates["candidates"]), "warnings": []}
    # the tag stage's work units: files cut or grouped to at most corpus.work_unit_rows rows
    tag_work = plan["stages"]["tag"]["work"]
    tag_work.update(work_units=len(units), work_unit_rows=config.corpus.work_unit_rows)
    if text_ranges(units):  # a first job counts the lines of the text files cut into byte ranges
        plan["stages"]["tag"]["jobs"] = 2
    click.echo(json.dumps(plan) if as_json else render(plan))


def _measured_rates(run_dir: str, rates: Rates) -> Rates:
    """`rates` with the per-row rates the run at `run_dir` measured (`rates_measured_by`)."""
    from apache_beam.io.filesystems import FileSystems  # Beam loads when the command runs, not for --help

    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.plan.estimate import measured_problem, rates_measured_by
    from imagenot.pipeline.run.layout import RUN_CONFIG
    from imagenot.pipeline.run.summary import read_summary

    recorded = read_summary(run_dir)
    if problem := measured_problem(recorded):
        raise ImagenotError(f"--rates-from {run_dir}: summary.json: {problem}; give a run folder a build finished")
    if not any("cpu_seconds" in recorded.get(stage, {}) for stage in ("tag", "select", "sample")):
        raise ImagenotError(
            f"--rates-from {run_dir}: no summary.json with the CPU of tag, select or sample there; give a run folder "
            "that a build or those stages' commands finished"
        )
    run_config = FileSystems.join(run_dir, RUN_CONFIG)
    workers = load_config(run_config).runner.workers if FileSystems.exists(run_config) else 1
    return rates_measured_by(recorded, workers, rates)

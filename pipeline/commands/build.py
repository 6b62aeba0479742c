"""`imagenot build`: the command, apart from the stages so that its `--help` loads none of them."""

from __future__ import annotations

import click

from imagenot.errors import ImagenotError
from imagenot.pipeline.frame.lock_option import absolute_paths, break_lock_option
from imagenot.pipeline.frame.stage_order import STAGE_NAMES


@click.command("build")
@click.option("--config", "config_path", required=True, callback=absolute_paths, help="YAML run configuration")
@click.option(
    "--out", "run_dir", callback=absolute_paths, help="run directory (default: runs/<config file name>, in this folder)"
)
@click.option("--from", "from_stage", type=click.Choice(STAGE_NAMES), help="rerun this stage and all after it")
@break_lock_option
def build_command(config_path: str, run_dir: str | None, from_stage: str | None, break_lock: bool) -> None:
    """Build a dataset from a config: every stage in order, skipping what is done; ends with what
    came out and where."""
    from imagenot.pipeline.commands.build_summary import class_shortfall, closing_summary
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.download.shortfall import image_shortfall
    from imagenot.pipeline.frame.build import build
    from imagenot.pipeline.frame.preflight import build_stages, preflight
    from imagenot.pipeline.frame.registry import declared
    from imagenot.pipeline.run.journal import rewriting
    from imagenot.pipeline.run.paths import absolute, stem

    config = load_config(config_path, needs_corpus=True)
    if from_stage and from_stage not in [stage.name for stage in build_stages(config)]:
        raise ImagenotError(
            f"--from {from_stage}: this config does not run that stage ({declared(from_stage).unwanted})"
        )
    run_dir = run_dir or absolute(f"runs/{stem(config_path)}")
    preflight(config, run_dir, build_stages(config))  # before the lock or config.yaml is written
    args = {"--config": config_path, "--out": run_dir, "--from": from_stage}
    # a build finishes what a killed build or stage command left, whatever their options
    with rewriting(run_dir, config.runner.lock_stale_after_s, break_lock, "build", args, True, ("build", *STAGE_NAMES)):
        ran = build(config, run_dir, from_stage)
    click.echo(closing_summary(config, run_dir, ran))
    for warning in filter(None, (class_shortfall(config, run_dir), image_shortfall(config, run_dir))):
        click.echo(f"Warning: {warning}", err=True)

"""`imagenot audit label-noise`: the command, apart from the audit (`label_noise.py`, which loads
numpy at once, and pyarrow, cleanlab and Beam where it uses them) so that its `--help` loads none
of them."""

from __future__ import annotations

import json

import click

from imagenot.pipeline.frame.lock_option import absolute_paths, break_lock_option


@click.command("label-noise")
@click.option(
    "--run",
    "run_dir",
    required=True,
    callback=absolute_paths,
    help="run directory holding rank/ and sample/ (or download/)",
)
@click.option(
    "--probs",
    "probs_path",
    required=True,
    callback=absolute_paths,
    help="parquet: row_id and probs (list<float>) or p_0 .. p_(K-1)",
)
@break_lock_option
def label_noise_command(run_dir: str, probs_path: str, break_lock: bool) -> None:
    """Estimate label errors with confident learning from out-of-sample class probabilities."""
    from apache_beam.io.filesystems import FileSystems

    from imagenot.pipeline.audit.label_noise import (
        LabelNoiseInputError,
        label_noise,
        read_parquet,
        read_run_dataset,
        write_label_noise,
    )
    from imagenot.pipeline.config.schema import load_run_config
    from imagenot.pipeline.run.journal import require_finished
    from imagenot.pipeline.run.layout import AUDIT_LABEL_NOISE, classes_path, read_classes, stage_path
    from imagenot.pipeline.run.lock import run_lock

    with run_lock(run_dir, load_run_config(run_dir).runner.lock_stale_after_s, break_lock, create_dir=False):
        if not FileSystems.exists(classes_path(run_dir)):  # refused, a folder that is not a run is left as it was
            raise LabelNoiseInputError(f"{run_dir}: no rank/ classes: not a run, or run `imagenot rank` first")
        require_finished(run_dir)  # reads the dataset: not one a killed command left half rewritten
        try:
            classes = read_classes(run_dir)
            dataset, source = read_run_dataset(run_dir)
            result = label_noise(dataset, read_parquet([probs_path]), len(classes), source, probs_path)
        except OSError as err:
            raise LabelNoiseInputError(str(err)) from err
        figures = write_label_noise(result, stage_path(run_dir, AUDIT_LABEL_NOISE), classes)
    click.echo(figures["statement"])
    click.echo(json.dumps({k: v for k, v in figures.items() if k != "per_class"}, indent=2))

"""`imagenot compare-rankings`: the command, apart from the statistics and plots it runs
(`rankings.py`, which loads scipy, matplotlib and Beam) so that its `--help` loads none of them."""

from __future__ import annotations

import json

import click

RESAMPLES = 10_000  # bootstrap resamples by default


@click.command("compare-rankings")
@click.option(
    "--input",
    "input_path",
    required=True,
    help="CSV with columns model,accuracy_a,n_a,accuracy_b,n_b (accuracies as fractions)",
)
@click.option("--out", "out_dir", required=True, help="folder for the report")
@click.option("--base", default=None, help="model that progress is relative to [default: lowest accuracy on A]")
@click.option("--name-a", default="dataset A", show_default=True, help="name of dataset A in the report")
@click.option("--name-b", default="dataset B", show_default=True, help="name of dataset B in the report")
@click.option(
    "--resamples", default=RESAMPLES, show_default=True, type=click.IntRange(min=1), help="bootstrap resamples"
)
@click.option("--seed", default=0, show_default=True, type=int, help="bootstrap seed")
@click.option(
    "--reviewed-run",
    default=None,
    help="dataset B's run: restrict B to the images its human review kept "
    "(needs --predictions-b; see `imagenot review`)",
)
@click.option("--predictions-b", default=None, help="parquet of per-image results on B: model, row_id, correct")
def compare_rankings_command(
    input_path: str,
    out_dir: str,
    base: str | None,
    name_a: str,
    name_b: str,
    resamples: int,
    seed: int,
    reviewed_run: str | None,
    predictions_b: str | None,
) -> None:
    """Compare model accuracies on two datasets: rank correlations, fit, intervals, progress."""
    # scipy, matplotlib and Beam: imported when the command runs, not for --help
    from imagenot.pipeline.audit.rankings import (
        accepted_rows,
        compare_rankings,
        read_accuracies,
        reviewed_accuracies,
        write_report,
    )

    models = read_accuracies(input_path)
    if (reviewed_run is None) != (predictions_b is None):
        raise click.UsageError("--reviewed-run and --predictions-b go together")
    if reviewed_run is not None:
        models = reviewed_accuracies(models, predictions_b, accepted_rows(reviewed_run))
        name_b = f"{name_b} (reviewed images)"
    result = compare_rankings(models, base, resamples=resamples, seed=seed)
    write_report(result, out_dir, name_a, name_b)
    summary = {k: result[k] for k in ("kendall_tau", "kendall_tau_ci", "spearman", "spearman_ci", "slope", "adj_r2")}
    click.echo(f"compare-rankings: {json.dumps(summary)} -> {out_dir}")

"""`imagenot synth`: the command, apart from the corpus writer (`synth.py`, which loads Beam and
pyarrow) so that its `--help` loads neither, nor numpy."""

from __future__ import annotations

import click

from imagenot.pipeline.corpus.synth_defaults import (
    CAPTION_KINDS,
    DEFAULT_CAPTIONS,
    DEFAULT_SHARD_ROWS,
    DEFAULT_URL_BASE,
)


@click.command("synth")
@click.option(
    "--out",
    required=True,
    help="folder for the shards (any FileSystems path; must hold no corpus yet); their ground truth goes beside it, "
    "in OUT_ground_truth.parquet",
)
@click.option("--rows", required=True, type=click.IntRange(min=1), help="rows in the corpus")
@click.option("--seed", default=0, show_default=True, type=int, help="same seed, same bytes")
@click.option("--url-base", default=DEFAULT_URL_BASE, show_default=True, help="image URLs start here")
@click.option(
    "--shard-rows",
    default=DEFAULT_SHARD_ROWS,
    show_default=True,
    type=click.IntRange(min=1),
    help="rows per parquet shard",
)
@click.option(
    "--captions",
    type=click.Choice(CAPTION_KINDS),
    default=DEFAULT_CAPTIONS,
    show_default=True,
    help="realistic: as long and as many-sensed as real captions; compact: the shorter captions of "
    "earlier versions (small test builds)",
)
def synth_command(out: str, rows: int, seed: int, url_base: str, shard_rows: int, captions: str) -> None:
    """Generate a synthetic LAION-schema corpus with its ground truth."""
    from imagenot.pipeline.corpus.synth import synth_corpus

    try:
        result = synth_corpus(out, rows, seed, url_base, shard_rows, captions=captions)
    except FileExistsError as err:
        raise click.ClickException(str(err)) from err
    click.echo(f"{result.rows} rows in {len(result.shards)} shards, ground truth {result.ground_truth}")

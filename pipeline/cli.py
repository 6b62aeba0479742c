"""The `imagenot` command line: one sub-command per stage or report, each defined beside the
function it runs."""

from __future__ import annotations

import logging

import click

from filters.why_cli import why
from pipeline.corpus.synth import synth_command
from pipeline.rank.stage import rank_command
from pipeline.score.stage import score_command
from pipeline.select.stage import select_command
from pipeline.tag.stage import tag_command
from wordnet.index import load_index
from wordnet.stats_report import stats


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="log progress at INFO level")
def main(verbose: bool) -> None:
    """Build and describe ImageNot-style contrast datasets."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(message)s")


@main.command("wordnet-prepare")
def wordnet_prepare() -> None:
    """Prepare WordNet 3.0 for NLTK and cache the noun index (done once; setup runs it)."""
    index = load_index()
    click.echo(f"WordNet {index.version}: {len(index)} noun synsets indexed")


for command in (stats, synth_command, tag_command, select_command, score_command, rank_command, why):
    main.add_command(command)

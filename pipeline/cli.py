"""The `imagenot` command line."""

from __future__ import annotations

import click

from wordnet.index import load_index


@click.group()
def main() -> None:
    """Build and describe ImageNot-style contrast datasets."""


@main.command("wordnet-prepare")
def wordnet_prepare() -> None:
    """Prepare WordNet 3.0 for NLTK and cache the noun index (done once; setup runs it)."""
    index = load_index()
    click.echo(f"WordNet {index.version}: {len(index)} noun synsets indexed")

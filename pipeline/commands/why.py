"""`imagenot why WORD|SYNSET --run DIR`: why a synset is or is not a class of a finished run (the
answers: `commands/fates.py`, imported when the command runs so that `--help` loads no Beam)."""

from __future__ import annotations

import click

from imagenot.pipeline.frame.given_text import GIVEN_TEXT
from imagenot.pipeline.frame.lock_option import absolute_paths


@click.command("why")
@click.argument("word", type=GIVEN_TEXT)
@click.option(
    "--run",
    "run_dir",
    required=True,
    callback=absolute_paths,
    help="the run directory (its select/ folder holds synset_fates.tsv)",
)
def why(word: str, run_dir: str) -> None:
    """Say why WORD (a wnid like n03430313, a synset like gavel.n.01, or a word like crane, each
    of whose noun senses is answered) is or is not a class."""
    # the run's files load Beam: imported when the command runs, not for --help
    from imagenot.pipeline.commands.fates import Run, senses
    from imagenot.pipeline.download.class_fates import download_fate
    from imagenot.pipeline.review.results import why_line as review_why_line
    from imagenot.pipeline.run.journal import require_finished
    from imagenot.wordnet.index import load_index

    index = load_index()
    wnids = senses(word, index)
    run = Run(run_dir, index)
    require_finished(run_dir)  # a run a killed command left half rewritten would be misread
    if len(wnids) > 1:
        click.echo(f"{word!r} has {len(wnids)} noun senses:")
    for wnid in wnids:
        prefix = f"- {index[wnid].gloss}\n  " if len(wnids) > 1 else ""
        click.echo(f"{prefix}{run.fate(wnid)}\n  reference: {run.relation(wnid)}")
        if (dropped := run.rules_dropped(wnid)) is not None:
            click.echo(f"  {dropped}")
        if (share := run.pass_share(wnid)) is not None:
            click.echo(f"  {share}")
        if (lost := run.senses_lost(wnid)) is not None:
            click.echo(f"  {lost}")
        if wnid in run.classes and (images := download_fate(run_dir, wnid)) is not None:  # failures, blocklists, drops
            click.echo(f"  {images}")
        if wnid in run.classes and (reviewed := review_why_line(run_dir, wnid)) is not None:
            click.echo(f"  {reviewed}")

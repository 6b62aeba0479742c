"""`imagenot senses`: the command, apart from the scoring it runs (`pipeline.score.senses_command`,
which loads torch and Beam) so that its `--help` loads neither."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import click

from imagenot.pipeline.frame.given_text import GIVEN_TEXT

if TYPE_CHECKING:
    import pyarrow as pa


def _not_read(table: pa.Table) -> str:
    """What the output's unreadable rows were, for the closing line."""
    from imagenot.pipeline.score.senses_command import CAPTION_NOT_TEXT

    reasons = table.column("reason").to_pylist()
    counts = Counter(r for r, p in zip(reasons, table.column("predicted").to_pylist()) if r and p is None)
    if not counts:
        return ""
    first = next(i for i, (r, p) in enumerate(zip(reasons, table.column("predicted").to_pylist())) if r and p is None)
    caption = table.column("caption")[first].as_py()
    shown = f"caption {caption!r} ({type(caption).__name__})" if reasons[first] == CAPTION_NOT_TEXT else ""
    listed = ", ".join(f"{n:,} {reason}" for reason, n in sorted(counts.items()))
    return f"; not read: {listed} (first: row {first}{': ' + shown if shown else ''})"


@click.command("senses")
@click.argument("caption", required=False, type=GIVEN_TEXT)
@click.option(
    "--lemma",
    type=GIVEN_TEXT,
    help="the word whose senses to score, in any form the tagger matches [default: every noun]",
)
@click.option(
    "--span", "span_text", help="START:END, the word's characters in CAPTION [default: where it first stands]"
)
@click.option(
    "--input", "input_path", help="a parquet with caption and lemma (and start, end) columns (local or gs://)"
)
@click.option("--out", "out_path", help="where --input's rows go, with the senses added")
@click.option("--config", "config_path", help="config whose scoring settings to use [default: the defaults]")
def senses_command(caption, lemma, span_text, input_path, out_path, config_path) -> None:
    """Score a caption's word (or a parquet of them) against every noun sense of the word."""
    # the scoring loads torch and Beam: imported when the command runs, not for --help
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.run.files import atomic_output
    from imagenot.pipeline.score.senses_command import (
        caption_forms,
        check_columns,
        describe,
        parse_span,
        read_input,
        scorer,
        senses_table,
    )

    if (caption is None) == (input_path is None) or (input_path is None) != (out_path is None):
        raise click.UsageError("give a CAPTION, or --input FILE.parquet with --out FILE.parquet")
    span = parse_span(span_text)
    config = load_config(config_path)
    if caption is not None:
        if span is not None and span[1] > len(caption):
            raise click.BadParameter(f"{span_text!r}: the caption has {len(caption)} characters", param_hint="--span")
        queries = scorer(config)
        forms = caption_forms(caption, lemma, span, config, queries.senses)
        if not forms:
            given = lemma if lemma is not None else caption[span[0] : span[1]] if span else None
            if given is not None:
                hint = "--lemma" if lemma is not None else "--span"
                raise click.BadParameter(f"{given!r} is not a form of any WordNet noun", param_hint=hint)
            raise click.UsageError(f"no WordNet noun found in {caption!r}; name one with --lemma")
        click.echo("\n".join(describe(caption, forms, span, config, queries)))
        return
    import pyarrow.parquet as pq

    table = read_input(input_path)
    check_columns(table, input_path)  # before the model loads
    result = senses_table(table, config, scorer(config), input_path)
    with atomic_output(out_path) as stream:
        pq.write_table(result, stream)
    passed = sum(result.column("passes").to_pylist())
    click.echo(f"{out_path}: {result.num_rows:,} captions, {passed:,} pass{_not_read(result)}")

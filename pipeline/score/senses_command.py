"""`imagenot senses`: every noun sense of a caption's word, scored as a build scores it.

    imagenot senses "crane lifting steel beams at the port" [--lemma crane] [--config FILE]
    imagenot senses --input captions.parquet --out senses.parquet [--config FILE]

The first prints, for each word the tagger finds in the caption (or the `--lemma` given), every
noun sense with its gloss and sense score, and what a build would do with the caption were it
a candidate of that sense: kept, the caption rule that drops it (`selection.caption_rules`),
`other_sense` naming the sense that wins it, or `below_threshold`. The second reads `caption`
and `lemma` columns (others carried through) and adds `predicted` (the best sense's WordNet
name), `score`, `margin` (over the runner-up), `passes` (the build would keep the caption for
`predicted`), `reason` (why not: the rule's name, `other_sense` or `below_threshold`; null when
it passes) and `senses` (every noun sense of the lemma with its score, best first). The verdict
is the build's own: the tagger's matched forms, `PairChecker` (select's caption rules) and
`filters.caption_rules.caption_decision` (the sample's sense and threshold tests).
"""

from __future__ import annotations

import functools

import click
import numpy as np
import pyarrow as pa

from imagenot.errors import ImagenotError
from imagenot.filters.caption_rules import BELOW_THRESHOLD, KEPT, OTHER_SENSE, caption_decision
from imagenot.pipeline.config.schema import Config, load_config
from imagenot.pipeline.run.files import atomic_output, read_table
from imagenot.pipeline.score.cache import CachedEncoder
from imagenot.pipeline.score.encoders import TextEncoder
from imagenot.pipeline.score.runtimes import load_encoder
from imagenot.pipeline.score.sense_contrast import SenseQueries
from imagenot.pipeline.score.stage import _encoder_options
from imagenot.pipeline.select.caption_rules import PairChecker, caption_rules
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.nltk_data import cache_dir
from imagenot.wordnet.senses import sense_label

SENSE_TYPE = pa.list_(pa.struct([("synset", pa.string()), ("score", pa.float32())]))


class SensesError(ImagenotError, ValueError):
    """An input file that `imagenot senses` cannot read; the message names the row or column."""


def caption_threshold(config: Config) -> float | None:
    """The similarity a caption needs in a build: the threshold strategy's, else none."""
    return config.sampling.threshold if config.sampling.strategy == "threshold" else None


def scorer(config: Config) -> SenseQueries:
    """The config's encoder over sense queries, which go through the build's embedding cache
    (`scoring.cache_dir`): a word's queries are embedded once per model, by a build or by this
    command. Captions are embedded by the bare encoder (`caption_encoder`), not cached."""
    scoring = config.scoring
    encoder = load_encoder(
        scoring.encoder,
        scoring.model,
        scoring.runtime,
        threads=config.runner.torch_threads,
        **_encoder_options(scoring),
    )
    return SenseQueries(scoring, CachedEncoder(encoder, scoring.cache_dir or str(cache_dir() / "embeddings")))


def caption_encoder(queries: SenseQueries) -> TextEncoder:
    return getattr(queries.encoder, "encoder", queries.encoder)  # under the CachedEncoder, if any


def sense_rows(
    queries: SenseQueries, vectors: np.ndarray, lemmas: list[str]
) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Per caption, the noun senses of its lemma and their scores, best first (ties by wnid)."""
    out: list = [None] * len(lemmas)
    by_lemma: dict[str, list[int]] = {}
    for i, lemma in enumerate(lemmas):
        by_lemma.setdefault(lemma, []).append(i)
    queries.senses.normalize_words(list(by_lemma))
    queries.vectors(sorted({w for lemma in by_lemma for w in queries.senses.senses(lemma)}))  # one encoder call
    for lemma, rows in by_lemma.items():
        wnids = queries.senses.senses(lemma)  # sorted by wnid, so a stable sort breaks ties by wnid
        scores = queries.scores(vectors[rows], lemma, wnids)
        orders = np.argsort(-scores, axis=1, kind="stable")
        for i, row, order in zip(rows, scores, orders):
            out[i] = (tuple(wnids[j] for j in order), row[order])
    return out


def check_lemmas(queries: SenseQueries, lemmas: list, path: str) -> None:
    """Each distinct lemma looked up once; an error names the first row of a lemma that is no noun."""
    senses = queries.senses
    senses.normalize_words([lemma for lemma in set(lemmas) if isinstance(lemma, str)])
    bad = {lemma for lemma in set(lemmas) if not isinstance(lemma, str) or not senses.senses(lemma)}
    if bad:
        row = next(i for i, lemma in enumerate(lemmas) if lemma in bad)
        raise SensesError(f"{path}: row {row}: lemma {lemmas[row]!r} is not a WordNet noun")


def senses_table(table: pa.Table, config: Config, queries: SenseQueries, path: str = "input") -> pa.Table:
    """`table` (caption, lemma, ...) with predicted, score, margin, passes and senses added."""
    missing = [c for c in ("caption", "lemma") if c not in table.column_names]
    if missing:
        raise SensesError(f"{path}: no column {', '.join(missing)} (found {table.column_names})")
    lemmas = table.column("lemma").to_pylist()
    check_lemmas(queries, lemmas, path)
    captions = table.column("caption").to_pylist()
    empty = [i for i, c in enumerate(captions) if not isinstance(c, str)]
    if empty:
        raise SensesError(f"{path}: row {empty[0]}: caption is null")
    vectors = caption_encoder(queries).encode(captions)
    ranked = sense_rows(queries, vectors, lemmas)
    return decided_table(table, config, queries.senses.index, ranked, matched_forms(captions, config))


def decided_table(table: pa.Table, config: Config, index: NounIndex, ranked: list, matched: list) -> pa.Table:
    """`table` with each row's best sense (`ranked`: its senses and scores, best first) and what a
    build would do with it (the caption rules over `matched`, the tagger's forms, then the rule)."""
    captions = table.column("caption").to_pylist()
    predicted = [wnids[0] for wnids, _ in ranked]
    rule = PairChecker(caption_rules(config.selection.caption_rules), predicted, index).rules_fired(
        captions, matched, predicted
    )
    score = np.array([s[0] for _, s in ranked], np.float32)
    margin = np.array([s[0] - s[1] if len(s) > 1 else np.inf for _, s in ranked], np.float32)
    passes, reason = caption_decision(score, margin, caption_threshold(config), config.scoring.sense_margin, rule)
    return (
        table.append_column("predicted", pa.array([index[wnid].name for wnid in predicted], pa.string()))
        .append_column("score", pa.array(score))
        .append_column("margin", pa.array(margin))
        .append_column("passes", pa.array(passes))
        .append_column("reason", pa.array([None if r == KEPT else r for r in reason], pa.string()))
        .append_column(
            "senses",
            pa.array(
                [[{"synset": index[w].name, "score": float(v)} for w, v in zip(wnids, s)] for wnids, s in ranked],
                SENSE_TYPE,
            ),
        )
    )


@functools.lru_cache(maxsize=2)
def _matcher(ignore_forms: tuple[str, ...]):
    """The build's tagger (its matched forms), built once per process: a few seconds."""
    from imagenot.pipeline.tag.stage import build_matcher

    return build_matcher(load_index(), list(ignore_forms))


def _tags(captions: list[str], config: Config):
    return _matcher(tuple(config.tagging.ignore_forms)).tag(pa.array(captions, pa.string()))


def matched_forms(captions: list[str], config: Config) -> list[list[str]]:
    """Per caption, the surface forms the tag stage would match: what the caption rules read."""
    return [forms or [] for forms in _tags(captions, config).matched.to_pylist()]


def caption_words(caption: str, lemma: str | None, config: Config, queries: SenseQueries) -> list[str]:
    """The words whose senses to show: `lemma`, else the noun lemmas the tagger finds."""
    if lemma is not None:
        if not queries.senses.senses(lemma):
            raise click.BadParameter(f"{lemma!r} is not a WordNet noun", param_hint="--lemma")
        return [lemma]
    tags = _tags([caption], config)
    wnids, matched = tags.wnids[0].as_py(), tags.matched[0].as_py()
    words = []
    for form in matched:
        words += [queries.senses.forms(w)[form] for w in wnids if form in queries.senses.forms(w)]
    return list(dict.fromkeys(words))


def describe(caption: str, words: list[str], config: Config, queries: SenseQueries) -> list[str]:
    """Lines for a person: per word, every sense with gloss and score, and the build's fate."""
    index, scoring = queries.senses.index, config.scoring
    vector = caption_encoder(queries).encode([caption])
    matched = matched_forms([caption], config)[0]
    rules = caption_rules(config.selection.caption_rules)
    lines = []
    for word in words:
        wnids, scores = sense_rows(queries, vector, [word])[0]
        fired = PairChecker(rules, wnids, index).rules_fired([caption] * len(wnids), [matched] * len(wnids), wnids)
        lines.append(
            f"{word}: {len(wnids)} noun senses (sense margin {scoring.sense_margin}, "
            f"caption threshold {caption_threshold(config)})"
        )
        for rank, (wnid, score) in enumerate(zip(wnids, scores)):
            other = 1 if rank == 0 else 0
            margin = score - scores[other] if len(wnids) > 1 else np.inf
            _, reason = caption_decision(
                [score], [margin], caption_threshold(config), scoring.sense_margin, [fired[rank]]
            )
            fate = {KEPT: "kept", BELOW_THRESHOLD: BELOW_THRESHOLD}.get(reason[0])
            if reason[0] == OTHER_SENSE:
                fate = f"{OTHER_SENSE}: goes to {sense_label(index, wnids[other])}"
            fate = fate or f"caption rule {reason[0]}"
            lines.append(f"  {sense_label(index, wnid):40s} {score:6.3f}  {index[wnid].gloss[:60]:60s}  {fate}")
    return lines


@click.command("senses")
@click.argument("caption", required=False)
@click.option("--lemma", help="the word whose senses to score (default: every noun the tagger finds)")
@click.option("--input", "input_path", help="a parquet with caption and lemma columns (local or gs://)")
@click.option("--out", "out_path", help="where --input's rows go, with the senses added")
@click.option("--config", "config_path", help="config whose scoring settings to use [default: the defaults]")
def senses_command(caption, lemma, input_path, out_path, config_path) -> None:
    """Score a caption (or a parquet of captions) against every noun sense of its word."""
    if (caption is None) == (input_path is None) or (input_path is None) != (out_path is None):
        raise click.UsageError("give a CAPTION, or --input FILE.parquet with --out FILE.parquet")
    config = load_config(config_path)
    queries = scorer(config)
    if caption is not None:
        words = caption_words(caption, lemma, config, queries)
        if not words:
            raise click.UsageError(f"no WordNet noun found in {caption!r}; name one with --lemma")
        click.echo("\n".join(describe(caption, words, config, queries)))
        return
    import pyarrow.parquet as pq

    result = senses_table(read_table(input_path), config, queries, input_path)
    with atomic_output(out_path) as stream:
        pq.write_table(result, stream)
    click.echo(f"{out_path}: {result.num_rows:,} captions, {sum(result.column('passes').to_pylist()):,} pass")

"""`imagenot audit classes --list FILE --corpus GLOB [--config FILE] [--flag-below SHARE] --out FILE.tsv`:
for every class of a class list, the share of a corpus sample's captions naming it that use its word
in its sense.

A caption names a class when the build's tagger matches one of the class's lemmas in it (any
other synsets it names do not matter here: this is about the word, not step 6). Each (caption,
class) pair gets the build's own decision: the caption rules with none_of_these, the corpus's form
statistics counted over these captions as select counts them over the tagged rows; then the
sense decision of `imagenot senses` (`senses_table`: the best noun sense of the word where it
stands, its margin and fit), which must be the class's, by `scoring.sense_margin`, and fit one of
the word's senses by `scoring.none_of_these_fit`, under `caption_decision`. One row per listed
class, in the list's order: `wnid`, `name`, `captions` (pairs), `pass_share`, its 95%
Clopper-Pearson interval `low`-`high`, `flagged`, `instance` (1: a WordNet instance synset, a
named individual, which select drops unless `selection.instance_synsets`; `labels.instances`),
and `top_drop`, `top_drop_share`: what takes most of the captions that do not pass (`sense:` and
the noun sense that wins them, or the rule or decision that drops them) and its share of all the
class's captions. A class no caption names has 0 captions and empty shares.

`flagged` is 1 when the pass share is under `--flag-below`, by default `FLAG_BELOW` (0.15): its word
is mostly used in another sense, or names none of its senses. The cut is far under the floor a build
holds its classes to (`ranking.min_pass_share`, 0.5) because a flag asks a reader to look: with the
web senses and the label model the decision drops many right captions of a right class too (a class
a build leaves out is not wrong for it). On the class dev set (benchmarks/README.md, "`audit
classes` on the class dev set") 0.15 was chosen out of fold, as the cut that flags the most classes
mostly used in another sense while it flags at most a quarter of the right ones.
The interval says how sure a share is: with few captions a flag is a lead to read, not a verdict.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # the tagger, the sense scoring (torch) and the run's files (Beam) load where they are
    # used, so that `audit classes --help` loads none of them
    from imagenot.labels.caption_rules import CaptionRules
    from imagenot.labels.none_of_these import FormStats
    from imagenot.labels.pair_checker import PairChecker
    from imagenot.labels.senses.sentence import SenseScorer
    from imagenot.pipeline.config.schema import Config
    from imagenot.wordnet.index import NounIndex

COLUMNS = ("wnid", "name", "captions", "pass_share", "low", "high", "flagged", "instance", "top_drop", "top_drop_share")
READ_BATCH_ROWS = 50_000  # corpus rows read at a time
CHUNK_PAIRS = 8_192  # (caption, class) pairs decided at a time: what bounds the memory the decision holds
CONFIDENCE = 0.95
FLAG_BELOW = 0.15  # chosen out of fold on the class dev set (benchmarks/quality_classes.py)
PASSES, SENSE = "passes", "sense:"


def read_captions(pattern: str, config: Config) -> list[str]:
    """The captions of the corpus files the pattern matches, in path order, read and checked as the
    tag stage reads them (any corpus format, `corpus.columns`; the same one-line errors; the rows
    the tag stage drops left out)."""
    from imagenot.pipeline.corpus.preflight import corpus_shapes
    from imagenot.pipeline.corpus.reader import layout_of, read_shard

    corpus = config.corpus.model_copy(update={"paths": [pattern], "synth": None})
    unrated = {"allowed_nsfw_tags": None, "max_punsafe": None}  # no row is kept or dropped by its NSFW marks here
    checked = config.model_copy(update={"corpus": corpus, "selection": config.selection.model_copy(update=unrated)})
    shards, _ = corpus_shapes(checked)
    captions: list[str] = []
    for shard in shards:
        for part in read_shard(shard, corpus.columns, READ_BATCH_ROWS, layout_of(corpus)):
            captions += part.batch.column("caption").to_pylist()
    return captions


def class_pairs(captions: list[str], classes: list[str], config: Config) -> tuple[list[tuple[int, str]], list]:
    """(caption position, wnid) of every listed class a caption names, and every caption's matched forms."""
    import pyarrow as pa

    from imagenot.pipeline.tag.stage import build_matcher
    from imagenot.wordnet.index import load_index

    tags = build_matcher(load_index(), config.tagging.ignore_forms).tag(pa.array(captions, pa.string()))
    wanted = set(classes)
    matched = [forms or [] for forms in tags.matched.to_pylist()]
    pairs = [
        (i, w) for i, wnids in enumerate(tags.wnids.to_pylist()) for w in dict.fromkeys(wnids or []) if w in wanted
    ]
    return pairs, matched


def decide(captions: list[str], classes: list[str], config: Config, index: NounIndex) -> dict[str, list[str]]:
    """wnid -> `pair_outcomes` of the captions naming it, the corpus's form statistics counted
    over all the captions. The pairs are decided `CHUNK_PAIRS` at a time, so memory stays bounded
    however many classes the list holds (every noun synset: about 20 pairs a caption)."""
    from imagenot.labels.none_of_these import FormStats, form_statistics
    from imagenot.labels.pair_checker import PairChecker
    from imagenot.pipeline.run.progress import counting
    from imagenot.pipeline.score.senses_command import scorer

    pairs, matched = class_pairs(captions, classes, config)
    stats = FormStats(form_statistics(captions, matched))
    # the model and the caption rules' facts of every class named, made once for every chunk
    queries = scorer(config) if pairs else None
    checker = PairChecker(pair_rules(config, stats), {w for _, w in pairs}, index) if pairs else None
    outcomes: dict[str, list[str]] = {}
    with counting(len(pairs), "audit classes", "pair") as advance:
        for start in range(0, len(pairs), CHUNK_PAIRS):
            chunk = pairs[start : start + CHUNK_PAIRS]
            wnids = [w for _, w in chunk]
            at = [captions[i] for i, _ in chunk], [matched[i] for i, _ in chunk]
            for wnid, outcome in zip(wnids, pair_outcomes(*at, wnids, config, stats, queries, checker)):
                outcomes.setdefault(wnid, []).append(sys.intern(outcome))  # a few distinct strings, held once
            advance(len(chunk))
    return outcomes


def pair_outcomes(
    captions: list[str],
    matched: list[list[str]],
    wnids: list[str],
    config: Config,
    stats: FormStats,
    queries: SenseScorer | None = None,
    checker: PairChecker | None = None,
) -> list[str]:
    """Per (caption, its matched forms, a synset it names), what the build does with the pair:
    PASSES, or the caption rule that drops it (select's, with `stats` for none_of_these), else
    `sense:` and the noun sense of the word that wins it, else why the sense decision drops it.
    `queries` and `checker`: the sense scorer and the rules' checker, when made already."""
    import numpy as np
    import pyarrow as pa

    from imagenot.labels.caption_rules import NONE_OF_THESE_FIT, PairScores, caption_decision
    from imagenot.labels.pair_checker import PairChecker
    from imagenot.pipeline.score.senses_command import caption_threshold, scorer, senses_table
    from imagenot.wordnet.index import load_index

    if not captions:
        return []
    index = load_index()
    checker = checker or PairChecker(pair_rules(config, stats), set(wnids), index)
    fired = checker.rules_fired(captions, matched, wnids)
    queries = queries or scorer(config)
    forms = [next(m for m in found if m in queries.senses.forms(w)) for found, w in zip(matched, wnids)]
    rows = senses_table(pa.table({"caption": captions, "lemma": forms}), config, queries).to_pylist()

    def column(name: str, missing: float) -> np.ndarray:
        return np.array([missing if r.get(name) is None else r[name] for r in rows], np.float64)

    tested = [r["similarity"] if r["similarity"] is not None else r["score"] or 0.0 for r in rows]
    sense = config.scoring.sense_decision()
    scores = PairScores(
        np.asarray(tested),
        column("sense_margin", -np.inf),
        column("sense_fit", np.inf),
        column("web_margin", np.inf),
        column("label_score", 1.0) if config.scoring.label_model is not None else None,
    )
    passes, reason = caption_decision(scores, caption_threshold(config), sense, fired)
    return [
        rule
        or (row["reason"] if row["predicted"] is None else None)  # a word senses cannot read where it stands
        or (NONE_OF_THESE_FIT if why == NONE_OF_THESE_FIT else None)  # no sense fits: none wins it either
        or (f"{SENSE}{row['predicted']}" if row["predicted"] != index[wnid].name else PASSES if ok else str(why))
        for wnid, row, ok, why, rule in zip(wnids, rows, passes, reason, fired)
    ]


def pair_rules(config: Config, stats: FormStats) -> CaptionRules:
    """Select's caption rules, none_of_these with the corpus's statistics, as select counts them."""
    from imagenot.pipeline.select.caption_rules import caption_rules

    rules = caption_rules(config.selection.caption_rules)
    if rules.none_of_these is not None:
        rules = dataclasses.replace(rules, none_of_these=rules.none_of_these.with_stats(stats))
    return rules


def is_flagged(passed: int, captions: int, flag_below: float) -> bool:
    """The audit's flag: under `flag_below` of a class's captions pass (a class no caption names: none)."""
    return bool(captions) and passed / captions < flag_below


def class_row(wnid: str, outcomes: list, index: NounIndex, flag_below: float) -> dict:
    """The audit's row of a class from its pairs' `pair_outcomes`: flagged when under `flag_below` of them pass."""
    from imagenot.labels.instances import instance_removals
    from imagenot.pipeline.audit.rankings import clopper_pearson

    n, k = len(outcomes), outcomes.count(PASSES)
    row = dict.fromkeys(COLUMNS, "") | {"wnid": wnid, "name": index[wnid].name, "captions": n, "flagged": 0}
    row["instance"] = int(wnid in instance_removals([wnid], index))  # select's own rule
    if not n:
        return row
    low, high = clopper_pearson(k / n, n, CONFIDENCE)
    drops = Counter(o for o in outcomes if o != PASSES).most_common(1)
    top, taken = drops[0] if drops else ("", 0)
    shares = {"pass_share": round(k / n, 4), "low": round(low, 4), "high": round(high, 4)}
    drop = {"top_drop": top, "top_drop_share": round(taken / n, 4)}
    return row | shares | drop | {"flagged": int(is_flagged(k, n, flag_below))}


def audit_classes(list_path: str, corpus: str, config: Config, flag_below: float) -> list[dict]:
    """One row per listed class; flagged under `flag_below`."""
    from imagenot.pipeline.config.reference_lists import read_class_list
    from imagenot.wordnet.index import load_index

    index = load_index()
    classes = read_class_list(list_path, index)
    outcomes = decide(read_captions(corpus, config), classes, config, index)
    return [class_row(wnid, outcomes.get(wnid, []), index, flag_below) for wnid in classes]


@click.command("classes")
@click.option("--list", "list_path", required=True, help="a class list: one wnid (or synset name) a line")
@click.option("--corpus", required=True, help="parquet files of captions (a glob; local or gs://)")
@click.option("--config", "config_path", help="config whose tagger, caption rules and sense settings to use")
@click.option(
    "--flag-below",
    type=click.FloatRange(0, 1),
    default=FLAG_BELOW,
    show_default=True,
    help="flag a class when under this share of its captions pass the build's decision",
)
@click.option("--out", "out_path", required=True, help="the TSV to write, one row per listed class")
def classes_command(list_path: str, corpus: str, config_path: str | None, flag_below: float, out_path: str) -> None:
    """Per class of a list: the share of a corpus sample's captions naming it that use it in its sense."""
    from imagenot.pipeline.config.schema import load_config
    from imagenot.pipeline.frame.preflight import check_output_file
    from imagenot.pipeline.report.markdown import count_of
    from imagenot.pipeline.run.files import write_tsv

    check_output_file(out_path, "--out")  # before the work, not after it
    config = load_config(config_path)
    rows = audit_classes(list_path, corpus, config, flag_below)
    write_tsv(out_path, COLUMNS, rows)
    named = [r for r in rows if r["captions"]]
    flagged = sum(r["flagged"] for r in rows)
    pairs = sum(r["captions"] for r in rows)
    kept = sum(r["pass_share"] * r["captions"] for r in named)
    used = f"{kept / pairs:.0%} of them use the word in the class's sense" if pairs else "no caption names one"
    instances = sum(r["instance"] for r in rows)
    fate = "this config keeps them" if config.selection.instance_synsets else "select drops them"
    click.echo(
        f"{out_path}: {len(rows):,} classes, {len(named):,} named by {pairs:,} captions ({used}); "
        f"{flagged:,} flagged (pass share under {flag_below:g}: --flag-below); "
        f"{count_of(instances, 'WordNet instance synset')}, named individuals ({fate}: selection.instance_synsets)"
    )

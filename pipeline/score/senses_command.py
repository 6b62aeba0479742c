"""`imagenot senses` (the command: `pipeline.commands.senses`): every noun sense of a caption's word, scored as
a build scores it.

    imagenot senses "crane lifting steel beams at the port" [--lemma cranes] [--span 0:5] [--config FILE]
    imagenot senses --input captions.parquet --out senses.parquet [--config FILE]

The word may be given in any form the tagger matches ("adventures", "Mens", "Hot_Dog"); the
span (`--span START:END`, or `start`/`end` columns) says which occurrence, else the first one the
tagger would match. The first prints, for each word the tagger finds in the caption (or the one
given), every noun sense with its gloss, sense score and fit, and what a build would do with the
caption were it a candidate of that sense: kept, the caption rule that drops it
(`selection.caption_rules`), `none_of_these_fit` (no sense fits the word there: the best sense's
fit under `scoring.none_of_these_fit`), `other_sense` naming the sense that wins it, or
`below_threshold`.
The second reads `caption` and `lemma` columns (`start` and `end` too where given; others carried
through) and adds `predicted` (the best sense's WordNet name), `score`, `margin` (over the
runner-up), `sense_fit` (the best sense's score without the prior), `similarity` (the caption's
gloss similarity to `predicted`, the build's `gloss_similarity`; only with a caption threshold or
the label model, else null), `passes`, `reason` (why not: the row's own problem, the rule's name,
`none_of_these_fit`, `other_sense` or `below_threshold`; null when it passes), `none_score` (the
none-of-these model's probability for the word at its span, `labels.none_of_these`; null where
that rule is off), `start`/`end` (the span read: the one given, or where the word was found) and
`label_score` and `label_use` (the label model's probability that the caption's picture shows the
predicted sense's class, and what it says the word is there; null where the model is off) and
`senses` (every noun sense of the word with its score, best first: WordNet's and the web senses
it lacks, `labels.web_senses`).

A row that cannot be read is not an error: it does not pass, and `reason` says why
(`caption_not_text`, `not_a_noun`, `word_not_in_caption`, `span_not_the_word`). The verdict is
the build's own: the tagger's matched forms, `PairChecker` (select's caption rules) and
`labels.caption_rules.caption_decision` (the sample's sense and threshold tests).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import click
import numpy as np
import pyarrow as pa

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import (
    BELOW_THRESHOLD,
    KEPT,
    LABEL_MODEL,
    NONE_OF_THESE_FIT,
    OTHER_SENSE,
    WEB_SENSE,
    PairScores,
    caption_decision,
)
from imagenot.labels.none_of_these import none_of_these_scores
from imagenot.labels.pair_checker import PairChecker
from imagenot.labels.senses.context import ContextSenses
from imagenot.labels.senses.sentence import SenseScorer
from imagenot.labels.senses.trained import TrainedSenses
from imagenot.labels.similarity import QueryEmbeddings, score_batch
from imagenot.labels.spans import Words, caption_words, first_span
from imagenot.labels.web_senses import NO_WEB_SENSES, any_sense_gloss, any_sense_label, any_sense_name, is_web_sense
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.run.files import read_table
from imagenot.pipeline.score.cache import CachedEncoder
from imagenot.pipeline.score.runtimes import load_encoder
from imagenot.pipeline.score.sense_methods import sense_scorer
from imagenot.pipeline.score.stage import _encoder_options
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.nltk_data import cache_dir
from imagenot.wordnet.senses import WordSenses

SENSE_TYPE = pa.list_(pa.struct([("synset", pa.string()), ("score", pa.float32())]))
CAPTION_NOT_TEXT, NOT_A_NOUN = "caption_not_text", "not_a_noun"
WORD_NOT_IN_CAPTION, SPAN_NOT_THE_WORD = "word_not_in_caption", "span_not_the_word"


class SensesError(ImagenotError, ValueError):
    """An input file that `imagenot senses` cannot read; the message names the file and what is wrong."""


def caption_threshold(config: Config) -> float | None:
    """The similarity a caption needs in a build: the threshold strategy's, else none."""
    return config.sampling.threshold if config.sampling.strategy == "threshold" else None


def scorer(config: Config) -> SenseScorer:
    """The config's sense scorer (`scoring.sense_method`). The sentence method's queries go through
    the build's embedding cache (`scoring.cache_dir`): a word's queries are embedded once per model,
    by a build or by this command."""
    scoring = config.scoring
    return sense_scorer(scoring, cached_encoder(config), config.runner.torch_threads)


def cached_encoder(config: Config) -> CachedEncoder:
    scoring = config.scoring
    encoder = load_encoder(
        scoring.encoder,
        scoring.model,
        scoring.runtime,
        threads=config.runner.torch_threads,
        **_encoder_options(scoring),
    )
    return CachedEncoder(encoder, scoring.cache_dir or str(cache_dir() / "embeddings"))


def word_vectors(queries: SenseScorer, captions: list[str], spans: list[tuple[int, int]]) -> np.ndarray:
    """What each caption's senses are scored with: the word's vector at its span (context, trained), or
    the caption's embedding (sentence: by the bare encoder, captions are not cached)."""
    if isinstance(queries, ContextSenses | TrainedSenses):
        return queries.vectors_at(captions, spans)
    return getattr(queries.encoder, "encoder", queries.encoder).encode(captions)


def sense_rows(
    queries: SenseScorer, vectors: np.ndarray, words: list[tuple[str, ...]]
) -> list[tuple[tuple[str, ...], np.ndarray, np.ndarray]]:
    """Per caption, the noun senses of its word (the lemmas a form names: their senses together,
    WordNet's by wnid, then the web senses the scorer reads), their scores and fits, best first
    (ties in that order)."""
    out: list = [None] * len(words)
    by_word: dict[tuple[str, ...], list[int]] = {}
    for i, lemmas in enumerate(words):
        by_word.setdefault(lemmas, []).append(i)
    web = getattr(queries, "web", NO_WEB_SENSES)
    senses_of = {
        lemmas: tuple(sorted({w for lemma in lemmas for w in queries.senses.senses(lemma)}))
        + tuple(dict.fromkeys(w for lemma in lemmas for w in web.of_word(lemma)))
        for lemmas in by_word
    }
    queries.prepare({s for senses in senses_of.values() for s in senses})  # one encoder call
    for lemmas, rows in by_word.items():
        wnids = senses_of[lemmas]
        scores, fits = queries.scores(vectors[rows], lemmas[0], wnids)  # a stable sort breaks ties
        orders = np.argsort(-scores, axis=1, kind="stable")
        for i, row, fit, order in zip(rows, scores, fits, orders):
            out[i] = (tuple(wnids[j] for j in order), row[order], fit[order])
    return out


def rank_rows(queries: SenseScorer, captions: list[str], words: list[tuple[str, ...]], spans: list) -> list:
    """`sense_rows` for captions whose word stands at `spans`."""
    return sense_rows(queries, word_vectors(queries, captions, spans), words)


def read_word(
    senses: WordSenses, caption, form, span, words: Words | None = None
) -> tuple[tuple[str, ...], tuple[int, int] | None, str | None]:
    """(the lemmas the form names, the span of the word in the caption, None) for a readable row,
    else ((), None, the reason): the given span must hold a form of the word; without one, the
    first place the tagger would match one (among the caption's `words`, when already read)."""
    if not isinstance(caption, str):
        return (), None, CAPTION_NOT_TEXT
    lemmas = senses.form_words(form) if isinstance(form, str) else ()
    if not lemmas:
        return (), None, NOT_A_NOUN
    forms = {f for lemma in lemmas for f in senses.word_forms(lemma)}
    if span is not None:
        start, end = span
        inside = 0 <= start < end <= len(caption) and senses.word(caption[start:end]) in forms
        return (lemmas, span, None) if inside else ((), None, SPAN_NOT_THE_WORD)
    found = first_span(caption_words([caption])[0] if words is None else words, forms)
    return (lemmas, found, None) if found else ((), None, WORD_NOT_IN_CAPTION)


def check_columns(table: pa.Table, path: str) -> None:
    """The input's columns: caption and lemma, and a span's start and end as integer columns."""
    missing = [c for c in ("caption", "lemma") if c not in table.column_names]
    if missing:
        raise SensesError(f"{path}: no column {', '.join(missing)} (found {table.column_names})")
    if ("start" in table.column_names) != ("end" in table.column_names):
        raise SensesError(f"{path}: a span needs both columns start and end (found {table.column_names})")
    for name in ("start", "end"):
        if name in table.column_names and not pa.types.is_integer(kind := table.schema.field(name).type):
            raise SensesError(f"{path}: column {name} holds {kind}, not integers (character offsets)")


def senses_table(table: pa.Table, config: Config, queries: SenseScorer, path: str = "input") -> pa.Table:
    """`table` (caption, lemma, [start, end], ...) with the sense decision's columns added."""
    check_columns(table, path)
    captions, forms = table.column("caption").to_pylist(), table.column("lemma").to_pylist()
    spans = [None] * len(captions)
    if "start" in table.column_names:
        spans = [
            (s, e) if isinstance(s, int) and isinstance(e, int) else None
            for s, e in zip(table.column("start").to_pylist(), table.column("end").to_pylist())
        ]
    senses = queries.senses
    senses.normalize_words([f for f in set(forms) if isinstance(f, str)])
    words = caption_words([c if isinstance(c, str) else "" for c in captions])
    read = [read_word(senses, *row) for row in zip(captions, forms, spans, words)]
    ok = [i for i, (_, _, why) in enumerate(read) if why is None]
    kept, at = [captions[i] for i in ok], [read[i][1] for i in ok]
    ranked = rank_rows(queries, kept, [read[i][0] for i in ok], at)
    decided = decided_rows(kept, at, config, senses.index, ranked, matched_forms(kept, config))
    rows: list[dict] = [
        {
            "passes": False,
            "reason": why,
            "senses": [],
            "start": (span or (None, None))[0],
            "end": (span or (None, None))[1],
        }
        for (_, _, why), span in zip(read, spans)
    ]
    for i, row in zip(ok, decided):
        rows[i] = row
    columns = {
        "predicted": pa.string(),
        "candidate": pa.string(),
        "score": pa.float32(),
        "margin": pa.float32(),
        "sense_margin": pa.float32(),
        "web_margin": pa.float32(),
        "sense_fit": pa.float32(),
        "similarity": pa.float32(),
        "passes": pa.bool_(),
        "reason": pa.string(),
        "none_score": pa.float32(),
        "label_score": pa.float32(),
        "label_use": pa.string(),
        "start": pa.int64(),
        "end": pa.int64(),
        "senses": SENSE_TYPE,
    }
    for name, kind in columns.items():
        values = pa.array([row.get(name) for row in rows], kind)
        if name in ("start", "end") and name in table.column_names:  # the span given, or where the word was found
            table = table.set_column(table.column_names.index(name), name, values)
        elif name not in table.column_names:
            table = table.append_column(name, values)
    return table


def decided_rows(
    captions: list[str], spans: list[tuple[int, int]], config: Config, index: NounIndex, ranked: list, matched: list
) -> list[dict]:
    """Per caption, its best sense (`ranked`: its senses, scores and fits, best first) and what a
    build would do with it were it a candidate of its best WordNet sense (the caption rules over
    `matched`, the tagger's forms, then the rule; a web sense that outscores it wins it)."""
    split = [_wordnet_and_web(*row) for row in ranked]
    candidate = [wordnet[0][0] for wordnet, _ in split]
    rules = caption_rules(config.selection.caption_rules)
    rule = PairChecker(rules, candidate, index).rules_fired(captions, matched, candidate)
    score = np.array([s[0] for (_, s, _), _ in split], np.float32)
    margin = np.array([s[0] - s[1] if len(s) > 1 else np.inf for (_, s, _), _ in split], np.float32)
    web_margin = np.array([s[0] - w[0] if len(w) else np.inf for (_, s, _), (_, w) in split], np.float32)
    best_fit = np.array([f[int(np.argmax(s))] for (_, s, f), _ in split], np.float32)  # as the score stage records
    threshold, label_model = caption_threshold(config), config.scoring.label_model
    vectors = None if threshold is None and label_model is None else cached_encoder(config).encoder.encode(captions)
    similarity = None if vectors is None else gloss_similarities(vectors, candidate, config)
    none = [None] * len(captions)
    if rules.none_of_these is not None:
        pairs = [(c, s, e, index[w].lemmas) for c, (s, e), w in zip(captions, spans, candidate)]
        none = [p for p, _ in none_of_these_scores(pairs, rules.none_of_these)]
    scores = PairScores(score if similarity is None else similarity, margin, best_fit, web_margin)
    label, uses = (None, [None] * len(captions))
    if label_model is not None:
        judge = config.scoring.label_model_weights().judge
        label, uses = judge(captions, spans, candidate, scores, none, matched, vectors, index)
        scores = dataclasses.replace(scores, label=label)
    passes, reason = caption_decision(scores, threshold, config.scoring.sense_decision(), rule)
    return [
        {
            "predicted": any_sense_name(index, senses[0]),
            "candidate": index[candidate[i]].name,
            "score": float(values[0]),
            "margin": float(values[0] - values[1]) if len(values) > 1 else float("inf"),
            "sense_margin": float(margin[i]),  # the candidate's, as the score stage records them
            "web_margin": float(web_margin[i]),
            "sense_fit": float(best_fit[i]),
            "similarity": None if similarity is None else float(similarity[i]),
            "passes": bool(passes[i]),
            "reason": None if reason[i] == KEPT else str(reason[i]),
            "none_score": none[i],
            "label_score": None if label is None else float(label[i]),
            "label_use": uses[i],
            "start": spans[i][0],
            "end": spans[i][1],
            "senses": [{"synset": any_sense_name(index, w), "score": float(v)} for w, v in zip(senses, values)],
        }
        for i, (senses, values, _) in enumerate(ranked)
    ]


def _wordnet_and_web(senses: tuple[str, ...], scores: np.ndarray, fits: np.ndarray) -> tuple[tuple, tuple]:
    """A ranked row's WordNet senses (ids, scores, fits) and web senses (ids, scores), each best first."""
    web = np.array([is_web_sense(s) for s in senses], bool)
    ids = np.array(senses, object)
    return (tuple(ids[~web]), scores[~web], fits[~web]), (tuple(ids[web]), scores[web])


def gloss_similarities(caption_vectors: np.ndarray, wnids: list[str], config: Config) -> np.ndarray:
    """Each caption's similarity to its synset's query (`scoring.query_template`): the build's
    `gloss_similarity`, which a caption threshold and the label model read."""
    encoder = cached_encoder(config)
    queries = QueryEmbeddings.build(load_index(), sorted(set(wnids)), config.scoring.query_template, encoder)
    return np.asarray(score_batch(caption_vectors, wnids, queries), np.float32)


def matched_forms(captions: Sequence, config: Config) -> list[list[str]]:
    """Per caption, the surface forms the tag stage would match: what the caption rules read."""
    from imagenot.pipeline.tag.stage import build_matcher

    text = [c if isinstance(c, str) else None for c in captions]
    tags = build_matcher(load_index(), config.tagging.ignore_forms).tag(pa.array(text, pa.string()))
    return [forms or [] for forms in tags.matched.to_pylist()]


def caption_forms(caption: str, form: str | None, span, config: Config, senses: WordSenses) -> list[str]:
    """The forms of the words whose senses to show: the one given (or standing at the span), else
    each the tagger matches; only those that name a WordNet noun."""
    if form is None and span is not None:
        form = caption[span[0] : span[1]]
    forms = [form] if form is not None else matched_forms([caption], config)[0]
    return [f for f in forms if senses.form_words(f)]


def describe(caption: str, forms: list[str], span, config: Config, queries: SenseScorer) -> list[str]:
    """Lines for a person: per word, every sense with gloss, score and fit, and the build's fate."""
    senses, scoring = queries.senses, config.scoring
    lines = []
    for form in forms:
        lemmas, at, why = read_word(senses, caption, form, span)
        if why is not None:
            lines.append(f"{form}: {why.replace('_', ' ')}: a build never keeps the caption for any of its senses")
            continue
        wnids, scores, fits = rank_rows(queries, [caption], [lemmas], [at])[0]
        each_first = [  # each sense in turn as the caption's prediction: its fate were it the candidate
            (
                wnids[rank : rank + 1] + wnids[:rank] + wnids[rank + 1 :],
                np.r_[scores[rank], np.delete(scores, rank)],
                np.r_[fits[rank], np.delete(fits, rank)],
            )
            for rank in range(len(wnids))
        ]
        matched = matched_forms([caption], config) * len(wnids)
        decided = decided_rows([caption] * len(wnids), [at] * len(wnids), config, senses.index, each_first, matched)
        lines.append(
            f"{' / '.join(lemmas)} at {at[0]}:{at[1]} ({caption[at[0] : at[1]]!r}): {len(wnids)} noun senses "
            f"(sense margin {scoring.sense_margin}, fit floor {scoring.sense_decision().min_fit}, caption threshold "
            f"{caption_threshold(config)}, none-of-these score {_shown(decided[0]['none_score'])})"
        )
        for wnid, score, fit, row in zip(wnids, scores, fits, decided):
            gloss = any_sense_gloss(senses.index, wnid)[:60]
            label = any_sense_label(senses.index, wnid)
            lines.append(f"  {label:40s} {score:6.3f} fit {fit:6.3f}  {gloss:60s}  {_fate(row, wnid, senses.index)}")
    return lines


def _fate(row: dict, sense: str, index: NounIndex) -> str:
    """What a build does with the caption were it a candidate of `sense` (`decided_rows`' row)."""
    if is_web_sense(sense):
        return "a sense WordNet lacks (labels/web_senses.tsv): no class is one"
    reason = row["reason"]
    if reason in (None, BELOW_THRESHOLD):
        return reason or "kept"
    if reason in (OTHER_SENSE, WEB_SENSE):
        winner = next(s["synset"] for s in row["senses"] if s["synset"] != row["candidate"])
        winner = winner if is_web_sense(winner) else index.by_name(winner).wnid
        return f"{reason}: goes to {any_sense_label(index, winner)}"
    if reason == LABEL_MODEL:
        shows, use = row["label_score"], row["label_use"]
        return f"{LABEL_MODEL}: shows it with probability {shows:.3f}, under scoring.label_floor (the word: {use})"
    if reason == NONE_OF_THESE_FIT:
        return f"{NONE_OF_THESE_FIT}: no sense fits the word here (the best sense's fit {row['sense_fit']:.3f})"
    return f"caption rule {reason}"


def _shown(value: float | None) -> str:
    return "off" if value is None else f"{value:.3f}"


def parse_span(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        start, end = (int(part) for part in text.split(":"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not START:END (character offsets)", param_hint="--span") from None
    if start < 0 or end < 0:  # not Python's slice: an offset counts from the caption's first character
        raise click.BadParameter(f"{text!r}: offsets count from the caption's start, 0 up", param_hint="--span")
    if end <= start:
        raise click.BadParameter(f"{text!r}: END must come after START", param_hint="--span")
    return start, end


def read_input(path: str) -> pa.Table:
    """The --input file, or one line saying why it cannot be read."""
    try:
        table = read_table(path)
    except FileNotFoundError:
        raise SensesError(f"{path}: no such file") from None
    except (OSError, pa.ArrowException) as err:
        raise SensesError(f"{path}: not a parquet file ({err})") from None
    if table.num_rows == 0:
        raise SensesError(f"{path}: no rows")
    return table

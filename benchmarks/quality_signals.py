"""How far the signals a build has can lift label quality on real captions.

Of the real dev set's step-6 pairs the defaults keep (`quality_real.py`'s per-pair decision, the
readers' majority), each signal alone cuts the kept pairs further at several points, and so does an
out-of-fold logistic combination of all of them (5 folds by synset, fit on the kept pairs, target:
right sense and picturable). The signals, per pair: the caption's gloss similarity to the class
(what the class threshold and `sampling.threshold` read), the sentence and trained methods' margin
of the class's sense over the word's best other sense, the trained head's fit, the none-of-these
model's score, the caption's length and the word's place in it. Each cut reports the pairs kept,
the share judged right sense and picturable, and the share of the right-sense step-6 pairs kept:
the issue's target is 90% right and 80% picturable while keeping 40%. The none-of-these model was
fit on these readers' `use`: its own cuts are optimistic.

    python benchmarks/quality_signals.py [--limit N] [--corpus FILE]

The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
from quality_real import STEP6, labelled, outcomes, share
from real_dev_judgments import CORPUS, sample_form_stats

from imagenot.pipeline.audit.classes import PASSES
from imagenot.pipeline.config.schema import Config, load_config
from imagenot.pipeline.score.senses_command import cached_encoder, gloss_similarities, scorer, senses_table
from imagenot.wordnet.index import load_index

FOLDS = 5
SIGNAL_CUTS = {  # signal -> the cuts tried (keep pairs at or above)
    "similarity": (0.3, 0.35, 0.4, 0.45, 0.5),
    "sentence_margin": (0.03, 0.08, 0.14),
    "trained_margin": (0.5, 1.0, 2.0),
    "trained_fit": (4.0, 4.8, 5.2),
    "none_of_these": (-0.8, -0.5, -0.3, -0.2),  # minus the score: keep where the score is under the cut
}
DROP_SHARES = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6)  # the combination's cuts: the share of the kept pairs it drops


def margins(pairs: list[dict], config: Config, method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair under `method`: the class's sense score minus the best other sense's, the best sense's
    fit, and the none-of-these score (0 where the rule is off or the row unread)."""
    chosen = config.model_copy(update={"scoring": config.scoring.model_copy(update={"sense_method": method})})
    table = pa.table({"caption": [p["caption"] for p in pairs], "lemma": [p["matched"] for p in pairs]})
    rows = senses_table(table, chosen, scorer(chosen)).to_pylist()
    margin, fit, none = (np.zeros(len(pairs)) for _ in range(3))
    for i, (pair, row) in enumerate(zip(pairs, rows)):
        scores = {s["synset"]: s["score"] for s in row["senses"]}
        others = [v for k, v in scores.items() if k != pair["synset"]]
        own = scores.get(pair["synset"])
        margin[i] = -10.0 if own is None else own - max(others, default=own - 10.0)
        fit[i], none[i] = row["sense_fit"] or 0.0, row["none_score"] or 0.0
    return margin, fit, none


def cut_figures(keep: np.ndarray, right: np.ndarray, picturable: np.ndarray) -> dict:
    return {
        "kept": int(keep.sum()),
        "right_sense": share(right, keep),
        "picturable": share(picturable, keep),
        "right_sense_kept": share(keep, right),
    }


def logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, steps: int = 50) -> np.ndarray:
    """Weights of an L2-regularised logistic regression by Newton's method (x carries a bias column)."""
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-x @ w))
        gradient = x.T @ (p - y) + l2 * w
        hessian = (x.T * (p * (1 - p))) @ x + l2 * np.eye(len(w))
        w -= np.linalg.solve(hessian, gradient)
    return w


def out_of_fold(features: np.ndarray, target: np.ndarray, train: np.ndarray, folds: np.ndarray) -> np.ndarray:
    x = (features - features.mean(0)) / (features.std(0) + 1e-9)
    x = np.hstack([x, np.ones((len(x), 1))])
    scores = np.zeros(len(x))
    for fold in range(FOLDS):
        held = folds == fold
        scores[held] = x[held] @ logistic(x[train & ~held], target[train & ~held].astype(float))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="the first N step-6 pairs only (a smoke run)")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the LAION sample (form statistics)")
    args = parser.parse_args()
    config, index = load_config(None), load_index()
    pairs = [p for p in labelled(False)[0] if p["source"] in STEP6 and p["right_sense"] is not None]
    pairs = pairs[: args.limit] if args.limit else pairs
    right = np.array([p["right_sense"] == "yes" for p in pairs])
    picturable = np.array([p["picturable"] == "yes" for p in pairs])
    kept = np.array([d == PASSES for d in outcomes(pairs, config, sample_form_stats(args.corpus, config), index)])
    wnids = [index.by_name(p["synset"]).wnid for p in pairs]
    vectors = cached_encoder(config).encoder.encode([p["caption"] for p in pairs])
    signals = {"similarity": gloss_similarities(vectors, wnids, config)}
    signals["sentence_margin"], _, none = margins(pairs, config, "sentence")
    signals["trained_margin"], signals["trained_fit"], _ = margins(pairs, config, "trained")
    signals["none_of_these"] = -none
    words = np.array([np.log1p(len(p["caption"].split())) for p in pairs])
    place = np.array([max(p["caption"].lower().find(p["matched"]), 0) / max(len(p["caption"]), 1) for p in pairs])
    features = np.column_stack([*signals.values(), words, place])
    folds = np.array([zlib.crc32(p["synset"].encode()) % FOLDS for p in pairs])
    combined = out_of_fold(features, right & picturable, kept, folds)
    result = {
        "pairs": len(pairs),
        "defaults": cut_figures(kept, right, picturable),
        "signals": {
            name: {str(abs(cut)): cut_figures(kept & (signals[name] >= cut), right, picturable) for cut in cuts}
            for name, cuts in SIGNAL_CUTS.items()
        },
        "combined_out_of_fold": {
            str(dropped): cut_figures(kept & (combined >= np.quantile(combined[kept], dropped)), right, picturable)
            for dropped in DROP_SHARES
        },
    }
    print(f"defaults: {result['defaults']}")
    for name, cuts in result["signals"].items():
        for cut, figures in cuts.items():
            print(f"{name} {cut}: {figures}")
    for dropped, figures in result["combined_out_of_fold"].items():
        print(f"combined, lowest {float(dropped):.0%} of the kept dropped: {figures}")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()

""" "None of these" read from the sense model: a floor on `sense_fit`, against the readers' `use`.

`scoring.none_of_these_fit` drops a caption whose word fits none of its noun senses where it stands:
the best sense's fit (`sense_fit`; for the trained method the head's logit) under the floor, as
`none_of_these_fit`. Measured on the judged real dev pairs (`quality_real.labelled`: the readers'
majority), with the sense method `--method` (default: trained) and otherwise default settings:

- per floor of a grid: precision and recall of the floor's drops against the readers' `use` ("none
  of these": name, missing_sense, letter_abbrev, modifier, not_noun, foreign; pairs without a
  majority or judged unclear left out), alone and with the corpus-statistics rule (`none_of_these`
  at its threshold: a pair either drops); and the method's defaults with the floor (`quality_real`'s
  figures: the step-6 pairs kept, their right-sense and picturable shares, the share of the
  right-sense pairs kept; a pair the defaults keep is dropped where its fit is under the floor, as
  `caption_decision` decides), also with the class floor `ranking.min_pass_share` applied;
- the floor chosen out of fold: the pairs split into `--folds` groups by synset (a synset's pairs in
  one fold), on the other folds the highest floor whose drops are at least `MIN_PRECISION` "none of
  these" (a drop named so should be right about it), applied to the held-out fold; the pooled
  figures are the honest estimate, and the floor chosen so on all pairs is the default.

The last line is one JSON object with every figure (`--out` writes it too).

    python benchmarks/quality_none_of_these_fit.py [--method trained] [--folds 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
from quality_real import defaults_figures, labelled, outcomes, with_class_floor
from real_dev_judgments import CORPUS, NONE_USES, sample_form_stats

from imagenot.labels.caption_rules import NONE_OF_THESE, NONE_OF_THESE_FIT
from imagenot.pipeline.audit.classes import PASSES
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.score.senses_command import scorer, senses_table
from imagenot.wordnet.index import load_index

GRID = tuple(round(x, 2) for x in np.arange(0.0, 6.01, 0.1))
MIN_PRECISION = 0.9
SEED = 44


def detection(truth: np.ndarray, dropped: np.ndarray) -> dict:
    hits = int((truth & dropped).sum())
    return {
        "dropped": int(dropped.sum()),
        "precision": round(hits / dropped.sum(), 3) if dropped.any() else None,
        "recall": round(hits / truth.sum(), 3) if truth.any() else None,
    }


def chosen_floor(fit: np.ndarray, truth: np.ndarray) -> float:
    """The highest floor of the grid whose drops are at least MIN_PRECISION "none of these" (and
    drop something); the lowest floor where none does."""
    good = [f for f in GRID if (fit < f).any() and (truth & (fit < f)).sum() >= MIN_PRECISION * (fit < f).sum()]
    return max(good, default=GRID[0])


def out_of_fold(fit: np.ndarray, truth: np.ndarray, judged: np.ndarray, synsets: list[str], folds: int):
    """Per pair, the floor chosen on the judged pairs of the other folds (folds by synset)."""
    names = sorted(set(synsets))
    random.Random(SEED).shuffle(names)
    fold_of = {name: i % folds for i, name in enumerate(names)}
    fold = np.array([fold_of[s] for s in synsets])
    floors = np.zeros(len(fit))
    chosen = []
    for k in range(folds):
        train = judged & (fold != k)
        floor = chosen_floor(fit[train], truth[train])
        floors[fold == k] = floor
        chosen.append(floor)
    return floors, chosen


def with_floor(decided: list[str], fit: np.ndarray, floors: np.ndarray | float) -> list[str]:
    """`decided` (the defaults with no floor) as `caption_decision` decides with one: a kept pair
    whose fit is under its floor is none_of_these_fit (a dropped pair stays dropped)."""
    under = fit < floors
    return [NONE_OF_THESE_FIT if d == PASSES and u else d for d, u in zip(decided, under)]


def build_figures(pairs: list[dict], decided: list[str], floor: float) -> dict:
    return {
        "defaults": defaults_figures(pairs, decided, None),
        "with_class_floor": defaults_figures(pairs, with_class_floor(pairs, decided, floor), None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="trained", help="scoring.sense_method whose fit is measured")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    config = Config.model_validate({"scoring": {"sense_method": args.method, "none_of_these_fit": {}}})
    index = load_index()
    pairs, _ = labelled(False)
    stats = sample_form_stats(CORPUS, config)
    decided = outcomes(pairs, config, stats, index)  # the method's defaults, no fit floor
    table = pa.table({"caption": [p["caption"] for p in pairs], "lemma": [p["matched"] for p in pairs]})
    read = senses_table(table, config, scorer(config)).column("sense_fit").to_numpy(zero_copy_only=False)
    fit = np.where(np.isnan(read.astype(np.float64)), np.inf, read)  # a word not read is never dropped by the floor
    judged = np.array([p.get("use") not in (None, "unclear") for p in pairs])
    truth = np.array([p.get("use") in NONE_USES for p in pairs])
    corpus = np.array([d == NONE_OF_THESE for d in decided])  # the corpus-statistics rule fired first
    class_floor = config.ranking.min_pass_share

    floors, chosen = out_of_fold(fit, truth, judged, [p["synset"] for p in pairs], args.folds)
    default = chosen_floor(fit[judged], truth[judged])
    result = {
        "method": args.method,
        "pairs": len(pairs),
        "judged_use": int(judged.sum()),
        "none_of_these": int(truth[judged].sum()),
        "min_precision": MIN_PRECISION,
        "no_floor": build_figures(pairs, decided, class_floor),
        "by_floor": {
            str(floor): {
                "fit": detection(truth[judged], (fit < floor)[judged]),
                "with_corpus_rule": detection(truth[judged], ((fit < floor) | corpus)[judged]),
                **build_figures(pairs, with_floor(decided, fit, floor), class_floor),
            }
            for floor in GRID
        },
        "out_of_fold": {
            "floors": chosen,
            "fit": detection(truth[judged], (fit < floors)[judged]),
            "with_corpus_rule": detection(truth[judged], ((fit < floors) | corpus)[judged]),
            **build_figures(pairs, with_floor(decided, fit, floors), class_floor),
        },
        "default_floor": default,
        "dropped_by_use_at_default": {
            use: int(sum(1 for p, d in zip(pairs, fit < default) if d and str(p.get("use")) == use))
            for use in sorted({str(p.get("use")) for p in pairs})
        },
    }
    print(f"{result['none_of_these']} of {result['judged_use']} pairs with a majority use name none of their senses")
    print(f"no floor: {result['no_floor']}")
    for floor in GRID:
        row = result["by_floor"][str(floor)]
        print(f"floor {floor:4.1f}: {row['fit']} | with the corpus rule {row['with_corpus_rule']}")
        print(f"           defaults {row['defaults']}")
    print(f"out of fold (floors {chosen}): {result['out_of_fold']}")
    print(f"default floor {default}: dropped by use {result['dropped_by_use_at_default']}")
    line = json.dumps(result, sort_keys=True)
    if args.out:
        args.out.write_text(line + "\n", encoding="utf-8")
    print(line)


if __name__ == "__main__":
    main()

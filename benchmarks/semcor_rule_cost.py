"""What each caption rule costs clean text: the share of SemCor 3.0's noun occurrences it drops.

SemCor is edited prose whose every annotated noun is used in its annotated sense, so each drop is
a right pair lost. The rows read are those whose word is its lemma or the lemma's plural (named
entities, whose word is not the lemma, left out), each a (sentence, word, synset) pair as the
caption rules see one; none_of_these gets SemCor's own form statistics as its corpus's. A rule
or threshold is a default only where it costs clean text no more than a point (issue 37).

    python benchmarks/semcor_rule_cost.py [--semcor FILE] [--limit N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pyarrow.parquet as pq

from imagenot.labels.caption_rules import RULES, pair_rule
from imagenot.labels.none_of_these import FormStats, form_key, form_statistics
from imagenot.labels.pair_checker import senses_of
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import regular_plurals

SEMCOR = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "semcor30_nouns.parquet"
LIMIT_PER_POINT = 0.01


def semcor_rows(path: Path, limit: int | None) -> list[dict]:
    table = pq.read_table(path, columns=["sentence_id", "sentence", "word", "lemma", "synset"])
    rows = [
        r
        for r in table.to_pylist()
        if r["word"].lower() == r["lemma"].lower() or r["word"].lower() in regular_plurals(r["lemma"].lower())
    ]
    return rows[:limit] if limit else rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--semcor", type=Path, default=SEMCOR)
    parser.add_argument("--limit", type=int, help="the first N rows only (a quick look)")
    args = parser.parse_args()
    config, index = Config(), load_index()
    rows = semcor_rows(args.semcor, args.limit)
    forms = [form_key(r["word"]) for r in rows]
    sentences: dict[str, tuple[str, list[str]]] = {}
    for r, form in zip(rows, forms):
        sentences.setdefault(r["sentence_id"], (r["sentence"], []))[1].append(form)
    rules = caption_rules(config.selection.caption_rules)
    stats = FormStats(form_statistics(*zip(*sentences.values())))
    rules = dataclasses.replace(rules, none_of_these=rules.none_of_these.with_stats(stats))
    wnids = [index.by_name(r["synset"]).wnid for r in rows]
    senses = senses_of(index, wnids)
    result = {"occurrences": len(rows), "rules": {}}
    for rule in RULES:
        alone = dataclasses.replace(rules, enabled=frozenset({rule}))
        dropped = sum(
            pair_rule(r["sentence"], form, senses[w], alone) is not None for r, form, w in zip(rows, forms, wnids)
        )
        share = round(dropped / len(rows), 4)
        result["rules"][rule] = {"dropped": dropped, "share": share, "within_a_point": share <= LIMIT_PER_POINT}
        print(f"{rule:15s} drops {dropped:6,} of {len(rows):,} ({share:.2%})", flush=True)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()

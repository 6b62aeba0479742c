"""The label model's training pairs (issue 51 item 3): judged captions of the shared LAION sample.

Tags and selects `data/build_dev.yaml` (the shared sample at a 10k corpus's settings) and pools
every (caption, synset) pair a bigger corpus could keep: the synset passed the synset steps (safety,
instance, overlap, leaves, NSFW, picturable: its fate is step 6 or later) and no caption rule drops
the pair, whatever else the caption names (step 6 is a small corpus's limit, not a property of the
pair). Pairs some reader already judged for the real dev set or the build's labels are left out.
A seeded draw (`SEED`) takes at most `--per-caption` pairs a caption and `--per-synset` a synset, then cuts the
draw into `--batches` reader packets of the same columns as `real_dev_pairs.tsv`
(`data/label_train/pairs_NN.tsv`), and `doubles.tsv`: `--doubles` pairs drawn across the packets
for a second reader, whose agreement with the first is the training data's.

    python benchmarks/label_train_pairs.py [--pairs 5200] [--batches 9] [--doubles 500] [--out DIR]

The last line is JSON: the pool, the pairs drawn, their synsets and the files written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from real_dev_judgments import majority, read_readers
from real_dev_pairs import DATA, LATE_STEPS, imagenot, pair_row, resolved_config, write_pairs

from imagenot.labels.pair_checker import PairChecker
from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.pipeline.select.stage import read_form_stats
from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import surface_forms
from imagenot.wordnet.senses import word_senses

CONFIG = DATA / "build_dev.yaml"
OUT = DATA / "label_train"
SEED = 51


def late_synsets(run: Path) -> set[str]:
    import csv

    with (run / "select" / "synset_fates.tsv").open() as fates:
        return {row["wnid"] for row in csv.DictReader(fates, delimiter="\t") if row["step"] in LATE_STEPS}


def pool(run: Path, config_path: Path) -> list[dict]:
    """Every (caption, late synset) pair of the tagged rows that the config's caption rules pass."""
    config = load_config(str(config_path))
    index = load_index()
    late = late_synsets(run)
    rules = caption_rules(config.selection.caption_rules)
    usable = json.loads((run / "select" / "usable_counts.json").read_text())
    rules = dataclasses.replace(
        rules, none_of_these=rules.none_of_these.with_stats(read_form_stats(usable, late, index))
    )
    checker = PairChecker(rules, late, index)
    tagged = pq.read_table(sorted((run / "tag" / "tagged").glob("*.parquet"))).to_pylist()
    pairs = [dict(row, wnid=w) for row in tagged if row["caption"] for w in sorted(set(row["wnids"]) & late)]
    fired = checker.rules_fired(
        [p["caption"] for p in pairs], [p["matched"] for p in pairs], [p["wnid"] for p in pairs]
    )
    return [p for p, rule in zip(pairs, fired) if rule is None]


def draw(pairs: list[dict], judged: set, names: dict, count: int, per_caption: int, per_synset: int) -> list[dict]:
    """A seeded draw: at most `per_caption` pairs a caption and `per_synset` a synset, none judged before."""
    rng = random.Random(SEED)
    order = [p for p in pairs if (p["row_id"], names[p["wnid"]]) not in judged]
    rng.shuffle(order)
    captions, synsets, out = Counter(), Counter(), []
    for p in order:
        if captions[p["row_id"]] >= per_caption or synsets[p["wnid"]] >= per_synset:
            continue
        captions[p["row_id"]] += 1
        synsets[p["wnid"]] += 1
        out.append(p)
        if len(out) == count:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5200, help="pairs to draw")
    parser.add_argument("--per-caption", type=int, default=2, help="at most this many pairs a caption")
    parser.add_argument("--per-synset", type=int, default=12, help="at most this many pairs a synset")
    parser.add_argument("--batches", type=int, default=9, help="reader packets to cut the draw into")
    parser.add_argument("--doubles", type=int, default=500, help="pairs drawn across the packets for a second reader")
    parser.add_argument("--corpus", type=Path, help="the LAION sample (default: build_dev.yaml's)")
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the packets")
    args = parser.parse_args()
    index = load_index()
    judged = set(majority(read_readers(), "right_sense"))
    with tempfile.TemporaryDirectory() as tmp:
        config = resolved_config(Path(tmp) / "build.yaml", args.corpus, source=CONFIG)
        run = Path(tmp) / "run"
        imagenot("tag", "--config", str(config), "--out", str(run))
        imagenot("select", "--run", str(run))
        pooled = pool(run, config)
    names = {w: index[w].name for w in {p["wnid"] for p in pooled}}
    drawn = draw(pooled, judged, names, args.pairs, args.per_caption, args.per_synset)
    forms, senses = surface_forms(index), word_senses()
    rows = [pair_row(p, "train", index, forms, senses) for p in drawn]
    args.out.mkdir(parents=True, exist_ok=True)
    files = []
    for b in range(args.batches):
        path = args.out / f"pairs_{b + 1:02d}.tsv"
        write_pairs(rows[b :: args.batches], path)
        files.append(path.name)
    doubles = random.Random(SEED + 1).sample(rows, min(args.doubles, len(rows)))
    write_pairs(doubles, args.out / "doubles.tsv")
    print(
        json.dumps(
            {
                "pool": len(pooled),
                "pool_synsets": len(names),
                "drawn": len(rows),
                "drawn_synsets": len({p["wnid"] for p in drawn}),
                "files": [*files, "doubles.tsv"],
            }
        )
    )


if __name__ == "__main__":
    main()

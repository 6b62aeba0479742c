"""What the label decision costs clean captions (issue 51 item 5): a CC3M-like set written for this test.

`data/clean/captions.tsv`: 600 plain descriptions of pictures, two for each of 300 WordNet noun synsets
of physical things (`data/clean/synsets.tsv`: a seeded draw of leaves under physical_entity.n.01 that
are not ImageNet-1k classes), each written by a reader to show its synset and name it by one of its
lemmas. Every pair (caption, its synset) is right sense and picturable by construction, so every pair a
decision drops is a right label lost. The captions are tagged as a corpus; a pair counts when the tagger
finds its synset in its caption. Each pair is decided as a default build decides it: select's caption
rules (with the clean set's own form statistics), then the sense decision (`caption_decision`), before
issue 51 (the sense margin alone) and now (`scoring.sense_decision()`: the web senses' margin and the
label model's floor too; none of these captions was read to train the model). It reports the share of
pairs each keeps, the points lost, and the dropped pairs by reason.

    python benchmarks/quality_clean.py [--config FILE] [--out FILE]

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from real_dev_pairs import DATA, imagenot

from imagenot.labels.caption_rules import SenseDecision, caption_decision
from imagenot.labels.label_model.train import JudgedPair, corpus_none_model, pair_inputs, read_tagged
from imagenot.labels.pair_checker import PairChecker, senses_of
from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.score.senses_command import cached_encoder
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.wordnet.index import load_index

CAPTIONS = DATA / "clean" / "captions.tsv"
BEFORE = SenseDecision(0.0)  # issue 44's decision with the sentence method: the sense margin alone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="the config whose decision to measure (default: the defaults)")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    parser.add_argument("--limit", type=int, help="the first N captions only (a smoke run)")
    args = parser.parse_args()
    config, index = load_config(args.config), load_index()
    with CAPTIONS.open(newline="") as file:
        written = list(csv.DictReader(file, delimiter="\t"))[: args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "clean.parquet"
        urls = [f"http://127.0.0.1/{i}.jpg" for i in range(len(written))]
        texts = [r["caption"] for r in written]  # LAION's columns, each caption rated safe
        pq.write_table(pa.table({"URL": urls, "TEXT": texts, "NSFW": ["UNLIKELY"] * len(texts)}), corpus)
        imagenot("tag", "--input", str(corpus), "--out", str(Path(tmp) / "run"))
        tagged = read_tagged(str(Path(tmp) / "run" / "tag" / "tagged" / "*.parquet"))
    by_position = {int(row_id.rsplit(":", 1)[1]): row for row_id, row in tagged.items()}
    pairs, untagged = [], 0
    for i, row in enumerate(written):
        found = by_position.get(i)
        if found is None or index.by_name(row["synset"]).wnid not in (found["wnids"] or []):
            untagged += 1
            continue
        pairs.append(JudgedPair(found["row_id"], row["synset"], "yes", "yes", "sense", "clean"))
    inputs = pair_inputs(pairs, tagged, index, cached_encoder(config))
    senses = senses_of(index, set(inputs.wnids))
    rules = caption_rules(config.selection.caption_rules)
    rules = dataclasses.replace(rules, none_of_these=corpus_none_model(tagged, senses, set(inputs.wnids)))
    fired = PairChecker(rules, set(inputs.wnids), index).rules_fired(
        inputs.captions, [tagged[p.row_id]["matched"] for p in pairs], inputs.wnids
    )
    scores = inputs.scores
    if config.scoring.label_model is not None:
        model = config.scoring.label_model_weights()
        label = model.probability(inputs.features, inputs.caption_vectors)
        scores = dataclasses.replace(scores, label=label)
    result = {"captions": len(written), "pairs": len(pairs), "synset_not_tagged": untagged}
    for name, sense in (("before_issue_51", BEFORE), ("now", config.scoring.sense_decision())):
        passes, reason = caption_decision(scores, None, sense, fired)
        result[name] = {
            "kept_share": round(float(np.mean(passes)), 4),
            "dropped_by": dict(Counter(reason[~passes].tolist()).most_common()),
        }
    result["points_lost"] = round(100 * (result["before_issue_51"]["kept_share"] - result["now"]["kept_share"]), 2)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()

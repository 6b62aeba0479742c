"""Sense precision of the captions kept per class, without and with a similarity threshold.

A synthetic corpus (`pipeline.corpus.synth`) knows which synset each caption was written about
(`corpus_ground_truth.parquet`, beside `corpus/`). The build runs through rank with the real MiniLM encoder, with
no threshold and room for every candidate (`ranking.classes` 100,000), so every candidate
synset's selected captions are scored (`rank/scored`) and every candidate has a score
(`rank/ranking.tsv`: mean of its top-n first-pass caption similarities).

Sense precision = the fraction of kept captions whose ground-truth `wnid` is the synset they were
kept for. "lenient" also counts a caption about several synsets that names the assigned one
(ground truth `mentioned`). Reported:
- synset threshold t: the captions of the candidates whose score is >= t (what
  `ranking.thresholds` does), for t in 0.30..0.80;
- caption threshold t: the captions whose own gloss similarity is >= t, over all candidates.
Per row: classes kept, captions kept, precision over captions (micro), mean per-class precision
(macro). Also the dataset's images (`sample/dataset`, the "top" strategy) judged the same way:
the figure the rank stage's first phase could move (`--first-phase static`: a static model
picks each class's best 2 x (N + reserve) captions for the encoder; the sweeps then cover only
those). The last line is one JSON object.

    python benchmarks/quality_sense_precision.py --rows 200000 [--first-phase off|static] [--run DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from imagenot.labels.encoders.text import DEFAULT_MODEL
from imagenot.pipeline.config.schema import Config, Corpus, Ranking, Sampling, Scoring, Selection, Synth
from imagenot.pipeline.corpus.synth import ground_truth_path
from imagenot.pipeline.frame.build import build

THRESHOLDS = [round(t, 2) for t in np.arange(0.30, 0.801, 0.05)]


def quality_config(rows: int, seed: int, min_captions: int, cache_dir: Path, first_phase: str = "off") -> Config:
    """Default settings except: a synthetic corpus, a minimum that suits its size, no
    threshold and no cut by K (the sweep applies them afterwards), a small sample."""
    return Config(
        corpus=Corpus(synth=Synth(rows=rows, seed=seed)),
        selection=Selection(min_captions=min_captions),
        scoring=Scoring(cache_dir=str(cache_dir), first_phase=first_phase),
        ranking=Ranking(classes=100_000, thresholds={DEFAULT_MODEL: -1.0}),
        sampling=Sampling(images_per_class=10, test_per_class=1),
    )


def synset_scores(run_dir: Path) -> dict[str, float]:
    """The ranked candidates' scores (rank leaves those that cannot become a class unscored)."""
    with open(run_dir / "rank" / "ranking.tsv", encoding="utf-8", newline="") as f:
        return {row["wnid"]: float(row["score"]) for row in csv.DictReader(f, delimiter="\t") if row["score"]}


def judged_captions(run_dir: Path, folder: str = "rank/scored") -> pa.Table:
    """The captions of `folder` (row_id, wnid, gloss_similarity) with `correct`, `lenient`, `kind`."""
    scored = pq.read_table(run_dir / folder, columns=["row_id", "wnid", "gloss_similarity"])
    truth = pq.read_table(ground_truth_path(str(run_dir / "corpus")), columns=["row_id", "wnid", "kind", "mentioned"])
    keys = pa.table(
        {
            "row_id": truth.column("row_id"),
            "true_wnid": truth.column("wnid"),
            "kind": truth.column("kind"),
            "truth_row": np.arange(truth.num_rows),
        }
    )  # Arrow joins carry no list columns
    joined = scored.join(keys, "row_id", join_type="left outer").sort_by("row_id")
    if joined.column("truth_row").null_count:
        raise ValueError(f"{joined.column('truth_row').null_count} scored rows have no ground truth row")
    correct = pc.fill_null(pc.equal(joined.column("wnid"), joined.column("true_wnid")), False).to_numpy(
        zero_copy_only=False
    )
    mentioned = truth.column("mentioned").take(joined.column("truth_row")).combine_chunks()
    parents = pc.list_parent_indices(mentioned).to_numpy()
    assigned = joined.column("wnid").combine_chunks().take(pa.array(parents))
    named = np.zeros(joined.num_rows, bool)
    named[parents[pc.equal(pc.list_flatten(mentioned), assigned).to_numpy(zero_copy_only=False)]] = True
    return pa.table(
        {
            "wnid": joined.column("wnid"),
            "similarity": joined.column("gloss_similarity"),
            "kind": joined.column("kind"),
            "correct": correct,
            "lenient": correct | named,
        }
    )


def precision_row(captions: pa.Table, keep: np.ndarray, label: float | str) -> dict:
    kept = captions.filter(pa.array(keep))
    wnids = kept.column("wnid").to_numpy(zero_copy_only=False)
    correct = kept.column("correct").to_numpy(zero_copy_only=False)
    classes, inverse = np.unique(wnids, return_inverse=True)
    per_class = np.bincount(inverse, weights=correct, minlength=len(classes)) / np.bincount(
        inverse, minlength=len(classes)
    )
    return {
        "threshold": label,
        "classes": len(classes),
        "captions": kept.num_rows,
        "precision": round(float(correct.mean()), 4) if kept.num_rows else None,
        "class_mean_precision": round(float(per_class.mean()), 4) if len(classes) else None,
        "lenient_precision": round(float(kept.column("lenient").to_numpy(zero_copy_only=False).mean()), 4)
        if kept.num_rows
        else None,
    }


def outcomes(captions: pa.Table, keep: np.ndarray) -> dict[str, float]:
    """Shares of the kept captions by what they turned out to be about."""
    kind = captions.column("kind").to_numpy(zero_copy_only=False)[keep]
    correct = captions.column("correct").to_numpy(zero_copy_only=False)[keep]
    lenient = captions.column("lenient").to_numpy(zero_copy_only=False)[keep]
    groups = {
        "its_synset": correct,
        "several_synsets_naming_it": lenient & ~correct,
        "another_sense_of_the_lemma": ~lenient & np.isin(kind, ["single", "other_sense"]),
        "not_about_it": ~lenient & ~np.isin(kind, ["single", "other_sense"]),
    }
    return {name: round(float(mask.mean()), 4) for name, mask in groups.items()}


def class_score_correlation(captions: pa.Table, scores: dict[str, float]) -> float:
    """Spearman correlation, over candidates, of synset score and the class's precision."""
    from scipy.stats import spearmanr

    wnids = captions.column("wnid").to_numpy(zero_copy_only=False)
    classes, inverse = np.unique(wnids, return_inverse=True)
    correct = captions.column("correct").to_numpy(zero_copy_only=False)
    per_class = np.bincount(inverse, weights=correct) / np.bincount(inverse)
    return round(float(spearmanr([scores[w] for w in classes], per_class).statistic), 3)


def markdown(rows: list[dict]) -> str:
    keys = ["threshold", "classes", "captions", "precision", "class_mean_precision", "lenient_precision"]
    lines = ["| " + " | ".join(keys) + " |", "|---" * len(keys) + "|"]
    lines += ["| " + " | ".join(str(row[k]) for k in keys) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-captions", type=int, default=20, help="selection.min_captions")
    parser.add_argument("--first-phase", choices=["off", "static"], default="off", help="scoring.first_phase")
    parser.add_argument("--run", help="run directory to build in or reuse (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(args.run or tmp)
        run_dir.mkdir(parents=True, exist_ok=True)
        config = quality_config(args.rows, args.seed, args.min_captions, run_dir / "embeddings", args.first_phase)
        build(config, str(run_dir))
        scores = synset_scores(run_dir)
        captions = judged_captions(run_dir)
        images = judged_captions(run_dir, "sample/dataset")
    score_of = np.array([scores[w] for w in captions.column("wnid").to_pylist()])
    similarity = captions.column("similarity").to_numpy()
    synset_rows = [precision_row(captions, np.ones(captions.num_rows, bool), "none")]
    synset_rows += [precision_row(captions, score_of >= t, t) for t in THRESHOLDS]
    caption_rows = [precision_row(captions, similarity >= t, t) for t in THRESHOLDS]
    result = {
        "rows": args.rows,
        "seed": args.seed,
        "min_captions": args.min_captions,
        "top_n": config.ranking.top_n,
        "first_pass_captions": config.scoring.first_pass_captions,
        "first_phase": args.first_phase,
        "dataset_images": precision_row(images, np.ones(images.num_rows, bool), "images"),
        "dataset_images_at_0.5": precision_row(
            images, np.array([scores[w] >= 0.5 for w in images.column("wnid").to_pylist()], bool), 0.5
        ),
        "load": [round(x, 2) for x in os.getloadavg()],
        "synset_threshold": synset_rows,
        "caption_threshold": caption_rows,
        "outcomes_no_threshold": outcomes(captions, np.ones(captions.num_rows, bool)),
        "outcomes_at_0.5": outcomes(captions, score_of >= 0.5),
        "spearman_score_vs_class_precision": class_score_correlation(captions, scores),
    }
    print(f"{args.rows} rows, seed {args.seed}, min_captions {args.min_captions}, model {DEFAULT_MODEL}\n")
    print("synset threshold (top-n mean of first-pass similarities >= t):")
    print(markdown(synset_rows))
    print("\ncaption threshold (a caption's own gloss similarity >= t), over all candidates:")
    print(markdown(caption_rows))
    print(f"\nkept captions by what they are about, no threshold: {result['outcomes_no_threshold']}")
    print(f"kept captions by what they are about, synset threshold 0.5: {result['outcomes_at_0.5']}")
    print(f"Spearman(synset score, class precision) over candidates: {result['spearman_score_vs_class_precision']}")
    print(f"\ndataset images (first phase {args.first_phase}), all classes and synset threshold 0.5:")
    print(markdown([result["dataset_images"], result["dataset_images_at_0.5"]]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""The label decision's defaults, chosen and measured out of fold, folds by class (issue 51 items 3-5).

Reads every judged pair (`labels.label_model.train.judged_pairs`: the 5,200 training pairs, one reader
each; the real dev set's and the build's, three or four readers, by majority) as a default build reads
it (`pair_inputs`), and holds classes apart: the pairs fall into `--folds` folds by class (a synset,
with every synset that shares a matched word with it: wrong labels come in whole classes and whole
words), seeded. Per fold the label model is fit on the other folds' pairs and gives this fold's
pairs their probability, so every pair's probability is out of fold.

On those probabilities it replays the decisions a build makes after select, over the pairs select
keeps (the decision `labels.caption_rules.caption_decision` and the rank stage's class cuts):

- the build's labels (`data/build_dev.yaml`, the shared sample at a 10k corpus's settings): a class
  is kept when the mean of its top `ranking.top_n` captions' gloss similarities reaches the class
  threshold and its pass share (select's rule share times the share of its captions the decision
  keeps) reaches the class floor; its labels are its captions the decision keeps. Figures: labels,
  classes, the share judged right sense and picturable, the share of the right-sense pairs select
  keeps that reach the labels;
- the real dev set (`data/real_dev.yaml`): of its step-6 pairs, those the rules and the decision keep
  with the class floor, as `quality_real.py` counts them.

Each setting (label floor, class threshold, class floor; the grid below) is measured on all pairs
(development figures). The defaults are chosen by the rule `choose` (precision first: the setting
that reaches the build's targets, >= 95% right sense and >= 90% picturable, keeping the most
right-sense pairs; failing that, the most precise), nested: each fold's setting is chosen on the
other folds' pairs and applied to its own, and the figures quoted are the union of the folds' own
(out of fold twice: the model's and the setting's). The default is the rule applied to all folds.

    python benchmarks/quality_labels.py [--folds 5] [--seed 0] [--inputs FILE] [--out FILE]

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import tempfile
from collections import Counter, defaultdict
from itertools import product
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from real_dev_pairs import DATA, imagenot, resolved_config

from imagenot.labels.label_model.model import USES
from imagenot.labels.label_model.train import USE_OF, fit_model, judged_pairs, pair_inputs, read_tagged
from imagenot.labels.web_senses import web_lexicon
from imagenot.pipeline.config.schema import Config, Scoring
from imagenot.pipeline.score.senses_command import cached_encoder
from imagenot.wordnet.index import load_index
from imagenot.wordnet.senses import word_senses

LABEL_FLOORS = (0.0, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45)
CLASS_FLOORS = (0.5, 0.6, 0.7)
TARGET_RIGHT, TARGET_PICTURABLE = 0.95, 0.90
Key = tuple[str, str]


def inputs_encoder():
    """The packaged MiniLM through the build's embedding cache: what the judged pairs are read with
    (a config with the label model off, as the pairs are read before any model is trained)."""
    return cached_encoder(Config(scoring=Scoring(label_model=None)))


def class_groups(pairs, inputs) -> list[str]:
    """Per pair, its class group: its synset joined with every synset a matched word of it also names."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    senses = word_senses()
    for p, form in zip(pairs, inputs.forms):
        for word in senses.form_words(form) or (form,):
            parent[find(f"s:{p.synset}")] = find(f"w:{word}")
    return [find(f"s:{p.synset}") for p in pairs]


def folds_of(groups: list[str], k: int, seed: int) -> np.ndarray:
    return np.array([int(hashlib.sha256(f"{seed}:{g}".encode()).hexdigest(), 16) % k for g in groups])


def out_of_fold(pairs, inputs, folds: np.ndarray, seed: int) -> tuple[np.ndarray, list[str]]:
    """Each pair's probability, and what its word is there, by the model fit on the other folds' pairs."""
    probability, uses = np.zeros(len(pairs)), [""] * len(pairs)
    for fold in sorted(set(folds)):
        train = np.flatnonzero(folds != fold)
        model = fit_model(inputs.subset(train), [pairs[i] for i in train], seed, 32, 1.0)
        held = np.flatnonzero(folds == fold)
        probability[held] = model.probability(inputs.features[held], inputs.caption_vectors[held])
        for i, use in zip(held, model.uses(inputs.features[held], inputs.caption_vectors[held])):
            uses[i] = use
    return probability, uses


def named_drops(pairs, probability: np.ndarray, uses: list[str], floor: float) -> dict:
    """Of the judged pairs the model drops at `floor`: how many, the share its use head names as the
    readers do (their use, as the head names it: `USE_OF`), and per name, its pairs and precision."""
    dropped = [(p, u) for p, q, u in zip(pairs, probability, uses) if q < floor and USE_OF.get(p.use or "")]
    by_name = {}
    for name in USES:
        named = [p for p, u in dropped if u == name]
        right = sum(USE_OF[p.use] == name for p in named)
        by_name[name] = {"pairs": len(named), "precision": _share(right, len(named))}
    agree = sum(USE_OF[p.use] == u for p, u in dropped)
    return {"dropped": len(dropped), "named_as_readers_do": _share(agree, len(dropped)), "by_name": by_name}


def select_run(config: Path, tmp: Path, name: str, corpus: Path | None) -> tuple[set[Key], dict]:
    """(the pairs select keeps, select's tally) of a tag and select run of `config`."""
    run = tmp / name
    imagenot("tag", "--config", str(resolved_config(tmp / f"{name}.yaml", corpus, source=config)), "--out", str(run))
    imagenot("select", "--run", str(run))
    index = load_index()
    table = pq.read_table(sorted((run / "select" / "selected").glob("*.parquet")), columns=["row_id", "wnid"])
    kept = {(r, index[w].name) for r, w in zip(table.column("row_id").to_pylist(), table.column("wnid").to_pylist())}
    tally = json.loads((run / "select" / "select_tally.json").read_text())
    rule_share = {index[w].name: n / tally["single_synset"][w] for w, n in tally["kept"].items()}
    return kept, {"rule_share": rule_share, "run": run}


class Replay:
    """The decisions after select over a set of judged pairs, for any setting."""

    def __init__(self, pairs, inputs, keys: list[Key], rule_share: dict[str, float]):
        at = {(p.row_id, p.synset): i for i, p in enumerate(pairs)}
        self.rows = np.array([at[k] for k in keys if k in at])
        self.synsets = [pairs[i].synset for i in self.rows]
        self.right = np.array([pairs[i].right_sense for i in self.rows], object)
        self.picturable = np.array([pairs[i].picturable for i in self.rows], object)
        scores = inputs.scores
        self.similarity = np.asarray(scores.similarity)[self.rows]
        self.other_ok = np.asarray(scores.margin)[self.rows] >= 0
        self.web_ok = np.asarray(scores.web_margin)[self.rows] >= 0
        self.rule_share = rule_share
        self.by_class = defaultdict(list)
        for j, synset in enumerate(self.synsets):
            self.by_class[synset].append(j)
        self.missing = len(keys) - len(self.rows)

    def labels(self, probability, label_floor, threshold, class_floor, top_n: int = 50, web: bool = True) -> np.ndarray:
        """Which pairs become labels: the decision (sense margin 0, with `web` the web senses' margin
        0, the label floor) and the class cuts (`threshold` None: no class threshold)."""
        passes = self.other_ok & (self.web_ok | (not web)) & (probability[self.rows] >= label_floor)
        kept = np.zeros(len(self.rows), bool)
        for synset, js in self.by_class.items():
            js = np.array(js)
            score = np.mean(np.sort(self.similarity[js])[::-1][:top_n]) if threshold is not None else np.inf
            share = self.rule_share.get(synset, 1.0) * passes[js].mean()
            if score >= (threshold if threshold is not None else -np.inf) and share >= class_floor:
                kept[js] = passes[js]
        return kept

    def figures(self, kept: np.ndarray, among: np.ndarray | None = None) -> dict:
        judged = kept & np.isin(self.right, ["yes", "no"])
        right_all = self.right == "yes" if among is None else (self.right == "yes") & among
        return {
            "labels": int(kept.sum()),
            "classes": len({s for s, k in zip(self.synsets, kept) if k}),
            "judged_share": _share(judged.sum(), kept.sum()),
            "right_sense": _share((judged & (self.right == "yes")).sum(), judged.sum()),
            "picturable": _share((judged & (self.picturable == "yes")).sum(), judged.sum()),
            "right_sense_kept": _share((kept & right_all).sum(), right_all.sum()),
        }


def _share(part, whole) -> float | None:
    return round(float(part) / float(whole), 4) if whole else None


def choose(rows: list[dict]) -> dict:
    """Precision first: of the settings whose labels reach both targets, the one keeping the most
    right-sense pairs (ties: the higher floors); else the most precise (right sense plus picturable)."""
    reach = [r for r in rows if (r["right_sense"] or 0) >= TARGET_RIGHT and (r["picturable"] or 0) >= TARGET_PICTURABLE]
    if reach:
        return max(reach, key=lambda r: (r["right_sense_kept"] or 0, r["label_floor"], r["class_floor"]))
    return max(rows, key=lambda r: ((r["right_sense"] or 0) + (r["picturable"] or 0), r["right_sense_kept"] or 0))


def grid(replay: Replay, probability: np.ndarray, mask: np.ndarray | None = None) -> list[dict]:
    """Every setting's build figures over the replay's pairs (those in `mask` only, when given)."""
    rows = []
    for label_floor, threshold, class_floor in product(LABEL_FLOORS, THRESHOLDS, CLASS_FLOORS):
        kept = replay.labels(probability, label_floor, threshold, class_floor)
        inside = np.ones(len(kept), bool) if mask is None else mask
        figures = replay.figures(kept & inside, inside)
        rows.append({"label_floor": label_floor, "threshold": threshold, "class_floor": class_floor, **figures})
    return rows


def web_sense_words(pairs, inputs) -> dict:
    """Per word of the judged pairs (those with a web sense in the lexicon, or judged `missing_sense`
    by its readers): its pairs, the readers' missing senses and names, the lexicon's senses, and the
    pairs the web senses drop (web margin under 0), judged wrong and right."""
    senses, lexicon = word_senses(), web_lexicon()
    rows: dict[str, dict] = {}
    web_margin = np.asarray(inputs.scores.web_margin)
    for p, form, margin in zip(pairs, inputs.forms, web_margin):
        word = next(iter(senses.form_words(form)), form)
        row = rows.setdefault(word, Counter())
        row["pairs"] += 1
        row["missing_sense"] += p.use == "missing_sense"
        row["name"] += p.use == "name"
        if margin < 0:
            row["dropped_wrong" if p.right_sense != "yes" else "dropped_right"] += 1
    out = {}
    for word, row in rows.items():
        covered = len(lexicon.of_word(word))
        if covered or row["missing_sense"]:
            out[word] = {"web_senses": covered, **row}
    ranked = sorted(out.items(), key=lambda item: (-item[1]["pairs"], item[0]))
    missing = [r for r in out.values() if r["missing_sense"]]
    return {
        "words": len(out),
        "words_judged_missing_sense": len(missing),
        "of_them_in_the_lexicon": sum(1 for r in missing if r["web_senses"]),
        "missing_sense_pairs_of_words_in_the_lexicon": sum(r["missing_sense"] for r in missing if r["web_senses"]),
        "missing_sense_pairs": sum(r["missing_sense"] for r in missing),
        "dropped_wrong": sum(r.get("dropped_wrong", 0) for r in out.values()),
        "dropped_right": sum(r.get("dropped_right", 0) for r in out.values()),
        "by_word": dict(ranked),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--inputs", type=Path, help="a pickle of the pairs' inputs (written when missing)")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    parser.add_argument("--corpus", type=Path, help="the LAION sample (default: the configs' own)")
    parser.add_argument("--limit", type=int, help="the first N judged pairs only (a smoke run)")
    args = parser.parse_args()
    index = load_index()
    pairs = judged_pairs()[: args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build_kept, build = select_run(DATA / "build_dev.yaml", tmp, "build", args.corpus)
        real_kept, real = select_run(DATA / "real_dev.yaml", tmp, "real", args.corpus)
        if args.inputs and args.inputs.exists():
            inputs = pickle.loads(args.inputs.read_bytes())
        else:
            tagged = read_tagged(str(build["run"] / "tag" / "tagged" / "*.parquet"))
            pairs = [p for p in pairs if p.row_id in tagged]  # all of them, unless --corpus is a part
            inputs = pair_inputs(pairs, tagged, index, inputs_encoder())
            if args.inputs:
                args.inputs.write_bytes(pickle.dumps(inputs))
    folds = folds_of(class_groups(pairs, inputs), args.folds, args.seed)
    probability, uses = out_of_fold(pairs, inputs, folds, args.seed)
    build_replay = Replay(pairs, inputs, sorted(build_kept), build["rule_share"])
    settings = grid(build_replay, probability)
    chosen_default = choose(settings)
    pair_fold = folds[build_replay.rows]
    nested_kept = np.zeros(len(build_replay.rows), bool)
    per_fold = []
    for fold in range(args.folds):
        others = grid(build_replay, probability, pair_fold != fold)
        pick = choose(others)
        kept = build_replay.labels(probability, pick["label_floor"], pick["threshold"], pick["class_floor"])
        nested_kept |= kept & (pair_fold == fold)
        per_fold.append({k: pick[k] for k in ("label_floor", "threshold", "class_floor")})
    today = build_replay.figures(build_replay.labels(np.ones(len(pairs)), 0.0, 0.45, 0.7, web=False))
    report = {
        "pairs": len(pairs),
        "folds": args.folds,
        "build": {
            "select_kept": len(build_kept),
            "not_judged": build_replay.missing,
            "before_issue_51": today,  # no web senses, no label model; class threshold 0.45, floor 0.7
            "nested_out_of_fold": {"per_fold_choice": per_fold, **build_replay.figures(nested_kept)},
            "chosen_on_all_folds": chosen_default,
            "settings": settings,
        },
    }
    report["web_senses"] = web_sense_words(pairs, inputs)
    report["label_model_drops"] = named_drops(pairs, probability, uses, chosen_default["label_floor"])
    real_replay = Replay(pairs, inputs, sorted(real_kept), real["rule_share"])
    pick = chosen_default
    kept = real_replay.labels(probability, pick["label_floor"], None, pick["class_floor"])
    report["real_dev"] = {"select_kept": len(real_kept), "at_the_default": real_replay.figures(kept)}
    print(json.dumps({"build_nested": report["build"]["nested_out_of_fold"], "default": chosen_default}))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    main()

"""Label quality of a default build's dataset (issue 44 item 6): the shared LAION sample built at a
10k-caption corpus's settings (`data/build_dev.yaml`: `selection.min_captions` and
`ranking.min_captions` 1, no download), its dataset's labels judged by the real dev set's readers.

Runs tag, select and score once per sense method, then rank and sample once per class threshold
(`ranking.thresholds` for the config's encoder: the config's own unless `--thresholds`) and pass
share floor (`ranking.min_pass_share`: the config's unless `--pass-floors`). Per
setting it reports the dataset's labels (the sample stage's rows: a caption and its class), the
share of them the readers judged (a majority of three or more, `real_dev_judgments.py`), of those
the share judged right sense and picturable, and the share of the right-sense pairs select keeps
that reach the dataset: what the later steps throw away. The judged pairs are the real dev set's
(`real_dev_pairs.tsv`) and the select-kept pairs it lacks (`build_dev_pairs.tsv`, judged by three
readers apart with the same guide); `--pairs FILE` writes the select-kept pairs no reader has
judged yet, as that file holds them: judge them before quoting a figure ("stale" below 95% judged).

    python benchmarks/quality_build.py [--method sentence trained] [--thresholds 0.5 0.4] [--pass-floors 0.5 0.7]
        [--pairs FILE] [--out FILE]
    python benchmarks/quality_build.py --label-folds 5 [--inputs FILE] [--out FILE]

`--label-folds K` measures the defaults out of fold, as `quality_labels.py` folds the judged pairs (by
class): per fold a label model is fit on the other folds' pairs (`labels/label_model/train.py`'s
`fit_model`), the build runs score, rank and sample with it (`scoring.label_model`: its folder), and
of its dataset's labels those of the fold's own classes are kept; the figures are those of the folds'
labels together, each read by a model that never saw its class.

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import tempfile
from itertools import product
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import yaml
from quality_real import agreement
from real_dev_judgments import majority, read_readers, read_tsv, reader_names
from real_dev_pairs import DATA, imagenot, pair_row, resolved_config, selected, write_pairs

from imagenot.pipeline.config.schema import load_config
from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import surface_forms
from imagenot.wordnet.senses import word_senses

CONFIG = DATA / "build_dev.yaml"
PAIRS = DATA / "build_dev_pairs.tsv"
JUDGED_ENOUGH = 0.95


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def dataset_labels(run: Path, index) -> list[tuple[str, str]]:
    """(row_id, synset name) of each row the sample stage puts in the dataset."""
    rows = pq.read_table(sorted((run / "sample" / "dataset").glob("*.parquet")), columns=["row_id", "wnid"])
    return [(r["row_id"], index[r["wnid"]].name) for r in rows.to_pylist()]


def setting_figures(labels: list, selected_right: set, right: dict, picturable: dict) -> dict:
    judged = [key for key in labels if right.get(key) in ("yes", "no")]
    return {
        "labels": len(labels),
        "classes": len({synset for _, synset in labels}),
        "judged_share": share(len(judged), len(labels)),
        "right_sense": share(sum(right[key] == "yes" for key in judged), len(judged)),
        "picturable": share(sum(picturable.get(key) == "yes" for key in judged), len(judged)),
        "right_sense_select_kept_reaching_dataset": share(len(set(labels) & selected_right), len(selected_right)),
    }


def pairs_agreement(readers: list[dict]) -> dict:
    """The readers' agreement on `build_dev_pairs.tsv`'s pairs, among the readers who judged them all."""
    keys = {(row["row_id"], row["synset"]) for row in read_tsv(PAIRS)}
    judged = [(name, r) for name, r in zip(reader_names(), readers) if keys <= set(r)]
    if len(judged) < 2:
        return {"pairs": 0}
    return agreement([{key: r[key] for key in keys} for _, r in judged], [name for name, _ in judged])


def write_unjudged(kept: list[dict], judged: set, index, path: Path) -> int:
    forms, senses = surface_forms(index), word_senses()
    rows = [pair_row(row, "kept", index, forms, senses) for row in kept]
    new = [r for r in rows if (r["row_id"], r["synset"]) not in judged]
    write_pairs(new, path)
    return len(new)


def run_with(source: Path, run: Path, config: dict, stages: tuple[str, ...]) -> Path:
    """A copy of the run `source` at `run`, its `stages` run with `config` (a changed setting reruns them)."""
    shutil.copytree(source, run)
    (run / "setting.yaml").write_text(yaml.safe_dump(config))
    for stage in stages:
        imagenot(stage, "--run", str(run), "--config", str(run / "setting.yaml"))
    return run


def out_of_fold_build(built: Path, config: dict, tmp: Path, folds: int, inputs_file: Path | None, index) -> list:
    """The labels of a build whose every label was decided by a model fit without its class."""
    import pickle

    from quality_labels import class_groups, folds_of, inputs_encoder

    from imagenot.labels.label_model.model import save_model
    from imagenot.labels.label_model.train import fit_model, judged_pairs, pair_inputs, read_tagged

    pairs = judged_pairs()
    if inputs_file and inputs_file.exists():
        inputs = pickle.loads(inputs_file.read_bytes())
    else:
        tagged = read_tagged(str(built / "tag" / "tagged" / "*.parquet"))
        inputs = pair_inputs(pairs, tagged, index, inputs_encoder())
    fold_of_pair = folds_of(class_groups(pairs, inputs), folds, 0)
    fold_of_synset = {p.synset: f for p, f in zip(pairs, fold_of_pair)}
    labels = []
    for fold in range(folds):
        train = np.flatnonzero(fold_of_pair != fold)
        model = fit_model(inputs.subset(train), [pairs[i] for i in train], 0, 32, 1.0)
        folder = tmp / f"label-model-{fold}"
        save_model(folder, dataclasses.replace(model, card={**model.card, "fold": fold}))
        scoring = {**config.get("scoring", {}), "label_model": str(folder)}
        run = run_with(built, tmp / f"fold-{fold}", dict(config, scoring=scoring), ("score", "rank", "sample"))
        labels += [key for key in dataset_labels(run, index) if fold_of_synset.get(key[1], fold) == fold]
    return labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", nargs="+", default=["sentence"], help="scoring.sense_method values to build with")
    parser.add_argument("--thresholds", nargs="+", type=float, help="class thresholds [default: the config's]")
    parser.add_argument("--pass-floors", nargs="+", type=float, help="class pass share floors [default: the config's]")
    parser.add_argument("--corpus", type=Path, help="the LAION sample (default: build_dev.yaml's)")
    parser.add_argument("--pairs", type=Path, help=f"write the select-kept pairs not judged yet here (as {PAIRS.name})")
    parser.add_argument("--out", type=Path, help="write the JSON here too")
    parser.add_argument("--label-folds", type=int, help="the defaults out of fold, folds by class (see above)")
    parser.add_argument("--inputs", type=Path, help="quality_labels.py's pickle of the judged pairs' inputs")
    args = parser.parse_args()
    index, readers = load_index(), read_readers()
    right, picturable = majority(readers, "right_sense"), majority(readers, "picturable")
    report: dict = {"config": CONFIG.name, "agreement": pairs_agreement(readers), "settings": []}
    with tempfile.TemporaryDirectory() as tmp:
        config = yaml.safe_load(resolved_config(Path(tmp) / "build.yaml", args.corpus, source=CONFIG).read_text())
        defaults = load_config(str(Path(tmp) / "build.yaml"))
        model = defaults.scoring.model
        built = Path(tmp) / "selected"  # tag and select do not read the sense method
        imagenot("tag", "--config", str(Path(tmp) / "build.yaml"), "--out", str(built))
        imagenot("select", "--run", str(built))
        kept = {(r["row_id"], index[r["wnid"]].name) for r in selected(built)}
        if args.pairs:
            written = write_unjudged(selected(built), set(right), index, args.pairs)
            print(json.dumps({"select_kept": len(kept), "not_judged": written, "file": str(args.pairs)}))
            return
        selected_right = {key for key in kept if right.get(key) == "yes"}
        report["select_kept"] = len(kept)
        report["select_kept_judged_share"] = share(sum(key in right for key in kept), len(kept))
        if args.label_folds:
            labels = out_of_fold_build(built, config, Path(tmp), args.label_folds, args.inputs, index)
            figures = {"label_folds": args.label_folds, **setting_figures(labels, selected_right, right, picturable)}
            report["settings"].append(figures)
            print(json.dumps(figures), flush=True)
        floors = args.pass_floors or [defaults.ranking.min_pass_share]
        settings = () if args.label_folds else product(args.method, floors)
        for method, floor in settings:  # score reads both: which candidates it ranks
            scoring = {**config.get("scoring", {}), "sense_method": method}
            ranking = {**config["ranking"], "min_pass_share": floor}
            setting = dict(config, scoring=scoring, ranking=ranking)
            scored = run_with(built, Path(tmp) / f"{method}-{floor}", setting, ("score",))
            for threshold in args.thresholds or [defaults.ranking.thresholds.get(model)]:
                setting = dict(config, scoring=scoring, ranking={**ranking, "thresholds": {model: threshold}})
                run = run_with(scored, Path(tmp) / f"{method}-{floor}-{threshold}", setting, ("rank", "sample"))
                figures = setting_figures(dataset_labels(run, index), selected_right, right, picturable)
                figures = {"sense_method": method, "threshold": threshold, "min_pass_share": floor, **figures}
                figures["stale"] = (figures["judged_share"] or 0) < JUDGED_ENOUGH
                report["settings"].append(figures)
                print(json.dumps(figures), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    main()

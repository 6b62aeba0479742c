"""Rebuild the real dev set's pairs: the real LAION sample under the current defaults.

Runs `imagenot tag` and `imagenot select` on `benchmarks/data/real_dev.yaml` (the defaults, with
the sample's needs only: no NSFW column, 10 captions a synset at 9,614 rows) and, on the same
tagged rows, `imagenot select` with the caption rules off. It writes
`benchmarks/data/real_dev_pairs.tsv`, one row per (caption, synset) pair, with its `source`:

- `kept`: every pair select keeps under the defaults (step 7 decides among these, so every pair
  any step-7 setting passes is here too);
- `rule_dropped`: the pairs step 6 keeps that the default caption rules drop (to judge the rules);
- `before_step6`: a seeded sample of pairs of captions that name two or more candidates (steps
  2-5 passed, step 6 drops the caption), one pair a caption, to calibrate "none of these" on
  the words step 6 never lets through here but a larger corpus would.

Each row also names the word's other noun senses (`other_senses`: name: gloss, ...) so that a
reader can say which sense the caption uses. The judgments (`real_dev_judged.tsv`, one file per
reader) key on (row_id, synset).

    python benchmarks/real_dev_pairs.py [--run DIR] [--corpus FILE] [--before-step6 N] [--out FILE]

The last line is JSON: the pairs written, by source.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import surface_forms
from imagenot.wordnet.senses import word_senses

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
CONFIG = DATA / "real_dev.yaml"
PAIRS = DATA / "real_dev_pairs.tsv"
COLUMNS = ("row_id", "synset", "source", "caption", "matched", "gloss", "other_senses")
SEED = 37
GLOSS_CHARS = 90  # other senses' glosses, cut: a reader needs the gist, not the whole gloss


def resolved_config(out: Path, corpus: Path | None = None, rules_off: bool = False, source: Path = CONFIG) -> Path:
    """`real_dev.yaml` (or `source`) with its corpus path made absolute (against the repository
    root), or `corpus`."""
    config = yaml.safe_load(source.read_text())
    paths = [corpus] if corpus is not None else [REPO / path for path in config["corpus"]["paths"]]
    missing = [str(path) for path in paths if not Path(path).is_file()]
    if missing:
        raise SystemExit(f"no corpus file {', '.join(missing)}: put shared/ beside the checkout, or give --corpus FILE")
    config["corpus"]["paths"] = [str(Path(path).resolve()) for path in paths]
    if rules_off:
        config["selection"]["caption_rules"] = {"rules": []}
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def imagenot(*args: str) -> None:
    """`imagenot ARGS`, through the command line's own entry point, in this process (one WordNet load)."""
    from imagenot.pipeline.cli import main

    main(list(args), standalone_mode=False)


def selected(run: Path) -> list[dict]:
    return pq.read_table(sorted((run / "select" / "selected").glob("*.parquet"))).to_pylist()


def step6_candidates(run: Path) -> set[str]:
    """The synsets steps 2-5 and the picturable step leave: those whose fate is step 6 or later."""
    with (run / "select" / "synset_fates.tsv").open() as fates:
        return {row["wnid"] for row in csv.DictReader(fates, delimiter="\t") if row["step"] in LATE_STEPS}


LATE_STEPS = {"single_synset", "caption_rules", "kept"}


def before_step6(run: Path, candidates: set[str], taken: set[str], count: int) -> list[dict]:
    """A seeded sample of (caption, candidate) pairs of captions naming two or more candidates."""
    tagged = pq.read_table(sorted((run / "tag" / "tagged").glob("*.parquet"))).to_pylist()
    pool = []
    for row in tagged:
        found = sorted(set(row["wnids"]) & candidates)
        if len(found) >= 2 and row["row_id"] not in taken:
            pool.append((row, found))
    rng = random.Random(SEED)
    picked = rng.sample(pool, min(count, len(pool)))
    return [dict(row, wnid=rng.choice(found)) for row, found in picked]


def pair_row(row: dict, source: str, index, forms, senses) -> dict:
    synset = index[row["wnid"]]
    matched = next(form for form in row["matched"] if row["wnid"] in forms.get(form, ()))
    word = senses.forms(row["wnid"]).get(matched, matched)
    others = [index[w] for w in senses.senses(word) if w != row["wnid"]]
    return dict(
        row_id=row["row_id"],
        synset=synset.name,
        source=source,
        caption=row["caption"],
        matched=matched,
        gloss=synset.gloss,
        other_senses=" | ".join(f"{o.name}: {o.gloss[:GLOSS_CHARS]}" for o in others) or "-",
    )


def write_pairs(rows: list[dict], path: Path) -> None:
    """`pair_row`s to a pairs file, in the sample's row order, each value on one line."""
    rows = sorted(rows, key=lambda r: (int(r["row_id"].rsplit(":", 1)[1]), r["synset"]))
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: " ".join(str(v).split()) for k, v in row.items()} for row in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="run folder (default: a temporary one)")
    parser.add_argument("--corpus", type=Path, help="the LAION sample (default: real_dev.yaml's, from the repo root)")
    parser.add_argument("--before-step6", type=int, default=500, help="pairs sampled from before step 6")
    parser.add_argument("--out", type=Path, default=PAIRS, help="the pairs file to write")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or Path(tmp) / "run"
        imagenot("tag", "--config", str(resolved_config(Path(tmp) / "defaults.yaml", args.corpus)), "--out", str(run))
        imagenot("select", "--run", str(run))
        kept = selected(run)
        candidates = step6_candidates(run)
        no_rules = Path(tmp) / "no_rules"
        imagenot(
            "tag",
            "--config",
            str(resolved_config(Path(tmp) / "rules_off.yaml", args.corpus, True)),
            "--out",
            str(no_rules),
        )
        imagenot("select", "--run", str(no_rules))
        step6 = selected(no_rules)
        extra = before_step6(run, candidates, {row["row_id"] for row in step6}, args.before_step6)
    index, senses = load_index(), word_senses()
    forms = surface_forms(index)
    kept_ids = {(row["row_id"], row["wnid"]) for row in kept}
    rows = [pair_row(row, "kept", index, forms, senses) for row in kept]
    rows += [
        pair_row(row, "rule_dropped", index, forms, senses)
        for row in step6
        if (row["row_id"], row["wnid"]) not in kept_ids
    ]
    rows += [pair_row(row, "before_step6", index, forms, senses) for row in extra]
    write_pairs(rows, args.out)
    print(f"{len(rows)} pairs -> {args.out}")
    print(json.dumps({"pairs": len(rows), "by_source": dict(sorted(Counter(r["source"] for r in rows).items()))}))


if __name__ == "__main__":
    main()

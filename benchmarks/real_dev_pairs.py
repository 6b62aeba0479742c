"""Rebuild the real dev set's pairs: the real LAION sample through step 6, one row per kept caption.

Runs `imagenot tag` and `imagenot select` on `benchmarks/data/real_dev.yaml` and writes
`benchmarks/data/real_dev_pairs.tsv`: row_id, caption, the surface form that matched the kept
synset, the synset's name and gloss. The judgments (`real_dev_judged.tsv`) key on row_id.

    python benchmarks/real_dev_pairs.py [--run DIR] [--corpus FILE]

The config's corpus path is relative to the repository root (`../shared/data/...`: the shared
folder beside the checkout), so the script works from any checkout that has shared/ beside it.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import yaml

from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import surface_forms

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
CONFIG = DATA / "real_dev.yaml"
PAIRS = DATA / "real_dev_pairs.tsv"
COLUMNS = ("row_id", "caption", "matched", "synset", "gloss")


def resolved_config(out: Path, corpus: Path | None = None) -> Path:
    """`real_dev.yaml` with its corpus path made absolute (against the repository root), or `corpus`."""
    config = yaml.safe_load(CONFIG.read_text())
    paths = [corpus] if corpus is not None else [REPO / path for path in config["corpus"]["paths"]]
    missing = [str(path) for path in paths if not Path(path).is_file()]
    if missing:
        raise SystemExit(f"no corpus file {', '.join(missing)}: put shared/ beside the checkout, or give --corpus FILE")
    config["corpus"]["paths"] = [str(Path(path).resolve()) for path in paths]
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def build_through_select(run: Path, config: Path) -> None:
    imagenot = [sys.executable, "-m", "imagenot.pipeline.cli"]
    subprocess.run([*imagenot, "tag", "--config", str(config), "--out", str(run)], check=True)
    subprocess.run([*imagenot, "select", "--config", str(config), "--run", str(run)], check=True)


def pair_rows(run: Path) -> list[dict]:
    """The kept captions with the surface form that tagged their synset."""
    index = load_index()
    forms = surface_forms(index)
    table = pq.read_table(sorted((run / "select" / "selected").glob("*.parquet")))
    rows = []
    for row in table.to_pylist():
        synset = index[row["wnid"]]
        matched = next(form for form in row["matched"] if row["wnid"] in forms.get(form, ()))
        rows.append(
            dict(row_id=row["row_id"], caption=row["caption"], matched=matched, synset=synset.name, gloss=synset.gloss)
        )
    return sorted(rows, key=lambda r: int(r["row_id"].rsplit(":", 1)[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="run folder (default: a temporary one)")
    parser.add_argument("--corpus", type=Path, help="the LAION sample (default: real_dev.yaml's, from the repo root)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = args.run or Path(tmp) / "run"
        build_through_select(run, resolved_config(Path(tmp) / "real_dev.yaml", args.corpus))
        rows = pair_rows(run)
    with PAIRS.open("w", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: " ".join(str(v).split()) for k, v in row.items()} for row in rows)
    print(f"{len(rows)} pairs -> {PAIRS}")


if __name__ == "__main__":
    main()

"""Builds `sense_dev.parquet` from `sense_dev.tsv`, checking every label against WordNet 3.0.

The table (lemma, synset, caption) holds LAION-style captions written for this project: product
titles with sizes and SKUs, stock-photo titles, alt text, lowercase run-ons, hashtags, a foreign
word beside the English one. Each is labelled with the noun sense of `lemma` it means. Checked:
the synset exists, it is a noun sense of the lemma, the lemma has two or more picturable noun
senses (under physical_entity.n.01, through hypernyms and instance hypernyms; a caption may still
mean one of its other senses, which a build must not keep), and the set's size (>= 300
captions, >= 80 lemmas, >= 45% of captions not the lemma's first sense).
Output columns: caption, lemma, synset (WordNet name), wnid, first_sense (bool).

    python benchmarks/data/make_sense_dev.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.wordnet.index import wnid_of_offset
from imagenot.wordnet.nltk_data import load_nltk_wordnet

HERE = Path(__file__).parent
TABLE, OUT = HERE / "sense_dev.tsv", HERE / "sense_dev.parquet"
MIN_CAPTIONS, MIN_LEMMAS, MIN_NOT_FIRST = 300, 80, 0.45
MIN_PICTURABLE = 2
PICTURABLE_ROOT = "physical_entity.n.01"


def is_picturable(synset, root) -> bool:
    """`synset` is `root` or descends from it."""
    return synset == root or root in synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms())


def labelled_rows(path: Path = TABLE) -> list[dict]:
    """The table's rows, each label checked; an error names the line."""
    wn = load_nltk_wordnet()
    root = wn.synset(PICTURABLE_ROOT)
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        for line, row in enumerate(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE), start=2):
            senses = wn.synsets(row["lemma"].replace(" ", "_"), "n")
            names = [s.name() for s in senses]
            picturable = [s.name() for s in senses if is_picturable(s, root)]
            if len(picturable) < MIN_PICTURABLE:
                raise ValueError(
                    f"{path.name}:{line}: {row['lemma']!r} has {len(picturable)} picturable noun senses "
                    f"(under {PICTURABLE_ROOT}: {picturable}) of {len(senses)}, expected >= {MIN_PICTURABLE}"
                )
            if row["synset"] not in names:
                raise ValueError(
                    f"{path.name}:{line}: {row['synset']} is not a noun sense of {row['lemma']!r} ({names})"
                )
            rows.append(
                {
                    "caption": row["caption"],
                    "lemma": row["lemma"],
                    "synset": row["synset"],
                    "wnid": wnid_of_offset(wn.synset(row["synset"]).offset()),
                    "first_sense": row["synset"] == names[0],
                }
            )
    return rows


def check_size(rows: list[dict]) -> None:
    lemmas = {r["lemma"] for r in rows}
    not_first = sum(not r["first_sense"] for r in rows) / len(rows)
    if len(rows) < MIN_CAPTIONS or len(lemmas) < MIN_LEMMAS or not_first < MIN_NOT_FIRST:
        raise ValueError(
            f"{len(rows)} captions, {len(lemmas)} lemmas, {not_first:.0%} not the first sense; "
            f"expected >= {MIN_CAPTIONS}, >= {MIN_LEMMAS}, >= {MIN_NOT_FIRST:.0%}"
        )


def main() -> None:
    rows = labelled_rows()
    check_size(rows)
    pq.write_table(pa.Table.from_pylist(rows), OUT)
    lemmas = len({r["lemma"] for r in rows})
    not_first = sum(not r["first_sense"] for r in rows) / len(rows)
    print(f"{OUT.name}: {len(rows)} captions, {lemmas} lemmas, {not_first:.1%} not the first sense")


if __name__ == "__main__":
    main()

"""SemCor 3.0's noun annotations, shipped in `data/semcor30_nouns.parquet`, and the fixed split of
its documents that every fit and every measure of the sense decision follows.

86,662 annotated nouns of 18,521 Brown-corpus sentences in 186 documents (Princeton's SemCor,
WordNet's licence; noun annotations of the NAF copy in the wsd_corpora repository), one row per
annotation: `doc`, `sentence`, the annotated span's `start`/`end` characters, `word`, `lemma`,
`synset` (a WordNet 3.0 name). Documents in the file's order, numbered from 0: number % 10 == 9
is `test`, number % 10 == 4 is `dev` (the choices: layers, prior weight), the rest `train` (the
sense vectors are built from these alone). Whole documents, every genre of the Brown corpus in
each part.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SEMCOR_FILE = Path(__file__).parent / "data" / "semcor30_nouns.parquet"
PARTS = ("train", "dev", "test")
COLUMNS = ["doc", "sentence", "start", "end", "word", "lemma", "synset"]


def document_part(number: int) -> str:
    """The part of the document `number` (its place in the file, from 0)."""
    return "test" if number % 10 == 9 else "dev" if number % 10 == 4 else "train"


def semcor_rows(part: str) -> pa.Table:
    """The annotations of one part's documents, in the file's order."""
    if part not in PARTS:
        raise ValueError(f"SemCor part must be one of {PARTS}, got {part!r}")
    table = pq.read_table(SEMCOR_FILE, columns=COLUMNS)
    docs = list(dict.fromkeys(table.column("doc").to_pylist()))
    chosen = [doc for number, doc in enumerate(docs) if document_part(number) == part]
    return table.filter(pc.is_in(table.column("doc"), value_set=pa.array(chosen, pa.string())))

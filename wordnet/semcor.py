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

import dataclasses
import functools
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from imagenot.wordnet.senses import WordSenses

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


@functools.lru_cache(maxsize=1)
def _train_counts(senses: WordSenses) -> dict[str, dict[str, int]]:
    rows = semcor_rows("train")
    lemmas, synsets = rows.column("lemma").to_pylist(), rows.column("synset").to_pylist()
    senses.normalize_words(sorted(set(lemmas)))
    counts: dict[str, dict[str, int]] = {}
    for lemma, synset in zip(lemmas, synsets):
        by_sense = counts.setdefault(senses.word(lemma), {})
        wnid = senses.index.by_name(synset).wnid
        by_sense[wnid] = by_sense.get(wnid, 0) + 1
    return counts


def train_counts(senses: WordSenses, word: str) -> dict[str, int]:
    """wnid -> how often the training documents annotate `word` (any spelling) with that sense."""
    return _train_counts(senses).get(senses.word(word), {})


def train_log_prior(senses: WordSenses, word: str, wnids: tuple[str, ...]) -> list[float]:
    """log P(sense | word) from the training documents' counts, add-one smoothed over `wnids`: the
    prior a method measured on SemCor may use (WordNet's own counts were taken on all of SemCor)."""
    counts = train_counts(senses, word)
    total = sum(counts.get(w, 0) for w in wnids) + len(wnids)
    return [math.log((counts.get(w, 0) + 1) / total) for w in wnids]


@dataclasses.dataclass
class PolysemousRows:
    """A part's annotations of nouns with two or more noun senses whose gold sense is among them
    (what every measure of the sense decision and the trained head read), in the file's order."""

    docs: list[str]
    sentences: list[str]
    spans: list[tuple[int, int]]
    lemmas: list[str]  # WordNet's lemma, as annotated
    words: list[str]  # the lemma, normalised as `WordSenses` keys it
    candidates: list[tuple[str, ...]]  # every noun sense of the word, sorted by wnid
    gold: list[str]


def polysemous_rows(part: str, senses: WordSenses) -> PolysemousRows:
    rows = semcor_rows(part)
    lemmas = rows.column("lemma").to_pylist()
    senses.normalize_words(sorted(set(lemmas)))
    out = PolysemousRows([], [], [], [], [], [], [])
    columns = [rows.column(c).to_pylist() for c in ("doc", "sentence", "start", "end", "synset")]
    for doc, sentence, start, end, synset, lemma in zip(*columns, lemmas):
        word, gold = senses.word(lemma), senses.index.by_name(synset).wnid
        candidates = senses.senses(word)
        if len(candidates) < 2 or gold not in candidates:
            continue
        out.docs.append(doc)
        out.sentences.append(sentence)
        out.spans.append((start, end))
        out.lemmas.append(lemma)
        out.words.append(word)
        out.candidates.append(candidates)
        out.gold.append(gold)
    return out


def most_frequent_sense(senses: WordSenses, word: str, candidates: tuple[str, ...]) -> str:
    """The candidate the training documents annotate most often for `word`; the first of equals
    (candidates sorted by wnid: the lowest wnid for a word they never annotate)."""
    counts = train_counts(senses, word)
    return max(candidates, key=lambda wnid: counts.get(wnid, 0))

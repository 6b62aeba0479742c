"""Gather the readers' web senses into the lexicon the pipeline reads (`labels/web_senses.tsv`).

Each reader of a packet (`web_sense_packets.py`) wrote `data/web_senses/read_NN.tsv`: one line per
sense the packet's captions use that WordNet 3.0 lacks, and a `-` line for each word read with none
(see `data/web_senses/README.md`). This checks every line (a known kind, a gloss, the WordNet senses
it is confused with among the word's own, examples that are rows of the shared sample whose caption
holds the word) and writes the senses, by word, to the lexicon, in the readers' own words.

    python benchmarks/web_sense_lexicon.py [--reads DIR] [--out FILE] [--corpus FILE]

The last line is JSON: words read, words with a web sense, senses by kind.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from real_dev_judgments import CORPUS
from real_dev_pairs import DATA, REPO

from imagenot.labels.spans import caption_words, first_span
from imagenot.labels.web_senses import COLUMNS, KINDS, read_lexicon
from imagenot.wordnet.senses import word_senses

READS = DATA / "web_senses"
LEXICON = REPO / "labels" / "web_senses.tsv"


def read_lines(folder: Path) -> tuple[list[dict], set[str]]:
    """The readers' sense lines (with their file and line) and every word read."""
    lines, words = [], set()
    for path in sorted(folder.glob("read_*.tsv")):
        with path.open(newline="") as file:
            for number, row in enumerate(csv.DictReader(file, delimiter="\t"), start=2):
                words.add(row["word"])
                if row["kind"] != "-":
                    lines.append({**row, "where": f"{path.name}:{number}"})
    return lines, words


def problems(row: dict, senses, captions: list[str]) -> list[str]:
    found = []
    if row["kind"] not in KINDS:
        found.append(f"kind {row['kind']!r}")
    own = {senses.index[w].name for w in senses.senses(row["word"])}
    strange = [name for name in row["confused_with"].split(",") if name.strip() not in own]
    if strange or not own:
        found.append(f"confused_with {strange} not among the word's senses")
    forms = senses.word_forms(row["word"])
    for example in row["examples"].split():
        number = int(example.rsplit(":", 1)[1]) if example.startswith("laion_sample_9614:") else -1
        text = (captions[number] or "") if 0 <= number < len(captions) else ""
        if first_span(caption_words([text])[0], forms) is None:
            found.append(f"example {example} does not hold the word")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=Path, default=READS, help="the readers' files")
    parser.add_argument("--out", type=Path, default=LEXICON, help="the lexicon to write")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the shared LAION sample")
    args = parser.parse_args()
    senses = word_senses()
    captions = pq.read_table(args.corpus, columns=["TEXT"]).column("TEXT").to_pylist()
    lines, words = read_lines(args.reads)
    bad = [f"{row['where']}: {p}" for row in lines for p in problems(row, senses, captions)]
    if bad:
        raise SystemExit("\n".join(bad))
    lines.sort(key=lambda row: row["word"])  # stable: a word's senses keep the reader's order
    with args.out.open("w", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS, delimiter="\t", lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: " ".join(row[k].split()) for k in COLUMNS} for row in lines)
    lexicon = read_lexicon(args.out.read_text(encoding="utf-8"), str(args.out))
    print(
        json.dumps(
            {
                "words_read": len(words),
                "words_with_web_senses": len(lexicon.words()),
                "senses": dict(sorted(Counter(s.kind for s in lexicon).items())),
                "lexicon": str(args.out),
            }
        )
    )


if __name__ == "__main__":
    main()

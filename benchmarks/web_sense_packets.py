"""The reading packets the web-sense lexicon was written from (issue 51 item 1; `labels/web_senses.tsv`).

Tags and selects `data/build_dev.yaml` (the shared LAION sample at a 10k corpus's settings) and takes
the words to read: every word that names a candidate class there (the lemma a kept caption matched
for its synset) and the 1,000 words most often matched in the sample's captions, less those holding
a digit or of one character (numbers and letters are the caption rules'). Per word a packet lists its
WordNet 3.0 noun senses and a seeded draw (`SEED`) of up to `CAPTIONS` captions that match it; the
words, most frequent first, are dealt round-robin into `--packets` Markdown files, one per reader.

    python benchmarks/web_sense_packets.py --out DIR [--packets 8]

The last line is JSON: the words, how many name candidates, and the files written.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
from real_dev_pairs import DATA, imagenot, resolved_config, selected

from imagenot.wordnet.senses import word_senses

CONFIG = DATA / "build_dev.yaml"
SEED = 51
TOP = 1000  # the most frequent words read, beside the candidates'
CAPTIONS = 12  # captions shown a word
GLOSS_CHARS = 110


def row_number(row_id: str) -> int:
    return int(row_id.rsplit(":", 1)[1])


def words_to_read(run: Path, senses) -> tuple[list[str], set[str], dict[str, list[str]]]:
    """(the words, most frequent first; those naming a candidate; each word's caption row ids)."""
    tagged = pq.read_table(sorted((run / "tag" / "tagged").glob("*.parquet"))).to_pylist()
    rows_of: dict[str, list[str]] = defaultdict(list)
    for row in tagged:
        for word in sorted({w for form in row["matched"] or [] for w in senses.form_words(form)}):
            rows_of[word].append(row["row_id"])
    counts = Counter({word: len(rows) for word, rows in rows_of.items()})
    candidate_words = set()
    for row in selected(run):
        forms = senses.forms(row["wnid"])
        candidate_words |= {forms[f] for f in row["matched"] if f in forms}
    top = [word for word, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]]
    words = sorted(set(top) | candidate_words, key=lambda w: (-counts[w], w))
    words = [w for w in words if len(w) > 1 and not any(c.isdigit() for c in w)]
    return words, candidate_words, rows_of


def entry(word: str, rows: list[str], captions: dict[str, str], candidate: bool, senses, rng) -> str:
    picked = sorted(rng.sample(rows, min(CAPTIONS, len(rows))), key=row_number)
    index = senses.index
    lines = [
        f"## {word}  ({len(rows)} captions in the sample; {'a candidate class word' if candidate else 'frequent'})",
        "WordNet 3.0 noun senses:",
        *(f"- {index[w].name}: {index[w].gloss[:GLOSS_CHARS]}" for w in senses.senses(word)),
        "Captions:",
        *(f"- [{r}] {' '.join(captions[r].split())[:200]}" for r in picked),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder of the packets")
    parser.add_argument("--packets", type=int, default=8, help="reader packets")
    parser.add_argument("--corpus", type=Path, help="the LAION sample (default: build_dev.yaml's)")
    args = parser.parse_args()
    senses = word_senses()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        imagenot(
            "tag",
            "--config",
            str(resolved_config(Path(tmp) / "build.yaml", args.corpus, source=CONFIG)),
            "--out",
            str(run),
        )
        imagenot("select", "--run", str(run))
        words, candidate_words, rows_of = words_to_read(run, senses)
        tagged = pq.read_table(sorted((run / "tag" / "tagged").glob("*.parquet")), columns=["row_id", "caption"])
        captions = dict(zip(tagged.column("row_id").to_pylist(), tagged.column("caption").to_pylist()))
    rng = random.Random(SEED)
    entries = [
        entry(w, sorted(set(rows_of[w]), key=row_number), captions, w in candidate_words, senses, rng) for w in words
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    files = []
    for p in range(args.packets):
        part = entries[p :: args.packets]
        path = args.out / f"words_{p + 1:02d}.md"
        path.write_text(f"# Words {p + 1} of {args.packets}: {len(part)} words\n\n" + "\n\n".join(part) + "\n")
        files.append(path.name)
    print(json.dumps({"words": len(words), "candidate_words": len(candidate_words & set(words)), "files": files}))


if __name__ == "__main__":
    main()

"""The sense decision on SemCor documents held apart from everything fit (issue 37 item 1).

`wordnet.semcor` splits SemCor 3.0's 186 documents by their place in the file: every 10th from
the 10th (number % 10 == 9, 18 documents, 8,577 noun annotations) is `test`, every 10th from the
5th (19 documents, 8,771) `dev`, the other 149 `train` (69,314), from which alone the shipped
sense vectors are built. Measured on the annotations of nouns with two or more noun senses
(`WordSenses`: every synset with a lemma that reads the same) whose gold sense is among them:
accuracy, and accuracy where the gold sense is not WordNet's first sense of the lemma. Beside:

- `first_sense`: WordNet's first sense of the lemma. WordNet orders senses by SemCor's own
  counts, test documents included, so on SemCor this baseline has seen the test rows' senses;
- `train_counts`: the sense the train documents annotate most often for the word (ties and
  unseen words: the lowest wnid): the first-sense rule fit on train alone;
- each `scoring.sense_method` at each `scoring.sense_prior` P: `sentence` (the default before:
  the sentence's embedding against each sense's query texts, templates as configured),
  `context` (`ContextSenses`: the word's contextual embedding at its span against the
  train-built sense vectors) and `both` (the two similarities added). P is chosen on dev by the
  mean of the two accuracies; the test figures of every P are in the JSON too.

    python benchmarks/quality_wsd.py [--layers 1] [--out benchmarks/data/quality_wsd.json]

Sense vectors come from `prepare_sense_vectors` (built on first use: about three minutes), the
sentence method's queries through the embedding cache (about ten minutes the first time: every
sense of every word, three templates each); the dev and test sentences take a minute or two
more on one thread. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.score.context_senses import ContextSenses
from imagenot.pipeline.score.sense_contrast import SenseQueries
from imagenot.pipeline.score.sense_vectors import load_sense_vectors
from imagenot.pipeline.score.span_encoder import SpanEncoder
from imagenot.wordnet.nltk_data import load_nltk_wordnet
from imagenot.wordnet.semcor import semcor_rows
from imagenot.wordnet.senses import WordSenses, word_senses

PRIORS = [0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1]
TARGETS = {"above_first_sense": 0.10, "not_first": 0.50}


class Part:
    """One part's evaluated annotations: 2+-sense nouns whose gold sense is a candidate."""

    def __init__(self, name: str, senses: WordSenses, first_of: dict):
        rows = semcor_rows(name)
        index = senses.index
        lemmas = rows.column("lemma").to_pylist()
        senses.normalize_words(sorted(set(lemmas)))
        self.sentences, self.spans, self.words, self.candidates, self.gold, self.first = [], [], [], [], [], []
        columns = [rows.column(c).to_pylist() for c in ("sentence", "start", "end", "synset")]
        for sentence, start, end, synset, lemma in zip(*columns, lemmas):
            word, gold = senses.word(lemma), index.by_name(synset).wnid
            candidates = senses.senses(word)
            if len(candidates) < 2 or gold not in candidates:
                continue
            self.sentences.append(sentence)
            self.spans.append((start, end))
            self.words.append(word)
            self.candidates.append(candidates)
            self.gold.append(gold)
            self.first.append(first_of(lemma))
        self.not_first = np.array([g != f for g, f in zip(self.gold, self.first)])

    def figures(self, predicted: list[str]) -> dict:
        right = np.array([p == g for p, g in zip(predicted, self.gold)])
        return {"accuracy": round(float(right.mean()), 4), "not_first": round(float(right[self.not_first].mean()), 4)}

    def by_word(self) -> dict[str, list[int]]:
        groups: dict[str, list[int]] = {}
        for i, word in enumerate(self.words):
            groups.setdefault(word, []).append(i)
        return groups


def first_sense_finder():
    wordnet = load_nltk_wordnet()

    def first_of(lemma: str) -> str | None:
        synsets = wordnet.synsets(lemma, "n")
        return f"n{synsets[0].offset():08d}" if synsets else None

    return first_of


def train_counts(senses: WordSenses) -> dict[tuple[str, str], int]:
    rows = semcor_rows("train")
    counts: dict[tuple[str, str], int] = {}
    for lemma, synset in zip(rows.column("lemma").to_pylist(), rows.column("synset").to_pylist()):
        key = (senses.word(lemma), senses.index.by_name(synset).wnid)
        counts[key] = counts.get(key, 0) + 1
    return counts


def most_annotated(part: Part, counts: dict[tuple[str, str], int]) -> list[str]:
    """Per row, the candidate the train documents annotate most often for its word; `max` keeps
    the first of equals, and candidates are sorted by wnid."""
    return [
        max(c, key=lambda wnid, word=word: counts.get((word, wnid), 0)) for word, c in zip(part.words, part.candidates)
    ]


def argmax_senses(part: Part, vectors: np.ndarray, scorer) -> list[str]:
    """Each row's best sense by `scorer.scores` (ties by wnid, as the stage breaks them)."""
    predicted: list[str] = [""] * len(part.words)
    for word, rows in part.by_word().items():
        wnids = part.candidates[rows[0]]
        scores, _ = scorer.scores(vectors[rows], word, wnids)
        for i, best in zip(rows, scores.argmax(axis=1)):
            predicted[i] = wnids[best]
    return predicted


def method_results(parts: dict[str, Part], method: str, layers: int, senses: WordSenses, sentence) -> dict:
    """One sense method at every prior; the prior chosen on dev (the mean of the two accuracies)."""
    encoder = SpanEncoder(layers=layers, threads=1)
    started = time.perf_counter()
    vectors = load_sense_vectors(encoder)
    built = time.perf_counter() - started
    queries, captions = sentence
    embedded = {}
    for name, part in parts.items():
        at = encoder.encode_spans(part.sentences, part.spans) if method != "sentence" else None
        embedded[name] = (
            at if method == "context" else captions[name] if at is None else np.hstack([at, captions[name]])
        )
    figures = {}
    for prior in PRIORS:
        scoring = Scoring(sense_method=method, sense_prior=prior, sense_layers=layers)
        if method == "sentence":
            scorer = SenseQueries(scoring, queries.encoder, senses)  # its queries: from the embedding cache
        else:
            sentence_part = queries if method == "both" else None
            scorer = ContextSenses(scoring, senses=senses, encoder=encoder, vectors=vectors, sentence=sentence_part)
        figures[prior] = {
            name: part.figures(argmax_senses(part, embedded[name], scorer)) for name, part in parts.items()
        }
        print(f"{method} layers {layers} prior {prior}: {figures[prior]}", file=sys.stderr)
    chosen = max(PRIORS, key=lambda p: (figures[p]["dev"]["accuracy"] + figures[p]["dev"]["not_first"], -p))
    return {
        "method": method,
        "layers": layers,
        "sense_vectors": vectors.provenance,
        "sense_vectors_seconds": round(built, 1),
        "by_prior": {str(p): f for p, f in figures.items()},
        "chosen_prior_on_dev": chosen,
        "test_at_chosen_prior": figures[chosen]["test"],
    }


def sentence_inputs(parts: dict[str, Part], senses: WordSenses):
    """The sentence method's queries (templates as configured; embedded through the embedding
    cache, so a rerun embeds nothing) and each part's sentences embedded."""
    from imagenot.pipeline.score.cache import CachedEncoder
    from imagenot.pipeline.score.runtimes import load_encoder
    from imagenot.wordnet.nltk_data import cache_dir

    scoring = Scoring(sense_method="sentence")
    encoder = CachedEncoder(
        load_encoder("sentence-transformers", scoring.model, "torch", threads=1), cache_dir() / "embeddings"
    )
    queries = SenseQueries(scoring, encoder, senses)
    queries.vectors(sorted({w for part in parts.values() for c in part.candidates for w in c}))
    return queries, {name: encoder.encode(part.sentences) for name, part in parts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="1", help="comma-separated scoring.sense_layers values to measure")
    parser.add_argument(
        "--sentence", action="store_true", help="also the sentence method (slow: every sense's queries)"
    )
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    senses = word_senses()
    first_of = first_sense_finder()
    parts = {name: Part(name, senses, first_of) for name in ("dev", "test")}
    counts = train_counts(senses)
    report: dict = {
        "split": "SemCor 3.0 documents by place in the file: number % 10 == 9 test, == 4 dev, else train",
        "rows": {name: len(part.gold) for name, part in parts.items()},
        "rows_not_first": {name: int(part.not_first.sum()) for name, part in parts.items()},
        "targets": TARGETS,
        "first_sense": {name: part.figures(part.first) for name, part in parts.items()},
        "train_counts": {name: part.figures(most_annotated(part, counts)) for name, part in parts.items()},
    }
    sentence = sentence_inputs(parts, senses)
    methods = [("sentence", 1), *[(m, int(layers)) for layers in args.layers.split(",") for m in ("context", "both")]]
    report["methods"] = [method_results(parts, method, layers, senses, sentence) for method, layers in methods]
    line = json.dumps(report)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(line)


if __name__ == "__main__":
    main()

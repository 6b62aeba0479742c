"""The sense decision on SemCor documents held apart from everything fit (issues 37 and 44).

`wordnet.semcor` splits SemCor 3.0's 186 documents by their place in the file: every 10th from
the 10th (number % 10 == 9, 18 documents) is `test`, every 10th from the 5th (19 documents) `dev`,
the other 149 `train`, from which alone the context method's sense vectors, the trained head and
every prior here are built. Measured on the annotations of nouns with two or more noun senses
(`WordSenses`: every synset with a lemma that reads the same) whose gold sense is among them.

WordNet 3.0's sense order and its tag counts (`cntlist`, `Lemma.count()`) were counted on SemCor
itself, test documents included, so neither is used here: the first-sense baseline is the sense
the train documents annotate most often for the word (`most_frequent_sense`; ties and unseen words: the
lowest wnid), and a method's prior is log P(sense | word) from the same counts
(`wordnet.semcor.train_log_prior`). Reported: accuracy, and accuracy where the gold sense is not
that most frequent sense (`not_mfs`), for every method at every prior weight P (0: no prior):

- `sentence`: the sentence's embedding against each sense's query texts (`SenseQueries`);
- `context`: the word's contextual embedding at its span against the train-built sense vectors;
- `trained_head`: the trained head alone (`TrainedSenses`, `labels/sense_model`);
- `trained`: the head with the sentence method's similarity added (`scoring.sense_sentence_weight`).

P is chosen on dev by the mean of the two accuracies; the test figures of every P are in the JSON.
WordNet's first sense is listed too, as what it is: a baseline that has seen the test documents.

    python benchmarks/quality_wsd.py [--methods sentence,context,trained] [--out benchmarks/data/quality_wsd.json]

The sentence method's queries go through the embedding cache (about ten minutes the first time: every
sense of every word, three templates each), the context method's sense vectors are built on first use
(about three minutes); the dev and test sentences take a minute or two more per method. The last line
is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from imagenot.labels.senses.sentence import SenseQueries
from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.score.cache import CachedEncoder
from imagenot.pipeline.score.runtimes import load_encoder
from imagenot.pipeline.score.sense_methods import context_senses, trained_senses
from imagenot.wordnet.nltk_data import cache_dir, load_nltk_wordnet
from imagenot.wordnet.semcor import most_frequent_sense, polysemous_rows, train_log_prior
from imagenot.wordnet.senses import WordSenses, word_senses

PRIORS = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
METHODS = ("sentence", "context", "trained_head", "trained")
HEAD_ALONE = {"trained_head": {"sense_method": "trained", "sense_sentence_weight": 0.0}}
TARGETS = {"above_train_mfs": 0.10, "not_mfs": 0.50}


class Part:
    """One part's evaluated annotations: 2+-sense nouns whose gold sense is a candidate."""

    def __init__(self, name: str, senses: WordSenses):
        rows = polysemous_rows(name, senses)
        self.sentences, self.spans, self.lemmas, self.words = rows.sentences, rows.spans, rows.lemmas, rows.words
        self.candidates, self.gold = rows.candidates, rows.gold
        self.mfs = [most_frequent_sense(senses, w, c) for w, c in zip(self.words, self.candidates)]
        self.not_mfs = np.array([g != m for g, m in zip(self.gold, self.mfs)])

    def figures(self, predicted: list[str]) -> dict:
        right = np.array([p == g for p, g in zip(predicted, self.gold)])
        return {"accuracy": round(float(right.mean()), 4), "not_mfs": round(float(right[self.not_mfs].mean()), 4)}

    def by_word(self) -> dict[str, list[int]]:
        groups: dict[str, list[int]] = {}
        for i, word in enumerate(self.words):
            groups.setdefault(word, []).append(i)
        return groups


def first_senses(part: Part) -> list[str]:
    """WordNet's first noun sense of each row's word (ordered by SemCor's own counts)."""
    wordnet = load_nltk_wordnet()
    return [f"n{wordnet.synsets(lemma, 'n')[0].offset():08d}" for lemma in part.lemmas]


def prior_free_scores(part: Part, vectors: np.ndarray, scorer) -> list[np.ndarray]:
    """Per row, its candidates' scores without any prior (the scorer's `sense_prior` is 0)."""
    out: list[np.ndarray] = [np.zeros(0)] * len(part.words)
    for word, rows in part.by_word().items():
        scores, _ = scorer.scores(vectors[rows], word, part.candidates[rows[0]])
        for i, row in zip(rows, scores):
            out[i] = row
    return out


def with_prior(part: Part, scores: list[np.ndarray], prior: float, senses: WordSenses) -> list[str]:
    """Each row's best sense with `prior` x the train documents' log P(sense | word) added (ties: lowest wnid)."""
    predicted = []
    for word, candidates, row in zip(part.words, part.candidates, scores):
        total = row + prior * np.array(train_log_prior(senses, word, candidates)) if prior else row
        predicted.append(candidates[int(np.argmax(total))])
    return predicted


def method_scorer(method: str, encoder: CachedEncoder, senses: WordSenses):
    """The method's scorer with no prior, and how it reads a part's rows."""
    scoring = Scoring(**HEAD_ALONE.get(method, {"sense_method": method}), sense_prior=0.0)
    if method == "sentence":
        queries = SenseQueries(scoring.sense_settings(), encoder, senses)
        return queries, lambda part: encoder.encoder.encode(part.sentences)
    if scoring.sense_method == "context":
        scorer = context_senses(scoring, senses=senses)
    else:
        scorer = trained_senses(scoring, encoder, senses=senses)
    return scorer, lambda part: scorer.vectors_at(part.sentences, part.spans)


def method_results(parts: dict[str, Part], method: str, encoder: CachedEncoder, senses: WordSenses) -> dict:
    """One method at every prior; the prior chosen on dev (the mean of the two accuracies)."""
    scorer, read = method_scorer(method, encoder, senses)
    scores = {name: prior_free_scores(part, read(part), scorer) for name, part in parts.items()}
    figures = {
        prior: {name: part.figures(with_prior(part, scores[name], prior, senses)) for name, part in parts.items()}
        for prior in PRIORS
    }
    for prior, by_part in figures.items():
        print(f"{method} prior {prior}: {by_part}", file=sys.stderr)
    chosen = max(PRIORS, key=lambda p: (figures[p]["dev"]["accuracy"] + figures[p]["dev"]["not_mfs"], -p))
    return {
        "method": method,
        "by_prior": {str(p): f for p, f in figures.items()},
        "chosen_prior_on_dev": chosen,
        "test_at_chosen_prior": figures[chosen]["test"],
        "test_without_prior": figures[0.0]["test"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods to measure")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    senses = word_senses()
    parts = {name: Part(name, senses) for name in ("dev", "test")}
    scoring = Scoring()
    encoder = CachedEncoder(
        load_encoder(scoring.encoder, scoring.model, "torch", threads=1), cache_dir() / "embeddings"
    )
    report: dict = {
        "split": "SemCor 3.0 documents by place in the file: number % 10 == 9 test, == 4 dev, else train",
        "rows": {name: len(part.gold) for name, part in parts.items()},
        "rows_not_mfs": {name: int(part.not_mfs.sum()) for name, part in parts.items()},
        "targets": TARGETS,
        "train_mfs": {name: part.figures(part.mfs) for name, part in parts.items()},
        "wordnet_first_sense_has_seen_test": {name: part.figures(first_senses(part)) for name, part in parts.items()},
    }
    report["methods"] = [method_results(parts, m, encoder, senses) for m in args.methods.split(",")]
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    main()

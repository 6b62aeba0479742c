"""Train the label model the label library ships (`labels/label_model/`: `weights.npz`, `card.json`) on
captions judged by hand.

    imagenot tag --config benchmarks/data/build_dev.yaml --out RUN      # the shared sample, tagged
    python -m imagenot.labels.label_model.train --tagged 'RUN/tag/tagged/*.parquet' [--seed 0]

The judged pairs are the repository's (`benchmarks/data`, `--data`): the training packets
(`label_train/pairs_NN.tsv`, one reader a pair: `judged_NN.tsv`, `rejudged_*.tsv` replacing the
pairs read again), the real dev set (`real_dev_pairs.tsv`, four readers) and the build's pairs
(`build_dev_pairs.tsv`, three readers), a multi-read pair counted by its readers' majority. Each is
read as a build reads it (`pair_inputs`): the tagger's matched forms of its caption (`--tagged`), its
gloss similarity and its sense contrast by the sentence method with the web senses (the packaged
MiniLM, `labels.encoders`, the default settings), select's none-of-these probability with the
sample's own form statistics, and its features (`features.pair_features`). The model is a logistic
regression of `picturable` (yes against the rest) on the standardised features and the caption
embeddings' first `--components` principal axes, and a multinomial one of `use` (`model.USES`) on the
same inputs; `--exclude` leaves out the pairs of the classes a fold holds apart. Seeded: the same
seed, data and library versions give the same weights. `card.json` records what it was trained on,
the settings a build must read pairs with to apply it, and the hours it took.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import glob
import gzip
import hashlib
import json
import platform
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from imagenot.labels.caption_rules import NONE_OF_THESE, PairScores
from imagenot.labels.encoders.models import DEFAULT_MODEL
from imagenot.labels.encoders.text import SentenceTransformerEncoder
from imagenot.labels.form_counts import of_lemmas
from imagenot.labels.label_model.features import FEATURES, pair_features
from imagenot.labels.label_model.model import MODEL_DIR, USES, LabelModel, save_model
from imagenot.labels.none_of_these import FormStats, NoneOfThese, form_statistics, none_of_these_scores
from imagenot.labels.pair_checker import caption_rules, senses_of
from imagenot.labels.senses.encoders import TextEncoder
from imagenot.labels.senses.sentence import SenseContrast, SenseQueries
from imagenot.labels.senses.settings import SenseSettings
from imagenot.labels.similarity import QueryEmbeddings, score_batch
from imagenot.labels.spans import form_spans
from imagenot.labels.web_senses import lexicon_digest, web_lexicon
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.lemmas import normalize_all

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
QUERY_TEMPLATE = "{lemma}: {gloss}"  # scoring.query_template's default, the gloss similarity's query
MARGIN_CLIP = 0.5  # the sentence method's margins: cosine differences
GIVEN_NAMES = "/usr/share/dict/propernames.gz"  # selection.caption_rules.given_names' default
# the readers' `use`, as the use head names it
USE_OF = {
    "sense": "not_shown",
    "other_sense": "other_sense",
    "name": "name",
    "missing_sense": "missing_sense",
    "modifier": "modifier",
    "not_noun": "not_a_noun",
    "letter_abbrev": "not_a_noun",
    "foreign": "not_a_noun",
}


@dataclass(frozen=True)
class JudgedPair:
    row_id: str
    synset: str  # WordNet name
    picturable: str | None  # the readers' answer (their majority where several read it); None: no majority
    right_sense: str | None
    use: str | None
    source: str  # train, real_dev, build_dev


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file, delimiter="\t"))


def _majority(answers: list[str]) -> str | None:
    value, n = Counter(a.strip() for a in answers).most_common(1)[0]
    return value if 2 * n > len(answers) else None


def judged_pairs(data: Path = DATA) -> list[JudgedPair]:
    """Every judged pair: the training packets' (one reader, the re-read answer where there is one)
    and the dev sets' (read by three or four, by majority), each once, sorted by key."""
    pairs: dict[tuple[str, str], JudgedPair] = {}
    single: dict[tuple[str, str], dict] = {}
    for path in [
        *sorted((data / "label_train").glob("judged_*.tsv")),
        *sorted((data / "label_train").glob("rejudged_*.tsv")),
    ]:
        single.update({(r["row_id"], r["synset"]): r for r in _rows(path)})
    for key, r in single.items():
        pairs[key] = JudgedPair(*key, r["picturable"], r["right_sense"], r["use"], "train")
    readers = [{(r["row_id"], r["synset"]): r for r in _rows(p)} for p in sorted(data.glob("real_dev_judged_?.tsv"))]
    build = {(r["row_id"], r["synset"]) for r in _rows(data / "build_dev_pairs.tsv")}
    for key in sorted({k for reader in readers for k in reader}):
        given = [reader[key] for reader in readers if key in reader]
        if len(given) < 3:
            continue
        votes = {q: _majority([g[q] for g in given]) for q in ("picturable", "right_sense", "use")}
        pairs[key] = JudgedPair(*key, **votes, source="build_dev" if key in build else "real_dev")
    return [pairs[key] for key in sorted(pairs)]


@dataclass
class PairInputs:
    """What a build knows of each pair, row for row with the pairs."""

    captions: list[str]
    wnids: list[str]
    forms: list[str]  # the matched form of each pair's word
    scores: PairScores  # the score stage's columns
    features: np.ndarray  # (pairs, FEATURES)
    caption_vectors: np.ndarray  # (pairs, dim)

    def subset(self, rows: np.ndarray) -> PairInputs:
        """The inputs of the pairs at `rows`, in that order."""
        pick = [int(i) for i in rows]
        scores = PairScores(*(None if v is None else np.asarray(v)[rows] for v in dataclasses.astuple(self.scores)))
        return PairInputs(
            [self.captions[i] for i in pick],
            [self.wnids[i] for i in pick],
            [self.forms[i] for i in pick],
            scores,
            self.features[rows],
            self.caption_vectors[rows],
        )


def read_tagged(pattern: str) -> dict[str, dict]:
    """row_id -> the tag stage's row (caption, matched, wnids) of the shards `pattern` matches."""
    files = sorted(glob.glob(pattern))
    if not files:
        raise SystemExit(f"--tagged {pattern}: no tagged shards (run `imagenot tag` on the sample first)")
    table = pq.read_table(files, columns=["row_id", "caption", "matched", "wnids"])
    return {row["row_id"]: row for row in table.to_pylist()}


def pair_inputs(
    pairs: list[JudgedPair], tagged: dict[str, dict], index: NounIndex, encoder: TextEncoder | None = None
) -> PairInputs:
    """Each pair read as the score stage of a default build reads it (with select's none-of-these
    probability, the sample's form statistics standing for the corpus's). `encoder`: the packaged
    MiniLM (a caching one, say; default: loaded here)."""
    by_name = {p.synset: index.by_name(p.synset).wnid for p in pairs}
    wnids = [by_name[p.synset] for p in pairs]
    captions = [tagged[p.row_id]["caption"] for p in pairs]
    matched = [tagged[p.row_id]["matched"] or [] for p in pairs]
    encoder = encoder or SentenceTransformerEncoder(DEFAULT_MODEL, threads=1)
    vectors = encoder.encode(captions)
    queries = QueryEmbeddings.build(index, wnids, QUERY_TEMPLATE, encoder)
    similarity = score_batch(vectors, wnids, queries)
    contrast = SenseContrast(SenseQueries(SenseSettings(), encoder, web=web_lexicon())).margins(
        captions, vectors, wnids, matched
    )
    scores = PairScores(similarity, contrast.margin, contrast.fit, contrast.web_margin)
    senses = senses_of(index, set(wnids))
    forms = contrast.forms  # the form of the synset's word the caption matched, as the score stage finds it
    spans = form_spans(captions, forms)
    none = none_scores(captions, spans, wnids, senses, tagged)
    features = pair_features(captions, spans, wnids, scores, none, matched, index, MARGIN_CLIP)
    return PairInputs(captions, wnids, forms, scores, features, vectors.astype(np.float64))


def none_scores(captions, spans, wnids, senses, tagged: dict[str, dict]) -> list[float]:
    """Select's none-of-these probability of each pair, with the form statistics of every tagged row
    (`corpus_none_model`)."""
    model = corpus_none_model(tagged, senses, set(wnids))
    found = [(c, s, e, senses[w].lemmas) for c, (s, e), w in zip(captions, spans, wnids)]
    return [p for p, _ in none_of_these_scores(found, model)]


def corpus_none_model(tagged: dict[str, dict], senses, wnids: set[str]) -> NoneOfThese:
    """The none-of-these model of select's rule with the form statistics of every tagged row for the
    synsets' lemmas (as select counts them for its possible candidates)."""
    names = gzip.decompress(Path(GIVEN_NAMES).read_bytes()).decode("utf-8").splitlines()
    model = caption_rules([NONE_OF_THESE], given_names=[n.strip() for n in names if n.strip()]).none_of_these
    lemmas = frozenset(normalize_all(sorted({lemma for w in wnids for lemma in senses[w].lemmas})))
    rows = list(tagged.values())
    counts = form_statistics(
        [r["caption"] for r in rows], [[f for f in r["matched"] or [] if of_lemmas(f, lemmas)] for r in rows]
    )
    return model.with_stats(FormStats(counts))


def fit_model(inputs: PairInputs, pairs: list[JudgedPair], seed: int, components: int, c: float) -> LabelModel:
    """The model fit on the pairs with a picturable answer (and, for the use head, a use)."""
    from sklearn.linear_model import LogisticRegression

    known = np.array([p.picturable is not None for p in pairs])
    features, vectors = inputs.features[known], inputs.caption_vectors[known]
    y = np.array([p.picturable == "yes" for p, k in zip(pairs, known) if k])
    center = vectors.mean(axis=0)
    axes = np.linalg.svd(vectors - center, full_matrices=False)[2][:components]
    axes *= np.sign(axes[:, :1] + (axes[:, :1] == 0))  # a fixed sign per axis: the same weights every run
    mean, scale = features.mean(axis=0), features.std(axis=0)
    scale[scale == 0] = 1.0
    shell = LabelModel(FEATURES, mean, scale, np.zeros(0), 0.0, np.zeros(0), np.zeros(0), axes, center, {})
    x = shell.inputs(features, vectors)
    picturable = LogisticRegression(C=c, max_iter=5000, random_state=seed).fit(x, y)
    uses = [USE_OF.get((p.use or "").strip()) for p, k in zip(pairs, known) if k]
    named = np.array([u is not None for u in uses])
    use = LogisticRegression(C=c, max_iter=5000, random_state=seed).fit(x[named], [u for u in uses if u])
    # One row of weights a use; a use no training pair has is never named. With two uses read,
    # scikit-learn fits one row, for the second: the first takes its negation.
    coef, intercept = use.coef_, use.intercept_
    if len(use.classes_) == 2:
        coef, intercept = np.vstack([-coef, coef]), np.r_[-intercept, intercept]
    use_coef, use_intercept = np.zeros((len(USES), x.shape[1])), np.full(len(USES), -1e6)
    for row, name in enumerate(use.classes_):
        use_coef[USES.index(name)], use_intercept[USES.index(name)] = coef[row], intercept[row]
    return LabelModel(
        FEATURES,
        mean,
        scale,
        picturable.coef_[0],
        float(picturable.intercept_[0]),
        use_coef,
        use_intercept,
        axes,
        center,
        {"margin_clip": MARGIN_CLIP, "reads_with": reads_with()},
    )


def reads_with() -> dict:
    """The settings a build's score stage must read pairs with for the model's features to mean what
    they meant in training (`pair_inputs`): the config's validation compares them."""
    settings = SenseSettings()
    return {
        "encoder": "sentence-transformers",
        "model": DEFAULT_MODEL,
        "query_template": QUERY_TEMPLATE,
        "sense_method": "sentence",
        "sense_templates": list(settings.templates),
        "sense_prior": settings.prior,
        "sense_pooling": settings.pooling,
        "web_senses": lexicon_digest(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tagged", required=True, help="the tag stage's shards of the shared sample (a glob)")
    parser.add_argument("--data", type=Path, default=DATA, help="the judged pairs' folder")
    parser.add_argument("--out", type=Path, default=MODEL_DIR)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--components", type=int, default=32, help="the caption embeddings' principal axes read")
    parser.add_argument("--c", type=float, default=1.0, help="the inverse L2 penalty")
    args = parser.parse_args()
    started = time.time()
    index = load_index()
    pairs = judged_pairs(args.data)
    inputs = pair_inputs(pairs, read_tagged(args.tagged), index)
    model = fit_model(inputs, pairs, args.seed, args.components, args.c)
    judged = Counter(p.source for p in pairs if p.picturable is not None)
    card = {
        **model.card,
        "method": "logistic regression of the readers' picturable on the pair's features (standardised) and the "
        f"caption embeddings' first {args.components} principal axes; a multinomial one of their use on the same",
        "trained_on": dict(sorted(judged.items())),
        "data_digest": hashlib.sha256(json.dumps([p.__dict__ for p in pairs]).encode()).hexdigest()[:16],
        "seed": args.seed,
        "c": args.c,
        "hours": round((time.time() - started) / 3600, 3),
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }
    model = LabelModel(**{**model.__dict__, "card": card})
    save_model(args.out, model)
    print(json.dumps(card))


if __name__ == "__main__":
    main()

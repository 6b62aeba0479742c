"""The label model (labels/label_model): its features, its weights, and the settings it reads with."""

import json

import numpy as np
import pytest
from pydantic import ValidationError

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import LABEL_MODEL, PairScores, SenseDecision, caption_decision
from imagenot.labels.label_model.features import FEATURES, LEXNAMES, pair_features
from imagenot.labels.label_model.model import USES, load_model, read_model, save_model
from imagenot.labels.label_model.train import JudgedPair, judged_pairs
from imagenot.pipeline.config.schema import Scoring
from imagenot.wordnet.index import load_index


def _pairs(index):
    captions = ["The Exorcist", "red leather boots on a wooden floor", "Dining Chair", "Dog Photo"]
    names = ("exorcist.n.02", "boot.n.01", "dining.n.01", "dog.n.01")
    wnids = [index.by_name(name).wnid for name in names]
    spans = [(4, 12), (11, 16), (0, 6), (0, 3)]
    scores = PairScores(*(np.array(v, np.float64) for v in _SCORES))
    matched = [["exorcist"], ["leather", "boots", "floor"], ["dining", "chair"], ["dog", "photo"]]
    return captions, spans, wnids, scores, matched


_SCORES = ([0.3, 0.6, 0.4, 0.7], [np.inf, -0.9, 0.1, 0.2], [0.4, 0.5, 0.4, 0.6], [np.inf, 0.1, np.inf, np.inf])


def test_features_say_where_the_word_stands_and_what_the_synset_is():
    index = load_index()
    captions, spans, wnids, scores, matched = _pairs(index)
    x = pair_features(captions, spans, wnids, scores, [None, 0.25, None, None], matched, index, margin_clip=0.5)
    row = [dict(zip(FEATURES, r)) for r in x]
    assert x.shape == (4, len(FEATURES)) and np.isfinite(x).all()
    assert row[0]["margin"] == 0.5 and row[0]["has_other_sense"] == 0  # no other sense: the clip
    assert row[1]["margin"] == -0.5 and row[1]["has_other_sense"] == 1  # clipped
    assert row[0]["opens_with_the"] == 1 and row[0]["last_word"] == 1 and row[0]["capitalised"] == 1
    assert row[1]["none_score"] == 0.25 and row[1]["first_word"] == 0
    assert row[0]["noun.person"] == 1 and row[1]["noun.artifact"] == 1 and sum(row[1][n] for n in LEXNAMES) == 1
    assert row[2]["before_noun"] == 1 and row[2]["before_picture_word"] == 0  # "Dining Chair": a modifier
    assert row[3]["before_noun"] == 1 and row[3]["before_picture_word"] == 1  # "Dog Photo": a dog shown
    assert row[1]["before_noun"] == 0  # "boots on": no noun follows


def test_the_shipped_model_judges_each_pair_and_names_what_its_word_is(tmp_path):
    index, model = load_index(), load_model()
    captions, spans, wnids, scores, matched = _pairs(index)
    vectors = np.eye(4, model.center.shape[0])
    none = [None, 0.25, None, None]
    probability, uses = model.judge(captions, spans, wnids, scores, none, matched, vectors, index)
    assert probability.dtype == np.float32 and ((0 <= probability) & (probability <= 1)).all()
    assert set(uses) <= set(USES)
    alone = model.judge(
        captions[1:2], spans[1:2], wnids[1:2], _one(scores, 1), [0.25], matched[1:2], vectors[1:2], index
    )
    assert alone[0][0] == probability[1]  # a pair's probability does not depend on its batch-mates
    save_model(tmp_path, model)
    assert read_model(tmp_path).digest() == model.digest()
    card = json.loads((tmp_path / "card.json").read_text())
    (tmp_path / "card.json").write_text(json.dumps({**card, "c": 2.0}))
    assert read_model(tmp_path).digest() != model.digest()


def _one(scores: PairScores, i: int) -> PairScores:
    return PairScores(*(v[i : i + 1] for v in (scores.similarity, scores.margin, scores.fit, scores.web_margin)))


def test_a_caption_under_the_floor_is_dropped_as_label_model_after_the_sense_reasons():
    scores = PairScores(np.zeros(3), np.array([0.1, -0.1, 0.1]), label=np.array([0.2, 0.2, 0.9]))
    passes, reason = caption_decision(scores, None, SenseDecision(0.0, min_label=0.5))
    assert reason.tolist() == [LABEL_MODEL, "other_sense", ""] and passes.tolist() == [False, False, True]


def test_a_config_whose_pairs_the_model_did_not_read_is_refused(tmp_path):
    assert Scoring(label_model="packaged").sense_decision().min_label == Scoring().label_floor
    with pytest.raises(ValidationError, match="scoring.sense_method: sentence"):
        Scoring(label_model="packaged", sense_method="context")
    with pytest.raises(ValidationError, match="needs scoring.sense_margin"):
        Scoring(label_model="packaged", sense_margin=None)
    with pytest.raises(ValidationError, match="needs scoring.web_senses"):
        Scoring(label_model="packaged", web_senses=False)
    assert Scoring(label_model=None, sense_method="context").sense_decision().min_label is None
    with pytest.raises(ImagenotError, match="holds no weights.npz"):
        Scoring(label_model=str(tmp_path))


def test_the_judged_pairs_are_read_once_each_with_their_readers_majority():
    pairs = judged_pairs()
    keys = [(p.row_id, p.synset) for p in pairs]
    assert len(keys) == len(set(keys)) and keys == sorted(keys)
    by_source = {s: sum(p.source == s for p in pairs) for s in ("train", "real_dev", "build_dev")}
    assert by_source["train"] == 5200 and by_source["real_dev"] > 1500 and by_source["build_dev"] > 300
    assert all(isinstance(p, JudgedPair) for p in pairs)
    assert {p.picturable for p in pairs} <= {"yes", "no", "unsure", None}


def test_the_trainer_reads_pairs_as_a_build_does_and_is_seeded(minilm, stage_matcher):
    """A small trainer run: its inputs come from the build's own functions, and the same seed and
    pairs give the same weights."""
    import pyarrow as pa

    from imagenot.labels.label_model.train import fit_model, pair_inputs

    pairs = [p for p in judged_pairs() if p.source == "train" and p.picturable in ("yes", "no")][:80]
    captions = {p.row_id: p for p in pairs}
    texts = dict(zip(captions, _captions(list(captions))))
    tags = stage_matcher.tag(pa.array(list(texts.values()), pa.string()))
    tagged = {
        row_id: {"row_id": row_id, "caption": text, "matched": matched, "wnids": wnids}
        for row_id, text, matched, wnids in zip(texts, texts.values(), tags.matched.to_pylist(), tags.wnids.to_pylist())
    }
    inputs = pair_inputs(pairs, tagged, load_index(), minilm)
    assert inputs.features.shape == (80, len(FEATURES)) and inputs.caption_vectors.shape == (80, 384)
    assert np.isfinite(inputs.features).all() and sum(map(bool, inputs.forms)) >= 70  # captions as packets hold them
    first, second = (fit_model(inputs, pairs, 0, 8, 1.0) for _ in range(2))
    assert first.digest() == second.digest()
    probability = first.probability(inputs.features, inputs.caption_vectors)
    shown = np.array([p.picturable == "yes" for p in pairs])
    assert probability[shown].mean() > probability[~shown].mean()  # it learned something


def _captions(row_ids: list[str]) -> list[str]:
    """The captions of training pairs, as their packets hold them."""
    import csv

    from imagenot.labels.label_model.train import DATA

    text = {}
    for path in sorted((DATA / "label_train").glob("pairs_*.tsv")):
        with path.open(newline="") as file:
            text.update({r["row_id"]: r["caption"] for r in csv.DictReader(file, delimiter="\t")})
    return [text[r] for r in row_ids]

"""The word read where it stands: its span in the caption, its contextual embedding (the same bits
in any batch), and the SemCor sense vectors it is scored against (real MiniLM, real WordNet)."""

import numpy as np
import pytest

from imagenot.labels.senses.context import ContextSenses
from imagenot.labels.spans import find_span
from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.score.sense_methods import context_senses
from imagenot.wordnet.semcor import document_part, semcor_rows
from imagenot.wordnet.senses import word_senses

CRANE_MACHINE, CRANE_BIRD = "n03126707", "n02012849"  # crane.n.04, crane.n.05


@pytest.mark.parametrize(
    "caption, form, occurrence, span",
    [
        ("Big Cranes, at the port", "cranes", 0, (4, 10)),
        ("MEN'S leather shoes", "men", 0, (0, 5)),
        ("a go-kart race", "go kart", 0, (2, 9)),
        ("Café au lait", "cafe", 0, (0, 4)),
        ("crane by a crane", "crane", 1, (11, 16)),
        ("cranesbill", "cranes", 0, None),
        ("", "crane", 0, None),
    ],
)
def test_find_span_matches_as_the_tagger_normalises(caption, form, occurrence, span):
    assert find_span(caption, form, occurrence) == span


def test_form_words_takes_any_form_the_tagger_matches():
    senses = word_senses()
    assert senses.form_words("Adventures") == ("adventure",)
    assert senses.form_words("mice") == ("mouse",)
    assert senses.form_words("glasses") == ("glass", "glasses")
    assert senses.form_words("quickly") == senses.form_words("") == ()


def test_semcor_split_is_by_whole_documents():
    assert [document_part(n) for n in range(10)] == ["train"] * 4 + ["dev"] + ["train"] * 4 + ["test"]
    docs = {part: set(semcor_rows(part).column("doc").to_pylist()) for part in ("train", "dev", "test")}
    assert not docs["train"] & docs["dev"] and not docs["train"] & docs["test"] and not docs["dev"] & docs["test"]
    assert (len(docs["train"]), len(docs["dev"]), len(docs["test"])) == (149, 19, 18)


def test_a_span_s_vector_is_the_same_bits_alone_and_in_any_batch(context_spans):
    captions = ["a crane", "crane lifting steel beams at the port", "two cranes", "x " * 20 + "crane", "a crane"]
    spans = [(2, 7), (0, 5), (4, 10), (40, 45), (0, 1)]
    together = context_spans.encode_spans(captions, spans)
    for i in range(len(captions)):
        assert np.array_equal(context_spans.encode_spans(captions[i : i + 1], spans[i : i + 1])[0], together[i])
    assert not np.array_equal(together[0], together[4])  # one caption, two spans: two vectors
    assert np.allclose(np.linalg.norm(together, axis=1), 1, atol=1e-6)


def test_the_word_where_it_stands_picks_its_sense(context_spans):
    scorer = context_senses(Scoring(), spans=context_spans)
    captions = ["Liebherr mobile crane lifting steel beams at the port", "sandhill cranes in flight over the marsh"]
    vectors = scorer.row_vectors(captions, None, ["crane", "cranes"])
    wnids = (CRANE_MACHINE, CRANE_BIRD)
    scores, fits = scorer.scores(vectors, "crane", wnids)
    assert scores[0, 0] > scores[0, 1] and scores[1, 1] > scores[1, 0]
    assert np.all(fits >= scores)  # the prior's log probabilities are <= 0


def test_a_sense_semcor_never_annotates_backs_off_to_its_hypernym(context_spans):
    vectors = context_senses(Scoring(), spans=context_spans).vectors
    assert CRANE_MACHINE not in vectors  # crane.n.04 is never annotated in SemCor's train documents
    vector = vectors.vector(CRANE_MACHINE)
    assert vector.dtype == np.float32 and abs(np.linalg.norm(vector) - 1) < 1e-5
    assert np.array_equal(vectors.vector(CRANE_MACHINE), vector)


def test_first_span_is_the_earliest_place_of_any_form():
    from imagenot.labels.spans import caption_words, first_span

    words = caption_words(["two cranes and a crane", "no such word"])
    assert first_span(words[0], ["crane", "cranes"]) == (4, 10)
    assert first_span(words[1], ["crane", "cranes"]) is None


def test_both_methods_add_the_sentence_similarity_to_the_word_s(context_spans):
    from imagenot.labels.senses.sentence import SenseQueries
    from imagenot.pipeline.score.runtimes import load_encoder

    sentence_encoder = load_encoder(threads=1)
    context = context_senses(Scoring(sense_prior=0.0), spans=context_spans)
    both = ContextSenses(
        Scoring(sense_prior=0.0).sense_settings(),
        context_spans,
        context.vectors,
        sentence=SenseQueries(Scoring().sense_settings(), sentence_encoder),
    )
    captions, forms, wnids = ["a crane lifting steel"], ["crane"], (CRANE_MACHINE, CRANE_BIRD)
    alone = context.scores(context.row_vectors(captions, None, forms), "crane", wnids)[1]
    added = both.scores(both.row_vectors(captions, sentence_encoder.encode(captions), forms), "crane", wnids)[1]
    sentence = both.sentence.scores(sentence_encoder.encode(captions), "crane", wnids)[1]
    assert np.allclose(added, alone + sentence)

"""The trained sense head (`scoring.sense_method: trained`): the shipped weights, what they were
trained on, and the word's sense read where it stands (real MiniLM, real WordNet, the real head)."""

import numpy as np
import pytest
from cli_runner import cli_command, invoke

from imagenot.errors import ImagenotError
from imagenot.labels.sense_model.head import load_head
from imagenot.pipeline.config.schema import Config, Scoring
from imagenot.pipeline.score.runtimes import load_encoder
from imagenot.pipeline.score.sense_methods import trained_senses
from imagenot.pipeline.score.stage import settings
from imagenot.wordnet.semcor import most_frequent_sense, train_log_prior
from imagenot.wordnet.senses import word_senses

CRANE_MACHINE, CRANE_BIRD = "n03126707", "n02012849"  # crane.n.04, crane.n.05


@pytest.fixture(scope="module")
def encoder():
    scoring = Scoring()
    return load_encoder(scoring.encoder, scoring.model, "torch", threads=1)


@pytest.fixture(scope="module")
def trained(encoder):
    """The head alone: no sentence term, no prior."""
    return trained_senses(Scoring(sense_method="trained", sense_prior=0.0, sense_sentence_weight=0.0), encoder)


def test_the_shipped_head_says_what_trained_it():
    head = load_head()
    card = head.card
    assert head.weights.shape == (384, 384) and np.isfinite(head.weights).all()
    assert card["seed"] == 0 and card["hours"] > 0 and card["train_rows"] > 50_000
    assert "training documents" in card["trained_on"] and card["dev"]["accuracy"] > 0.5
    assert len(head.tuned) == 16 * card["tuned_layers"]  # every parameter of each tuned layer
    assert sorted({name.split(".")[2] for name in head.tuned}) == ["4", "5"]


def test_the_word_is_read_where_it_stands(trained, encoder):
    both = trained_senses(Scoring(sense_method="trained", sense_prior=0.0), encoder, spans=trained.encoder)
    wnids = word_senses().senses("crane")
    captions = ["tower crane lifting steel beams on a construction site", "a crane wading in the marsh at dawn"]
    scores, fits = both.scores(both.vectors_at(captions, [(6, 11), (2, 7)]), "crane", wnids)
    assert wnids[scores[0].argmax()] == CRANE_MACHINE and wnids[scores[1].argmax()] == CRANE_BIRD
    head, logits = trained.scores(trained.vectors_at(captions, [(6, 11), (2, 7)]), "crane", wnids)
    assert np.allclose(np.exp(head).sum(axis=1), 1)  # the head alone: log-probabilities over the word's senses
    assert np.array_equal(head.argmax(axis=1), logits.argmax(axis=1)) and np.array_equal(fits, logits)


def test_one_pass_gives_the_word_and_the_caption_as_the_two_encoders_do_apart(trained, encoder):
    """`senses --input` reads the word (tuned layers) and the caption (the frozen model, pooled) in one
    pass; the score stage gets them from two: the same bits, a caption too long for either included."""
    long = "a crane on the roof of a tall building, " * 30  # over the span encoder's 128 tokens
    captions = ["crane lifting steel", "two cranes by the lake", "a crane", long]
    spans = [(0, 5), (4, 10), (2, 7), (2, 7)]
    words, texts = trained.encoder.encode_spans_and_texts(captions, spans, encoder)
    assert np.array_equal(words, trained.encoder.encode_spans(captions, spans))
    assert np.array_equal(texts, encoder.encode(captions))
    assert not np.allclose(words, texts)  # the word where it stands, not the caption


def test_a_caption_s_scores_are_the_same_bits_alone_and_in_a_batch(trained):
    captions = ["crane lifting steel", "two cranes", "a crane by the lake"]
    spans = [(0, 5), (4, 10), (2, 7)]
    together = trained.scores(trained.vectors_at(captions, spans), "crane", word_senses().senses("crane"))[0]
    for i in range(3):
        vectors = trained.vectors_at(captions[i : i + 1], spans[i : i + 1])
        alone = trained.scores(vectors, "crane", word_senses().senses("crane"))[0]
        assert np.array_equal(alone[0], together[i])


def test_the_prior_is_counted_on_the_training_documents_only():
    senses = word_senses()
    wnids = senses.senses("bank")
    prior = np.exp(train_log_prior(senses, "bank", wnids))
    assert np.isclose(prior.sum(), 1) and wnids[prior.argmax()] == most_frequent_sense(senses, "bank", wnids)
    never = senses.senses("cranesbill") or ("n00000001", "n00000002")
    assert most_frequent_sense(senses, "no such word", never) == never[0]  # unseen: the lowest wnid


def test_the_head_refuses_an_encoder_it_was_not_trained_over():
    class Other:
        model_id, dim = "some-other-model", 384

    with pytest.raises(ImagenotError, match="trained over"):
        trained_senses(Scoring(sense_method="trained"), Other())


def test_a_config_asking_the_head_of_another_encoder_is_refused_when_it_loads(tmp_path):
    """Before any stage runs: the config names the head's encoder settings and the way out."""
    config = tmp_path / "config.yaml"
    config.write_text("scoring:\n  sense_method: trained\n  runtime: onnx\n")
    result = invoke(cli_command("plan"), ["--config", str(config)])
    assert result.exit_code == 1 and "scoring.runtime: torch" in result.output
    assert "set scoring.sense_method: sentence" in result.output and "Traceback" not in result.output


def test_the_score_stage_fingerprint_names_the_head():
    trained = settings(Config.model_validate({"scoring": {"sense_method": "trained"}}))
    assert len(trained["sense_head"]) == 16
    assert "sense_templates" not in trained and "sense_layers" not in trained
    assert "sense_head" not in settings(Config())


def test_senses_command_reads_with_the_trained_head(tmp_path):
    config = tmp_path / "trained.yaml"
    config.write_text("scoring:\n  sense_method: trained\n", encoding="utf-8")
    args = ["tower crane lifting steel beams", "--lemma", "crane", "--config", str(config)]
    result = invoke(cli_command("senses"), args)
    assert result.exit_code == 0, result.output
    senses = [line for line in result.output.splitlines() if line.startswith("  crane.n.")]
    assert senses[0].split()[0] == "crane.n.04" and senses[0].rstrip().endswith("kept")
    assert all("other_sense: goes to crane.n.04" in line for line in senses[1:])


def test_the_sentence_method_s_similarity_is_added_at_its_weight(trained, encoder):
    both = trained_senses(Scoring(sense_method="trained", sense_prior=0.0), encoder, spans=trained.encoder)
    captions, spans = ["a crane by the lake", "crane hire for builders"], [(2, 7), (0, 5)]
    wnids = word_senses().senses("crane")
    vectors = both.vectors_at(captions, spans)
    assert vectors.shape == (2, 2 * 384)  # the word where it stands, then the caption
    head, _ = trained.scores(vectors[:, :384], "crane", wnids)
    sentence = both.glosses.scores(encoder.encode(captions), "crane", wnids)[1]
    assert np.allclose(both.scores(vectors, "crane", wnids)[0], head + 20.0 * sentence)

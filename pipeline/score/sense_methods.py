"""The sense scorer `scoring.sense_method` names, built from the config: the caption's sentence
embedding against each sense's queries, the word's contextual embedding against SemCor sense
vectors, both, or the head trained on SemCor (`imagenot.labels.senses` scores; here the encoders
they read are loaded: the span encoder, the sense vectors, the head's tuned layers)."""

from __future__ import annotations

from imagenot.labels.encoders.spans import SpanEncoder
from imagenot.labels.sense_model.head import load_head
from imagenot.labels.senses.context import ContextSenses
from imagenot.labels.senses.encoders import TextEncoder
from imagenot.labels.senses.sentence import SenseQueries, SenseScorer
from imagenot.labels.senses.trained import TrainedSenses, check_encoder, tuned
from imagenot.labels.web_senses import NO_WEB_SENSES, WebLexicon, web_lexicon
from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.score.sense_vectors import load_sense_vectors
from imagenot.wordnet.senses import WordSenses


def sense_scorer(scoring: Scoring, encoder: TextEncoder, threads: int) -> SenseScorer:
    """The scorer `scoring.sense_method` names, scoring web senses where `scoring.scores_web_senses()`;
    `encoder` embeds the sentence method's queries."""
    web = web_lexicon() if scoring.scores_web_senses() else NO_WEB_SENSES
    if scoring.sense_method == "sentence":
        return SenseQueries(scoring.sense_settings(), encoder, web=web)
    if scoring.sense_method == "trained":
        return trained_senses(scoring, encoder, threads, web=web)
    sentence = SenseQueries(scoring.sense_settings(), encoder) if scoring.sense_method == "both" else None
    return context_senses(scoring, threads, sentence=sentence)


def context_senses(
    scoring: Scoring,
    threads: int = 1,
    senses: WordSenses | None = None,
    sentence: SenseQueries | None = None,
    spans: SpanEncoder | None = None,
) -> ContextSenses:
    """The context method over the config's model and layers (`spans`, when loaded already), with
    its sense vectors (built now if set-up has not)."""
    spans = spans or SpanEncoder(scoring.model, scoring.sense_layers, scoring.max_length, scoring.batch_size, threads)
    return ContextSenses(scoring.sense_settings(), spans, load_sense_vectors(spans), senses, sentence)


def trained_senses(
    scoring: Scoring,
    encoder: TextEncoder,
    threads: int = 1,
    senses: WordSenses | None = None,
    spans: SpanEncoder | None = None,
    web: WebLexicon = NO_WEB_SENSES,
) -> TrainedSenses:
    """The trained head over `encoder` (its glosses) and the span encoder with the head's tuned
    layers (`spans`, when tuned already)."""
    head = load_head()
    check_encoder(head, encoder)  # before the span encoder loads
    if spans is None:
        spans = tuned(SpanEncoder(scoring.model, head.layers, scoring.max_length, scoring.batch_size, threads), head)
    return TrainedSenses(scoring.sense_settings(), encoder, spans, senses, head, web)

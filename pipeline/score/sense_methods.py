"""The sense scorer `scoring.sense_method` names: the caption's sentence embedding against each
sense's queries, the word's contextual embedding against SemCor sense vectors, both, or the head
trained on SemCor."""

from __future__ import annotations

from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.score.context_senses import ContextSenses
from imagenot.pipeline.score.encoders import TextEncoder
from imagenot.pipeline.score.sense_contrast import SenseQueries, SenseScorer
from imagenot.pipeline.score.trained_senses import TrainedSenses


def sense_scorer(scoring: Scoring, encoder: TextEncoder, threads: int) -> SenseScorer:
    """The scorer `scoring.sense_method` names; `encoder` embeds the sentence method's queries."""
    if scoring.sense_method == "sentence":
        return SenseQueries(scoring, encoder)
    if scoring.sense_method == "trained":
        return TrainedSenses(scoring, encoder, threads)
    return ContextSenses(
        scoring, threads, sentence=SenseQueries(scoring, encoder) if scoring.sense_method == "both" else None
    )

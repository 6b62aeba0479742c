"""The context method's span encoder for every test that reads SemCor sense vectors
(test_context_senses.py, and test_changed_settings.py's build under `sense_method: both`).

Preparing the vectors of one encoder setting embeds SemCor's 14,699 training sentences: about 140
CPU seconds, on a fresh machine's session and in CI. One setting for all these tests, prepared once
by the first worker that asks (conftest's `context_spans`), costs that once: two settings cost it
twice, and two workers asking at once each built it (a quarter of the suite's CPU)."""

from __future__ import annotations

from pathlib import Path

from shared_runs import build_once

# test_changed_settings' scoring.sense_layers and scoring.max_length (both changed from the defaults)
LAYERS, MAX_LENGTH = 2, 48


def prepared_context_spans(shared_tmp: Path):
    """The span encoder of LAYERS and MAX_LENGTH, its sense vectors in the cache; a worker that asks
    while another prepares them waits for it."""
    from imagenot.labels.encoders.spans import SpanEncoder  # torch: only when asked for
    from imagenot.pipeline.score.sense_vectors import prepare_sense_vectors

    encoder = SpanEncoder(layers=LAYERS, max_length=MAX_LENGTH, threads=1)
    build_once(shared_tmp / "context-sense-vectors", lambda _: prepare_sense_vectors(encoder))
    return encoder

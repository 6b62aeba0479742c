"""The rule that keeps or drops a caption for the synset it was selected for, in one place: the
sample stage, the rank stage's priority path, `imagenot senses` and the benchmarks call it."""

from __future__ import annotations

import numpy as np

OTHER_SENSE = "other_sense"
BELOW_THRESHOLD = "below_threshold"
KEPT = ""


def caption_decision(
    similarity: np.ndarray, margin: np.ndarray, threshold: float | None, sense_margin: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """(passes, reason) per caption. A caption passes when its sense margin (its score for its
    synset minus the best other noun sense's of the same word) is at least `sense_margin` (else
    `other_sense`) and its similarity at least `threshold` (else `below_threshold`); None: no such
    test. A caption failing both is `other_sense`."""
    similarity, margin = np.asarray(similarity, np.float32), np.asarray(margin, np.float32)
    reason = np.full(len(similarity), KEPT, object)
    if threshold is not None:
        reason[similarity < np.float32(threshold)] = BELOW_THRESHOLD
    if sense_margin is not None:
        reason[margin < np.float32(sense_margin)] = OTHER_SENSE
    return reason == KEPT, reason

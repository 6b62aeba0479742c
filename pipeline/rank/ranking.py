"""Ranking synsets by caption similarity, and bounding how many captions must be scored.

A synset's score is the mean of its top-n caption similarities; a synset with fewer than n
scored captions is scored on all it has (dropping synsets with too few captions is an earlier
step, with its own minimum). Synsets under the threshold are dropped, the best K become the
classes, and ties are broken by wnid so the same scores always give the same classes.

Cost bound: classes are ranked on at most M captions per synset, chosen by a seeded hash of
`row_id` (`pipeline/run/keyed_hash.py`). Only the captions of the chosen classes are then scored in
full, for picking their images.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

BELOW_THRESHOLD = "below_threshold"
BEYOND_TOP_K = "beyond_top_k"
NO_CAPTIONS = "no_captions"
LOW_PASS_SHARE = "low_pass_share"
TOO_FEW_CAPTIONS = "too_few_captions"
VETOED = "vetoed"  # people dropped it from the class list (ranking.vetoed)


def top_n_mean(similarities: np.ndarray, n: int) -> float:
    """Mean of the n largest values (of all of them when there are fewer)."""
    if n < 1:
        raise ValueError(f"top_n must be >= 1, got {n}")
    values = np.sort(np.asarray(similarities, dtype=np.float64))[::-1][:n]
    return float(values.mean()) if len(values) else float("nan")


@dataclass(frozen=True)
class Ranking:
    classes: tuple[str, ...]  # best first
    scores: dict[str, float]  # every synset scored
    dropped: dict[str, str] = field(default_factory=dict)  # wnid -> reason

    def reasons(self) -> dict[str, int]:
        return dict(sorted(Counter(self.dropped.values()).items()))


def rank_synsets(
    similarities: Mapping[str, np.ndarray],
    top_n: int,
    threshold: float,
    k: int,
    captions: Mapping[str, int] | None = None,
    min_captions: int = 1,
    pass_shares: Mapping[str, float] | None = None,
    min_pass_share: float = 0.0,
    vetoed: Collection[str] = (),
) -> Ranking:
    """The top `k` synsets by top-n mean similarity among those scoring >= `threshold` and, when
    `captions` (wnid -> captions a synset could draw images from) is given, having at least
    `min_captions` of them: a class must be able to fill its images; and, when `pass_shares`
    (wnid -> the share of its captions that use the word in its sense) is given, a share of at
    least `min_pass_share`. A `vetoed` synset (people dropped it) is never a class.

    A synset of `captions` without similarities was not scored (the score stage leaves out the
    candidates these rules drop whatever their score): it gets its fate by the same rules, and no
    score."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    scores: dict[str, float] = {}
    dropped: dict[str, str] = {}

    def rule_out(wnid: str) -> str | None:
        if wnid in vetoed:
            return VETOED
        if captions is not None and captions.get(wnid, 0) < min_captions:
            return TOO_FEW_CAPTIONS
        if pass_shares is not None and pass_shares.get(wnid, 0.0) < min_pass_share:
            return LOW_PASS_SHARE
        return None

    for wnid in sorted(similarities):
        if len(similarities[wnid]) == 0:
            dropped[wnid] = NO_CAPTIONS
            continue
        scores[wnid] = top_n_mean(similarities[wnid], top_n)
        reason = rule_out(wnid) or (BELOW_THRESHOLD if scores[wnid] < threshold else None)
        if reason:
            dropped[wnid] = reason
    for wnid in sorted(set(captions or ()) - set(similarities)):  # not scored
        dropped[wnid] = rule_out(wnid) or NO_CAPTIONS
    passing = sorted((w for w in scores if w not in dropped), key=lambda w: (-scores[w], w))
    for wnid in passing[k:]:
        dropped[wnid] = BEYOND_TOP_K
    return Ranking(tuple(passing[:k]), scores, dict(sorted(dropped.items())))

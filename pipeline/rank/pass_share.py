"""A candidate's pass share: the estimated share of its captions that use its word in its sense.

A caption of a candidate passes when no caption rule drops it at select (none_of_these among
them) and the sense decision keeps it (`caption_decision` at `scoring.sense_decision()`: the
sense margin, the web senses' margin, the fit floor `scoring.none_of_these_fit` and the label
model's floor). The first
factor is exact, from select's tally (captions kept after the rules over captions kept by step
6); the second is estimated on the first-pass captions the score stage scored with sense
contrast (a keyed-hash sample of the kept captions, so unbiased). Their product is the share;
`ranking.min_pass_share` is the floor a class needs: a class whose captions mostly name
something else is a coherent class under a wrong name.
"""

from __future__ import annotations

from imagenot.labels.caption_rules import SENSE_OFF, SenseDecision, caption_decision
from imagenot.pipeline.run.files import read_schema, stage_shards
from imagenot.pipeline.run.layout import (
    FIRST_PASS_DIR,
    MARGIN_COLUMN,
    SCORE,
    SCORE_COLUMN,
    SENSE_COLUMNS,
    pair_scores,
    stage_path,
)
from imagenot.pipeline.run.shards import read_batches


def sense_pass_shares(run_dir: str, sense: SenseDecision) -> dict[str, float]:
    """wnid -> the share of its first-pass captions the sense decision keeps (no sense contrast: none)."""
    kept: dict[str, list[int]] = {}
    if sense == SENSE_OFF:
        return {}
    for shard in stage_shards(stage_path(run_dir, SCORE), FIRST_PASS_DIR):
        names = read_schema(shard).names
        if MARGIN_COLUMN not in names:
            return {}
        for batch in read_batches(shard, ["wnid", SCORE_COLUMN, *(c for c in SENSE_COLUMNS if c in names)]):
            passes, _ = caption_decision(pair_scores(batch), None, sense)
            for wnid, ok in zip(batch.column("wnid").to_pylist(), passes):
                counts = kept.setdefault(wnid, [0, 0])
                counts[0] += bool(ok)
                counts[1] += 1
    return {wnid: n / total for wnid, (n, total) in sorted(kept.items())}


def pass_shares(single_synset: dict[str, int], kept: dict[str, int], sense: dict[str, float]) -> dict[str, float]:
    """wnid -> the share of its single-synset captions that pass the caption rules (select's
    tally) times the share the sense decision keeps (1 where not estimated)."""
    return {
        wnid: round(kept.get(wnid, 0) / n * sense.get(wnid, 1.0), 6) for wnid, n in sorted(single_synset.items()) if n
    }

"""The three orders a class's candidates can be taken in (ImageNetV2's sampling strategies), and
the duplicates that walking them settles: shared by the rank stage (which predicts them) and
the sample stage (which applies them); and the captions another sense of their word wins, which
both take out first.

Each function gets one class's candidates as arrays, already sorted by row id, and returns the
positions of the rows it takes, in the order they should be taken: the first N become images,
the next ones the reserve. Randomness comes only from `sample_keys`, a keyed hash of (seed,
row id), so the order is the same whatever the sharding, the runner or the number of workers;
sorts are stable, so rows tied on every key stay in row-id order.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import (
    LABEL_MODEL,
    NONE_OF_THESE_FIT,
    OTHER_SENSE,
    SENSE_OFF,
    WEB_SENSE,
    SenseDecision,
    caption_decision,
)
from imagenot.pipeline.config.schema import Sampling, Scoring
from imagenot.pipeline.run.keyed_hash import sample_keys
from imagenot.pipeline.run.layout import (
    LABEL_USE_COLUMN,
    MARGIN_COLUMN,
    OTHER_SENSE_COLUMN,
    SCORE_COLUMN,
    SENSE_COLUMNS,
    WEB_SENSE_COLUMN,
    pair_scores,
)

REFERENCE_BINS = 10  # deciles of another run's scores
SENSE_REASONS = (NONE_OF_THESE_FIT, OTHER_SENSE, WEB_SENSE, LABEL_MODEL)  # what the sense decision drops for


def order_top(similarity: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Highest similarity first; equal similarities by priority."""
    return np.lexsort((priority, -similarity.astype(np.float64)))


def order_threshold(similarity: np.ndarray, priority: np.ndarray, threshold: float) -> np.ndarray:
    """Rows at or above the threshold, in priority order: a uniform random sample of them."""
    eligible = np.flatnonzero(similarity >= np.float32(threshold))
    return eligible[np.argsort(priority[eligible], kind="stable")]


def similarity_bins(similarity: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin (0..len(edges)-2) of each similarity; values beyond the reference go to the end bins."""
    return np.searchsorted(edges[1:-1], similarity.astype(np.float64), side="right")


def order_matched(similarity: np.ndarray, priority: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Round robin over the reference's equal-mass bins, each bin in priority order.

    `edges` are the reference's quantiles at equally spaced probabilities, so each bin holds an
    equal share of the reference and any prefix of the order (the images, the images plus the
    reserve taken so far) has an equal share of each bin, give or take one. When a bin runs out
    of candidates, the rounds go on without it: its share is filled by the other bins equally,
    so a class still reaches N where it has N candidates (`bins_short` counts such bins).
    """
    return np.lexsort((priority, bin_rounds(similarity_bins(similarity, edges), priority)))


def bin_rounds(bins: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Each row's position within its bin in priority order: the round robin's round it is taken in."""
    by_bin = np.lexsort((priority, bins))
    starts = np.searchsorted(bins[by_bin], bins[by_bin])  # first position of each row's bin
    round_of = np.empty(len(bins), np.int64)
    round_of[by_bin] = np.arange(len(bins)) - starts
    return round_of


def reference_edges(sampling: Sampling) -> np.ndarray | None:
    """The matched strategy's bin edges: the configured quantiles or another run's deciles."""
    if sampling.reference_quantiles is not None:
        return np.asarray(sampling.reference_quantiles, np.float64)
    if sampling.reference_scores is None:
        return None
    scores = read_reference_scores(sampling.reference_scores)
    return np.quantile(scores, np.linspace(0, 1, REFERENCE_BINS + 1))


def read_reference_scores(path: str) -> np.ndarray:
    """The gloss similarities of a parquet file, or of every parquet file in a folder."""
    files = (
        [path]
        if path.endswith(".parquet")
        else sorted(m.path for m in FileSystems.match([FileSystems.join(path, "*.parquet")])[0].metadata_list)
    )
    parts = []
    for file in files:
        with FileSystems.open(file, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            parquet = pq.ParquetFile(f)
            names = parquet.schema_arrow.names
            if SCORE_COLUMN not in names:
                raise ImagenotError(f"sampling.reference_scores: {file} has no {SCORE_COLUMN} column (found {names})")
            column = parquet.read(columns=[SCORE_COLUMN]).column(SCORE_COLUMN)
        parts.append(pc.drop_null(column).to_numpy().astype(np.float64))
    scores = np.concatenate(parts) if parts else np.empty(0)
    if len(scores) == 0:
        raise ImagenotError(f"sampling.reference_scores: no {SCORE_COLUMN} values found in {path}")
    return scores


def strategy_order(
    similarity: np.ndarray, priority: np.ndarray, sampling: Sampling, edges: np.ndarray | None
) -> np.ndarray:
    if sampling.strategy == "top":
        return order_top(similarity, priority)
    if sampling.strategy == "threshold":
        return order_threshold(similarity, priority, sampling.threshold)
    return order_matched(similarity, priority, edges)


def first_occurrences(values: np.ndarray) -> np.ndarray:
    """Mask of the entries whose value no earlier entry has."""
    keep = np.zeros(len(values), bool)
    keep[np.unique(values, return_index=True)[1]] = True
    return keep


def settle_duplicates(rows: pa.Table, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walking `rows` in `ranked` order: the mask of rows whose url is new, and, of those, the mask
    of rows whose caption is new. The survivors are `ranked[new_url][new_caption]`."""
    new_url = first_occurrences(rows.column("url").to_numpy(zero_copy_only=False)[ranked])
    new_caption = first_occurrences(rows.column("caption").to_numpy(zero_copy_only=False)[ranked[new_url]])
    return new_url, new_caption


def sense_kept(rows: pa.Table, sense: SenseDecision) -> SenseKept:
    """The rows the sense decision keeps (`caption_decision` over the score stage's columns:
    `pair_scores`), without the sense columns, and what it dropped (`SenseKept`). Rows scored
    without sense contrast (no `sense_margin` column) all stay."""
    if MARGIN_COLUMN not in rows.column_names:
        return SenseKept(rows, {}, {}, {})
    sense_columns = [c for c in SENSE_COLUMNS if c in rows.column_names]
    if sense == SENSE_OFF:
        return SenseKept(rows.drop_columns(sense_columns), {}, {}, {})
    passes, reason = caption_decision(pair_scores(rows), None, sense)

    def where(column: str, why: str) -> list:
        return (
            rows.column(column).to_numpy(zero_copy_only=False)[reason == why].tolist()
            if column in sense_columns
            else []
        )

    lost = [*where(OTHER_SENSE_COLUMN, OTHER_SENSE), *where(WEB_SENSE_COLUMN, WEB_SENSE)]
    dropped = Counter(reason[~passes].tolist())
    return SenseKept(
        rows.filter(pa.array(passes)).drop_columns(sense_columns),
        dict(sorted(Counter(lost).items())),
        {r: dropped.get(r, 0) for r in SENSE_REASONS},
        dict(sorted(Counter(where(LABEL_USE_COLUMN, LABEL_MODEL)).items())),
    )


class SenseKept(NamedTuple):
    """`sense_kept`'s answer."""

    rows: pa.Table  # the rows kept, without the sense columns
    lost_to: dict[str, int]  # those another sense won (other_sense, web_sense), by the sense that won them
    dropped: dict[str, int]  # those dropped, by reason (`SENSE_REASONS`)
    label_uses: dict[str, int]  # those the label model dropped, by what it says their word is there


def sense_decision_settings(scoring: Scoring) -> dict:
    """What the rank and sample stages record of the sense decision they cut at: the margin, and the
    fit floor, the web senses' margin and the label floor where each is in force (so a run without
    one keeps its fingerprint, and a changed one reruns them)."""
    decision = scoring.sense_decision()
    in_force = {
        "none_of_these_fit": decision.min_fit,
        "web_sense_margin": decision.web_margin,
        "label_floor": decision.min_label,
    }
    return {"sense_margin": scoring.sense_margin, **{k: v for k, v in in_force.items() if v is not None}}


class SampleOrder(NamedTuple):
    """One class's candidates in the sample's order (`sample_order`)."""

    rows: pa.Table  # the candidates the sense decision keeps, by row id, without the sense columns
    lost_to: dict[str, int]  # those another sense won (other_sense, web_sense), by the sense that won them
    dropped: dict[str, int]  # those the sense decision dropped, by reason (`SENSE_REASONS`)
    label_uses: dict[str, int]  # those the label model dropped, by what it says their word is there
    similarity: np.ndarray  # of `rows`
    priority: np.ndarray  # of `rows`: their sample keys
    ranked: np.ndarray  # positions in `rows` the strategy takes, in its order (none under its threshold)
    survivors: np.ndarray  # of `ranked`, those whose url and caption no earlier one has, in its order
    duplicate_urls: int
    duplicate_captions: int


def sample_order(rows: pa.Table, sampling: Sampling, edges: np.ndarray | None, sense: SenseDecision) -> SampleOrder:
    """One class's scored candidates (any order) as the sample takes them: those the sense decision
    drops out first (`sense_kept`), the rest ranked by the strategy and walked for exact
    duplicates. The sample stage cuts the class's list from it; the rank stage's priority path
    predicts that list from it."""
    rows, lost_to, dropped, label_uses = sense_kept(rows, sense)
    rows = rows.take(pc.sort_indices(rows, [("row_id", "ascending")]))
    similarity = rows.column(SCORE_COLUMN).to_numpy()
    priority = sample_keys(rows.column("row_id").to_pylist(), sampling.seed)
    ranked = strategy_order(similarity, priority, sampling, edges)
    new_url, new_caption = settle_duplicates(rows, ranked)
    survivors = ranked[new_url][new_caption]
    duplicates = int((~new_url).sum()), int((~new_caption).sum())
    return SampleOrder(rows, lost_to, dropped, label_uses, similarity, priority, ranked, survivors, *duplicates)

"""One class's sample as a plain function: its candidates in, its ordered images and reserve out.

Exact duplicates are kept out before anything is taken: walking the candidates in the strategy's
order, a row whose url an earlier row has is a `duplicate_url`; of the rest, a row whose caption
an earlier row has is a `duplicate_caption`. The survivors are ordered again (which changes only
the matched strategy's round robin) and the first N + reserve of them make the class's list.
Every candidate is accounted for: candidates = none_of_these_fit + other_sense + web_sense +
label_model + below_threshold + duplicate_url + duplicate_caption + listed + not_listed.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from imagenot.labels.caption_rules import SENSE_OFF, SenseDecision
from imagenot.pipeline.config.schema import Sampling
from imagenot.pipeline.rank.sampling_order import SENSE_REASONS, sample_order, similarity_bins, strategy_order
from imagenot.pipeline.run.layout import SCORE_COLUMN

ORDER_COLUMN = "order"


def sample_class(
    rows: pa.Table, sampling: Sampling, edges: np.ndarray | None = None, sense: SenseDecision = SENSE_OFF
) -> tuple[pa.Table, dict]:
    """`rows` (one class's candidates, any order) as the class's ordered list, with an int32
    `order` column: positions 0..N-1 are the images, the rest the reserve. `edges`: the matched
    strategy's reference bin edges (see `sampling_order.reference_edges`). Rows the sense decision
    drops (`sense_kept`) are out first: `none_of_these_fit` (the word fits none of its senses),
    `other_sense` and `web_sense` (another sense of its word wins it: WordNet's, or one WordNet
    lacks), by winner `other_sense_to`, and `label_model` (the label model says its picture does not
    show the class), by what the model says its word is there, `label_model_uses`."""
    if rows.column(SCORE_COLUMN).null_count:
        raise ValueError(f"{SCORE_COLUMN} is null in {rows.column(SCORE_COLUMN).null_count} scored rows")
    candidates = rows.num_rows
    taken = sample_order(rows, sampling, edges, sense)
    rows, similarity, priority = taken.rows, taken.similarity, taken.priority
    survivors = np.sort(taken.survivors)

    ordered = survivors[strategy_order(similarity[survivors], priority[survivors], sampling, edges)]
    listed = ordered[: sampling.images_per_class + sampling.reserve]
    table = rows.take(pa.array(listed)).append_column(ORDER_COLUMN, pa.array(np.arange(len(listed)), pa.int32()))
    counts = {
        "candidates": candidates,
        **{reason: taken.dropped.get(reason, 0) for reason in SENSE_REASONS},
        "other_sense_to": taken.lost_to,
        "label_model_uses": taken.label_uses,
        "below_threshold": rows.num_rows - len(taken.ranked),
        "duplicate_url": taken.duplicate_urls,
        "duplicate_caption": taken.duplicate_captions,
        "listed": len(listed),
        "not_listed": len(ordered) - len(listed),
    }
    if sampling.strategy == "matched":
        counts["bins_short"] = bins_short(similarity[survivors], edges, sampling.images_per_class)
    return table, counts


def bins_short(similarity: np.ndarray, edges: np.ndarray, images: int) -> int:
    """Reference bins with fewer candidates than their equal share of the images."""
    bins = len(edges) - 1
    available = np.bincount(similarity_bins(similarity, edges), minlength=bins)
    return int((available < -(-images // bins)).sum())

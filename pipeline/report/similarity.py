"""Per-class caption-to-gloss similarity, summarised in one streaming pass over the scored shards.

A class can have millions of captions, so no class's values are held: each read batch adds to
per-class counts, sums, minima, maxima and a histogram on fixed bins. Quantiles (median,
quartiles) come from the histogram, exact to within half a bin (BIN_WIDTH / 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.errors import ImagenotError
from imagenot.pipeline.run.layout import SCORE_COLUMN
from imagenot.pipeline.run.shards import read_batches

BIN_WIDTH = 0.005
EDGES = np.linspace(-1.0, 1.0, round(2 / BIN_WIDTH) + 1)  # cosine similarity lies in [-1, 1]


@dataclass(frozen=True)
class ClassSimilarities:
    wnids: tuple[str, ...]
    counts: np.ndarray  # captions per class
    minimum: np.ndarray
    maximum: np.ndarray
    mean: np.ndarray
    histograms: np.ndarray  # classes x bins, counts over EDGES

    def quantile(self, q: float) -> np.ndarray:
        """Per class, the centre of the bin holding the q-quantile (NaN for a class without captions)."""
        cumulative = np.cumsum(self.histograms, axis=1)
        target = np.maximum(np.ceil(q * self.counts), 1)[:, None]
        bins = np.argmax(cumulative >= target, axis=1)
        centres = (EDGES[bins] + EDGES[bins + 1]) / 2
        return np.where(self.counts > 0, centres, np.nan)


def caption_similarities(shards: list[str], wnids: list[str]) -> ClassSimilarities:
    """The similarity summary of every class in `wnids` over the scored shards' captions."""
    k, bins = len(wnids), len(EDGES) - 1
    classes = pa.array(wnids, pa.string())
    counts = np.zeros(k, np.int64)
    sums = np.zeros(k, np.float64)
    minimum, maximum = np.full(k, np.inf), np.full(k, -np.inf)
    histograms = np.zeros(k * bins, np.int64)
    for shard in shards:
        for batch in read_batches(shard, ["wnid", SCORE_COLUMN]):
            codes = pc.index_in(batch.column("wnid"), value_set=classes)
            if codes.null_count:
                stray = pc.filter(batch.column("wnid"), pc.is_null(codes))[0].as_py()
                raise ImagenotError(f"{shard}: caption of {stray!r}, which is not a class of rank/classes.json")
            codes = codes.to_numpy()
            values = batch.column(SCORE_COLUMN).to_numpy(zero_copy_only=False).astype(np.float64)
            positions = np.clip(np.searchsorted(EDGES, values, side="right") - 1, 0, bins - 1)
            counts += np.bincount(codes, minlength=k)
            sums += np.bincount(codes, weights=values, minlength=k)
            np.minimum.at(minimum, codes, values)
            np.maximum.at(maximum, codes, values)
            histograms += np.bincount(codes * bins + positions, minlength=k * bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, sums / counts, np.nan)
    empty = counts == 0
    minimum[empty], maximum[empty] = np.nan, np.nan
    return ClassSimilarities(tuple(wnids), counts, minimum, maximum, mean, histograms.reshape(k, bins))

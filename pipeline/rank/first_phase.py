"""The rank stage's first phase: a static model picks each class's best M captions for the encoder.

Scoring every caption of the K classes with the encoder costs in proportion to the corpus; the
sample needs only about N + reserve of them per class. So a static model (see
`pipeline.score.static_model`) scores all of a class's captions against its query, and the
encoder scores only the M best: those with the highest static similarity, ties by row id. One
Beam pass keeps each shard's best M per class and merges them per class into a cutoff, the
(static score, row id) of the M-th best; the scoring pass admits a row when it is at or above its
class's cutoff. A caption's static score depends only on its own text, so both passes see the
same bits and exactly min(M, captions) rows of each class are scored, whatever the sharding.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from imagenot.labels.similarity import QueryEmbeddings
from imagenot.pipeline.config.schema import Scoring
from imagenot.pipeline.run.shards import read_batches
from imagenot.pipeline.score.static_model import StaticEncoder, load_static_encoder
from imagenot.wordnet.index import load_index

Cutoff = tuple[float, str]  # (static score, row id) of a class's M-th best caption


class StaticScorer:
    """Static similarity of captions to their class's query."""

    def __init__(self, scoring: Scoring, classes: list[str]):
        self.encoder: StaticEncoder = load_static_encoder(scoring.model, scoring.first_phase_model)
        self.queries = QueryEmbeddings.build(load_index(), classes, scoring.query_template, self.encoder)
        self.classes = pa.array(sorted(classes), pa.string())

    def score(self, captions: list[str], wnids: list[str]) -> np.ndarray:
        """float32 similarities, computed row by row in float64 so that a row's value does not
        depend on the rows beside it."""
        vectors = self.encoder.encode(captions).astype(np.float64)
        queries = self.queries.vectors[self.queries.rows(wnids)].astype(np.float64)
        return (vectors * queries).sum(axis=1).astype(np.float32)

    def class_rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.filter(pc.is_in(batch.column("wnid"), value_set=self.classes))


def best_of_table(table: pa.Table, m: int) -> dict[str, list[Cutoff]]:
    """Per wnid of `table` (row_id, wnid, static), its m best (score, row id), best first."""
    table = table.take(
        pc.sort_indices(table, [("wnid", "ascending"), ("static", "descending"), ("row_id", "ascending")])
    )
    wnids = table.column("wnid").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(np.r_[True, wnids[1:] != wnids[:-1]]) if len(wnids) else []
    scores, row_ids = table.column("static").to_numpy(), table.column("row_id").to_numpy(zero_copy_only=False)
    return {
        str(wnids[s]): [(float(v), str(r)) for v, r in zip(scores[s : min(s + m, e)], row_ids[s : min(s + m, e)])]
        for s, e in zip(starts, [*starts[1:], len(wnids)])
    }


def merge_best(parts, m: int) -> list[Cutoff]:
    """The m best of several best-first lists of one class."""
    return sorted((entry for part in parts for entry in part), key=lambda e: (-e[0], e[1]))[:m]


def shard_best(shard: str, scorer: StaticScorer, m: int) -> dict[str, list[Cutoff]]:
    """Per class, the m best captions of one selected shard by static score."""
    parts = []
    for batch in read_batches(shard, ["row_id", "wnid", "caption"]):
        rows = scorer.class_rows(batch)
        static = scorer.score(rows.column("caption").to_pylist(), rows.column("wnid").to_pylist())
        parts.append(pa.table({"row_id": rows.column("row_id"), "wnid": rows.column("wnid"), "static": static}))
        # Keep at most m a class at any time: a shard of one class's rows stays bounded.
        parts = [pa.table(_flatten(best_of_table(pa.concat_tables(parts), m)))]
    return best_of_table(parts[0], m) if parts else {}


def _flatten(best: dict[str, list[Cutoff]]) -> dict[str, pa.Array]:
    entries = [(w, s, r) for w, kept in best.items() for s, r in kept]
    return {
        "row_id": pa.array([r for _, _, r in entries], pa.string()),
        "wnid": pa.array([w for w, _, _ in entries], pa.string()),
        "static": pa.array([s for _, s, _ in entries], pa.float32()),
    }


def admitted(batch: pa.RecordBatch, scorer: StaticScorer, cutoffs: dict[str, Cutoff]) -> np.ndarray:
    """Mask of the rows of `batch` among their class's best M (rows of other synsets: False)."""
    mask = np.zeros(batch.num_rows, bool)
    in_class = np.flatnonzero(pc.is_in(batch.column("wnid"), value_set=scorer.classes).to_numpy(zero_copy_only=False))
    if not len(in_class):
        return mask
    rows = batch.take(pa.array(in_class))
    wnids = rows.column("wnid").to_pylist()
    static = scorer.score(rows.column("caption").to_pylist(), wnids).astype(np.float64)
    cut_score = np.array([cutoffs[w][0] for w in wnids], np.float64)
    cut_row = [cutoffs[w][1] for w in wnids]
    row_ids = rows.column("row_id").to_pylist()
    tied = static == cut_score
    mask[in_class] = (static > cut_score) | (tied & np.array([r <= c for r, c in zip(row_ids, cut_row)], bool))
    return mask


class StaticGate:
    """Admits the rows among their class's best M by the static model."""

    def __init__(self, scoring: Scoring, classes: list[str], cutoffs: dict[str, Cutoff]):
        self._scorer, self._cutoffs = StaticScorer(scoring, classes), cutoffs

    def __call__(self, batch: pa.RecordBatch) -> pa.Array:
        return pa.array(admitted(batch, self._scorer, self._cutoffs))


class BestPerShard(beam.DoFn):
    """(wnid, its best M of one shard) for every class with captions in the shard."""

    def __init__(self, scoring: Scoring, classes: list[str], m: int):
        self._scoring, self._classes, self._m = scoring, classes, m

    def setup(self):
        self._scorer = StaticScorer(self._scoring, self._classes)

    def process(self, shard: str):
        yield from shard_best(shard, self._scorer, self._m).items()


def cutoffs_transform(scoring: Scoring, classes: list[str], m: int):
    """shards -> one dict wnid -> Cutoff (classes without captions absent)."""
    return (
        "Spread" >> beam.Reshuffle()
        | "Best" >> beam.ParDo(BestPerShard(scoring, classes, m))
        | "Merge" >> beam.CombinePerKey(merge_best, m=m)
        | "Cutoff" >> beam.MapTuple(lambda wnid, best: (wnid, best[-1]))
        | "Cutoffs" >> beam.combiners.ToDict()
    )

"""The rank stage's exact priority path (`scoring.first_phase: priority`, strategies threshold and matched).

Those strategies take a class's captions in the sample's keyed priority order (`sample_keys` of
the row id with `sampling.seed`): threshold takes the eligible ones in that order, matched goes
round robin over the reference bins, each bin in that order; duplicate urls and captions are
settled walking the same order. So the encoder can score a class's captions in priority order, a
prefix at a time, and stop once the prefix settles the class's list: once no score of the
captions not yet scored can change which N + reserve rows the sample lists.

- threshold: a row's fate (eligible, duplicate) depends only on the rows before it in priority
  order, so a prefix with N + reserve eligible survivors lists what the whole class lists.
- matched: let r be the fewest prefix rows in any reference bin. Every row of round < r (a row's
  position within its bin) is in the prefix and so is every row before it in the round robin,
  so its duplicate fate is final. If each bin has at least t such survivors, the first t x bins
  survivors of the whole order are known; the list is settled when t x bins >= N + reserve. A
  bin that no caption of the class falls in keeps r at 0: such a class is settled only when
  all its captions are scored (or the cap stops it).

Rounds: the first scores each class's `exact_per_class` captions of smallest key; each next round
doubles the prefix of the classes whose list is not settled, up to `exact_cap` (null: no cap).
A class the cap stopped may list other rows than the exact path would; the figures count them.
Every cutoff is a key of the class's own rows, so the rows scored do not depend on sharding.
"""

from __future__ import annotations

import functools

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from imagenot.labels.caption_rules import SENSE_OFF, SenseDecision
from imagenot.pipeline.config.schema import Config, Sampling
from imagenot.pipeline.frame.runner import make_pipeline
from imagenot.pipeline.rank.sampling_order import (
    bin_rounds,
    reference_edges,
    sample_order,
    similarity_bins,
)
from imagenot.pipeline.run.files import read_json, read_schema, read_table, write_json
from imagenot.pipeline.run.keyed_hash import sample_keys
from imagenot.pipeline.run.layout import SCORE_COLUMN, SENSE_COLUMNS
from imagenot.pipeline.run.shards import ShardWorker, sum_tallies
from imagenot.pipeline.score.stage import merge_smallest, smallest_keys

SETTLE_COLUMNS = ["row_id", "wnid", "url", "caption", SCORE_COLUMN]


def list_settled(
    rows: pa.Table, sampling: Sampling, edges: np.ndarray | None, sense: SenseDecision = SENSE_OFF
) -> bool:
    """Whether `rows`, the scored captions of one class with the smallest priority keys, settle
    its list whatever the scores of its other captions (see the module's notes). Captions the sense
    decision drops (`sense_kept`) are out first, as the sample takes them out: whether a caption is
    out depends on its own scores only, so the notes hold for the captions left."""
    need = sampling.images_per_class + sampling.reserve
    taken = sample_order(rows, sampling, edges, sense)
    survivors = taken.survivors
    if sampling.strategy == "threshold":
        return len(survivors) >= need
    bins, n_bins = similarity_bins(taken.similarity, edges), len(edges) - 1
    rounds = bin_rounds(bins, taken.priority)
    final_rounds = np.bincount(bins, minlength=n_bins).min()
    final = survivors[rounds[survivors] < final_rounds]
    return int(np.bincount(bins[final], minlength=n_bins).min()) * n_bins >= need


def settled_classes(
    scored: pa.Table,
    classes: list[str],
    sampling: Sampling,
    edges: np.ndarray | None,
    sense: SenseDecision = SENSE_OFF,
) -> set[str]:
    """The `classes` whose scored rows in `scored` settle their list."""
    order = pc.sort_indices(scored, [("wnid", "ascending")])
    scored = scored.take(order)
    wnids = scored.column("wnid").to_numpy(zero_copy_only=False)
    settled = set()
    for wnid in classes:
        start, end = np.searchsorted(wnids, wnid, "left"), np.searchsorted(wnids, wnid, "right")
        if end > start and list_settled(scored.slice(start, end - start), sampling, edges, sense):
            settled.add(wnid)
    return settled


def next_size(size: int, cap: int | None) -> int | None:
    """The next round's prefix, or None when the cap is reached."""
    if cap is not None and size >= cap:
        return None
    return 2 * size if cap is None else min(2 * size, cap)


def key_cutoffs_transform(classes: list[str], size: int, seed: int):
    """shards -> {wnid: (largest key of its `size` smallest, how many it has)} for `classes`."""
    wnids = pa.array(sorted(classes), pa.string())
    return (
        "Spread" >> beam.Reshuffle()
        | "Smallest"
        >> beam.ParDo(ShardWorker(functools.partial(smallest_keys, per_synset=size, seed=seed, wnids=wnids)))
        | "Merge" >> beam.CombineGlobally(merge_smallest, per_synset=size)
        | "Cutoffs" >> beam.Map(lambda found: {w: (keys[-1], len(keys)) for w, keys in found.items()})
    )


class PriorityGate:
    """Admits the rows of each open class whose priority key is at most its upper bound and, after
    the first round, above its lower bound (the rows an earlier round scored)."""

    def __init__(self, seed: int, bounds: dict[str, tuple[int | None, int]]):
        order = sorted(bounds)
        self._seed = seed
        self._wnids = pa.array(order, pa.string())
        self._fresh = np.array([bounds[w][0] is None for w in order], bool)
        self._lower = np.array([bounds[w][0] or 0 for w in order], np.uint64)
        self._upper = np.array([bounds[w][1] for w in order], np.uint64)

    def __call__(self, batch: pa.RecordBatch) -> pa.Array:
        where = pc.fill_null(pc.index_in(batch.column("wnid"), value_set=self._wnids), -1).to_numpy()
        mask = np.zeros(batch.num_rows, bool)
        known = np.flatnonzero(where >= 0)
        if len(known):
            at = where[known]
            keys = sample_keys(batch.column("row_id").take(pa.array(known)).to_pylist(), self._seed)
            mask[known] = (self._fresh[at] | (keys > self._lower[at])) & (keys <= self._upper[at])
        return pa.array(mask)


def key_cutoffs(
    config: Config, shards: list[str], classes: list[str], size: int, path: str
) -> dict[str, tuple[int, int]]:
    """One Beam pass: `key_cutoffs_transform`'s result, through `path`."""
    with make_pipeline(config.runner) as pipeline:
        _ = (
            pipeline
            | "Shards" >> beam.Create(shards)
            | "PriorityCutoffs" >> key_cutoffs_transform(classes, size, config.sampling.seed)
            | "Write" >> beam.Map(lambda cutoffs: write_json(path, dict(sorted(cutoffs.items()))))
        )
    return {w: (int(key), int(count)) for w, (key, count) in read_json(path).items()}


def scored_rows(files: list[str], classes: list[str]) -> pa.Table:
    """The rows of `classes` in the scored files, with what settling a list reads."""
    wanted = pa.array(sorted(classes), pa.string())
    tables = [read_table(f, [*SETTLE_COLUMNS, *(c for c in SENSE_COLUMNS if c in read_schema(f).names)]) for f in files]
    table = pa.concat_tables(tables)
    return table.filter(pc.is_in(table.column("wnid"), value_set=wanted))


def priority_rounds(
    config: Config, classes: list[str], stage_dir: str, shards: list[str], score_round, scored_files
) -> tuple[dict, dict]:
    """Score the classes' captions in priority order, round by round, until every list is settled
    or capped. `score_round(gate, part)` runs one scoring pass and returns its tally;
    `scored_files()` lists the scored files so far. Returns (summed tally, figures for the card)."""
    sampling, cap = config.sampling, config.scoring.exact_cap
    edges = reference_edges(sampling)
    size = config.exact_per_class if cap is None else min(config.exact_per_class, cap)
    open_classes, lower, tallies, rounds = sorted(classes), {}, [], []
    while open_classes:
        part = f"-r{len(rounds)}"
        cutoffs = key_cutoffs(
            config, shards, open_classes, size, FileSystems.join(stage_dir, f"priority_cutoffs{part}.json")
        )
        bounds = {w: (lower.get(w), cutoffs[w][0]) for w in open_classes}
        tallies.append(score_round(functools.partial(PriorityGate, sampling.seed, bounds), part))
        rounds.append({"prefix": size, "classes": len(open_classes), "rows_scored": tallies[-1]["rows_scored"]})
        exhausted = {w for w in open_classes if cutoffs[w][1] < size}
        scored = scored_rows(scored_files(), open_classes)
        settled = settled_classes(scored, open_classes, sampling, edges, config.scoring.sense_decision())
        lower.update({w: upper for w, (_, upper) in bounds.items()})
        open_classes = [w for w in open_classes if w not in settled and w not in exhausted]
        size = next_size(size, cap)
        if size is None:
            break
    figures = {
        "mode": "priority",
        "exact_per_class": config.exact_per_class,
        "exact_cap": cap,
        "rounds": rounds,
        "classes_capped": len(open_classes),
    }
    return sum_tallies(tallies), figures

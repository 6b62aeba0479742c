"""`imagenot plan --sample ROWS`: the tag and select stages' own code on a seeded sample of the
corpus, projected to all of it.

The sample: row groups from many shards, picked by a seeded shuffle of every shard's row groups
(at most `SAMPLE_GROUPS`, so a sample of a bucket is a few hundred short reads), each giving a
seeded choice of its rows. A synthetic corpus (`corpus.synth`) is generated in memory instead:
its rows are exchangeable, so the first ROWS rows of the same seed are a sample of it. The rows
go through the reader's checks (`check_rows`), the tag stage's `tag_batch`, and the select
stage's filters (`drop_unsafe_rows`, `choose_synsets`, `keep_single_synset_rows`, the funnel):
plain functions on batches in memory, no Beam job, nothing written.

A count k in a sample of s of the corpus's R rows projects to k x R / s, with the range
(k -/+ Z sqrt(k (1 - s / R))) x R / s (Poisson, about 95%); steps 2-6 run again on the low and
the high counts, so each range follows its counts through the filters.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from imagenot.filters.funnel import Funnel, build_funnel
from imagenot.filters.min_captions import synset_caption_counts
from imagenot.filters.single_synset import CandidateLookup, class_caption_counts, keep_single_synset_rows
from imagenot.filters.unsafe_rows import drop_unsafe_rows
from imagenot.labels.pair_checker import PairChecker
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.corpus.formats import Layout, Source
from imagenot.pipeline.corpus.reader import ShardBatch, check_rows, layout_of, list_shards, read_shard
from imagenot.pipeline.corpus.synth import synth_shards
from imagenot.pipeline.corpus.units import SHAPE_THREADS
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.pipeline.select.stage import choose_synsets
from imagenot.pipeline.tag.matcher import count_synsets
from imagenot.pipeline.tag.stage import build_matcher, tag_batch
from imagenot.wordnet.index import load_index

SAMPLE_GROUPS = 256  # row groups read at most
Z = 2.0  # a range's half width in standard deviations
BOUNDS = ("low", "mid", "high")
STEP6_COLUMNS = ["row_id", "wnids", "matched", "caption"]  # what step 6 and the caption rules read


def sample_batches(config: Config, rows: int, seed: int) -> Iterator[ShardBatch]:
    """About `rows` corpus rows, checked, spread over the shards by a seeded choice."""
    synth, columns = config.corpus.synth, config.corpus.columns
    if synth is not None:
        shards = synth_shards(
            min(rows, synth.rows), synth.seed, synth.url_base, synth.shard_rows, captions=synth.captions
        )
        for stem, table, _ in shards:
            yield check_rows(Source(f"{stem}.parquet", Layout()), table, columns, np.arange(table.num_rows))
        return
    layout = layout_of(config.corpus)
    sources = [Source(shard, layout) for shard in list_shards(config.corpus.paths)]
    rng = np.random.default_rng(seed)
    if any(source.is_text for source in sources):  # no row groups: whole files, in a seeded order
        read = 0
        for i in rng.permutation(len(sources)):
            for piece in read_shard(sources[i].path, columns, config.tagging.batch_rows, layout):
                read += piece.rows_read
                yield piece
            if read >= rows:
                return
        return
    with ThreadPoolExecutor(SHAPE_THREADS) as pool:
        sizes = list(pool.map(Source.row_group_rows, sources))
    groups = [
        (source, group, sum(rows_of[:group]), n)  # (file, row group, its first row, its rows)
        for source, rows_of in zip(sources, sizes)
        for group, n in enumerate(rows_of)
    ]
    chosen = sorted(rng.permutation(len(groups))[:SAMPLE_GROUPS])  # read in shard order
    quota = math.ceil(rows / max(len(chosen), 1))
    present = list(columns.source_columns().values())
    for source, group, offset, n in (groups[i] for i in chosen):
        positions = np.sort(rng.choice(n, min(n, quota), replace=False))
        table = source.read_row_group(group, [c for c in present if c in source.schema().names])
        yield check_rows(source, table.take(positions), columns, positions + offset)


@dataclass(frozen=True)
class SampleTally:
    """What the tag stage and the select stage's row filter find in the sample."""

    rows: int  # rows read
    dropped: dict[str, int]  # the reader's reasons
    tagged_rows: int
    tagged: dict[str, int]  # wnid -> tagged captions
    usable: dict[str, int]  # wnid -> tagged captions that pass the row-level NSFW filter
    unsafe_drops: dict[tuple[str, str], int]
    safe: list[pa.RecordBatch]  # tagged rows past the row filter: what step 6 and the caption rules read


def tag_sample(config: Config, batches: Iterator[ShardBatch]) -> SampleTally:
    matcher = build_matcher(load_index(), config.tagging.ignore_forms)
    selection = config.selection
    nsfw = list(selection.row_nsfw_columns().values())
    rows = tagged_rows = 0
    dropped, tagged, usable, unsafe_drops, safe = Counter(), Counter(), Counter(), Counter(), []
    for piece in batches:
        rows += piece.rows_read
        dropped.update(piece.dropped)
        batch = tag_batch(piece.batch, matcher)
        tagged_rows += batch.num_rows
        tagged.update(count_synsets(batch.column("wnids")))
        kept, drops = drop_unsafe_rows(
            batch.select([*STEP6_COLUMNS, *nsfw]),
            selection.allowed_nsfw_tags,
            selection.max_punsafe,
            selection.keep_unrated,
        )
        unsafe_drops.update(drops)
        usable.update(synset_caption_counts(kept))
        safe.append(kept.select(STEP6_COLUMNS))
    return SampleTally(rows, dict(dropped), tagged_rows, dict(tagged), dict(usable), dict(unsafe_drops), safe)


def projector(sample_rows: int, corpus_rows: int):
    """k in the sample -> (low, mid, high) over the corpus."""
    scale = corpus_rows / max(sample_rows, 1)
    unsampled = max(0.0, 1 - sample_rows / max(corpus_rows, 1))

    def project(k: float) -> tuple[float, float, float]:
        spread = Z * math.sqrt(k * unsampled)
        return max(0.0, k - spread) * scale, k * scale, (k + spread) * scale

    return project


@dataclass(frozen=True)
class Selected:
    """Steps 2-6 and the caption rules on one bound's projected counts."""

    funnel: Funnel  # on the sample's rows
    captions: dict[str, float]  # candidate -> projected single-synset captions
    unseen: float  # candidates the sample holds no single-synset caption of (see `unseen_candidates`)


def select_sample(config: Config, tally: SampleTally, project) -> dict[str, Selected]:
    """Per bound, the select stage's synset steps on projected counts, and step 6 and the caption
    rules on the sample, through the functions the select stage calls."""
    index, rules, out = load_index(), caption_rules(config.selection.caption_rules), {}
    for b, bound in enumerate(BOUNDS):
        tagged = {w: max(1, round(project(k)[b])) for w, k in tally.tagged.items()}  # seen, so found
        usable = {w: round(project(k)[b]) for w, k in tally.usable.items()}
        selection = choose_synsets(tagged, usable, config.selection)
        lookup, checker = CandidateLookup(selection), PairChecker(rules, selection.candidates, index)
        drops, single, kept = Counter(tally.unsafe_drops), Counter(), Counter()
        for batch in tally.safe:
            rows, single_drops = keep_single_synset_rows(batch, lookup)
            rows = rows.drop_columns(["wnids"])
            single.update(class_caption_counts(rows))
            passing, rule_drops = checker.keep_passing_rows(rows)
            drops.update({**single_drops, **rule_drops})
            kept.update(class_caption_counts(passing))
        funnel = build_funnel(selection, tally.tagged_rows, drops, kept, index, single)
        kept_counts = Counter(n for _, n in funnel.classes.values())
        unseen = unseen_candidates(kept_counts[1], kept_counts[2], tally.rows / project(tally.rows)[1])
        out[bound] = Selected(funnel, {w: project(n)[b] for w, (_, n) in funnel.classes.items()}, unseen[b])
    return out


def unseen_candidates(singletons: int, doubletons: int, fraction: float) -> tuple[float, float, float]:
    """Candidates with single-synset captions in the corpus but none in the sample: (none, Chao and
    Lin's lower bound for sampling a known `fraction` without replacement (Biometrika 2012), every
    unseen one as rare as the singletons allow: f1 (1 - q) / q)."""
    if fraction >= 1 or not singletons:
        return 0.0, 0.0, 0.0
    chao = singletons**2 / (2 * doubletons + fraction / (1 - fraction) * singletons)
    return 0.0, chao, max(chao, singletons * (1 - fraction) / fraction)

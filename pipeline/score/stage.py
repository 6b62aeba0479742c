"""The score stage: each candidate synset's first-pass captions scored against its gloss.

Ranking needs only a bounded sample of each synset's captions: the `first_pass_captions` rows
with the smallest keyed hash of `row_id` (the same rows whatever the sharding or runner). A
first Beam pass finds, per synset, the hash cutoff that admits that many rows; a second embeds
and scores the admitted rows, shard by shard, into `score/first_pass/<stem>.parquet`
(`row_id`, `wnid`, `gloss_similarity`). The rank stage then scores the chosen classes' other
captions; the embedding cache makes every caption cost one model call across both stages and
across reruns.

Only the candidates that can still become classes are scored (`rankable`): rank drops a
candidate with fewer captions than a class needs, or whose captions pass the caption rules less
often than `ranking.min_pass_share`, whatever its score, so embedding its captions would be work
for nothing (at real caption density more than half the candidates; their fates stay rank's).

Both passes hash every row of a scored synset, on purpose: the cutoffs are known only once every
shard has been read, and carrying keys from one pass to the other would mean writing a key and a
row id for nearly every selected row (a shard holds few rows of most synsets), which costs more
than hashing again (under a microsecond a row).
"""

from __future__ import annotations

import functools
import heapq
import time
from collections.abc import Iterable

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from imagenot.labels.caption_rules import NONE_SCORE_COLUMN, PairScores
from imagenot.labels.sense_model.head import head_digest
from imagenot.labels.senses.sentence import SenseContrast
from imagenot.labels.similarity import QueryEmbeddings, score_batch
from imagenot.labels.spans import form_spans
from imagenot.labels.web_senses import lexicon_digest as web_lexicon_digest
from imagenot.pipeline.config.schema import Config, Runner, Scoring
from imagenot.pipeline.frame.preflight import check_text_models
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.frame.runner import make_pipeline, scoring_hints
from imagenot.pipeline.run.files import read_json, read_schema, stage_shards, write_json
from imagenot.pipeline.run.keyed_hash import sample_keys
from imagenot.pipeline.run.layout import (
    FIRST_PASS_DIR,
    FIT_COLUMN,
    LABEL_COLUMN,
    LABEL_USE_COLUMN,
    MARGIN_COLUMN,
    OTHER_SENSE_COLUMN,
    SCORE,
    SCORE_COLUMN,
    SELECT,
    SELECT_TALLY_FILE,
    SELECTED_DIR,
    WEB_MARGIN_COLUMN,
    WEB_SENSE_COLUMN,
    stage_path,
)
from imagenot.pipeline.run.progress import watch_shards
from imagenot.pipeline.run.shards import (
    ShardWorker,
    process_shards,
    read_batches,
    resumable_shard,
    shard_files,
    write_batches,
)
from imagenot.pipeline.score.cache import CachedEncoder
from imagenot.pipeline.score.runtimes import lazy_encoder
from imagenot.pipeline.score.sense_methods import sense_scorer
from imagenot.wordnet.index import load_index
from imagenot.wordnet.nltk_data import cache_dir

STAGE = SCORE
UPSTREAM = SELECT
CUTOFFS_FILE = "first_pass_cutoffs.json"
TALLY_FILE = "score_tally.json"
FIRST_PHASE_SETTINGS = ("first_phase", "first_phase_model", "exact_per_class", "exact_cap")
SENTENCE_SETTINGS = ("sense_templates", "sense_pooling")  # scoring.sense_method sentence's alone
CONTEXT_SETTINGS = ("sense_layers",)  # scoring.sense_method context's alone
TRAINED_SETTINGS = ("sense_sentence_weight",)  # scoring.sense_method trained's alone
# what sense contrast adds to a scored caption
CONTRAST_COLUMNS = (OTHER_SENSE_COLUMN, MARGIN_COLUMN, FIT_COLUMN, WEB_SENSE_COLUMN, WEB_MARGIN_COLUMN)


def smallest_keys(shard: str, per_synset: int, seed: int, wnids: pa.Array | None = None) -> dict[str, list[int]]:
    """Per synset of a selected shard (of `wnids` only, when given), its `per_synset` smallest row keys, ascending."""
    found: dict[str, list[int]] = {}
    for batch in read_batches(shard, ["row_id", "wnid"]):
        if wnids is not None:
            batch = batch.filter(pc.is_in(batch.column("wnid"), value_set=wnids))
        keys = _row_keys(batch, seed)
        batch_wnids = batch.column("wnid").to_numpy(zero_copy_only=False)
        order = np.lexsort((keys, batch_wnids))
        for wnid, group in _groups(batch_wnids[order], keys[order]):
            found[wnid] = heapq.nsmallest(per_synset, [*found.get(wnid, []), *group.tolist()])
    return found


def _row_keys(batch: pa.RecordBatch, seed: int) -> np.ndarray:
    """The sample key of each row of `batch`, from its `row_id`."""
    return sample_keys(batch.column("row_id").to_pylist(), seed)


def _groups(sorted_wnids: np.ndarray, values: np.ndarray):
    """(wnid, its values) for runs of equal wnids (none for no rows)."""
    if not len(sorted_wnids):
        return
    starts = np.flatnonzero(np.r_[True, sorted_wnids[1:] != sorted_wnids[:-1]])
    for start, end in zip(starts, [*starts[1:], len(sorted_wnids)]):
        yield sorted_wnids[start], values[start:end]


def merge_smallest(parts: Iterable[dict[str, list[int]]], per_synset: int) -> dict[str, list[int]]:
    merged: dict[str, list[int]] = {}
    for part in parts:
        for wnid, keys in part.items():
            merged[wnid] = heapq.nsmallest(per_synset, [*merged.get(wnid, []), *keys])
    return merged


class CaptionScorer:
    """Embeds captions (through the cache) and scores each against its synset's query and, with
    sense contrast on, every noun sense of the word that matched it (`imagenot.labels.senses`:
    the sentence, the word read where it stands, the trained head)."""

    def __init__(self, scoring: Scoring, runner: Runner, wnids: list[str]):
        encoder = lazy_encoder(
            scoring.encoder, scoring.model, scoring.runtime, threads=runner.torch_threads, **_encoder_options(scoring)
        )
        self.encoder = CachedEncoder(encoder, scoring.cache_dir or FileSystems.join(str(cache_dir()), "embeddings"))
        self.index = load_index()
        self.queries = QueryEmbeddings.build(self.index, wnids, scoring.query_template, self.encoder)
        self.contrast = (
            None
            if scoring.sense_margin is None
            else SenseContrast(sense_scorer(scoring, self.encoder, runner.torch_threads))
        )
        self.label = None if self.contrast is None or scoring.label_model is None else scoring.label_model_weights()
        self.added = [SCORE_COLUMN] + ([] if self.contrast is None else list(CONTRAST_COLUMNS))
        self.added += [] if self.label is None else [LABEL_COLUMN, LABEL_USE_COLUMN]
        self.sense_seconds = 0.0  # CPU seconds of the sense contrast so far (benchmarks: its cost per caption)
        self.reads = ["caption", "wnid"] + ([] if self.contrast is None else ["matched"])
        self.reads += [] if self.label is None else [NONE_SCORE_COLUMN]

    def captions_embedded(self) -> int:
        """Captions the model embedded so far (cache misses), sense queries not counted."""
        return self.encoder.embedded - (0 if self.contrast is None else self.contrast.queries.embedded)

    def score(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """`batch` (with `caption`, `wnid` and, for sense contrast, `matched`) with a float32
        `gloss_similarity` appended, and with sense contrast the best other sense's wnid
        (`other_sense`, null when the word has one sense), the float32 `sense_margin` over it and
        the best sense's float32 `sense_fit` (its score without the prior)."""
        captions = batch.column("caption").to_pylist()
        vectors = self.encoder.encode(captions)
        wnids = batch.column("wnid").to_pylist()
        scores = score_batch(vectors, wnids, self.queries)
        batch = batch.append_column(SCORE_COLUMN, pa.array(scores, pa.float32()))
        if self.contrast is None:
            return batch
        started = time.process_time()
        contrast = self.contrast.margins(captions, vectors, wnids, batch.column("matched").to_pylist())
        batch = batch.append_column(OTHER_SENSE_COLUMN, pa.array(contrast.other, pa.string()))
        batch = batch.append_column(MARGIN_COLUMN, pa.array(contrast.margin, pa.float32()))
        batch = batch.append_column(FIT_COLUMN, pa.array(contrast.fit, pa.float32()))
        batch = batch.append_column(WEB_SENSE_COLUMN, pa.array(contrast.web, pa.string()))
        batch = batch.append_column(WEB_MARGIN_COLUMN, pa.array(contrast.web_margin, pa.float32()))
        if self.label is not None:
            probability, uses = self.label.judge(
                captions,
                form_spans(captions, contrast.forms),
                wnids,
                PairScores(scores, contrast.margin, contrast.fit, contrast.web_margin),
                batch.column(NONE_SCORE_COLUMN).to_pylist(),
                batch.column("matched").to_pylist(),
                vectors,
                self.index,
            )
            batch = batch.append_column(LABEL_COLUMN, pa.array(probability, pa.float32()))
            batch = batch.append_column(LABEL_USE_COLUMN, pa.array(uses, pa.string()))
        self.sense_seconds += time.process_time() - started
        return batch


def _encoder_options(scoring: Scoring) -> dict:
    options = {"batch_size": scoring.batch_size}
    if scoring.encoder == "transformers":
        options.update(pooling=scoring.pooling, max_length=scoring.max_length)
    return options


def score_shard(
    shard: str,
    out_dir: str,
    folder: str,
    scorer: CaptionScorer,
    admit,
    columns: list[str] | None = None,
    part: str = "",
) -> dict:
    """Score the rows of `shard` that `admit(batch) -> mask` lets through into `out_dir/folder`,
    keeping `columns` (None: all) and the score. The tally counts rows scored and the captions
    the model embedded (cache misses). `part`: see `shard_files`.
    """
    files = shard_files(out_dir, folder, shard, part)
    return resumable_shard(files, lambda: _score_into(files.data, shard, scorer, admit, columns))


def _score_into(path: str, shard: str, scorer: CaptionScorer, admit, columns: list[str] | None) -> dict:
    embedded_before, sense_before = scorer.captions_embedded(), scorer.sense_seconds
    scored = 0

    def kept(result: pa.RecordBatch) -> pa.RecordBatch:
        return result if columns is None else result.select([*columns, *scorer.added])

    def scored_batches():
        nonlocal scored
        read = None if columns is None else sorted({"row_id", *scorer.reads, *columns})
        for batch in read_batches(shard, read):
            chosen = batch.filter(admit(batch))
            scored += chosen.num_rows
            yield kept(scorer.score(chosen))

    def empty_schema() -> pa.Schema:  # a selected shard with no rows: an empty scored file all the same
        return kept(scorer.score(pa.RecordBatch.from_pylist([], schema=read_schema(shard)))).schema

    write_batches(path, scored_batches(), empty_schema)
    return {
        "rows_scored": scored,
        "captions_embedded": scorer.captions_embedded() - embedded_before,
        "sense_cpu_seconds": round(scorer.sense_seconds - sense_before, 3),
    }


class _ScoreFirstPass(beam.DoFn):
    """Scores the first-pass rows of whole shards; one encoder per worker process."""

    def __init__(self, scoring: Scoring, runner: Runner, cutoffs: dict[str, int], stage_dir: str):
        self._scoring, self._runner, self._cutoffs, self._stage_dir = scoring, runner, cutoffs, stage_dir

    def setup(self):
        self._scorer = CaptionScorer(self._scoring, self._runner, sorted(self._cutoffs))
        self._wnids = pa.array(sorted(self._cutoffs), pa.string())
        self._limits = np.array([self._cutoffs[w] for w in sorted(self._cutoffs)], np.uint64)

    def _admit(self, batch: pa.RecordBatch) -> pa.Array:
        """A row is admitted when its synset is scored (has a cutoff) and its key is within the cutoff."""
        positions = pc.index_in(batch.column("wnid"), value_set=self._wnids)
        scored = pc.is_valid(positions).to_numpy(zero_copy_only=False)
        admitted = np.zeros(batch.num_rows, bool)
        if scored.any():
            chosen = batch.filter(scored)
            limit = self._limits[positions.drop_null().to_numpy()]
            admitted[scored] = _row_keys(chosen, self._scoring.seed) <= limit
        return pa.array(admitted)

    def process(self, shard: str):
        yield score_shard(shard, self._stage_dir, FIRST_PASS_DIR, self._scorer, self._admit, ["row_id", "wnid"])


def settings(config: Config) -> dict:
    # The first phase belongs to the rank stage; the cache and batch size change no result, nor
    # the settings of the sense method not chosen. The sense margin's and the fit floor's values
    # are rank's and sample's: here only whether there is sense contrast.
    # The trained head brings its own templates and layers; its weights' digest stands for it.
    scoring = config.scoring
    unused = {
        "context": SENTENCE_SETTINGS + TRAINED_SETTINGS,
        "sentence": CONTEXT_SETTINGS + TRAINED_SETTINGS,
        "both": TRAINED_SETTINGS,
        "trained": SENTENCE_SETTINGS + CONTEXT_SETTINGS,
    }.get(scoring.sense_method, ())
    own = scoring.model_dump(
        exclude={
            "cache_dir",
            "batch_size",
            "sense_margin",
            "none_of_these_fit",
            "web_sense_margin",
            "web_senses",
            "label_floor",
            "label_model",
            *FIRST_PHASE_SETTINGS,
            *unused,
        }
    )
    head = {"sense_head": head_digest()} if scoring.sense_method == "trained" else {}
    if scoring.scores_web_senses():  # the lexicon's own digest: an edited lexicon rescores
        head["web_senses"] = web_lexicon_digest()
    if scoring.label_model is not None:  # the weights' digest, as for the head: retrained weights rescore
        head["label_model"] = scoring.label_model_weights().digest()
    # which candidates can become classes (`rankable`): the first pass scores those alone
    rankable_by = {"min_class_captions": config.min_class_captions, "min_pass_share": config.ranking.min_pass_share}
    return {**own, **head, "sense_contrast": scoring.sense_margin is not None, "rankable": rankable_by}


def rankable(config: Config, select_tally: dict) -> list[str]:
    """The candidates that may become classes whatever their scores, as `rank_synsets` decides: at
    least the captions a class needs (`Config.min_class_captions`), and a share of them passing the
    caption rules (select's tally; the sense decision can only lower it, `pass_share.py`) of at
    least `ranking.min_pass_share`. Vetoes are rank's alone: a vetoed candidate is scored."""
    kept = select_tally.get("kept", {})
    single = select_tally.get("single_synset", kept)
    return [
        wnid
        for wnid, n in sorted(kept.items())
        if n >= config.min_class_captions
        and (round(n / single[wnid], 6) if single.get(wnid) else 0.0) >= config.ranking.min_pass_share
    ]


def run_score(config: Config, run_dir: str) -> dict:
    """Both passes over `<run_dir>/select/`, for the candidates that may become classes; returns
    the summed tally, the synsets scored and the candidates left unscored."""
    select_dir = stage_path(run_dir, SELECT)
    stage_dir = stage_path(run_dir, STAGE)
    shards = stage_shards(select_dir, SELECTED_DIR)
    scoring = config.scoring
    select_tally = read_json(FileSystems.join(select_dir, SELECT_TALLY_FILE))
    wnids = rankable(config, select_tally)

    cutoffs_path = FileSystems.join(stage_dir, CUTOFFS_FILE)
    with make_pipeline(config.runner) as pipeline:
        _ = (
            pipeline
            | "Shards" >> beam.Create(shards)
            | "Spread" >> beam.Reshuffle()
            | "Smallest"
            >> beam.ParDo(
                ShardWorker(
                    functools.partial(
                        smallest_keys,
                        per_synset=scoring.first_pass_captions,
                        seed=scoring.seed,
                        wnids=pa.array(wnids, pa.string()),
                    )
                )
            )
            | "Merge" >> beam.CombineGlobally(merge_smallest, per_synset=scoring.first_pass_captions)
            | "Write" >> beam.Map(lambda keys: write_json(cutoffs_path, {w: k[-1] for w, k in keys.items()}))
        )
    cutoffs = read_json(cutoffs_path)

    total_path = FileSystems.join(stage_dir, TALLY_FILE)
    with watch_shards(stage_dir, shards, STAGE, "rows_scored"), make_pipeline(config.runner) as pipeline:
        process_shards(
            pipeline,
            shards,
            _ScoreFirstPass(scoring, config.runner, cutoffs, stage_dir),
            total_path,
            scoring_hints(config.runner),
        )
    unscored = len(select_tally.get("kept", {})) - len(cutoffs)
    return {**read_json(total_path), "synsets": len(cutoffs), "candidates_unscored": unscored}


def first_pass_similarities(run_dir: str) -> dict[str, np.ndarray]:
    """wnid -> the gloss similarities of its first-pass captions."""
    stage_dir = stage_path(run_dir, STAGE)
    by_synset: dict[str, list[np.ndarray]] = {}
    for shard in stage_shards(stage_dir, FIRST_PASS_DIR):
        for batch in read_batches(shard, ["wnid", SCORE_COLUMN]):
            wnids = batch.column("wnid").to_numpy(zero_copy_only=False)
            order = np.argsort(wnids, kind="stable")
            for wnid, scores in _groups(wnids[order], batch.column(SCORE_COLUMN).to_numpy()[order]):
                by_synset.setdefault(wnid, []).append(scores)
    return {wnid: np.concatenate(parts) for wnid, parts in sorted(by_synset.items())}


DECLARATION = Stage(
    STAGE,
    UPSTREAM,
    settings,
    run_score,
    preflight=(check_text_models,),
)

"""The rank stage: step 8, the class list, and the chosen classes' captions scored.

With `scoring.first_phase: static` a static model first ranks every caption of the classes and
the encoder scores only each class's best `exact_per_class` (`first_phase.py`): the encoder's
work and what sampling holds per class stay bounded whatever the corpus size. With `priority`
(strategies threshold and matched) the encoder scores each class's captions in the sample's
order, round by round, until the class's list is settled (`priority.py`): the same images as
`off`, at a cost that follows N + reserve. With `off` the encoder scores every caption of the
classes. Captions left out are counted (`rows_beyond_first_phase`).

A synset's score is the mean of its top-n first-pass caption similarities; synsets under the
encoder's threshold are dropped and the best K become the classes (ties by wnid). Class indices
follow wnid order, as ImageNet's do; `rank` is the position by score. Outputs in `rank/`:
`class_list.tsv` and `classes.json` (index, wnid, name, lemmas, gloss, captions, score, rank),
`ranking.tsv` (every candidate with its score, fate and pass share: a candidate whose
estimated share of captions used in its sense, `pass_share.py`, is under `ranking.min_pass_share`
is dropped as `low_pass_share`), and `scored/<stem>.parquet`
(`<stem>-r<round>.parquet` on the priority path): the
selected captions of the classes with `gloss_similarity` and `class_index`, for sampling.
"""

from __future__ import annotations

import functools
import time

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.frame.preflight import check_text_models
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.frame.runner import make_pipeline, scoring_hints
from imagenot.pipeline.rank.first_phase import StaticGate, cutoffs_transform
from imagenot.pipeline.rank.pass_share import pass_shares, sense_pass_shares
from imagenot.pipeline.rank.priority import priority_rounds
from imagenot.pipeline.rank.ranking import Ranking, rank_synsets
from imagenot.pipeline.rank.sampling_order import reference_edges, sense_decision_settings
from imagenot.pipeline.run.files import read_json, stage_shards, write_json, write_tsv
from imagenot.pipeline.run.layout import (
    CLASS_LIST_FILE,
    CLASSES_FILE,
    RANK,
    RANKING_FILE,
    SCORE,
    SCORED_DIR,
    SELECT,
    SELECT_TALLY_FILE,
    SELECTED_DIR,
    stage_path,
)
from imagenot.pipeline.run.paths import stem
from imagenot.pipeline.run.progress import watch_shards
from imagenot.pipeline.run.shards import process_shards
from imagenot.pipeline.score import stage as score_stage
from imagenot.pipeline.score.static_model import describe, load_static_encoder
from imagenot.wordnet.index import NounIndex, load_index

STAGE = RANK
UPSTREAM = SCORE
TALLY_FILE = "rank_tally.json"
CUTOFFS_FILE = "first_phase_cutoffs.json"
CLASS_COLUMNS = ("index", "wnid", "name", "lemmas", "gloss", "captions", "score", "rank")


def class_rows(ranking: Ranking, captions: dict[str, int], index: NounIndex) -> list[dict]:
    """One row per class, in class-index (wnid) order."""
    rank_of = {wnid: position for position, wnid in enumerate(ranking.classes)}
    return [
        {
            "index": i,
            "wnid": wnid,
            "name": index[wnid].name,
            "lemmas": ", ".join(lemma.replace("_", " ") for lemma in index[wnid].lemmas),
            "gloss": index[wnid].gloss,
            "captions": captions.get(wnid, 0),
            "score": round(ranking.scores[wnid], 6),
            "rank": rank_of[wnid],
        }
        for i, wnid in enumerate(sorted(ranking.classes))
    ]


def ranking_rows(ranking: Ranking, index: NounIndex, shares: dict[str, float]) -> list[dict]:
    """Every candidate with its fate and pass share: the scored ones best first (ties by wnid),
    then, with no score, those the score stage left out (they could not become classes), by wnid."""
    order = sorted(ranking.scores, key=lambda w: (-ranking.scores[w], w))
    order += sorted(w for w in ranking.dropped if w not in ranking.scores)
    return [
        {
            "wnid": w,
            "name": index[w].name,
            "score": round(ranking.scores[w], 6) if w in ranking.scores else "",
            "fate": ranking.dropped.get(w, "class"),
            "pass_share": shares.get(w, ""),
        }
        for w in order
    ]


class ClassRows:
    """Admits every row of the classes."""

    def __init__(self, classes: list[str]):
        self._wnids = pa.array(classes, pa.string())

    def __call__(self, batch: pa.RecordBatch) -> pa.Array:
        return pc.is_in(batch.column("wnid"), value_set=self._wnids)


class _ScoreClasses(beam.DoFn):
    """Scores the selected captions of the chosen classes that the gate (built by `gate()` on the
    worker: every row, the static first phase's best M, a priority round's) admits, into
    `scored/<stem><part>.parquet`; one encoder per worker process."""

    def __init__(self, config: Config, classes: list[str], stage_dir: str, gate, part: str = ""):
        self._config, self._classes, self._stage_dir, self._gate, self._part = config, classes, stage_dir, gate, part

    def setup(self):
        self._scorer = score_stage.CaptionScorer(self._config.scoring, self._config.runner, self._classes)
        self._admit = self._gate()

    def process(self, shard: str):
        yield score_stage.score_shard(shard, self._stage_dir, SCORED_DIR, self._scorer, self._admit, part=self._part)


def settings(config: Config) -> dict:
    scoring = config.scoring
    first_phase = {"first_phase": scoring.first_phase}
    if scoring.first_phase == "static":
        first_phase.update(first_phase_model=scoring.first_phase_model, exact_per_class=config.exact_per_class)
    if scoring.first_phase == "priority":  # the rows scored follow the sample's settings
        edges = reference_edges(config.sampling)
        first_phase.update(
            exact_per_class=config.exact_per_class,
            exact_cap=scoring.exact_cap,
            sampling=config.sampling.model_dump(exclude={"test_per_class", "shard_rows"}),
            reference_edges=None if edges is None else edges.tolist(),
        )
    return {
        **config.ranking.model_dump(exclude={"thresholds", "min_captions"}),
        "threshold": config.threshold,
        "min_captions": config.min_class_captions,
        **sense_decision_settings(scoring),  # the pass share's sense decision (and the priority path's lists)
        **first_phase,
    }


def first_phase_cutoffs(config: Config, shards: list[str], classes: list[str], stage_dir: str) -> tuple[dict, dict]:
    """(wnid -> cutoff, the first phase's figures for the card) with a static model pass."""
    scoring, m = config.scoring, config.exact_per_class
    encoder = load_static_encoder(scoring.model, scoring.first_phase_model)  # distilled here, once, if not yet
    path = FileSystems.join(stage_dir, CUTOFFS_FILE)
    with make_pipeline(config.runner) as pipeline:
        _ = (
            pipeline
            | "Shards" >> beam.Create(shards)
            | "FirstPhase" >> cutoffs_transform(scoring, classes, m)
            | "Write" >> beam.Map(lambda cutoffs: write_json(path, dict(sorted(cutoffs.items()))))
        )
    cutoffs = {w: (float(score), str(row_id)) for w, (score, row_id) in read_json(path).items()}
    figures = {"mode": "static", "model": describe(encoder.provenance), "exact_per_class": m}
    return cutoffs, figures


def run_rank(config: Config, run_dir: str) -> tuple[Ranking, dict]:
    """Rank the scored candidates, write the class list, score the classes' captions; the ranking
    and the stage's figures."""
    stage_dir = stage_path(run_dir, STAGE)
    ranking, kept = write_class_list(config, run_dir, stage_dir)
    classes = sorted(ranking.classes)
    tally, first_phase = score_classes(config, run_dir, stage_dir, classes)
    # Every caption of the classes is scored by the encoder or left out by the first phase.
    tally["rows_beyond_first_phase"] = sum(kept.get(w, 0) for w in classes) - tally["rows_scored"]
    return ranking, {"classes": len(classes), "synsets_dropped": ranking.reasons(), **tally, "first_phase": first_phase}


def write_class_list(config: Config, run_dir: str, stage_dir: str) -> tuple[Ranking, dict[str, int]]:
    """Step 8: rank the scored candidates and write the class list and the ranking into `stage_dir`;
    the ranking and select's kept captions per synset."""
    index = load_index()
    select_tally = read_json(stage_path(run_dir, SELECT, SELECT_TALLY_FILE))
    kept = select_tally.get("kept", {})
    sense = sense_pass_shares(run_dir, config.scoring.sense_decision())
    shares = pass_shares(select_tally.get("single_synset", kept), kept, sense)
    ranking = rank_synsets(
        score_stage.first_pass_similarities(run_dir),
        config.ranking.top_n,
        config.threshold,
        config.ranking.classes,
        captions=kept,
        min_captions=config.min_class_captions,
        pass_shares=shares,
        min_pass_share=config.ranking.min_pass_share,
        vetoed=frozenset(config.ranking.vetoed),
    )
    rows = class_rows(ranking, kept, index)
    write_tsv(FileSystems.join(stage_dir, CLASS_LIST_FILE), CLASS_COLUMNS, rows)
    write_json(FileSystems.join(stage_dir, CLASSES_FILE), rows)
    write_tsv(
        FileSystems.join(stage_dir, RANKING_FILE),
        ("wnid", "name", "score", "fate", "pass_share"),
        ranking_rows(ranking, index, shares),
    )
    return ranking, kept


def score_classes(config: Config, run_dir: str, stage_dir: str, classes: list[str]) -> tuple[dict, dict]:
    """Score the classes' selected captions that the first phase admits (`scoring.first_phase`);
    the scoring tally with the seconds it took, and the first phase's figures."""
    shards = stage_shards(stage_path(run_dir, SELECT), SELECTED_DIR)
    total_path = FileSystems.join(stage_dir, TALLY_FILE)

    def score_round(gate, part: str = "") -> dict:
        named = [f"{stem(shard)}{part}" for shard in shards] if part else shards  # the round's tallies
        with watch_shards(stage_dir, named, STAGE, "rows_scored"), make_pipeline(config.runner) as pipeline:
            process_shards(
                pipeline,
                shards,
                _ScoreClasses(config, classes, stage_dir, gate, part),
                total_path,
                scoring_hints(config.runner),
            )
        return read_json(total_path)

    started = time.monotonic()
    if config.scoring.first_phase == "priority" and classes:
        scored_files = functools.partial(stage_shards, stage_dir, SCORED_DIR)
        tally, first_phase = priority_rounds(config, classes, stage_dir, shards, score_round, scored_files)
        tally["exact_seconds"] = round(time.monotonic() - started, 3)
        return tally, first_phase
    gate, first_phase = functools.partial(ClassRows, classes), {"mode": "off"}
    if config.scoring.first_phase == "static" and classes:
        cutoffs, first_phase = first_phase_cutoffs(config, shards, classes, stage_dir)
        gate = functools.partial(StaticGate, config.scoring, classes, cutoffs)
    first_phase["seconds"] = round(time.monotonic() - started, 3)
    started = time.monotonic()
    tally = score_round(gate)
    tally["exact_seconds"] = round(time.monotonic() - started, 3)
    return tally, first_phase


def figures(ranked: tuple[Ranking, dict]) -> dict:
    return ranked[1]


DECLARATION = Stage(
    STAGE,
    UPSTREAM,
    settings,
    run_rank,
    preflight=(check_text_models,),
    figures=figures,
)

"""The select stage: steps 2-6 of the method, from tagged shards to single-synset captions.

Two passes over the tag stage's shards. The first counts, per synset, the captions that pass
LAION's row-level NSFW ratings, and (for the none_of_these rule) how those captions write the forms
of the synsets that can still become candidates (`possible_candidates`: known from the tag stage's
counts before the pass), over whole Arrow batches (`labels.form_counts`); on the driver, the
safety rules and steps 2-5 (`filters.select`) turn the tag stage's counts and these into candidate
synsets. The second keeps each caption whose synsets hold exactly one candidate (step 6), then
drops those the caption rules say do not name that candidate (`labels.caption_rules`), and writes
the rest with their `wnid` to `select/selected/<stem>.parquet`.
The funnel (`funnel.tsv`, `funnel.json`) and every found synset's fate (`synset_fates.tsv`,
read by `imagenot why`) go to `select/`; the summed tally (`select_tally.json`) also counts each
candidate's captions the caption rules dropped, per rule, for `imagenot why`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections import Counter
from collections.abc import Iterable

import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.filters.funnel import Funnel, build_funnel
from imagenot.filters.leaves import STEP as LEAVES
from imagenot.filters.min_captions import synset_caption_counts
from imagenot.filters.offensive_synsets import marked_synsets
from imagenot.filters.person_synsets import identity_synsets
from imagenot.filters.select import SynsetSelection, select_synsets
from imagenot.filters.single_synset import CandidateLookup, class_caption_counts, keep_single_synset_rows
from imagenot.filters.unsafe_rows import drop_unsafe_rows
from imagenot.labels.caption_rules import NONE_OF_THESE, NONE_SCORE_COLUMN
from imagenot.labels.form_counts import batch_form_statistics, of_lemmas
from imagenot.labels.instances import instance_removals
from imagenot.labels.none_of_these import FormStats
from imagenot.labels.none_of_these_model import BIAS, WEIGHTS
from imagenot.labels.pair_checker import PairChecker
from imagenot.pipeline.config.reference_lists import reference_wnids
from imagenot.pipeline.config.schema import Config, Selection
from imagenot.pipeline.corpus.preflight import check_corpus_if_there
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.frame.runner import make_pipeline
from imagenot.pipeline.run.files import read_json, read_schema, stage_shards
from imagenot.pipeline.run.layout import (
    SELECT,
    SELECT_TALLY_FILE,
    SELECTED_DIR,
    TAG,
    TAG_TALLY_FILE,
    TAGGED_DIR,
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
from imagenot.pipeline.run.stage_dir import digest
from imagenot.pipeline.select.caption_rules import caption_rules
from imagenot.pipeline.select.funnel_files import RULE_DROPS, rule_drop_key, write_funnel
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.lemmas import normalize_all

log = logging.getLogger(__name__)

STAGE = SELECT
UPSTREAM = TAG
USABLE_FILE = "usable_counts.json"
FORM_STATS = "form_stats"  # the first pass's tally key: "kind:form" -> occurrences (labels.none_of_these)


def _unsafe_filter(batch, selection: Selection):
    return drop_unsafe_rows(batch, selection.allowed_nsfw_tags, selection.max_punsafe, selection.keep_unrated)


def _row_filter_columns(selection: Selection) -> list[str]:
    return ["wnids", *selection.row_nsfw_columns().values()]


def usable_counts(shard: str, selection: Selection, lemmas: frozenset[str] = frozenset()) -> dict:
    """wnid -> captions of a tagged shard that pass the row-level NSFW filter; and, when the
    none_of_these rule is on, how those captions write each matched form of `lemmas` (normalised
    lemmas, `of_lemmas`) (`FORM_STATS`)."""
    counts, forms = Counter(), Counter()
    with_forms = NONE_OF_THESE in selection.caption_rules.rules
    columns = [*_row_filter_columns(selection), *(["caption", "matched"] if with_forms else [])]
    for batch in read_batches(shard, columns):
        kept, _ = _unsafe_filter(batch, selection)
        counts.update(synset_caption_counts(kept))
        if with_forms:
            stats = batch_form_statistics(kept.column("caption"), kept.column("matched"), lemmas)
            forms.update({f"{kind}:{form}": n for kind, by_form in stats.items() for form, n in by_form.items()})
    return {"usable": dict(sorted(counts.items())), FORM_STATS: dict(sorted(forms.items()))}


def lemma_forms(wnids: Iterable[str], index: NounIndex) -> frozenset[str]:
    """The synsets' lemmas, normalised as the tag stage's matched forms are."""
    return frozenset(normalize_all(sorted({lemma for wnid in wnids for lemma in index[wnid].lemmas})))


def possible_candidates(tagged: dict[str, int], selection: Selection) -> set[str]:
    """The synsets that can still be candidates once the first pass has counted: those steps 2-5
    keep with every tagged caption taken as usable (a synset's usable count is at most its tagged
    count, and every step but the leaves keeps or drops a synset by itself), and those the leaves
    step drops then, whose candidate descendants may fall short of the usable captions they need."""
    bound = choose_synsets(tagged, tagged, selection)
    return {*bound.candidates, *(wnid for wnid, removal in bound.removals.items() if removal.step == LEAVES)}


def read_form_stats(tally: dict, candidates: Iterable[str], index: NounIndex) -> FormStats:
    """The first pass's form statistics (`FORM_STATS`), kept for the candidates' forms only."""
    wanted = lemma_forms(candidates, index)
    counts: dict[str, dict[str, int]] = {}
    for key, n in tally.get(FORM_STATS, {}).items():
        kind, form = key.split(":", 1)
        if of_lemmas(form, wanted):
            counts.setdefault(kind, {})[form] = n
    return FormStats(counts)


def select_shard(
    selection: Selection, lookup: CandidateLookup, checker: PairChecker, stage_dir: str, shard: str
) -> dict:
    """Step 6 and the caption rules over one tagged shard; the tally counts rows in, drops by
    step:reason, kept by class after step 6 and after the rules, and the rules' drops by
    wnid:rule (`RULE_DROPS`, which `imagenot why` reads)."""
    files = shard_files(stage_dir, SELECTED_DIR, shard)
    return resumable_shard(
        files,
        lambda: _select_into(files.data, shard, selection, lookup, checker),
        reusable=lambda tally: RULE_DROPS in tally,  # a tally of code before the per-class drops: redone
    )


def _select_into(path: str, shard: str, selection: Selection, lookup: CandidateLookup, checker: PairChecker) -> dict:
    rows_in, drops, single_counts, kept_counts, class_drops = 0, Counter(), Counter(), Counter(), Counter()

    def kept_batches():
        nonlocal rows_in
        for batch in read_batches(shard):
            safe, unsafe_drops = _unsafe_filter(batch, selection)
            single, single_drops = keep_single_synset_rows(safe, lookup)
            single = single.drop_columns(["wnids"])
            single_counts.update(class_caption_counts(single))
            kept, rule_drops, by_class = checker.check_rows(single)
            class_drops.update({rule_drop_key(wnid, rule): n for (wnid, rule), n in by_class.items()})
            rows_in += batch.num_rows
            step_drops = {**unsafe_drops, **single_drops, **rule_drops}
            drops.update({f"{step}:{reason}": n for (step, reason), n in step_drops.items()})
            kept_counts.update(class_caption_counts(kept))
            yield kept

    write_batches(path, kept_batches(), lambda: _selected_schema(shard))
    return {
        "rows_in": rows_in,
        "dropped": dict(sorted(drops.items())),
        "single_synset": dict(sorted(single_counts.items())),
        "kept": dict(sorted(kept_counts.items())),
        RULE_DROPS: dict(sorted(class_drops.items())),
    }


def _selected_schema(tagged_shard: str) -> pa.Schema:
    schema = read_schema(tagged_shard)
    schema = schema.remove(schema.get_field_index("wnids")).append(pa.field("wnid", pa.string()))
    return schema.append(pa.field(NONE_SCORE_COLUMN, pa.float32()))


def check_tagged_columns(config: Config, run_dir: str) -> None:
    """Before Beam starts: every tagged shard holds the columns the enabled NSFW checks read
    (none yet, or no run: nothing to check)."""
    if run_dir is None:
        return
    for shard in stage_shards(stage_path(run_dir, TAG), TAGGED_DIR):
        names = read_schema(shard).names
        for setting, column in config.selection.row_nsfw_columns().items():
            if column not in names:
                raise ImagenotError(
                    f"{shard}: no column {column!r}, which selection.{setting} needs; the corpus it was tagged "
                    f"from had none: turn the check off with `selection.{setting}: null`"
                )


def choose_synsets(tagged: dict[str, int], usable: dict[str, int], selection: Selection) -> SynsetSelection:
    """Steps 2-5 on the driver, with the config's reference set and thresholds."""
    index = load_index()
    return select_synsets(
        tagged,
        usable,
        index,
        reference=reference_wnids(selection.reference, index),
        reading=selection.overlap,
        min_count=selection.min_captions,
        nsfw_threshold=selection.nsfw_synset_threshold,
        offensive_marks=selection.offensive_synsets,
        person_mode=selection.person_synsets,
        instances=None if selection.instance_synsets else functools.partial(instance_removals, index=index),
        picturable_roots=selection.picturable_roots,
        excluded_lexnames=selection.picturable_excluded_lexnames,
    )


def settings(config: Config) -> dict:
    """The selection settings, with the reference set and the safety rules' synsets resolved: an
    edited class-list file or a changed rule reruns."""
    index = load_index()
    return {
        **config.selection.model_dump(),
        "reference_wnids": digest(reference_wnids(config.selection.reference, index)),
        "safety_rules": digest([marked_synsets(index), identity_synsets(index)]),
        **(
            {"none_of_these_model": digest([WEIGHTS, BIAS])}
            if NONE_OF_THESE in config.selection.caption_rules.rules
            else {}
        ),
    }


def run_select(config: Config, run_dir: str) -> Funnel:
    """Both passes over `<run_dir>/tag/`; writes `<run_dir>/select/` and returns the funnel."""
    tag_dir = stage_path(run_dir, TAG)
    stage_dir = stage_path(run_dir, STAGE)
    tagged_tally = read_json(FileSystems.join(tag_dir, TAG_TALLY_FILE))
    shards = stage_shards(tag_dir, TAGGED_DIR)
    selection_config = config.selection

    usable_path = FileSystems.join(stage_dir, USABLE_FILE)
    lemmas = frozenset()
    if NONE_OF_THESE in selection_config.caption_rules.rules:
        lemmas = lemma_forms(possible_candidates(tagged_tally["synset_captions"], selection_config), load_index())
    count = functools.partial(usable_counts, selection=selection_config, lemmas=lemmas)
    with make_pipeline(config.runner) as pipeline:
        process_shards(pipeline, shards, ShardWorker(count), usable_path)
    usable = read_json(usable_path)
    selection = choose_synsets(tagged_tally["synset_captions"], usable.get("usable", {}), selection_config)
    log.info("select: %d synsets found, %d candidates", len(selection.found), len(selection.candidates))

    total_path = FileSystems.join(stage_dir, SELECT_TALLY_FILE)
    with watch_shards(stage_dir, shards, STAGE, "rows_in"), make_pipeline(config.runner) as pipeline:
        rules = caption_rules(selection_config.caption_rules)
        if rules.none_of_these is not None:
            stats = read_form_stats(usable, selection.candidates, load_index())
            rules = dataclasses.replace(rules, none_of_these=rules.none_of_these.with_stats(stats))
        checker = PairChecker(rules, selection.candidates, load_index())
        select_fn = ShardWorker(
            functools.partial(select_shard, selection_config, CandidateLookup(selection), checker, stage_dir)
        )
        process_shards(pipeline, shards, select_fn, total_path)
    total = read_json(total_path)
    drops = {tuple(key.split(":", 1)): n for key, n in total.get("dropped", {}).items()}
    funnel = build_funnel(
        selection,
        tagged_tally["rows_tagged"],
        drops,
        total.get("kept", {}),
        load_index(),
        total.get("single_synset", {}),
    )
    write_funnel(funnel, stage_dir)
    return funnel


def figures(funnel: Funnel) -> dict:
    # a list, not a mapping: summary.json sorts keys, and the funnel reads in step order
    steps = [
        {"step": step.step, "synsets_left": step.synsets_left, "captions_left": step.captions_left}
        for step in funnel.steps
    ]
    return {"funnel": steps, "candidates": len(funnel.classes)}


DECLARATION = Stage(
    STAGE,
    UPSTREAM,
    settings,
    run_select,
    preflight=(check_corpus_if_there, check_tagged_columns),
    figures=figures,
)

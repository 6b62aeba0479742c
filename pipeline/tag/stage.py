"""The tag stage: corpus shards in, tagged shards and per-synset caption counts out.

`tag_unit` is the whole stage for one work unit (`pipeline.corpus.units`: corpus files cut or
grouped to about `corpus.work_unit_rows` rows) as a plain function; Beam spreads the units over
workers (one matcher per worker, see `pipeline.run.shards`). Outputs go to `<run dir>/tag/`: per
unit `tagged/<unit id>.parquet` (the rows with at least one match: `row_id`, `wnids`, `matched`,
then the source columns; a unit of one whole file is named by the file, as before) and
`tallies/<unit id>.json`; then `tag_tally.json` (the sum) and `synset_counts.tsv`. Every row read
is counted once: dropped by a reason, tagged, or unmatched; row ids, the tally and the counts are
the same whatever the units.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Columns, Config
from imagenot.pipeline.corpus.formats import Layout
from imagenot.pipeline.corpus.preflight import check_corpus, corpus_shapes
from imagenot.pipeline.corpus.reader import (
    DEFAULT_LAYOUT,
    MALFORMED_LISTED,
    layout_of,
    list_shards,
    read_shard,
    shard_identities,
)
from imagenot.pipeline.corpus.units import (
    WorkUnit,
    count_range,
    describe,
    number_lines,
    plan_units,
    text_ranges,
)
from imagenot.pipeline.frame.registry import CommandForm, Stage
from imagenot.pipeline.frame.runner import make_pipeline
from imagenot.pipeline.run.files import read_json, write_json, write_text
from imagenot.pipeline.run.layout import CORPUS_SHARDS_FILE, TAG, TAG_TALLY_FILE, TAGGED_DIR, stage_path
from imagenot.pipeline.run.paths import name, run_relative
from imagenot.pipeline.run.progress import watch_shards
from imagenot.pipeline.run.shards import (
    ShardWorker,
    process_shards,
    resumable_shard,
    shard_files,
    sum_tallies,
    write_batches,
)
from imagenot.pipeline.tag.matcher import LemmaMatcher, count_synsets
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.lemmas import normalize, surface_forms
from imagenot.wordnet.nltk_data import WORDNET_VERSION

log = logging.getLogger(__name__)

STAGE = TAG
COUNTS_FILE = "synset_counts.tsv"
LINE_STARTS_FILE = "line_starts.json"  # the text ranges' line counts (a first job)
ROWS_BY_FILE = "rows_by_file"  # a unit's tally: rows read per file, for the empty files


def build_matcher(index: NounIndex, ignore_forms: Iterable[str]) -> LemmaMatcher:
    """The matcher over every noun lemma and inflection except the ignored surface forms: built
    once per index and ignored forms in a process (a second) and shared by every stage and
    command there (a build's plan and tag, a test's many tag stages), so read only."""
    return _matcher(index, frozenset(normalize(form) for form in ignore_forms))


@functools.lru_cache(maxsize=4)
def _matcher(index: NounIndex, skip: frozenset[str]) -> LemmaMatcher:
    return LemmaMatcher({form: wnids for form, wnids in surface_forms(index).items() if form not in skip})


def tag_batch(batch: pa.RecordBatch, matcher: LemmaMatcher) -> pa.RecordBatch:
    """The rows of a read batch that mention a noun synset, with `wnids` and `matched` in front."""
    tags = matcher.tag(batch.column("caption"))
    columns = {"row_id": batch.column("row_id"), "wnids": tags.wnids, "matched": tags.matched}
    columns.update((name, batch.column(name)) for name in batch.schema.names if name != "row_id")
    tagged = pa.RecordBatch.from_pydict(columns)
    return tagged.filter(pc.greater(pc.list_value_length(tags.wnids), 0))


def tag_unit(
    unit: WorkUnit,
    columns: Columns,
    batch_rows: int,
    matcher: LemmaMatcher,
    stage_dir: str,
    layout: Layout = DEFAULT_LAYOUT,
) -> dict:
    """Tag one work unit into `stage_dir`, or return the tally of an earlier run that finished it.

    The tally: shards (the files the unit starts), rows_read, dropped (reason -> rows),
    malformed_lines ("<file>:<line>: <what>" -> 1, the first of each piece), rows_tagged,
    rows_unmatched, synset_captions (wnid -> tagged rows mentioning it) and rows_by_file (file
    name -> rows read), from which `finish_tally` names the empty files.
    """
    files = shard_files(stage_dir, TAGGED_DIR, unit.key)
    return resumable_shard(
        files,
        lambda: _tag_into(files.data, unit, columns, batch_rows, matcher, layout),
        reusable=lambda tally: ROWS_BY_FILE in tally,  # a tally of code before work units lacks it: redone
    )


def _tag_into(
    path: str, unit: WorkUnit, columns: Columns, batch_rows: int, matcher: LemmaMatcher, layout: Layout
) -> dict:
    started = time.monotonic()
    counts, dropped, synsets, malformed, by_file = Counter(), Counter(), Counter(), Counter(), Counter()

    def tagged_batches():
        for unit_piece in unit.pieces:
            for piece in read_shard(unit_piece.path, columns, batch_rows, layout, unit_piece.part):
                tagged = tag_batch(piece.batch, matcher)
                counts.update(rows_read=piece.rows_read, rows_tagged=tagged.num_rows)
                counts.update(rows_unmatched=piece.batch.num_rows - tagged.num_rows)
                by_file[name(unit_piece.path)] += piece.rows_read
                dropped.update(piece.dropped)
                malformed.update(piece.malformed)
                synsets.update(count_synsets(tagged.column("wnids")))
                yield tagged

    def no_batch() -> pa.Schema:
        raise RuntimeError(f"unit {unit.id}: read_shard yields a batch even for a shard with no rows")

    write_batches(path, tagged_batches(), no_batch)
    tally = {
        "shards": sum(piece.starts_file for piece in unit.pieces),
        "rows_read": counts["rows_read"],
        "dropped": dict(sorted(dropped.items())),
        "malformed_lines": dict(sorted(malformed.items())),
        "rows_tagged": counts["rows_tagged"],
        "rows_unmatched": counts["rows_unmatched"],
        "synset_captions": dict(sorted(synsets.items())),
        ROWS_BY_FILE: dict(sorted(by_file.items())),
    }
    rate = tally["rows_read"] / max(time.monotonic() - started, 1e-9)
    log.info("tag: %s: %d rows, %d tagged, %.0f rows/s", unit.id, tally["rows_read"], tally["rows_tagged"], rate)
    return tally


def finish_tally(total: dict, shards: list[str]) -> dict:
    """The units' summed tally as the stage reports it, the same whatever the units: empty_shards
    (file name -> 1 for a file with no rows) and, of each file, the first MALFORMED_LISTED
    malformed lines by line number; rows_by_file dropped."""
    rows = total.get(ROWS_BY_FILE, {})
    names = sorted((name(shard) for shard in shards), key=len, reverse=True)
    lines: dict[str, list[tuple[int, str]]] = {}
    for key in total.get("malformed_lines", {}):
        file = next(n for n in names if key.startswith(n + ":"))
        lines.setdefault(file, []).append((int(key[len(file) + 1 :].split(":", 1)[0]), key))
    kept = [key for found in lines.values() for _, key in sorted(found)[:MALFORMED_LISTED]]
    finished = {key: value for key, value in total.items() if key != ROWS_BY_FILE}
    finished["empty_shards"] = {name(shard): 1 for shard in shards if not rows.get(name(shard))}
    finished["malformed_lines"] = dict.fromkeys(kept, 1)
    return sum_tallies([finished])


def _tag_worker(config: Config) -> LemmaMatcher:
    return build_matcher(load_index(), config.tagging.ignore_forms)


def _tag_one(config: Config, stage_dir: str, unit: WorkUnit, matcher: LemmaMatcher) -> dict:
    corpus = config.corpus
    return tag_unit(unit, corpus.columns, config.tagging.batch_rows, matcher, stage_dir, layout_of(corpus))


def settings(config: Config) -> dict:
    """What the stage's outputs depend on: the corpus shards as they are now, and the settings."""
    return {
        "shards": shard_identities(list_shards(config.corpus.paths)),
        "columns": config.corpus.columns.model_dump(),
        # the work units name the tagged files, which select's outputs follow: a new bound reruns both
        "reading": config.corpus.model_dump(include={"format", "column_names", "strict", "work_unit_rows"}),
        "tagging": config.tagging.model_dump(exclude={"batch_rows"}),  # batch size changes no result
        "wordnet": WORDNET_VERSION,
    }


def plan_tagging(config: Config, run_dir: str) -> dict:
    """The corpus's files and work units, every schema checked before any work starts; the units
    are cut from the footers and heads the preflight read (`corpus_shapes` reads them again only
    when the files or the settings changed since, or a synthetic corpus was just generated)."""
    shards, shapes = corpus_shapes(config)
    return {"shards": shards, "units": plan_units(shapes, config.corpus.work_unit_rows)}


def run_tag(config: Config, run_dir: str, shards: list[str], units: list[WorkUnit]) -> dict:
    """Tag every corpus work unit on the configured runner into `<run_dir>/tag/`; returns the tally."""
    stage_dir = stage_path(run_dir, STAGE)
    write_json(  # a file in the run (a synthetic corpus) by its place in the run: the record holds wherever it goes
        FileSystems.join(stage_dir, CORPUS_SHARDS_FILE),
        [[run_relative(shard, run_dir), *identity[1:]] for shard, identity in zip(shards, shard_identities(shards))],
    )
    units = _numbered(config, stage_dir, units)
    log.info("tag: %s", describe(units, config.corpus.work_unit_rows))
    total_path = FileSystems.join(stage_dir, TAG_TALLY_FILE)
    keys = [unit.key for unit in units]
    known_rows = [unit.rows for unit in units] if all(unit.exact for unit in units) else None  # text: estimates
    with (
        watch_shards(stage_dir, keys, STAGE, "rows_read", shard_rows=known_rows),
        make_pipeline(config.runner) as pipeline,
    ):
        worker = ShardWorker(functools.partial(_tag_one, config, stage_dir), functools.partial(_tag_worker, config))
        process_shards(pipeline, units, worker, total_path)
    tally = finish_tally(read_json(total_path), shards)
    write_json(total_path, tally)
    write_text(FileSystems.join(stage_dir, COUNTS_FILE), counts_table(tally["synset_captions"], load_index()))
    return tally


def figures(tally: dict) -> dict:
    """The tally as summary.json holds it: the synsets counted, not listed."""
    kept = {key: value for key, value in tally.items() if key != "synset_captions"}
    return {**kept, "synsets_found": len(tally["synset_captions"])}


def _numbered(config: Config, stage_dir: str, units: list[WorkUnit]) -> list[WorkUnit]:
    """The units with their text ranges' first lines, counted on the workers (once: the counts
    stay in the stage folder, which a new bound clears, as it is a setting of the stage)."""
    ranges = text_ranges(units)
    if not ranges:
        return units
    path = FileSystems.join(stage_dir, LINE_STARTS_FILE)
    if not FileSystems.exists(path):
        with make_pipeline(config.runner) as pipeline:
            process_shards(pipeline, ranges, ShardWorker(count_range), path)
    return number_lines(units, read_json(path).get("line_starts", {}))


def counts_table(synset_captions: dict[str, int], index: NounIndex) -> str:
    """TSV of captions per synset, most captions first, ties by wnid."""
    rows = sorted(synset_captions.items(), key=lambda item: (-item[1], item[0]))
    lines = ["wnid\tname\tcaptions"] + [f"{w}\t{index[w].name}\t{n}" for w, n in rows]
    return "\n".join(lines) + "\n"


def said(figures: dict, run_dir: str) -> str:
    """The line `imagenot tag` ends with."""
    return (
        f"{figures['rows_read']} rows read, {sum(figures['dropped'].values())} dropped, "
        f"{figures['rows_tagged']} tagged with {figures['synsets_found']} synsets -> {run_dir}/{STAGE}"
    )


DECLARATION = Stage(
    STAGE,
    None,
    settings,
    run_tag,
    preflight=(check_corpus,),
    prepare=plan_tagging,
    figures=figures,
    command=CommandForm(result=said),
)

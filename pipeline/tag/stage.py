"""The tag stage: corpus shards in, tagged shards and per-synset caption counts out.

`tag_shard` is the whole stage for one shard as a plain function; Beam spreads the shards over
workers (one matcher per worker, see `pipeline.run.shards`). Outputs go to `<run dir>/tag/`: per
input shard `tagged/<stem>.parquet` (the rows with at least one match: `row_id`, `wnids`,
`matched`, then the source columns) and `tallies/<stem>.json`; then `tag_tally.json` (the sum)
and `synset_counts.tsv`. Every row read is counted once: dropped by a reason, tagged, or
unmatched.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter

import click
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.commands.lock_option import break_lock_option
from imagenot.pipeline.config.preflight import preflight, stages_from
from imagenot.pipeline.config.schema import Columns, Config
from imagenot.pipeline.corpus.formats import Layout
from imagenot.pipeline.corpus.preflight import check_corpus, check_distinct_stems
from imagenot.pipeline.corpus.reader import (
    DEFAULT_LAYOUT,
    layout_of,
    list_shards,
    read_shard,
    shard_identities,
    validate_shard,
)
from imagenot.pipeline.registry import Stage, run_stage
from imagenot.pipeline.run.config_file import record_run_config, settled_config
from imagenot.pipeline.run.files import read_json, write_json, write_text
from imagenot.pipeline.run.layout import CORPUS_SHARDS_FILE, TAG, TAG_TALLY_FILE, TAGGED_DIR
from imagenot.pipeline.run.lock import run_lock
from imagenot.pipeline.run.paths import name
from imagenot.pipeline.run.progress import watch_shards
from imagenot.pipeline.run.runner import make_pipeline
from imagenot.pipeline.run.shards import ShardWorker, process_shards, resumable_shard, shard_files, write_batches
from imagenot.pipeline.run.stage_dir import finish_stage, open_stage
from imagenot.pipeline.tag.matcher import LemmaMatcher, count_synsets
from imagenot.wordnet.index import NounIndex, load_index
from imagenot.wordnet.lemmas import normalize, surface_forms
from imagenot.wordnet.nltk_data import WORDNET_VERSION

log = logging.getLogger(__name__)

STAGE = TAG
COUNTS_FILE = "synset_counts.tsv"


def build_matcher(index: NounIndex, ignore_forms: list[str]) -> LemmaMatcher:
    """The matcher over every noun lemma and inflection except the ignored surface forms."""
    skip = {normalize(form) for form in ignore_forms}
    return LemmaMatcher({form: wnids for form, wnids in surface_forms(index).items() if form not in skip})


def tag_batch(batch: pa.RecordBatch, matcher: LemmaMatcher) -> pa.RecordBatch:
    """The rows of a read batch that mention a noun synset, with `wnids` and `matched` in front."""
    tags = matcher.tag(batch.column("caption"))
    columns = {"row_id": batch.column("row_id"), "wnids": tags.wnids, "matched": tags.matched}
    columns.update((name, batch.column(name)) for name in batch.schema.names if name != "row_id")
    tagged = pa.RecordBatch.from_pydict(columns)
    return tagged.filter(pc.greater(pc.list_value_length(tags.wnids), 0))


def tag_shard(
    shard: str,
    columns: Columns,
    batch_rows: int,
    matcher: LemmaMatcher,
    stage_dir: str,
    layout: Layout = DEFAULT_LAYOUT,
) -> dict:
    """Tag one shard into `stage_dir`, or return the tally of an earlier run that finished it.

    The tally: shards, empty_shards (file name -> 1 for a shard with no rows), rows_read, dropped
    (reason -> rows), malformed_lines ("<file>:<line>: <what>" -> 1, the first of each shard),
    rows_tagged, rows_unmatched and synset_captions (wnid -> tagged rows mentioning it).
    """
    files = shard_files(stage_dir, TAGGED_DIR, shard)
    return resumable_shard(files, lambda: _tag_into(files.data, shard, columns, batch_rows, matcher, layout))


def _tag_into(path: str, shard: str, columns: Columns, batch_rows: int, matcher: LemmaMatcher, layout: Layout) -> dict:
    started = time.monotonic()
    counts, dropped, synsets, malformed = Counter(), Counter(), Counter(), Counter()

    def tagged_batches():
        for piece in read_shard(shard, columns, batch_rows, layout):
            tagged = tag_batch(piece.batch, matcher)
            counts.update(rows_read=piece.rows_read, rows_tagged=tagged.num_rows)
            counts.update(rows_unmatched=piece.batch.num_rows - tagged.num_rows)
            dropped.update(piece.dropped)
            malformed.update(piece.malformed)
            synsets.update(count_synsets(tagged.column("wnids")))
            yield tagged

    def no_batch() -> pa.Schema:
        raise RuntimeError(f"shard {shard}: read_shard yields a batch even for a shard with no rows")

    write_batches(path, tagged_batches(), no_batch)
    tally = {
        "shards": 1,
        "empty_shards": {name(shard): 1} if counts["rows_read"] == 0 else {},
        "rows_read": counts["rows_read"],
        "dropped": dict(sorted(dropped.items())),
        "malformed_lines": dict(sorted(malformed.items())),
        "rows_tagged": counts["rows_tagged"],
        "rows_unmatched": counts["rows_unmatched"],
        "synset_captions": dict(sorted(synsets.items())),
    }
    rate = tally["rows_read"] / max(time.monotonic() - started, 1e-9)
    log.info("tag: %s: %d rows, %d tagged, %.0f rows/s", shard, tally["rows_read"], tally["rows_tagged"], rate)
    return tally


def _tag_worker(config: Config) -> LemmaMatcher:
    return build_matcher(load_index(), config.tagging.ignore_forms)


def _tag_one(config: Config, stage_dir: str, shard: str, matcher: LemmaMatcher) -> dict:
    corpus = config.corpus
    return tag_shard(shard, corpus.columns, config.tagging.batch_rows, matcher, stage_dir, layout_of(corpus))


def settings(config: Config) -> dict:
    """What the stage's outputs depend on: the corpus shards as they are now, and the settings."""
    return {
        "shards": shard_identities(list_shards(config.corpus.paths)),
        "columns": config.corpus.columns.model_dump(),
        "reading": config.corpus.model_dump(include={"format", "column_names", "strict"}),
        "tagging": config.tagging.model_dump(exclude={"batch_rows"}),  # batch size changes no result
        "wordnet": WORDNET_VERSION,
    }


def run_tag(config: Config, run_dir: str) -> dict:
    """Tag every corpus shard on the configured runner into `<run_dir>/tag/`; returns the tally."""
    shards = list_shards(config.corpus.paths)
    check_distinct_stems(shards)
    # every schema is checked before any work starts; the footers' row counts feed the progress
    layout = layout_of(config.corpus)
    shard_rows = [validate_shard(shard, config.corpus.columns, layout) for shard in shards]
    stage_dir = open_stage(run_dir, STAGE, settings(config))
    write_json(
        FileSystems.join(stage_dir, CORPUS_SHARDS_FILE),
        [[shard, *identity[1:]] for shard, identity in zip(shards, shard_identities(shards))],
    )
    log.info("tag: %d shards", len(shards))
    total_path = FileSystems.join(stage_dir, TAG_TALLY_FILE)
    known_rows = None if None in shard_rows else shard_rows  # text files have no footer
    with (
        watch_shards(stage_dir, shards, STAGE, "rows_read", shard_rows=known_rows),
        make_pipeline(config.runner) as pipeline,
    ):
        worker = ShardWorker(functools.partial(_tag_one, config, stage_dir), functools.partial(_tag_worker, config))
        process_shards(pipeline, shards, worker, total_path)
    tally = read_json(total_path)
    write_text(FileSystems.join(stage_dir, COUNTS_FILE), counts_table(tally["synset_captions"], load_index()))
    figures = {key: value for key, value in tally.items() if key != "synset_captions"}
    finish_stage(stage_dir, {**figures, "synsets_found": len(tally["synset_captions"])})
    return tally


def counts_table(synset_captions: dict[str, int], index: NounIndex) -> str:
    """TSV of captions per synset, most captions first, ties by wnid."""
    rows = sorted(synset_captions.items(), key=lambda item: (-item[1], item[0]))
    lines = ["wnid\tname\tcaptions"] + [f"{w}\t{index[w].name}\t{n}" for w, n in rows]
    return "\n".join(lines) + "\n"


DECLARATION = Stage(
    STAGE, None, settings, run_tag, "Find every WordNet noun synset each caption mentions.", preflight=(check_corpus,)
)


@click.command(STAGE, help=DECLARATION.doc)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    help="corpus file paths, globs or URLs (repeatable); default: the config's corpus.paths",
)
@click.option("--out", required=True, help="run directory: writes its tag/ folder and summary.json")
@click.option("--config", "config_path", help="YAML run configuration")
@break_lock_option
def tag_command(inputs: tuple[str, ...], out: str, config_path: str | None, break_lock: bool) -> None:
    config, note = settled_config(out, config_path, DECLARATION, list(inputs) or None)
    preflight(config, out, stages_from(config, DECLARATION))
    with run_lock(out, config.runner.lock_stale_after_s, break_lock):
        record_run_config(out, config, note)
        figures = run_stage(DECLARATION, config, out)
    click.echo(
        f"{figures['rows_read']} rows read, {sum(figures['dropped'].values())} dropped, "
        f"{figures['rows_tagged']} tagged with {figures['synsets_found']} synsets -> {out}/{STAGE}"
    )

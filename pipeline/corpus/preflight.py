"""The corpus checked before any stage writes: `check_corpus_schema(config)`.

`plan`, `build` and every stage command call it before they take the run's lock or write a
file. It lists the corpus (a glob is one listing, whatever the shard count) and reads the schema
of one file per format (a parquet footer, a csv/tsv header, a json file's first records), never
the rows, so it takes a second or two even for thousands of shards in a bucket. It refuses, in
one line: a file whose format it cannot tell, two files whose rows would share ids, a missing or
mistyped url or caption column, and a column that an enabled setting needs and the corpus lacks,
naming the column, the `corpus.columns` key that maps it and the setting with how to turn it off.
"""

from __future__ import annotations

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.corpus.formats import CorpusError, Source, corpus_stem, file_format
from imagenot.pipeline.corpus.reader import layout_of, list_shards, validate_shard


def check_corpus_schema(config: Config, missing_ok: bool = False) -> None:
    """Raise a CorpusError if the configured corpus cannot give what the config needs.
    `missing_ok`: a corpus that matches no file passes (a stage that reads only earlier
    stages' outputs runs without it)."""
    corpus = config.corpus
    if corpus.synth is not None:
        return  # generated in the run with every column of LAION's schema
    try:
        shards = list_shards(corpus.paths)
    except CorpusError:
        if missing_ok:
            return
        raise
    layout = layout_of(corpus)
    check_distinct_stems(shards)
    first_of_format = {}
    for shard in shards:
        first_of_format.setdefault(file_format(shard, layout), shard)
    for shard in first_of_format.values():
        validate_shard(shard, corpus.columns, layout)
        names = Source(shard, layout).schema().names
        for setting, canonical in config.selection.row_nsfw_columns().items():
            column = getattr(corpus.columns, canonical)
            if column not in names:
                raise CorpusError(
                    f"shard {shard}: the corpus has no column {column!r} (mapped by corpus.columns.{canonical}), which "
                    f"selection.{setting} needs; map corpus.columns.{canonical} to the column that holds it, or turn "
                    f"the check off with `selection.{setting}: null` (the file has columns {names})"
                )


def check_corpus(config: Config, run_dir: str | None) -> None:
    """Tag's preflight check: the corpus is there and has what the config needs."""
    check_corpus_schema(config)


def check_corpus_if_there(config: Config, run_dir: str | None) -> None:
    """Select's: the corpus's columns, where it can still be found (select reads tag's outputs;
    its own command says when tag has not run)."""
    check_corpus_schema(config, missing_ok=True)


def check_distinct_stems(shards: list[str]) -> None:
    """Row ids are `<file stem>:<position>`: two files with one stem would give rows one id."""
    seen: dict[str, str] = {}
    for shard in shards:
        other = seen.setdefault(corpus_stem(shard), shard)
        if other != shard:
            raise CorpusError(
                f"shards must have distinct file names without their extensions (row ids and outputs use them): "
                f"{other} and {shard}"
            )

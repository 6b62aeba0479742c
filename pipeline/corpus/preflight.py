"""The corpus checked before any stage writes: `check_corpus_schema(config)`.

`plan`, `build` and every stage command call it before they take the run's lock or write a
file. It lists the corpus (a glob is one listing, whatever the shard count) and reads every
file's shape (a parquet footer, a csv/tsv header, a text file's first megabyte; many files at
once: `units.file_shapes`), never the rows past those. It refuses, in one line: a file whose
format it cannot tell, two files whose rows would share ids, a file that is unreadable or ends
early, a missing or mistyped url or caption column, and a column that an enabled setting needs
and a file lacks, naming the file, the column, the `corpus.columns` key that maps it and the
setting with how to turn it off.

The pass is kept (`corpus_shapes`): `plan` and the tag stage, which cut the corpus into work units
from the same shapes, take it from there when the files and settings are the same, so each footer
and head is read once.
"""

from __future__ import annotations

import functools

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.corpus.formats import CorpusError, corpus_stem
from imagenot.pipeline.corpus.reader import layout_of, listed_shards, validate_shard
from imagenot.pipeline.corpus.units import FileShape, file_shapes
from imagenot.pipeline.run.layout import CORPUS_SHARDS_FILE, RUN_CONFIG, TAG, stage_path

_last_pass: dict[tuple, list[FileShape]] = {}  # the latest checked pass, keyed by its files and settings


def corpus_shapes(
    config: Config, listed: list[tuple[str, int, float]] | None = None
) -> tuple[list[str], list[FileShape]]:
    """The configured corpus's files, sorted, and their shapes; every file is checked as above
    (the first bad file in path order is the one named). `listed`: the corpus as just listed."""
    corpus = config.corpus
    listed = listed or listed_shards(corpus.paths)
    shards = [path for path, _, _ in listed]
    check_distinct_stems(shards)
    layout = layout_of(corpus)
    needed = config.selection.row_nsfw_columns()
    key = (tuple(listed), layout, corpus.columns.model_dump_json(), tuple(sorted(needed.items())))
    if key not in _last_pass:
        shapes = file_shapes(shards, layout, functools.partial(validate_shard, columns=corpus.columns, layout=layout))
        for shape in shapes:
            for setting, canonical in needed.items():
                column = getattr(corpus.columns, canonical)
                if column not in shape.columns:
                    raise CorpusError(
                        f"shard {shape.path}: the corpus has no column {column!r} (mapped by corpus.columns."
                        f"{canonical}), which selection.{setting} needs; map corpus.columns.{canonical} to the "
                        f"column that holds it, or turn the check off with `selection.{setting}: null` (the file "
                        f"has columns {list(shape.columns)})"
                    )
        _last_pass.clear()
        _last_pass[key] = shapes
    return shards, _last_pass[key]


def check_corpus_schema(config: Config, missing_ok: bool = False) -> None:
    """Raise a CorpusError if the configured corpus cannot give what the config needs.
    `missing_ok`: a corpus that matches no file passes (a stage that reads only earlier
    stages' outputs runs without it)."""
    if config.corpus.synth is not None:
        return  # generated in the run with every column of LAION's schema
    try:
        listed = listed_shards(config.corpus.paths)
    except CorpusError:
        if missing_ok:
            return
        raise
    corpus_shapes(config, listed)


def check_corpus(config: Config, run_dir: str | None) -> None:
    """Tag's preflight check: the corpus is there and has what the config needs."""
    try:
        check_corpus_schema(config)
    except CorpusError as err:
        if run_dir is None or not FileSystems.exists(stage_path(run_dir, TAG, CORPUS_SHARDS_FILE)):
            raise
        raise CorpusError(f"{err}; {where_is_the_corpus(config, run_dir)}") from err


def where_is_the_corpus(config: Config, run_dir: str) -> str:
    """What to do when the corpus the tag stage of `run_dir` read is not where the config says."""
    if config.corpus.synth is not None:
        return (
            "the run's synthetic corpus is not whole: write it again with "
            f"imagenot build --config CONFIG --out {run_dir} --from corpus"
        )
    return (
        f"if the corpus moved, name its new place in corpus.paths: imagenot build --config CONFIG --out {run_dir}, "
        f"CONFIG a copy of {FileSystems.join(run_dir, RUN_CONFIG)} with the new corpus.paths"
    )


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

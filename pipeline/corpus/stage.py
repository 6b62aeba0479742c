"""The corpus stage of a build whose config asks for a synthetic corpus: `<run>/corpus/`."""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.corpus.synth import corpus_files, synth_corpus
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.run.layout import CORPUS, CORPUS_PARTS

STAGE = CORPUS


def settings(config: Config) -> dict:
    return config.corpus.synth.model_dump()


def corpus_glob(run_dir: str) -> str:
    return FileSystems.join(run_dir, STAGE, CORPUS_PARTS)


def run_corpus(config: Config, run_dir: str) -> dict:
    """Generate the configured synthetic corpus (`RUN/corpus/`, its ground truth beside it); what an
    earlier run of the stage left (a killed run's part of it) is deleted and written again whole,
    which is cheap and gives the same bytes."""
    synth = config.corpus.synth
    stage_dir = FileSystems.join(run_dir, STAGE)
    if earlier := corpus_files(stage_dir):
        FileSystems.delete(earlier)
    result = synth_corpus(stage_dir, synth.rows, synth.seed, synth.url_base, synth.shard_rows, captions=synth.captions)
    return {"rows": result.rows, "shards": len(result.shards)}


def synthetic(config: Config) -> bool:
    return config.corpus.synth is not None


DECLARATION = Stage(
    STAGE,
    None,
    settings,
    run_corpus,
    wanted=synthetic,
    unwanted="corpus.synth is not set: the corpus stage writes a synthetic corpus only; the corpus is read from "
    "corpus.paths by tag",
)

"""The corpus stage of a build whose config asks for a synthetic corpus: `<run>/corpus/`."""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.registry import Stage
from imagenot.pipeline.run.layout import CORPUS, CORPUS_PARTS
from imagenot.pipeline.run.paths import delete_folder
from imagenot.pipeline.run.stage_dir import finish_stage, is_current, open_stage

STAGE = CORPUS


def settings(config: Config) -> dict:
    return config.corpus.synth.model_dump()


def corpus_glob(run_dir: str) -> str:
    return FileSystems.join(run_dir, STAGE, CORPUS_PARTS)


def run_corpus(config: Config, run_dir: str) -> None:
    """Generate the configured synthetic corpus; a partial one (killed run) is made afresh,
    which is cheap and gives the same bytes."""
    if is_current(run_dir, STAGE, settings(config), None):
        return
    delete_folder(FileSystems.join(run_dir, STAGE))
    stage_dir = open_stage(run_dir, STAGE, settings(config))
    synth = config.corpus.synth
    result = synth_corpus(stage_dir, synth.rows, synth.seed, synth.url_base, synth.shard_rows, captions=synth.captions)
    finish_stage(stage_dir, {"rows": result.rows, "shards": len(result.shards)})


def synthetic(config: Config) -> bool:
    return config.corpus.synth is not None


DECLARATION = Stage(
    STAGE,
    None,
    settings,
    run_corpus,
    "Write the config's synthetic corpus.",
    wanted=synthetic,
    unwanted="corpus.synth is not set: the corpus stage writes a synthetic corpus only; the corpus is read from "
    "corpus.paths by tag",
)

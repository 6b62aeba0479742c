"""A build small enough for tests (about a minute on 2 cores) that still yields 8 classes, and the
builders of the runs several modules share (conftest.py builds each once per session)."""

import json
import shutil
from pathlib import Path
from typing import NamedTuple

import yaml
from ports import kept_loopback_port

from imagenot.pipeline.config.schema import Config, Corpus, load_config
from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.frame.build import build
from imagenot.pipeline.frame.registry import declared, run_in_folder

# Compact captions (corpus.synth.captions), on which the tests' figures were set: realistic ones name about 21
# noun synsets each, so fewer name exactly one (`imagenot plan` of these 12,000 rows: 741 captions left after the
# caption rules, against 1,237) and classes would come out short of their images.
SMALL_BUILD = {
    "corpus": {"synth": {"rows": 12_000, "seed": 4, "shard_rows": 3_000, "captions": "compact"}},
    "selection": {"min_captions": 8},
    "scoring": {"first_pass_captions": 10},
    "ranking": {"classes": 8, "top_n": 5, "min_captions": 1, "thresholds": {"packaged:all-MiniLM-L6-v2": 0.32}},
    "sampling": {"images_per_class": 5, "test_per_class": 1, "reserve_factor": 0.4, "shard_rows": 20},
}

# A synthetic corpus large enough for the score, rank and sample stages' own tests.
TAGGED_CORPUS = {
    "rows": 20_000,
    "seed": 5,
    "url_base": "http://127.0.0.1:9/img",
    "shard_rows": 10_000,
    "captions": "compact",  # as SMALL_BUILD: classes with enough one-synset captions from few rows
}


class SmallRun(NamedTuple):
    config: Path  # the config file it was built from
    run: Path
    ran: list[str]  # the stages the build ran


def small_run_in(folder: Path) -> SmallRun:
    return SmallRun(folder / "small.yaml", folder / "run", json.loads((folder / "ran.json").read_text()))


def build_small_run(folder: Path) -> None:
    """`imagenot build` of SMALL_BUILD into folder/run, from the config file folder/small.yaml
    (its embedding cache in folder/embeddings); folder/ran.json: the stages it ran. Its image
    URLs name a loopback port outside the OS's own picks, for a test that downloads them with
    the demo server there, minutes later."""
    url_base = f"http://127.0.0.1:{kept_loopback_port()}/img"
    config = {
        **SMALL_BUILD,
        "corpus": {"synth": {**SMALL_BUILD["corpus"]["synth"], "url_base": url_base}},
        "scoring": {**SMALL_BUILD["scoring"], "cache_dir": str(folder / "embeddings")},
    }
    (folder / "small.yaml").write_text(yaml.safe_dump(config))
    ran = build(load_config(folder / "small.yaml"), str(folder / "run"))
    (folder / "ran.json").write_text(json.dumps(ran))


class TaggedCorpus(NamedTuple):
    corpus: Path
    run: Path  # its tag/ folder only


def tagged_corpus_in(folder: Path) -> TaggedCorpus:
    return TaggedCorpus(folder / "corpus", folder / "run")


def tag_corpus(folder: Path) -> None:
    """The TAGGED_CORPUS in folder/corpus and the tag stage over it (default tagging) in folder/run."""
    c = TAGGED_CORPUS
    (folder / "corpus").mkdir()
    synth_corpus(folder / "corpus", c["rows"], c["seed"], c["url_base"], c["shard_rows"], captions=c["captions"])
    run_in_folder(
        declared("tag"), Config(corpus=Corpus(paths=[str(folder / "corpus" / "part-*.parquet")])), str(folder / "run")
    )


# The download settings of a small run whose images are fetched from the demo's loopback server.
SMALL_DOWNLOAD = {
    "enabled": True,
    "image_size": 64,
    "shard_rows": 20,
    "timeout_s": 5,
    "allowed_networks": ["127.0.0.1/32"],
}


def download_small_run(folder: Path, small: SmallRun) -> None:
    """A copy of the small run in folder/run with its images downloaded (the demo server, started
    by the download stage at the port the run's URLs name), reported and exported; its config in
    folder/config.yaml and the run's own config.yaml; folder/ran.json: the stages the build ran."""
    built = yaml.safe_load(small.config.read_text())
    port = int(built["corpus"]["synth"]["url_base"].split(":")[2].split("/")[0])
    config = {**built, "download": {**SMALL_DOWNLOAD, "demo_server_port": port}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    shutil.copytree(small.run, folder / "run")
    ran = build(load_config(folder / "config.yaml"), str(folder / "run"))
    (folder / "ran.json").write_text(json.dumps(ran))

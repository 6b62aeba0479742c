"""`manifest.json`: everything needed to build the same dataset again and check it was."""

from __future__ import annotations

import importlib.metadata
import sys

from apache_beam.io.filesystems import FileSystems
from packaging.requirements import Requirement

from imagenot.labels.encoders.models import resolve_model
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.corpus.formats import CorpusError
from imagenot.pipeline.corpus.preflight import check_corpus, where_is_the_corpus
from imagenot.pipeline.corpus.reader import listed_shards
from imagenot.pipeline.run.files import read_json, sha256_file
from imagenot.pipeline.run.layout import (
    CORPUS_SHARDS_FILE,
    FINGERPRINT_FILE,
    RANK,
    SAMPLE,
    SCORE,
    SELECT,
    TAG,
    stage_path,
)
from imagenot.pipeline.run.paths import from_run, name, run_relative

PROJECT = "imagenot"
STAGES = (TAG, SELECT, SCORE, RANK, SAMPLE)


def file_entry(path: str, name: str | None = None) -> dict:
    """Path (or `name`), size and sha256 of a file."""
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    return {"path": name or path, "size": size, "sha256": sha256_file(path)}


def tagged_corpus(config: Config, run_dir: str) -> dict:
    """The corpus files the tag stage read (`tag/shards.json`: name and size), found where the
    config's corpus lies now (corpus.paths, or the run's own synthetic corpus, wherever the run was
    moved), else where the tag stage read them: `{"corpus": [[path, size], ...]}`, for the sample
    stage's `prepare`. Raises naming the first file in neither place, or not at the size the tag
    stage read, and what to do."""
    recorded = read_json(stage_path(run_dir, TAG, CORPUS_SHARDS_FILE))
    try:
        listed = listed_shards(config.corpus.paths) if config.corpus.paths else []
    except CorpusError:
        listed = []  # each file the tag stage read is looked for where it read it, and named if not there
    configured = {name(path): path for path, _, _ in listed}
    found = []
    for path, size, _ in recorded:
        where = configured.get(name(path), from_run(path, run_dir))
        if not FileSystems.exists(where):
            raise CorpusError(
                f"{run_dir}: corpus file {name(path)}, which the tag stage read from {where}, is not there nor in "
                f"corpus.paths ({', '.join(config.corpus.paths) or 'none'}); {where_is_the_corpus(config, run_dir)}"
            )
        if (now := FileSystems.match([where])[0].metadata_list[0].size_in_bytes) != size:
            raise CorpusError(
                f"{run_dir}: corpus file {where} changed since the tag stage read it ({now:,} bytes, was {size:,}); "
                f"build the run again from tag (imagenot build --config CONFIG --out {run_dir} --from tag)"
            )
        found.append([where, size])
    return {"corpus": found}


def check_configured_corpus(config: Config, run_dir: str | None) -> None:
    """The sample stage's preflight, as its manifest checksums the corpus: the corpus the config
    names is there (a run whose config names none reads it where the tag stage did: `tagged_corpus`)."""
    if config.corpus.paths:
        check_corpus(config, run_dir)


def checked_corpus_entry(shard: list, run_dir: str) -> dict:
    """A tagged corpus file ([path, size] as `tagged_corpus` found it) with its checksum, its path
    as the run records it; raises if its size changed since, as the dataset would then not be
    rebuilt from it."""
    path, size = shard
    entry = file_entry(path, run_relative(path, run_dir))
    if entry["size"] != size:
        raise CorpusError(
            f"corpus file {path} changed while the sample stage read it: {entry['size']:,} bytes, was {size:,}"
        )
    return entry


def package_versions() -> dict[str, str | None]:
    """Installed versions of the project's direct dependencies (extras left out)."""
    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    for line in importlib.metadata.requires(PROJECT) or []:
        requirement = Requirement(line)
        if requirement.marker is None:
            try:
                versions[requirement.name] = importlib.metadata.version(requirement.name)
            except importlib.metadata.PackageNotFoundError:
                versions[requirement.name] = None
    return dict(sorted(versions.items()))


def stage_settings(run_dir: str, stage: str) -> dict:
    return read_json(stage_path(run_dir, stage, FINGERPRINT_FILE))


def build_manifest(run_dir: str, config: dict, sampling: dict, corpus: list[dict], outputs: dict[str, str]) -> dict:
    """The manifest of a run whose stages up to sample are fingerprinted; `corpus` holds the
    checked corpus shard entries, `outputs` the files written (name in the stage folder -> path).
    Paths in the run (a synthetic corpus) are recorded from it, so the manifest holds wherever the
    run goes."""
    corpus_paths = [run_relative(path, run_dir) for path in config["corpus"]["paths"]]
    config = {**config, "corpus": {**config["corpus"], "paths": corpus_paths}}
    fingerprints = {stage: stage_settings(run_dir, stage) for stage in STAGES}
    scoring = fingerprints[SCORE]["settings"]
    return {
        "config": config,
        "sampling": sampling,
        "seed": sampling["seed"],
        "packages": package_versions(),
        "wordnet": fingerprints[TAG]["settings"]["wordnet"],
        "encoder": {
            "kind": scoring["encoder"],
            "model": scoring["model"],
            "model_id": resolve_model(scoring["model"])[1],
        },
        "corpus_shards": corpus,
        "fingerprints": {stage: fingerprint["digest"] for stage, fingerprint in fingerprints.items()},
        "outputs": [file_entry(path, name) for name, path in outputs.items()],
    }

"""`manifest.json`: everything needed to build the same dataset again and check it was."""

from __future__ import annotations

import importlib.metadata
import sys

from apache_beam.io.filesystems import FileSystems
from packaging.requirements import Requirement

from imagenot.errors import ImagenotError
from imagenot.labels.encoders.models import resolve_model
from imagenot.pipeline.run.files import read_json, sha256_file
from imagenot.pipeline.run.layout import FINGERPRINT_FILE, RANK, SAMPLE, SCORE, SELECT, TAG, stage_path

PROJECT = "imagenot"
STAGES = (TAG, SELECT, SCORE, RANK, SAMPLE)


def file_entry(path: str, name: str | None = None) -> dict:
    """Path (or `name`), size and sha256 of a file."""
    size = FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    return {"path": name or path, "size": size, "sha256": sha256_file(path)}


def checked_corpus_entry(shard: list) -> dict:
    """A tagged corpus shard ([path, size, mtime] as the tag stage saw it) with its checksum;
    raises if its size changed since, as the dataset would then not be rebuilt from it."""
    path, size, _ = shard
    entry = file_entry(path)
    if entry["size"] != size:
        raise ImagenotError(
            f"corpus shard {path} changed since the tag stage read it: {entry['size']} bytes, was {size}"
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
    checked corpus shard entries, `outputs` the files written (name in the stage folder -> path)."""
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

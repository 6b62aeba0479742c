"""The export stage: the final dataset in `RUN/dataset/`, the one folder a user trains on.

Reads the download stage's final images (`download/dataset/*.parquet`: which tar of which fetch
round holds each, under which key, and every metadata field, sha256 included) and copies exactly
those samples, so an image an audit dropped never reaches the export, into new webdataset
shards: `train-NNNNN.tar` and `test-NNNNN.tar`, keys unique (the row id), samples in key order,
`export.samples_per_shard` each. Beside them: `train.parquet`/`test.parquet` (the same rows'
metadata), `classes.txt` (ImageNet's LOC_synset_mapping.txt format), `_info.json` (timm's index of the
shards, `pipeline.dataset.loaders`) and a README.md that `datasets.load_dataset` and the Hub read
(see `pipeline.dataset.usage`); with `export.formats` holding `imagefolder`, also
`SPLIT/WNID/KEY.EXT`; with `hf-parquet`, also `data/SPLIT-NNNNN.parquet` (images and labels, the
README then pointing `datasets` at these).

Shards are written by Beam workers, each reading only the source tars its samples lie in; each
also writes its metadata rows to `export/shards/`, which the driver joins into the parquet files.
The stage's bookkeeping stays in `RUN/export/`; `RUN/dataset/` is cleared and written afresh
whenever the stage runs.
"""

from __future__ import annotations

from collections import defaultdict

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config, Export
from imagenot.pipeline.dataset.loaders import HUB_FOLDER, TIMM_INFO, hub_table, timm_info
from imagenot.pipeline.dataset.usage import hf_readme
from imagenot.pipeline.dataset.webdataset import read_samples, write_tar
from imagenot.pipeline.export.samples import METADATA_COLUMNS, class_names, sample_key, sample_members, synset_mapping
from imagenot.pipeline.frame.registry import Stage, download_enabled
from imagenot.pipeline.frame.runner import make_pipeline
from imagenot.pipeline.run.files import atomic_output, read_table, stage_shards, write_bytes, write_text
from imagenot.pipeline.run.layout import (
    DOWNLOAD,
    EXPORT,
    SCORE_COLUMN,
    dataset_shards,
    export_dir,
    read_classes,
    stage_path,
)
from imagenot.pipeline.run.paths import delete_folder, name, run_relative
from imagenot.wordnet.index import load_index

STAGE = EXPORT
UPSTREAM = DOWNLOAD
SHARDS_DIR = "shards"  # RUN/export/shards/: each shard's metadata rows
SPLITS = ("train", "test")
_SOURCE_COLUMNS = (
    "row_id",
    "class_index",
    "wnid",
    "split",
    "url",
    "caption",
    SCORE_COLUMN,
    "tar",
    "key",
    "width",
    "height",
    "original_width",
    "original_height",
    "sha256",
)


class ExportError(ImagenotError, RuntimeError):
    """A row of the download stage's dataset lacks a field, or its sample is missing from its tar."""


def settings(config: Config) -> dict:
    return {**config.export.model_dump(mode="json"), "image_format": config.download.encode_format}


def _read_source(path: str) -> list[dict]:
    """One download dataset part's rows; every one needs its sha256 (img2dataset's, of the bytes as downloaded)."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        parquet = pq.ParquetFile(f)
        missing = [c for c in _SOURCE_COLUMNS if c not in parquet.schema_arrow.names]
        if missing:
            raise ExportError(
                f"{path}: no column(s) {missing}; expected {list(_SOURCE_COLUMNS)}; rerun `imagenot download`"
            )
        rows = parquet.read(columns=list(_SOURCE_COLUMNS)).to_pylist()
    lacking = [r["row_id"] for r in rows if not r["sha256"]]
    if lacking:
        raise ExportError(
            f"{path}: row(s) {lacking[:5]} have no sha256; expected the hex digest of each image; "
            "rerun `imagenot download`"
        )
    return rows


def _rows(run_dir: str) -> list[dict]:
    """The download stage's final images as export metadata rows (without class name and shard yet),
    `class_index` the build's (rank/classes.json's)."""
    rows = []
    for row in (row for path in dataset_shards(run_dir, UPSTREAM) for row in _read_source(path)):
        source_key = row.pop("key")
        rows.append({**row, "key": sample_key(row["row_id"]), "source": (row.pop("tar"), source_key)})
    return rows


def _exported_classes(classes: list[dict], rows: list[dict]) -> tuple[list[str], list[str]]:
    """(wnids of the classes with at least one image, in index order: the export's classes 0..M-1;
    wnids of the build's classes left with none, which the export leaves out)."""
    wnids = [c["wnid"] for c in sorted(classes, key=lambda c: c["index"])]
    with_images = {row["wnid"] for row in rows}
    return [w for w in wnids if w in with_images], [w for w in wnids if w not in with_images]


def _label(rows: list[dict], wnids: list[str], names: list[str]) -> None:
    """Give each row its class in the export: `class_index` its line in classes.txt (contiguous, so
    the build's index where no class was left out) and `class_name`."""
    position = {wnid: i for i, wnid in enumerate(wnids)}
    for row in rows:
        row["class_index"] = position[row["wnid"]]
        row["class_name"] = names[row["class_index"]]


def left_out_note(wnids: list[str], names: list[str]) -> str:
    """The export README's sentence on the build's classes that ended with no image, or ""."""
    if not wnids:
        return ""
    listed = "; ".join(f"{wnid} {name}" for wnid, name in zip(wnids, names))
    were = "class of the build ended" if len(wnids) == 1 else "classes of the build ended"
    return (
        f"{len(wnids):,} {were} with no image and {'is' if len(wnids) == 1 else 'are'} not part of this dataset "
        f"(class indices here are contiguous, in the build's order; each row's `wnid` names its class): {listed}."
    )


def _shard_specs(rows: list[dict], per_shard: int) -> list[tuple[str, list[dict]]]:
    """(shard name, its rows in key order), per split."""
    specs = []
    for split in SPLITS:
        chosen = sorted((r for r in rows if r["split"] == split), key=lambda r: r["key"])
        for n, start in enumerate(range(0, len(chosen), per_shard)):
            specs.append((f"{split}-{n:05d}", chosen[start : start + per_shard]))
    return specs


class _WriteShard(beam.DoFn):
    """Copies one output shard's samples out of the download stage's tars."""

    def __init__(self, run_dir: str, extension: str, export: Export, names: list[str]):
        self._run_dir, self._extension, self._export, self._names = run_dir, extension, export, names

    def process(self, spec: tuple[str, list[dict]]):
        name, rows = spec
        by_tar = defaultdict(set)
        for row in rows:
            by_tar[row["source"][0]].add(row["source"][1])
        found = {}
        for tar, keys in sorted(by_tar.items()):
            for key, members in read_samples(FileSystems.join(self._run_dir, tar), keys, {self._extension}).items():
                found[(tar, key)] = members
        missing = [r["row_id"] for r in rows if self._extension not in found.get(r["source"], {})]
        if missing:
            raise ExportError(
                f"{self._run_dir}/{UPSTREAM}: no image in its tar for row(s) {missing[:5]}; rerun `imagenot download`"
            )
        out = export_dir(self._run_dir)
        samples, metadata = [], []
        for row in rows:
            members = found[row["source"]]
            meta = {**{k: v for k, v in row.items() if k != "source"}, "shard": f"{name}.tar"}
            samples.append((row["key"], sample_members(meta, members[self._extension], self._extension)))
            metadata.append(meta)
            if "imagefolder" in self._export.formats:
                path = FileSystems.join(out, row["split"], row["wnid"], f"{row['key']}.{self._extension}")
                write_bytes(path, members[self._extension])
        write_tar(FileSystems.join(out, f"{name}.tar"), samples)
        if "hf-parquet" in self._export.formats:
            images = [found[r["source"]][self._extension] for r in rows]
            table = hub_table(metadata, images, self._extension, self._names)
            with atomic_output(FileSystems.join(out, HUB_FOLDER, f"{name}.parquet")) as f:
                pq.write_table(table, f)
        with atomic_output(FileSystems.join(self._run_dir, STAGE, SHARDS_DIR, f"{name}.parquet")) as f:
            pq.write_table(pa.Table.from_pylist(metadata).select(list(METADATA_COLUMNS)), f)
        yield name


def _tar_bytes(folder: str) -> int:
    return sum(m.size_in_bytes for m in FileSystems.match([FileSystems.join(folder, "*.tar")])[0].metadata_list)


def export_dataset(run_dir: str, config: Config) -> dict:
    """Write `RUN/dataset/`; the stage's figures."""
    stage_dir = stage_path(run_dir, STAGE)
    out = export_dir(run_dir)
    for folder in (out, FileSystems.join(stage_dir, SHARDS_DIR)):
        delete_folder(folder)
    rows = _rows(run_dir)
    wnids, left_out = _exported_classes(read_classes(run_dir), rows)
    index = load_index()
    names = class_names(wnids, index)
    _label(rows, wnids, names)
    extension = config.download.encode_format
    specs = _shard_specs(rows, config.export.samples_per_shard)
    if specs:
        with make_pipeline(config.runner) as pipeline:
            _ = (
                pipeline
                | "Shards" >> beam.Create(specs)
                | "Spread" >> beam.Reshuffle()
                | "Write" >> beam.ParDo(_WriteShard(run_dir, extension, config.export, names))
            )
    images, parts = {split: 0 for split in SPLITS}, stage_shards(stage_dir, SHARDS_DIR)
    for split in SPLITS:
        tables = [read_table(p) for p in parts if FileSystems.split(p)[1].startswith(f"{split}-")]
        if tables:
            table = pa.concat_tables(tables)
            images[split] = table.num_rows
            with atomic_output(FileSystems.join(out, f"{split}.parquet")) as f:
                pq.write_table(table, f)
    write_text(FileSystems.join(out, "classes.txt"), synset_mapping(wnids, names))
    write_text(FileSystems.join(out, TIMM_INFO), timm_info(name(run_dir), [(n, len(r)) for n, r in specs], len(wnids)))
    title = f"imagenot dataset: {len(wnids):,} classes from {name(run_dir)}"
    counts = {split: images[split] for split in SPLITS if images[split]}
    note = left_out_note(left_out, class_names(left_out, index))
    readme = hf_readme(names, counts, extension, title, "hf-parquet" in config.export.formats, note)
    write_text(FileSystems.join(out, "README.md"), readme)
    figures = {
        "classes": len(wnids),
        "classes_without_images": left_out,
        "images": sum(images.values()),
        **images,
        "shards": {split: sum(name.startswith(f"{split}-") for name, _ in specs) for split in SPLITS},
        "tar_bytes": _tar_bytes(out),
        "formats": list(config.export.formats),
        "path": run_relative(out, run_dir),  # where it lies in the run, wherever the run goes
    }
    return figures


NOT_ENABLED = "download.enabled is false: the export copies the downloaded images; there are none"


def run_export(config: Config, run_dir: str) -> dict:
    if not config.download.enabled:
        raise ImagenotError(NOT_ENABLED)
    return export_dataset(run_dir, config)


DECLARATION = Stage(
    STAGE,
    UPSTREAM,
    settings,
    run_export,
    wanted=download_enabled,
    unwanted=NOT_ENABLED,
)

"""Everything the card and the report say about a run, read from its stage folders as plain data.

Only the run's own files are read (and WordNet): nothing here depends on where the run directory
is or when it was made, so the same run always gives the same facts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from imagenot.filters.overlap import overlap_removals
from imagenot.pipeline.config.reference_lists import reference_wnids
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.report.class_review import read_class_results
from imagenot.pipeline.report.safety import Safety, gather_safety
from imagenot.pipeline.report.similarity import ClassSimilarities, caption_similarities
from imagenot.pipeline.run.files import read_bytes, read_json, read_tsv, stage_shards
from imagenot.pipeline.run.layout import (
    AGREEMENT_PLOT_FILE,
    AUDIT_AGREEMENT,
    AUDIT_DUPLICATES,
    AUDIT_EMBEDDINGS,
    AUDIT_LABEL_NOISE,
    AUDIT_RANKINGS,
    DOWNLOAD,
    DUPLICATE_PAIRS_HTML_FILE,
    FIGURES_FILE,
    FUNNEL_FILE,
    LABEL_NOISE_FILE,
    MANIFEST_FILE,
    MODEL_RANKINGS_FILE,
    MODEL_RANKINGS_PLOT_FILE,
    RANK,
    RANKING_FILE,
    REVIEW,
    REVIEW_PLOT_FILE,
    REVIEW_RESULTS_FILE,
    SAMPLE,
    SCORED_DIR,
    SELECT,
    TAG,
    dataset_shards,
    dataset_stage,
    read_classes,
    stage_path,
)
from imagenot.pipeline.run.stage_dir import is_done, made_from
from imagenot.pipeline.run.summary import read_summary
from imagenot.wordnet import hierarchy
from imagenot.wordnet.index import NounIndex
from imagenot.wordnet.stats_report import build_report

STRUCTURE_REFERENCE = "imagenet1k"  # the class structure is always shown beside ImageNet-1k's
DATASET_COLUMNS = ("class_index", "split", "order", "caption")
OPTIONAL_DATASET_COLUMNS = (
    "license",
    "tar",
    "key",
)  # the corpus's licences; where a downloaded image lies (the gallery)
# Audit outputs, each shown when present: (folder under the run, file with its figures).
AUDIT_FIGURES = {
    "label_noise": (AUDIT_LABEL_NOISE, LABEL_NOISE_FILE),
    "duplicates": (AUDIT_DUPLICATES, FIGURES_FILE),
    "agreement": (AUDIT_AGREEMENT, FIGURES_FILE),
    "rankings": (AUDIT_RANKINGS, MODEL_RANKINGS_FILE),
}
AUDIT_PLOTS = {"agreement": AGREEMENT_PLOT_FILE, "rankings": MODEL_RANKINGS_PLOT_FILE}
AUDIT_HTML = {"duplicates": DUPLICATE_PAIRS_HTML_FILE}
# The stages an image audit stage is made from, nearest first: it describes the dataset only
# while each was made from the next as it is now (audits can drop images after they ran).
IMAGE_AUDIT_CHAIN = (AUDIT_EMBEDDINGS, DOWNLOAD)


@dataclass(frozen=True)
class Audit:
    figures: dict
    plot: bytes | None  # the audit's own PNG, shown as it is
    html: str | None  # the audit's own HTML fragment (duplicate pairs with thumbnails), for the report


@dataclass(frozen=True)
class RunFacts:
    config: Config
    synthetic: bool
    tag: dict  # tag/figures.json: rows read, dropped by reason, tagged
    funnel: list[dict]  # select/funnel.json steps
    rank: dict  # rank/figures.json
    candidates: list[dict]  # rank/ranking.tsv: every scored candidate with its score and fate
    classes: list[dict]  # rank/classes.json rows with images, train, test, shortfall, example
    dataset: pa.Table  # the final images: DATASET_COLUMNS and those of OPTIONAL_DATASET_COLUMNS present
    sample: dict  # sample/figures.json
    dataset_stage: str  # the stage whose dataset/ holds the final images
    splits: dict[str, int]
    licenses: dict[str, int] | None  # the dataset rows' licence values, if the corpus has them
    manifest: dict
    download: dict | None
    similarities: ClassSimilarities
    structure: dict  # wordnet.stats_report.build_report against ImageNet-1k
    readings: dict[str, list[str]]  # reading -> why the class set breaks it (empty: satisfied)
    audits: dict[str, Audit]
    stale_audits: list[str]  # finished image audits made from an earlier state of the dataset
    safety: Safety  # what the offensive, identity and classifier rules removed
    review: dict | None = None  # review/results.json (`imagenot review export`), when people reviewed the labels
    review_plot: bytes | None = None  # review/precision.png
    class_review: dict | None = None  # review/class_results.json (`imagenot review classes`), when people read them
    cost: dict = field(default_factory=dict)  # summary.json: stage -> its seconds and CPU (`pipeline.run.cpu`)

    @property
    def images(self) -> int:
        return sum(self.splits.values())


def _read_dataset(shards: list[str]) -> pa.Table:
    tables = []
    for shard in shards:
        with FileSystems.open(shard, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            parquet = pq.ParquetFile(f)
            columns = [c for c in (*DATASET_COLUMNS, *OPTIONAL_DATASET_COLUMNS) if c in parquet.schema_arrow.names]
            tables.append(parquet.read(columns=columns))
    return pa.concat_tables(tables)


def class_set_readings(index: NounIndex, classes: list[str], reference: list[str]) -> dict[str, list[str]]:
    """For each overlap reading, why the class set breaks it: the reading's step 2 removals
    (filters.overlap, the same code the select stage runs) and, for strict, classes that have
    another class as an ancestor. An empty list: the set satisfies that reading."""
    found = {}
    for reading in ("paper", "strict"):
        removals = overlap_removals(classes, reference, index, reading)
        found[reading] = [f"{r.wnid} {r.name} {r.detail}" for r in removals.values()]
    found["strict"] += [
        f"{wnid} {index[wnid].name} descends from class {', '.join(ancestors)}"
        for wnid, ancestors in hierarchy.ancestors_in(index, classes, classes).items()
    ]
    return found


def per_class_rows(classes: list[dict], dataset: pa.Table, images_per_class: int) -> list[dict]:
    """rank/classes.json rows with their final images, split counts, shortfall and the caption of
    their first image (the best one by the sampling order)."""
    dataset = dataset.sort_by([("class_index", "ascending"), ("order", "ascending")])
    index = dataset.column("class_index").to_numpy()
    splits = Counter(zip(index.tolist(), dataset.column("split").to_pylist()))
    starts = np.flatnonzero(np.r_[True, index[1:] != index[:-1]]) if len(index) else np.zeros(0, np.int64)
    examples = dict(zip(index[starts].tolist(), dataset.column("caption").take(starts).to_pylist()))
    rows = []
    for c in classes:
        train, test = splits[(c["index"], "train")], splits[(c["index"], "test")]
        rows.append(
            {
                **c,
                "images": train + test,
                "train": train,
                "test": test,
                "shortfall": images_per_class - train - test,
                "example": examples.get(c["index"], ""),
            }
        )
    return rows


def is_current_audit(run_dir: str, folder: str) -> bool:
    """Whether an image audit stage was made from the dataset as it is now."""
    chain = (folder, *IMAGE_AUDIT_CHAIN)
    return all(made_from(run_dir, stage, upstream) for stage, upstream in zip(chain, chain[1:]))


def _optional(path: str) -> bytes | None:
    return read_bytes(path) if FileSystems.exists(path) else None


def _audits(run_dir: str) -> tuple[dict[str, Audit], list[str]]:
    """The audits to show, and the image audits that are out of date."""
    found, stale = {}, []
    for name, (folder, figures_file) in AUDIT_FIGURES.items():
        path = stage_path(run_dir, folder, figures_file)
        if figures_file == FIGURES_FILE:  # a stage: it counts once done, and only while current
            if not is_done(run_dir, folder):
                continue
            if not is_current_audit(run_dir, folder):
                stale.append(name)
                continue
        if FileSystems.exists(path):
            plot = _optional(stage_path(run_dir, folder, AUDIT_PLOTS[name])) if name in AUDIT_PLOTS else None
            html = _optional(stage_path(run_dir, folder, AUDIT_HTML[name])) if name in AUDIT_HTML else None
            found[name] = Audit(read_json(path), plot, html.decode("utf-8") if html else None)
    return found, stale


def gather(config: Config, run_dir: str, index: NounIndex) -> RunFacts:
    """The facts of a run whose stages up to sample (and download, when enabled) finished."""
    final_stage = dataset_stage(config.download.enabled)
    classes = read_classes(run_dir)
    wnids = [c["wnid"] for c in classes]
    dataset = _read_dataset(dataset_shards(run_dir, final_stage))
    licenses = None
    if "license" in dataset.column_names:
        values = Counter("(missing)" if v is None else v for v in dataset.column("license").to_pylist())
        licenses = dict(sorted(values.items(), key=lambda item: (-item[1], item[0])))
    reference = reference_wnids(config.selection.reference, index)
    audits, stale_audits = _audits(run_dir)
    structure_reference = reference_wnids(STRUCTURE_REFERENCE, index)
    review_results = stage_path(run_dir, REVIEW, REVIEW_RESULTS_FILE)
    return RunFacts(
        config=config,
        synthetic=config.corpus.synth is not None,
        tag=read_json(stage_path(run_dir, TAG, FIGURES_FILE)),
        funnel=read_json(stage_path(run_dir, SELECT, FUNNEL_FILE))["steps"],
        rank=read_json(stage_path(run_dir, RANK, FIGURES_FILE)),
        candidates=read_tsv(stage_path(run_dir, RANK, RANKING_FILE)),
        classes=per_class_rows(classes, dataset, config.sampling.images_per_class),
        dataset=dataset,
        sample=read_json(stage_path(run_dir, SAMPLE, FIGURES_FILE)),
        dataset_stage=final_stage,
        splits=dict(sorted(Counter(dataset.column("split").to_pylist()).items())),
        licenses=licenses,
        manifest=read_json(stage_path(run_dir, SAMPLE, MANIFEST_FILE)),
        download=read_json(stage_path(run_dir, DOWNLOAD, FIGURES_FILE)) if config.download.enabled else None,
        similarities=caption_similarities(stage_shards(stage_path(run_dir, RANK), SCORED_DIR), wnids),
        structure=build_report(index, wnids, structure_reference, "this dataset", STRUCTURE_REFERENCE),
        readings=class_set_readings(index, wnids, reference),
        audits=audits,
        stale_audits=stale_audits,
        review=read_json(review_results) if FileSystems.exists(review_results) else None,
        review_plot=_optional(stage_path(run_dir, REVIEW, REVIEW_PLOT_FILE)),
        class_review=read_class_results(run_dir),
        safety=gather_safety(run_dir, index),
        cost=read_summary(run_dir),
    )

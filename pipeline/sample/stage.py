"""The sample stage: from the rank stage's scored captions to the dataset's image list.

One Beam pass keys the scored rows by class (an Arrow slice per class per read batch, never one
element per caption), groups them and runs `sample_class` on each class: its ordered list of
N images then the reserve, written to `sample/ordered/<wnid>.parquet`. The same pass checksums
the corpus shards for the manifest. The driver then settles urls listed in several classes (the
url stays in the class where its gloss similarity is higher, ties to the lower class index, and
counts as `url_in_other_class` in the others), splits each class's images into train and test,
and writes, in (class index, order) order:
- `dataset/part-NNNNN.parquet`: the images, `shard_rows` rows per shard, ready for img2dataset
  (url_col="url", caption_col="caption");
- `reserve/part-NNNNN.parquet`: the reserve, same columns, `split` null;
- `class_sampling.tsv` (per class: candidates by fate, images, reserve, shortfall),
  `sample_tally.json` (per class and totals) and `manifest.json`.
A class with fewer than N images is reported with its shortfall, never padded.

Memory: a class's rows are concatenated in one worker, and the local runner's GroupByKey holds
every class's rows at once. With `scoring.first_phase: static` the rank stage scores at most
`exact_per_class` rows per class, so that is at most K x exact_per_class rows whatever the
corpus size (benchmarks/bench_scoring.py measures sample's peak RSS at two corpus sizes); with
`priority`, the rows each class's list needed (at most `exact_cap` when set); with `off` it is
every caption of the classes.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import SenseDecision
from imagenot.pipeline.config.schema import Config, Sampling
from imagenot.pipeline.frame.preflight import files_exist
from imagenot.pipeline.frame.registry import Stage
from imagenot.pipeline.frame.runner import make_pipeline
from imagenot.pipeline.rank.sampling_order import reference_edges, sense_decision_settings
from imagenot.pipeline.run.files import (
    atomic_output,
    read_json,
    read_schema,
    read_table,
    stage_shards,
    write_json,
    write_tsv,
)
from imagenot.pipeline.run.layout import (
    DATASET_DIR,
    MANIFEST_FILE,
    RANK,
    RESERVE_DIR,
    SAMPLE,
    SAMPLE_COUNTS,
    SCORE_COLUMN,
    SCORED_DIR,
    SENSE_COLUMNS,
    read_classes,
    stage_path,
)
from imagenot.pipeline.run.paths import delete_folder, name
from imagenot.pipeline.run.shards import read_batches
from imagenot.pipeline.sample.classes import ORDER_COLUMN, sample_class
from imagenot.pipeline.sample.manifest import (
    build_manifest,
    check_configured_corpus,
    checked_corpus_entry,
    tagged_corpus,
)
from imagenot.pipeline.sample.splits import assign_splits
from imagenot.pipeline.sample.writer import ShardWriter

STAGE = SAMPLE
UPSTREAM = RANK
ORDERED_DIR = "ordered"
COUNTS_FILE, CHECKSUMS_FILE = "class_counts.json", "corpus_checksums.json"
TALLY_FILE = "sample_tally.json"
SOURCE_COLUMNS = ("width", "height", "similarity", "license", "sample_id")  # kept where present
CLASS_FILE = "class_sampling.tsv"
CLASS_COLUMNS = ("class_index", "wnid", "name", *SAMPLE_COUNTS, "images", "reserve", "shortfall")


def class_parts(shard: str, columns: list[str]):
    """(wnid, that class's rows of one read batch) for a scored shard.

    Each part is a compact copy (`take`): Beam pickles what it groups, and a pickled Arrow slice
    carries the whole buffers it views, so slices would ship the whole batch once per class."""
    for batch in read_batches(shard, columns):
        table = pa.Table.from_batches([batch])
        order = pc.sort_indices(table, [("wnid", "ascending")]).to_numpy()
        wnids = table.column("wnid").to_numpy(zero_copy_only=False)[order]
        starts = np.flatnonzero(np.r_[True, wnids[1:] != wnids[:-1]]) if len(wnids) else []
        for start, end in zip(starts, [*starts[1:], len(wnids)]):
            yield str(wnids[start]), table.take(pa.array(order[start:end]))


class _SampleClass(beam.DoFn):
    def __init__(self, sampling: Sampling, edges: np.ndarray | None, ordered_dir: str, sense: SenseDecision):
        self._sampling, self._edges, self._ordered_dir, self._sense = sampling, edges, ordered_dir, sense

    def process(self, keyed):
        wnid, parts = keyed
        ordered, counts = sample_class(pa.concat_tables(parts), self._sampling, self._edges, self._sense)
        with atomic_output(FileSystems.join(self._ordered_dir, f"{wnid}.parquet")) as stream:
            pq.write_table(ordered, stream)
        yield wnid, counts


def output_schema(scored_schema: pa.Schema) -> pa.Schema:
    fields = [
        pa.field("row_id", pa.string()),
        pa.field("url", pa.string()),
        pa.field("caption", pa.string()),
        pa.field("class_index", pa.int32()),
        pa.field("wnid", pa.string()),
        pa.field(SCORE_COLUMN, pa.float32()),
        pa.field("split", pa.string()),
        pa.field(ORDER_COLUMN, pa.int32()),
    ]
    return pa.schema(fields + [scored_schema.field(name) for name in SOURCE_COLUMNS if name in scored_schema.names])


def urls_in_other_classes(lists: dict[int, pa.Table]) -> dict[int, set[str]]:
    """Per class index, the listed urls that another class's list holds with a higher gloss
    similarity (equal similarity: the lower class index keeps the url)."""
    if not lists:
        return {}
    table = pa.concat_tables(
        pa.table(
            {
                "url": t.column("url"),
                "score": t.column(SCORE_COLUMN),
                "class_index": pa.array(np.full(t.num_rows, i, np.int32)),
            }
        )
        for i, t in lists.items()
    )
    table = table.take(
        pc.sort_indices(table, [("url", "ascending"), ("score", "descending"), ("class_index", "ascending")])
    )
    urls = table.column("url").to_numpy(zero_copy_only=False)
    losing = np.flatnonzero(np.r_[False, urls[1:] == urls[:-1]])
    lost: dict[int, set[str]] = {}
    for class_index, url in zip(table.column("class_index").to_numpy()[losing], urls[losing]):
        lost.setdefault(int(class_index), set()).add(url)
    return lost


def split_list(ordered: pa.Table, class_index: int, lost: set[str], sampling: Sampling) -> tuple[pa.Table, pa.Table]:
    """(images with their split, reserve) of a class's list once its lost urls are out."""
    if lost:
        ordered = ordered.filter(pc.invert(pc.is_in(ordered.column("url"), value_set=pa.array(sorted(lost)))))
    ordered = ordered.set_column(
        ordered.schema.get_field_index(ORDER_COLUMN), ORDER_COLUMN, pa.array(np.arange(ordered.num_rows), pa.int32())
    )
    ordered = ordered.append_column("class_index", pa.array(np.full(ordered.num_rows, class_index, np.int32)))
    n = sampling.images_per_class
    images, reserve = ordered.slice(0, n), ordered.slice(n, sampling.reserve)
    splits = assign_splits(images.column("row_id").to_pylist(), sampling.test_per_class, sampling.seed)
    images = images.append_column("split", pa.array(splits, pa.string()))
    reserve = reserve.append_column("split", pa.nulls(reserve.num_rows, pa.string()))
    return images, reserve


def tally(rows: list[dict], counts: dict) -> dict:
    """Totals, and per class its images, reserve, shortfall, the captions other senses won (by sense:
    WordNet's, or the web senses it lacks), those whose word fits none of its senses and those the
    label model dropped."""
    per_class = {
        row["wnid"]: {
            **{k: row[k] for k in ("images", "reserve", "shortfall", "none_of_these_fit", "label_model")},
            "other_sense_to": counts.get(row["wnid"], {}).get("other_sense_to", {}),
            "label_model_uses": counts.get(row["wnid"], {}).get("label_model_uses", {}),
        }
        for row in rows
    }
    totals = {key: sum(row[key] for row in rows) for key in (*SAMPLE_COUNTS, "images", "reserve", "shortfall")}
    return {
        "classes": len(rows),
        "classes_short": sum(row["shortfall"] > 0 for row in rows),
        **totals,
        "per_class": per_class,
    }


def write_dataset(
    stage_dir: str, classes: list[dict], counts: dict, lists: dict[int, str], schema: pa.Schema, sampling: Sampling
) -> tuple[list[dict], dict[str, str]]:
    """Write the dataset and reserve shards and `class_sampling.tsv` from the classes' ordered lists
    (`lists`: class index -> file); returns the classes' rows and the files written (name -> path)."""
    lost = urls_in_other_classes({i: read_table(path, ["url", SCORE_COLUMN]) for i, path in lists.items()})
    writers = {
        role: ShardWriter(FileSystems.join(stage_dir, role), schema, sampling.shard_rows)
        for role in (DATASET_DIR, RESERVE_DIR)
    }
    rows = []
    for c in classes:
        found = counts.get(c["wnid"], {})
        row = {
            "class_index": c["index"],
            "wnid": c["wnid"],
            "name": c["name"],
            **{k: found.get(k, 0) for k in SAMPLE_COUNTS},
        }
        row["url_in_other_class"] = len(lost.get(c["index"], ()))
        images = reserve = 0
        if c["index"] in lists:
            ordered = read_table(lists[c["index"]])
            image_rows, reserve_rows = split_list(ordered, c["index"], lost.get(c["index"], set()), sampling)
            writers[DATASET_DIR].write(image_rows)
            writers[RESERVE_DIR].write(reserve_rows)
            images, reserve = image_rows.num_rows, reserve_rows.num_rows
        rows.append({**row, "images": images, "reserve": reserve, "shortfall": sampling.images_per_class - images})
    outputs = {f"{role}/{name(path)}": path for role, writer in writers.items() for path in writer.close()}
    outputs[CLASS_FILE] = FileSystems.join(stage_dir, CLASS_FILE)
    write_tsv(outputs[CLASS_FILE], CLASS_COLUMNS, rows)
    return rows, outputs


def settings(config: Config) -> dict:
    """The sampling settings with the reference distribution resolved (a changed reference run
    re-samples), and the sense decision its lists are cut at."""
    edges = reference_edges(config.sampling)
    return {
        **config.sampling.model_dump(),
        "reference_edges": None if edges is None else edges.tolist(),
        **sense_decision_settings(config.scoring),
    }


def run_sample(config: Config, run_dir: str, corpus: list[list]) -> dict:
    """Sample every class of `<run_dir>/rank/`; returns the tally. `corpus`: the corpus files the
    tag stage read, with their sizes (`manifest.tagged_corpus`), checksummed for the manifest."""
    sampling: Sampling = config.sampling
    edges = reference_edges(sampling)
    stage_dir = stage_path(run_dir, STAGE)
    rank_dir = stage_path(run_dir, RANK)
    classes = read_classes(run_dir)
    shards = stage_shards(rank_dir, SCORED_DIR)
    if not shards:
        raise ImagenotError(f"{rank_dir}: no scored shards in {SCORED_DIR}/; rerun `imagenot rank`")
    scored_schema = read_schema(shards[0])
    schema = output_schema(scored_schema)
    read = [name for name in (*schema.names, *SENSE_COLUMNS) if name in scored_schema.names]
    ordered_dir = FileSystems.join(stage_dir, ORDERED_DIR)
    counts_path, checksums_path = (FileSystems.join(stage_dir, name) for name in (COUNTS_FILE, CHECKSUMS_FILE))

    with make_pipeline(config.runner) as pipeline:
        _ = (
            pipeline
            | "Scored" >> beam.Create(shards)
            | "SpreadScored" >> beam.Reshuffle()
            | "ByClass" >> beam.FlatMap(class_parts, read)
            | "Group" >> beam.GroupByKey()
            | "Sample" >> beam.ParDo(_SampleClass(sampling, edges, ordered_dir, config.scoring.sense_decision()))
            | "Counts" >> beam.combiners.ToDict()
            | "WriteCounts" >> beam.Map(lambda counts: write_json(counts_path, counts))
        )
        _ = (
            pipeline
            | "Corpus" >> beam.Create(corpus)
            | "SpreadCorpus" >> beam.Reshuffle()
            | "Checksum" >> beam.Map(checked_corpus_entry, run_dir)
            | "Entries" >> beam.combiners.ToList()
            | "WriteChecksums"
            >> beam.Map(lambda entries: write_json(checksums_path, sorted(entries, key=lambda e: e["path"])))
        )
    counts = read_json(counts_path)

    lists = {c["index"]: FileSystems.join(ordered_dir, f"{c['wnid']}.parquet") for c in classes if c["wnid"] in counts}
    rows, outputs = write_dataset(stage_dir, classes, counts, lists, schema, sampling)
    result = tally(rows, counts)
    write_json(FileSystems.join(stage_dir, TALLY_FILE), result)
    manifest = build_manifest(
        run_dir, config.model_dump(mode="json"), settings(config), read_json(checksums_path), outputs
    )
    write_json(FileSystems.join(stage_dir, MANIFEST_FILE), manifest)
    delete_folder(ordered_dir)
    FileSystems.delete([path for path in (counts_path, checksums_path) if FileSystems.exists(path)])
    return result


def summarize(result: dict) -> dict:
    """The tally's totals, the shortfall of each class that has one, and per class the captions
    other senses of its word won (by sense), those whose word fits none of its senses and those the
    label model dropped, where there are any."""
    per_class = result["per_class"].items()
    short = {wnid: c["shortfall"] for wnid, c in per_class if c["shortfall"] > 0}
    lost = {wnid: c["other_sense_to"] for wnid, c in per_class if c.get("other_sense_to")}
    unfit = {wnid: c["none_of_these_fit"] for wnid, c in per_class if c.get("none_of_these_fit")}
    unlikely = {wnid: c["label_model_uses"] for wnid, c in per_class if c.get("label_model_uses")}
    totals = {k: v for k, v in result.items() if k != "per_class"}
    return {
        **totals,
        "shortfall_by_class": short,
        "other_sense_by_class": lost,
        "none_of_these_fit_by_class": unfit,
        "label_model_by_class": unlikely,
    }


DECLARATION = Stage(
    STAGE,
    UPSTREAM,
    settings,
    run_sample,
    preflight=(files_exist("sampling.reference_scores"), check_configured_corpus),
    prepare=tagged_corpus,
    figures=summarize,
)

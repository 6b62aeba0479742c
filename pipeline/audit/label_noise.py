"""How many of the dataset's labels are wrong? Confident learning over out-of-sample probabilities.

`imagenot audit label-noise --run DIR --probs FILE`. FILE is a parquet of `row_id` and the
predicted class probabilities of any model that did not train on the row: either a list<float>
column `probs` or one column per class `p_0 .. p_{K-1}`. The labels are the run's dataset
(`download/dataset/*.parquet` if the download stage ran, else `sample/dataset/*.parquet`: `row_id`,
`class_index`, `split`), the classes `rank/classes.json`.

cleanlab (Northcutt et al., "Confident Learning", JAIR 2021) does the estimating: a row with
given label i counts towards true class j when p_j reaches class j's threshold, the mean p_j over
the rows labelled j (the larger p_j when several do); these counts, calibrated so each row sums
to the rows given label i and normalised, are the estimated joint of given and true labels. The
estimated number of errors is cleanlab's `num_label_issues` (off-diagonal confident counts, less
rows whose given label is also the argmax); the flagged rows come from `find_label_issues`
(prune by noise rate), lowest self-confidence (probability of the given label) first.

Outputs in `<run>/audit/label_noise/`: `summary.json`, `per_class.tsv`, `flagged.parquet` (row_id,
split, given_class, suggested_class, self_confidence, rank) and `joint.tsv` (K x K, rows given,
columns true).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click
import numpy as np

from imagenot.errors import ImagenotError
from imagenot.pipeline.frame.lock_option import absolute_paths, break_lock_option

if TYPE_CHECKING:  # pyarrow, cleanlab (with scikit-learn) and the run's files (with Beam) are imported
    # where they are used, so that `audit label-noise --help` loads none of them
    import pyarrow as pa

SUM_TOLERANCE = 1e-3  # probabilities saved as float32 or rounded still sum to 1 within this
EXAMPLE_IDS = 5  # unmatched row ids quoted in the summary
PROB_COLUMN = re.compile(r"p_(\d+)")


class LabelNoiseInputError(ImagenotError, ValueError):
    """Malformed labels or probabilities; the message names the file, row or column."""


@dataclass(frozen=True)
class LabelNoise:
    row_ids: list[str]  # the dataset rows that have probabilities, in dataset order
    splits: list[str]
    labels: np.ndarray  # given class per row
    pred_probs: np.ndarray  # rows x K
    joint: np.ndarray  # K x K estimated joint of (given, true) labels, sums to 1
    estimated_errors: int
    flagged: np.ndarray  # row positions, lowest self-confidence first
    self_confidence: np.ndarray  # per row, p(given label)
    rows_without_probs: list[str]
    probs_without_rows: list[str]

    @property
    def num_classes(self) -> int:
        return self.pred_probs.shape[1]

    def joint_counts(self) -> np.ndarray:
        """The calibrated confident joint: estimated rows per (given, true) pair (whole numbers)."""
        return np.rint(self.joint * len(self.labels)).astype(int)


def _unique_ids(table: pa.Table, source: str) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    if "row_id" not in table.column_names:
        raise LabelNoiseInputError(f"{source}: no column 'row_id' (columns: {', '.join(table.column_names)})")
    ids = table.column("row_id").combine_chunks()
    if ids.null_count:
        raise LabelNoiseInputError(f"{source}: {ids.null_count} row(s) with a null row_id")
    if pc.count_distinct(ids).as_py() != len(ids):
        counts = pc.value_counts(ids)
        repeated = pc.filter(counts.field("values"), pc.greater(counts.field("counts"), 1))
        raise LabelNoiseInputError(f"{source}: duplicate row_id {repeated[0].as_py()!r}")
    return ids.cast(pa.string())


def probability_matrix(probs: pa.Table, source: str = "probabilities") -> np.ndarray:
    """The rows x K matrix from a `probs` list column or `p_0 .. p_{K-1}` columns, checked."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "probs" in probs.column_names:
        column = probs.column("probs").combine_chunks()
        if not pa.types.is_list(column.type) and not pa.types.is_large_list(column.type):
            raise LabelNoiseInputError(f"{source}: column 'probs' is {column.type}, expected list<float>")
        if column.null_count:
            raise LabelNoiseInputError(f"{source}: {column.null_count} row(s) with null 'probs'")
        lengths = pc.list_value_length(column).to_numpy()
        if len(lengths) and (lengths != lengths[0]).any():
            row = int(np.flatnonzero(lengths != lengths[0])[0])
            raise LabelNoiseInputError(
                f"{source}: row_id {probs.column('row_id')[row].as_py()!r} has {lengths[row]} probabilities, "
                f"the first row {lengths[0]}"
            )
        matrix = column.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
        matrix = matrix.reshape(len(column), int(lengths[0]) if len(lengths) else 0)
    else:
        indices = sorted(int(m.group(1)) for name in probs.column_names if (m := PROB_COLUMN.fullmatch(name)))
        if not indices:
            raise LabelNoiseInputError(f"{source}: expected a list column 'probs' or columns p_0 .. p_(K-1)")
        if indices != list(range(len(indices))):
            missing = sorted(set(range(max(indices) + 1)) - set(indices))
            raise LabelNoiseInputError(f"{source}: column p_{missing[0]} is missing (found p_0 .. p_{max(indices)})")
        matrix = np.column_stack([probs.column(f"p_{i}").to_numpy(zero_copy_only=False) for i in indices])
        matrix = matrix.astype(np.float64)
    bad = ~np.isfinite(matrix).all(axis=1) | (matrix < 0).any(axis=1) | (matrix > 1).any(axis=1)
    bad |= np.abs(matrix.sum(axis=1) - 1) > SUM_TOLERANCE
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise LabelNoiseInputError(
            f"{source}: row_id {probs.column('row_id')[row].as_py()!r}: probabilities {matrix[row].tolist()} "
            f"are not a distribution (each in [0, 1], summing to 1 within {SUM_TOLERANCE}); "
            f"{int(bad.sum())} such row(s)"
        )
    return matrix


def label_noise(
    dataset: pa.Table,
    probs: pa.Table,
    num_classes: int | None = None,
    dataset_source: str = "dataset",
    probs_source: str = "probabilities",
) -> LabelNoise:
    """Confident-learning estimates for the dataset rows (`row_id`, `class_index`[, `split`])
    that have a row in `probs`; rows on one side only are listed, not estimated."""
    import pyarrow.compute as pc
    from cleanlab.count import estimate_joint, num_label_issues
    from cleanlab.filter import find_label_issues
    from cleanlab.rank import get_label_quality_scores

    dataset_ids, prob_ids = _unique_ids(dataset, dataset_source), _unique_ids(probs, probs_source)
    matrix = probability_matrix(probs, probs_source)
    k = matrix.shape[1]
    if num_classes is not None and k != num_classes:
        raise LabelNoiseInputError(
            f"{probs_source}: {k} probabilities per row, but the dataset has {num_classes} classes"
        )
    if "class_index" not in dataset.column_names:
        raise LabelNoiseInputError(f"{dataset_source}: no column 'class_index'")
    labels = dataset.column("class_index").combine_chunks()
    if labels.null_count or (len(labels) and not 0 <= pc.min(labels).as_py() <= pc.max(labels).as_py() < k):
        raise LabelNoiseInputError(f"{dataset_source}: 'class_index' must be set and within 0 .. {k - 1} on every row")

    position = pc.index_in(dataset_ids, value_set=prob_ids)
    matched = position.is_valid().to_numpy(zero_copy_only=False)
    if not matched.any():
        raise LabelNoiseInputError(f"{probs_source}: no row_id matches a row of {dataset_source}")
    has_row = pc.is_in(prob_ids, value_set=dataset_ids).to_numpy(zero_copy_only=False)
    pred_probs = matrix[position.drop_null().to_numpy()]
    given = labels.to_numpy(zero_copy_only=False)[matched].astype(np.int64)
    splits = dataset.column("split").to_pylist() if "split" in dataset.column_names else [None] * len(dataset)

    return LabelNoise(
        row_ids=[r for r, m in zip(dataset_ids.to_pylist(), matched) if m],
        splits=[s for s, m in zip(splits, matched) if m],
        labels=given,
        pred_probs=pred_probs,
        joint=estimate_joint(given, pred_probs),
        estimated_errors=int(num_label_issues(given, pred_probs)),
        # one process: the result is the same, and a worker pool is not worth forking for this
        flagged=find_label_issues(given, pred_probs, return_indices_ranked_by="self_confidence", n_jobs=1),
        self_confidence=get_label_quality_scores(given, pred_probs, method="self_confidence"),
        rows_without_probs=[r for r, m in zip(dataset_ids.to_pylist(), matched) if not m],
        probs_without_rows=[r for r, m in zip(prob_ids.to_pylist(), has_row) if not m],
    )


def per_class(result: LabelNoise, classes: list[dict] | None = None) -> list[dict]:
    """One row per class: rows given it, estimated truly it, estimated wrong either way, flagged."""
    counts = result.joint_counts()
    given = np.bincount(result.labels, minlength=result.num_classes)
    flagged = np.bincount(result.labels[result.flagged], minlength=result.num_classes)
    by_index = {c["index"]: c for c in classes or []}
    rows = []
    for i in range(result.num_classes):
        errors = int(counts[i].sum() - counts[i, i])
        rows.append(
            {
                "class_index": i,
                "wnid": by_index.get(i, {}).get("wnid", ""),
                "name": by_index.get(i, {}).get("name", ""),
                "given": int(given[i]),
                "estimated_true": int(counts[:, i].sum()),
                "estimated_errors": errors,  # labelled i, estimated to be another class
                "estimated_missing": int(counts[:, i].sum() - counts[i, i]),  # truly i, labelled otherwise
                "noise_rate": round(errors / given[i], 6) if given[i] else 0.0,
                "flagged": int(flagged[i]),
            }
        )
    return rows


def summary(result: LabelNoise, classes: list[dict] | None = None) -> dict:
    import cleanlab

    n = len(result.labels)
    fraction = result.estimated_errors / n
    return {
        "method": f"confident learning, cleanlab {cleanlab.__version__}",
        "examples": n,
        "classes": result.num_classes,
        "estimated_errors": result.estimated_errors,
        "estimated_error_fraction": round(fraction, 6),
        "joint_error_fraction": round(float(1 - np.trace(result.joint)), 6),
        "flagged": len(result.flagged),
        "rows_without_probs": len(result.rows_without_probs),
        "rows_without_probs_examples": result.rows_without_probs[:EXAMPLE_IDS],
        "probs_without_rows": len(result.probs_without_rows),
        "probs_without_rows_examples": result.probs_without_rows[:EXAMPLE_IDS],
        "per_class": {row["class_index"]: row for row in per_class(result, classes)},
        "statement": (
            f"Confident learning estimates {result.estimated_errors:,} of {n:,} labels "
            f"({100 * fraction:.1f}%) to be wrong; {len(result.flagged):,} examples are flagged."
        ),
    }


def flagged_table(result: LabelNoise) -> pa.Table:
    import pyarrow as pa

    rows = result.flagged
    return pa.table(
        {
            "row_id": pa.array([result.row_ids[i] for i in rows], pa.string()),
            "split": pa.array([result.splits[i] for i in rows], pa.string()),
            "given_class": pa.array(result.labels[rows], pa.int32()),
            "suggested_class": pa.array(result.pred_probs[rows].argmax(axis=1), pa.int32()),
            "self_confidence": pa.array(result.self_confidence[rows], pa.float64()),
            "rank": pa.array(np.arange(1, len(rows) + 1), pa.int32()),
        }
    )


def _tsv(header: list, rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def write_label_noise(result: LabelNoise, out_dir: str, classes: list[dict] | None = None) -> dict:
    """summary.json, per_class.tsv, flagged.parquet and joint.tsv in `out_dir`; the summary."""
    import pyarrow.parquet as pq
    from apache_beam.io.filesystems import FileSystems

    from imagenot.pipeline.run.files import atomic_output, write_json, write_text
    from imagenot.pipeline.run.layout import LABEL_NOISE_FILE

    figures = summary(result, classes)
    rows = per_class(result, classes)
    write_text(FileSystems.join(out_dir, "per_class.tsv"), _tsv(list(rows[0]), [list(r.values()) for r in rows]))
    k = result.num_classes
    joint_rows = [[f"given_{i}", *(repr(float(x)) for x in result.joint[i])] for i in range(k)]
    write_text(FileSystems.join(out_dir, "joint.tsv"), _tsv(["", *(f"true_{j}" for j in range(k))], joint_rows))
    with atomic_output(FileSystems.join(out_dir, "flagged.parquet")) as f:
        pq.write_table(flagged_table(result), f)
    write_json(FileSystems.join(out_dir, LABEL_NOISE_FILE), figures)
    return figures


def _read_parquet(paths: list[str]) -> pa.Table:
    import pyarrow as pa

    from imagenot.pipeline.run.files import read_table

    return pa.concat_tables([read_table(path) for path in paths], promote_options="default")


def read_run_dataset(run_dir: str) -> tuple[pa.Table, str]:
    """The run's dataset rows (row_id, class_index, split) and the folder they came from."""
    from imagenot.pipeline.run.layout import DATASET_DIR, DATASET_STAGES, dataset_shards, stage_path

    for stage in DATASET_STAGES:  # the first one that holds a dataset
        paths = dataset_shards(run_dir, stage)
        if paths:
            table = _read_parquet(paths)
            columns = [c for c in ("row_id", "class_index", "split") if c in table.column_names]
            return table.select(columns), stage_path(run_dir, stage, DATASET_DIR)
    folders = " or ".join(f"{stage}/{DATASET_DIR}/" for stage in DATASET_STAGES)
    raise LabelNoiseInputError(f"{run_dir}: no dataset parquet in {folders}")


@click.command("label-noise")
@click.option(
    "--run",
    "run_dir",
    required=True,
    callback=absolute_paths,
    help="run directory holding rank/ and sample/ (or download/)",
)
@click.option(
    "--probs",
    "probs_path",
    required=True,
    callback=absolute_paths,
    help="parquet: row_id and probs (list<float>) or p_0 .. p_(K-1)",
)
@break_lock_option
def label_noise_command(run_dir: str, probs_path: str, break_lock: bool) -> None:
    """Estimate label errors with confident learning from out-of-sample class probabilities."""
    from apache_beam.io.filesystems import FileSystems

    from imagenot.pipeline.config.schema import load_run_config
    from imagenot.pipeline.run.journal import require_finished
    from imagenot.pipeline.run.layout import AUDIT_LABEL_NOISE, classes_path, read_classes, stage_path
    from imagenot.pipeline.run.lock import run_lock

    with run_lock(run_dir, load_run_config(run_dir).runner.lock_stale_after_s, break_lock, create_dir=False):
        if not FileSystems.exists(classes_path(run_dir)):  # refused, a folder that is not a run is left as it was
            raise LabelNoiseInputError(f"{run_dir}: no rank/ classes: not a run, or run `imagenot rank` first")
        require_finished(run_dir)  # reads the dataset: not one a killed command left half rewritten
        try:
            classes = read_classes(run_dir)
            dataset, source = read_run_dataset(run_dir)
            result = label_noise(dataset, _read_parquet([probs_path]), len(classes), source, probs_path)
        except OSError as err:
            raise LabelNoiseInputError(str(err)) from err
        figures = write_label_noise(result, stage_path(run_dir, AUDIT_LABEL_NOISE), classes)
    click.echo(figures["statement"])
    click.echo(json.dumps({k: v for k, v in figures.items() if k != "per_class"}, indent=2))

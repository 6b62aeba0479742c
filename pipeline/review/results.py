"""`review export`: the answers out of SQLite into the run, aggregated into the figures the card reads.

Writes `review/answers.parquet` (every answer as given), `review/images.parquet` (per image, see
`aggregate`), `review/results.json` and `review/precision.png` (per-class precision with its
interval, sorted). A bucket run also gets a copy of its SQLite database (`store.copy_back`).
"""

from __future__ import annotations

import io
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.demo.serving import placeholder_images
from imagenot.pipeline.download.drops import REVIEW_REJECTED as REVIEW_REASON
from imagenot.pipeline.download.drops import read_drops
from imagenot.pipeline.report.human_review import pooled_classes
from imagenot.pipeline.review import aggregate
from imagenot.pipeline.review.pages import CLASS_INSTRUCTIONS, FLAGGED_INSTRUCTIONS
from imagenot.pipeline.review.plan import read_plan
from imagenot.pipeline.review.store import Store, copy_back
from imagenot.pipeline.run.files import atomic_output, read_json, read_table, write_bytes, write_json
from imagenot.pipeline.run.layout import (
    DOWNLOAD,
    REVIEW,
    REVIEW_ANSWERS_FILE,
    REVIEW_IMAGES_FILE,
    REVIEW_PLOT_FILE,
    REVIEW_RESULTS_FILE,
    read_classes,
    stage_path,
)

ANSWERS_SCHEMA = pa.schema(
    [
        ("rater", pa.string()),
        ("image", pa.string()),
        ("task", pa.string()),
        ("answer", pa.string()),
        ("answered_at", pa.float64()),
    ]
)


def results_path(run_dir: str) -> str:
    return stage_path(run_dir, REVIEW, REVIEW_RESULTS_FILE)


def read_results(run_dir: str) -> dict | None:
    path = results_path(run_dir)
    return read_json(path) if FileSystems.exists(path) else None


def _write_parquet(path: str, table: pa.Table) -> None:
    with atomic_output(path) as stream:
        pq.write_table(table, stream)


def precision_plot(per_class: list[dict], overall: dict, classes_in_dataset: int) -> bytes:
    """Each class's precision with its interval, sorted, the pooled figure as a line (PNG)."""
    rows = sorted((r for r in per_class if r["precision"] is not None), key=lambda r: (r["precision"], r["name"]))
    figure = Figure(figsize=(7, max(2.5, 0.22 * len(rows) + 1.2)), dpi=100)
    FigureCanvasAgg(figure)
    axis = figure.subplots()
    y = np.arange(len(rows))
    value = np.array([r["precision"] for r in rows])
    errors = np.array([[r["precision"] - r["low"], r["high"] - r["precision"]] for r in rows]).T if rows else None
    axis.errorbar(value, y, xerr=errors, fmt="o", markersize=4, capsize=2)
    if overall["precision"] is not None:
        axis.axvline(
            overall["precision"],
            color="grey",
            linestyle="--",
            linewidth=1,
            label=f"{pooled_classes(overall, classes_in_dataset) or 'overall'} {overall['precision']:.3f}",
        )
        axis.legend(fontsize="small", loc="lower left")
    axis.set_yticks(y, [r["name"] for r in rows], fontsize="x-small")
    axis.set(xlim=(0, 1.02), xlabel="label precision (raters), 95% Clopper-Pearson interval")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def review_figures(run_dir: str, config: Config, store: Store) -> tuple[dict, pa.Table, pa.Table]:
    """(results, answers table, per-image table) of the answers so far."""
    settings = config.review
    plan = read_plan(run_dir)
    given = store.all_answers()
    answers = pa.Table.from_pylist([dict(zip(ANSWERS_SCHEMA.names, a)) for a in given], ANSWERS_SCHEMA)
    triples = [(rater, image, answer) for rater, image, _, answer, _ in given]
    images, accuracy = aggregate.image_figures(plan, triples, settings)
    classes = read_classes(run_dir)
    overall = aggregate.overall_precision(images, settings)
    per_class = aggregate.class_precision(images, classes, settings, stated=overall["withheld"] is None)
    answered = images.filter(
        pc.greater(pc.add(pc.add(images.column("yes"), images.column("no")), images.column("unsure")), 0)
    )
    raters = sorted({a[0] for a in given})
    agreement = aggregate.rater_agreement(triples)
    sharing = aggregate.raters_sharing(triples)
    dropped = _dropped(run_dir)
    results = {
        "instructions": {"class": CLASS_INSTRUCTIONS, "flagged": FLAGGED_INSTRUCTIONS},
        "show_captions": settings.show_captions,
        "placeholder_images": placeholder_images(config.download),  # the demo's: each prints its caption
        "confidence": settings.confidence,
        "min_selection": settings.min_selection,
        "raters_wanted": settings.raters,
        "raters": [
            {
                "name": r,
                "answers": sum(1 for a in given if a[0] == r),
                "dawid_skene_accuracy": accuracy.get(r) if r in sharing else None,
                "shares_images": r in sharing,
                "agreement_with_others": agreement.get(r),
            }
            for r in raters
        ],
        "answers": len(given),
        "answers_by_kind": dict(sorted(Counter(a[3] for a in given).items())),
        "unsure_answers": sum(1 for a in given if a[3] == "unsure"),
        "planned_images": plan.num_rows,
        "images_answered": answered.num_rows,
        "images_unsure_only": sum(1 for r in images.to_pylist() if r["unsure"] and r["accepted"] is None),
        "classes_in_dataset": len(classes),
        "per_class": per_class,
        "overall": overall,
        "dropped": dropped,
        "dropped_before_complete": _dropped_before_complete(images, dropped, settings.raters),
    }
    return results, answers, images


def _dropped_before_complete(images: pa.Table, dropped: list[str], wanted: int) -> int:
    """How many of the dropped images lack the answers `review apply` drops on by default (dropped
    under `--drop-incomplete`): the card names them."""
    gone = set(dropped)
    return sum(
        1
        for r in images.to_pylist()
        if r["row_id"] in gone and not aggregate.droppable({**r, "accepted": False}, wanted)
    )


def _dropped(run_dir: str) -> list[str]:
    """The row ids review apply dropped, in the order dropped."""
    drops = read_drops(stage_path(run_dir, DOWNLOAD))
    return drops.filter(pc.equal(drops.column("reason"), REVIEW_REASON)).column("row_id").to_pylist()


def export_review(run_dir: str, config: Config) -> dict:
    """Write the answers and their figures into the run's review folder; the results."""
    store = Store(run_dir)
    try:
        results, answers, images = review_figures(run_dir, config, store)
        _write_parquet(stage_path(run_dir, REVIEW, REVIEW_ANSWERS_FILE), answers)
        _write_parquet(stage_path(run_dir, REVIEW, REVIEW_IMAGES_FILE), images)
        write_bytes(
            stage_path(run_dir, REVIEW, REVIEW_PLOT_FILE),
            precision_plot(results["per_class"], results["overall"], results["classes_in_dataset"]),
        )
        write_json(results_path(run_dir), results)
        copy_back(run_dir, store)
    finally:
        store.close()
    return results


def read_images(run_dir: str) -> pa.Table | None:
    path = stage_path(run_dir, REVIEW, REVIEW_IMAGES_FILE)
    return read_table(path) if FileSystems.exists(path) else None


def why_line(run_dir: str, wnid: str) -> str | None:
    """For `imagenot why`: the class's images that review dropped, with their answers."""
    dropped = set(_dropped(run_dir))
    if not dropped:
        return None
    images = read_images(run_dir)
    plan = read_plan(run_dir)
    rows = [
        r for r in plan.select(["row_id", "wnid", "image"]).to_pylist() if r["wnid"] == wnid and r["row_id"] in dropped
    ]
    if not rows:
        return None
    answers = {r["image"]: r for r in images.to_pylist()} if images is not None else {}
    described = ", ".join(
        f"{r['row_id']} ({answers[r['image']]['yes']} yes, {answers[r['image']]['no']} no)"
        if r["image"] in answers
        else r["row_id"]
        for r in rows
    )
    return f"review: dropped {len(rows):,} images the raters rejected (review_rejected): {described}"

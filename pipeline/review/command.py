"""`imagenot review plan|serve|status|export|apply --run RUN`: people check the labels.

plan: choose the images (`review.plan`); serve: the web app raters use (`review.app`); status:
answers so far; export: answers and figures into the run (`review.results`); apply: drop what
the raters rejected, backfill from the reserve, put the replacements up for review, and write
the report and the export again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import click

from imagenot.pipeline.frame.lock_option import absolute_paths, break_lock_option, run_config_option
from imagenot.pipeline.review.class_command import classes_command
from imagenot.pipeline.review.serving import server_options
from imagenot.pipeline.review.stages_shown import BACKFILL, ROUNDS, stages_shown

if TYPE_CHECKING:  # the command's modules load at its first use, so that `review --help` loads no Beam
    import pyarrow as pa

    from imagenot.pipeline.config.schema import Config

log = logging.getLogger(__name__)  # what `review apply` is doing, shown as it goes
run_option = click.option(
    "--run", "run_dir", required=True, callback=absolute_paths, help="run directory with a finished download/ stage"
)


def _config(run_dir: str, config_path: str | None, command: str, **review: object) -> Config:
    """The run's config with the command's review options over it, once the run is checked."""
    from imagenot.pipeline.config.schema import load_run_config
    from imagenot.pipeline.review.run_check import require_stage
    from imagenot.pipeline.run.layout import DOWNLOAD

    require_stage(run_dir, DOWNLOAD, f"review {command}")
    config = load_run_config(run_dir, config_path)
    changed = {k: v for k, v in review.items() if v is not None}
    return config.model_copy(update={"review": config.review.model_copy(update=changed)}) if changed else config


@click.group("review")
def review_command() -> None:
    """Human review: raters check the labels in a browser; the card states the measured precision."""


@review_command.command("plan")
@run_option
@click.option(
    "--margin",
    type=click.FloatRange(0, 0.5, min_open=True, max_open=True),
    help="half-width of each class's interval [review.margin]",
)
@click.option(
    "--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), help="its confidence [review.confidence]"
)
@click.option("--raters", type=click.IntRange(1, 50), help="answers wanted per image [review.raters]")
@run_config_option
@break_lock_option
def plan_command(
    run_dir: str,
    margin: float | None,
    confidence: float | None,
    raters: int | None,
    config_path: str | None,
    break_lock: bool,
) -> None:
    """Choose the images raters will see: a sample per class sized for the interval, and every audit-flagged image."""
    config = _config(run_dir, config_path, "plan", margin=margin, confidence=confidence, raters=raters)
    _plan_and_show(config, run_dir, break_lock)
    click.echo(f"next: imagenot review serve --run {run_dir}")


def _plan_and_show(config: Config, run_dir: str, break_lock: bool = False) -> None:
    """Plan the review and print its table: per class images, tasks and rater-minutes."""
    from imagenot.pipeline.review import plan as review_plan
    from imagenot.pipeline.run.layout import read_classes
    from imagenot.pipeline.run.lock import run_lock

    with run_lock(run_dir, config.runner.lock_stale_after_s, break_lock, create_dir=False):
        plan = review_plan.make_plan(config, run_dir)
        review_plan.write_plan(run_dir, plan)
    settings = config.review
    rows = review_plan.plan_table(plan, read_classes(run_dir), settings)
    click.echo(f"{'class':<32} {'images':>7} {'flagged':>7} {'tasks':>7} {'minutes':>8}")
    for r in rows:
        counts = f"{r['images']:>7} {r['flagged']:>7} {r['tasks']:>7} {r['rater_minutes']:>8.1f}"
        click.echo(f"{r['class_index']:>4} {r['name'][:27]:<27} {counts}")
    total = sum(r["rater_minutes"] for r in rows)
    click.echo(
        f"{plan.num_rows:,} images, {sum(r['tasks'] for r in rows):,} answers wanted ({settings.raters} raters each), "
        f"about {total:,.0f} rater-minutes at {settings.class_seconds_per_image:g} s an image on class pages and "
        f"{settings.flagged_seconds_per_image:g} s on flagged pages -> {review_plan.plan_path(run_dir)}"
    )


@review_command.command("serve")
@run_option
@server_options(8780)
@run_config_option
def serve_command(run_dir: str, host: str, port: int, token: str | None, threads: int, config_path: str | None) -> None:
    """Serve the review pages to raters' browsers (answers go to SQLite as they are given)."""
    from apache_beam.io.filesystems import FileSystems

    from imagenot.pipeline.demo.serving import placeholder_images
    from imagenot.pipeline.review import plan as review_plan
    from imagenot.pipeline.review.app import create_app
    from imagenot.pipeline.review.serving import serve_app, server_token
    from imagenot.pipeline.review.session import ReviewSession
    from imagenot.pipeline.review.store import Store, database_path
    from imagenot.wordnet.index import load_index

    token = server_token(host, token)
    config = _config(run_dir, config_path, "serve")
    if not FileSystems.exists(review_plan.plan_path(run_dir)):
        click.echo("no review plan yet: planning one with the run's settings (imagenot review plan changes them)")
        _plan_and_show(config, run_dir)
    store = Store(run_dir)
    session = ReviewSession(run_dir, config.review, load_index(), store)
    app = create_app(session, store.secret(), token, placeholder_images(config.download))
    click.echo(f"review of {run_dir}: {len(session.tasks):,} pages, answers in {database_path(run_dir)}")
    serve_app(app, host, port, token, threads)


@review_command.command("status")
@run_option
@run_config_option
def status_command(run_dir: str, config_path: str | None) -> None:
    """Answers so far: per class, images still needing answers, per rater with agreement."""
    from collections import Counter

    from imagenot.pipeline.review import plan as review_plan
    from imagenot.pipeline.review.aggregate import rater_agreement
    from imagenot.pipeline.review.store import Store
    from imagenot.pipeline.run.filesystems import local_reads
    from imagenot.pipeline.run.layout import read_classes

    with local_reads():  # a local run's table in a second, without Beam's import
        config = _config(run_dir, config_path, "status")
        store = Store(run_dir)
        try:
            given = store.all_answers()  # (rater, image, task, answer, answered_at)
        finally:
            store.close()
        plan = review_plan.read_plan(run_dir).select(["image", "class_index"]).to_pylist()
        current = review_plan.image_ids(review_plan.read_dataset(run_dir))
        names = {c["index"]: c["name"] for c in read_classes(run_dir)}
    answers, wanted = Counter(image for _, image, *_ in given), config.review.raters
    images = [r for r in plan if r["image"] in current]
    per_class: dict[int, list[int]] = {}  # class -> [answers, images needing more]
    for r in images:
        tally = per_class.setdefault(r["class_index"], [0, 0])
        tally[0] += answers[r["image"]]
        tally[1] += answers[r["image"]] < wanted
    click.echo(f"{'class':<32} {'answers':>8} {'need more':>9}")
    for c, (on_class, left) in sorted(per_class.items()):
        click.echo(f"{c:>4} {names.get(c, '?'):<27} {on_class:>8} {left:>9}")
    on_current, left = (sum(t[i] for t in per_class.values()) for i in (0, 1))
    gone, unsure = len(given) - on_current, sum(1 for a in given if a[3] == "unsure")
    click.echo(
        f"{on_current:,} answers on the dataset's images ({unsure:,} unsure in all"
        + (f"; {gone:,} more on images no longer in the dataset" if gone else "")
        + f"); {left:,} of {len(images):,} images need more"
    )
    agreement, by_rater = rater_agreement([(r, i, a) for r, i, _, a, _ in given]), Counter(a[0] for a in given)
    for rater in sorted(by_rater):
        agrees = "n/a" if agreement[rater] is None else f"{agreement[rater]:.1%}"
        click.echo(f"rater {rater!r}: {by_rater[rater]:,} answers, agrees with the others' majority on {agrees}")


@review_command.command("export")
@run_option
@run_config_option
def export_command(run_dir: str, config_path: str | None) -> None:
    """Write review/answers.parquet, images.parquet, results.json and precision.png into the run."""
    from imagenot.pipeline.review.results import export_review

    results = export_review(run_dir, _config(run_dir, config_path, "export"))
    overall = results["overall"]
    said = (
        f"overall precision withheld: {overall['withheld']}"
        if overall.get("withheld")
        else f"{_precision_of(overall, results['classes_in_dataset'])} {_rounded(overall['precision'])} "
        f"over {overall['decided']:,} images"
    )
    click.echo(f"review export: {results['answers']:,} answers by {len(results['raters'])} raters; {said}")


def _precision_of(overall: dict, classes_in_dataset: int) -> str:
    from imagenot.pipeline.report.human_review import pooled_classes

    pooled = pooled_classes(overall, classes_in_dataset)
    return f"precision in {pooled}" if pooled else "overall precision"


def _rounded(share: float | None) -> str:
    """A precision as the card gives it (3 decimals), or what stands for none yet."""
    return "not measured yet" if share is None else f"{share:.3f}"


def rejected_rows(run_dir: str, images: pa.Table, wanted: int, drop_incomplete: bool) -> pa.Table:
    """The dataset's images the raters rejected and not dropped yet: row_id, reason, duplicate_of.
    An image is dropped once its answers are complete or a majority of the `wanted` answers say no;
    on fewer answers only with `drop_incomplete`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from imagenot.pipeline.download import drops
    from imagenot.pipeline.review import plan as review_plan
    from imagenot.pipeline.review.aggregate import droppable
    from imagenot.pipeline.review.results import REVIEW_REASON
    from imagenot.pipeline.run.layout import DOWNLOAD, stage_path

    rejected = [
        r["row_id"]
        for r in images.filter(pc.equal(pc.fill_null(images.column("accepted"), True), False)).to_pylist()
        if drop_incomplete or droppable(r, wanted)
    ]
    in_dataset = set(review_plan.read_dataset(run_dir).column("row_id").to_pylist())
    done = set(drops.reasons(drops.read_drops(stage_path(run_dir, DOWNLOAD))))
    rows = sorted(r for r in rejected if r in in_dataset and r not in done)
    return pa.table(
        {
            "row_id": pa.array(rows, pa.string()),
            "reason": pa.array([REVIEW_REASON] * len(rows), pa.string()),
            "duplicate_of": pa.nulls(len(rows), pa.string()),
        }
    )


def apply_review(config: Config, run_dir: str, drop_incomplete: bool = False) -> dict:
    """Drop the rejected images, backfill, review the replacements; what it did."""
    from imagenot.pipeline.amend import backfill
    from imagenot.pipeline.frame.registry import run_stage
    from imagenot.pipeline.report import stage as report_stage
    from imagenot.pipeline.review import plan as review_plan
    from imagenot.pipeline.review.results import REVIEW_REASON, export_review, review_figures
    from imagenot.pipeline.review.store import Store
    from imagenot.pipeline.run.journal import remembered, texts

    before = set(
        remembered("dataset before", lambda: review_plan.read_dataset(run_dir).column("row_id").to_pylist(), texts)
    )
    log.info("reading the answers")
    store = Store(run_dir)
    try:
        _, _, images = review_figures(run_dir, config, store)
    finally:
        store.close()
    wanted = config.review.raters
    result = backfill.drop_and_backfill(
        config, run_dir, "review apply", lambda: rejected_rows(run_dir, images, wanted, drop_incomplete)
    )
    after = set(review_plan.read_dataset(run_dir).column("row_id").to_pylist())
    waiting = sum(1 for r in images.to_pylist() if r["accepted"] is False and r["row_id"] in after)
    added = review_plan.extend_plan(config, run_dir, after - before)
    log.info("review figures: writing them again")
    export_review(run_dir, config)  # the figures name the dropped images, for the report
    log.info("report: running")
    run_stage(report_stage.DECLARATION, config, run_dir)  # the review's figures changed, whatever was dropped
    if shortfall := backfill.refresh_outputs(config, run_dir):
        click.echo(f"Warning: {shortfall}", err=True)
    return {
        "dropped": result.dropped.get(REVIEW_REASON, 0),
        "waiting": waiting,
        "passes": result.passes,
        "backfilled": len(after - before),
        "put_up_for_review": added,
    }


def apply_line(done: dict, wanted: int) -> str:
    """What `review apply` did, in one line a person reads."""
    from imagenot.pipeline.report.markdown import count_of

    waiting = (
        f"; {count_of(done['waiting'], 'more rejected image')} wait for all {wanted} answers "
        "(--drop-incomplete drops them now)"
        if done["waiting"]
        else ""
    )
    return (
        f"review apply: dropped {count_of(done['dropped'], 'image')} the raters rejected{waiting}; "
        f"{count_of(done['backfilled'], 'image')} came from the reserve in {count_of(done['passes'], 'pass')} "
        "(in the dropped images' places, and in any class still short), "
        f"{done['put_up_for_review']:,} of them put up for review"
    )


@review_command.command("apply")
@run_option
@click.option(
    "--min-selection",
    type=click.FloatRange(0, 1),
    help="keep an image when yes / (yes + no) reaches this [review.min_selection]",
)
@click.option(
    "--drop-incomplete",
    is_flag=True,
    help="also drop rejected images that lack some of the answers wanted (the card names how many were)",
)
@run_config_option
@break_lock_option
def apply_command(
    run_dir: str, min_selection: float | None, drop_incomplete: bool, config_path: str | None, break_lock: bool
) -> None:
    """Drop the images raters rejected, backfill from the reserve, and write the report and export again."""
    from imagenot.pipeline.review.plan import read_plan
    from imagenot.pipeline.run.journal import rewriting

    config = _config(run_dir, config_path, "apply", min_selection=min_selection)
    read_plan(run_dir)  # a run with no review plan is refused before the intent is recorded: nothing to finish
    args = {"--run": run_dir, "--min-selection": min_selection, "--drop-incomplete": drop_incomplete}
    with rewriting(
        run_dir, config.runner.lock_stale_after_s, break_lock, "review apply", args | {"--config": config_path}
    ):
        with stages_shown(__name__, BACKFILL, ROUNDS):
            done = apply_review(config, run_dir, drop_incomplete)
    click.echo(apply_line(done, config.review.raters))


review_command.add_command(classes_command)

"""`imagenot review classes serve|status|export|apply --run RUN`: people check the class list.

serve: one candidate class a page, best first (`class_plan`, `class_app`); status: answers so
far; export: the answers and figures into the run (`class_results`); apply: the classes raters
dropped are written to RUN/vetoed_classes.txt (every later build of the run keeps them out, with
any config) and `ranking.vetoed` in RUN/config.yaml, and the run is built again from rank on (as
resume does: a changed setting reruns its stage and those after it; nothing fetched for a kept
class is fetched again), the next candidates in rank order taking the dropped classes' places
and coming up for review.
"""

from __future__ import annotations

import click

from imagenot.pipeline.frame.lock_option import absolute_paths, break_lock_option, run_config_option
from imagenot.pipeline.report.markdown import count_of
from imagenot.pipeline.review.serving import server_options
from imagenot.pipeline.review.stages_shown import BUILD, ROUNDS, stages_shown

# The commands' modules load at their first use, so that `review classes --help` loads no Beam.

run_option = click.option(
    "--run",
    "run_dir",
    required=True,
    callback=absolute_paths,
    help="run directory with a finished rank/ stage (with --list: where answers go)",
)
list_option = click.option(
    "--list", "list_path", callback=absolute_paths, help="review this class list (wnids, one a line), not the run's"
)


def _require_rank(run_dir: str, command: str, list_review: bool = False) -> None:
    """The class review reads rank's class list: refuse a folder without one before writing, unless
    (`list_review`) it holds the answers of a `--list` review."""
    from imagenot.pipeline.review.class_results import CLASS_DB_FILE
    from imagenot.pipeline.review.run_check import require_stage
    from imagenot.pipeline.review.store import database_path
    from imagenot.pipeline.run.layout import RANK

    if not (list_review and database_path(run_dir, CLASS_DB_FILE).exists()):
        require_stage(run_dir, RANK, f"review classes {command}")


@click.group("classes")
def classes_command() -> None:
    """Class review: raters read each candidate class (gloss, captions) and keep or drop it."""


@classes_command.command("serve")
@run_option
@server_options(8781)
@list_option
@click.option(
    "--corpus",
    callback=absolute_paths,
    help="with --list: the corpus (paths or globs) whose captions are shown [corpus.paths]",
)
@run_config_option
def serve_command(
    run_dir: str,
    host: str,
    port: int,
    token: str | None,
    threads: int,
    list_path: str | None,
    corpus: str | None,
    config_path: str | None,
) -> None:
    """Serve the class pages to raters' browsers, best candidate first (answers go to SQLite as given)."""
    from imagenot.pipeline.demo.serving import placeholder_images
    from imagenot.pipeline.review import class_plan
    from imagenot.pipeline.review.candidates import ranked_classes, ranking_path
    from imagenot.pipeline.review.class_app import create_class_app
    from imagenot.pipeline.review.class_results import CLASS_DB_FILE, review_config
    from imagenot.pipeline.review.class_session import ClassSession
    from imagenot.pipeline.review.serving import serve_app, server_token
    from imagenot.pipeline.review.store import Store, database_path
    from imagenot.pipeline.run.layout import DATASET_DIR, DONE_FILE, DOWNLOAD, stage_path
    from imagenot.wordnet.index import load_index

    token = server_token(host, token)
    config, index = review_config(run_dir, config_path), load_index()
    if list_path is None:
        _require_rank(run_dir, "serve")
    if list_path is not None:
        if corpus is not None:
            config = config.model_copy(
                update={"corpus": config.corpus.model_copy(update={"paths": [corpus], "synth": None})}
            )
        if not config.corpus.paths and config.corpus.synth is None:
            raise click.UsageError("--list needs --corpus (or a config whose corpus.paths name one)")
        click.echo(f"reading {class_plan.LIST_SAMPLE_ROWS:,} corpus rows for the captions of {list_path}'s classes")
        read, watched = (lambda: class_plan.listed_candidates(config, index, list_path)), []
    else:
        ranked_classes(run_dir)  # refused at once without a class list
        read = lambda: class_plan.candidates(run_dir, config, index)  # noqa: E731
        watched = [
            ranking_path(run_dir),
            stage_path(run_dir, DOWNLOAD, DONE_FILE),
            stage_path(run_dir, DOWNLOAD, DATASET_DIR, "*.parquet"),
        ]
    store = Store(run_dir, CLASS_DB_FILE)
    settings = config.review
    session = ClassSession(run_dir, settings.class_raters, store, read, watched, settings.unsure_classes_again)
    placeholders = list_path is None and placeholder_images(config.download)  # a list's classes show no images
    app = create_class_app(session, store.secret(), token, config.review.max_body_bytes, placeholders)
    click.echo(
        f"class review of {run_dir}: {len(session.tasks):,} classes, {config.review.class_raters} answers wanted "
        f"each, answers in {database_path(run_dir, CLASS_DB_FILE)}"
    )
    serve_app(app, host, port, token, threads)


@classes_command.command("status")
@run_option
@list_option
@run_config_option
def status_command(run_dir: str, list_path: str | None, config_path: str | None) -> None:
    """Answers so far: per class in rank (or list) order keep / drop / unsure, and the classes that need more."""
    from imagenot.pipeline.config.reference_lists import read_class_list
    from imagenot.pipeline.review.candidates import ranked_names, review_candidates
    from imagenot.pipeline.review.class_results import CLASS_DB_FILE, class_figures, dropped_classes, review_config
    from imagenot.pipeline.review.store import Store
    from imagenot.pipeline.run.filesystems import local_reads
    from imagenot.wordnet.index import load_index

    with local_reads():  # a local run's table in a second, without Beam's import (nor WordNet's, but for a list)
        _require_rank(run_dir, "status", list_review=list_path is not None)
        config = review_config(run_dir, config_path)
        if list_path is None:
            listed = [r["wnid"] for r in review_candidates(run_dir, config.review.extra_candidates)]
            names = ranked_names(run_dir)
            name_of = lambda wnid: names.get(wnid, wnid)  # noqa: E731
        else:
            index = load_index()
            listed = read_class_list(list_path, index)
            name_of = lambda wnid: index[wnid].name if wnid in index else wnid  # noqa: E731
        store = Store(run_dir, CLASS_DB_FILE)
        try:
            results = class_figures(config, name_of, store)
        finally:
            store.close()
    answered = {c["wnid"]: c for c in results["classes"]}
    settings = config.review
    wanted = settings.class_raters
    vetoed = [w for w in results["vetoed"] if w not in listed]  # out of the list now: shown after it
    rows = [(f"{position:>4} {wnid} {name_of(wnid)}", wnid) for position, wnid in enumerate(listed, 1)]
    rows += [(f"   - {wnid} {name_of(wnid)}", wnid) for wnid in vetoed]
    width = max([40, *(len(shown) for shown, _ in rows)])  # whole names: a cut one may name another class
    click.echo(f"{'class':<{width}} {'keep':>5} {'drop':>5} {'unsure':>6}  verdict")
    need = 0
    for shown, wnid in rows:
        c = answered.get(wnid, {"keep": 0, "drop": 0, "unsure": 0, "verdict": None})
        undecided = settings.unsure_classes_again and c["keep"] + c["drop"] == 0  # offered again
        need += wnid in listed and (c["keep"] + c["drop"] + c["unsure"] < wanted or undecided)
        verdict = "drop, vetoed (applied)" if wnid in vetoed else c["verdict"] or "-"
        click.echo(f"{shown:<{width}} {c['keep']:>5} {c['drop']:>5} {c['unsure']:>6}  {verdict}")
    dropped = dropped_classes(results)
    click.echo(
        f"{count_of(results['answers'], 'answer')} by {count_of(len(results['raters']), 'rater')}; "
        f"{need:,} of {count_of(len(listed), 'class')} need more "
        f"({wanted} answers wanted each"
        + ("; one with only unsure answers until a rater keeps or drops it" if settings.unsure_classes_again else "")
        + f"); {results['kept']:,} of {results['reviewed']:,} decided kept; "
        f"{len(dropped):,} dropped and not applied yet"
        + (f" ({', '.join(dropped)})" if dropped else "")
        + (f"; {count_of(len(vetoed), 'class')} vetoed by an earlier apply (listed last)" if vetoed else "")
    )


@classes_command.command("export")
@run_option
@run_config_option
def export_command(run_dir: str, config_path: str | None) -> None:
    """Write review/class_answers.parquet and review/class_results.json into the run."""
    from imagenot.pipeline.review.class_results import export_classes, review_config
    from imagenot.wordnet.index import load_index

    _require_rank(run_dir, "export", list_review=True)
    results = export_classes(run_dir, review_config(run_dir, config_path), load_index())
    share = "not measured yet" if results["share"] is None else f"{results['share']:.3f}"
    click.echo(
        f"class review export: {count_of(results['answers'], 'answer')} "
        f"by {count_of(len(results['raters']), 'rater')}; "
        f"{results['kept']:,} of {results['reviewed']:,} decided classes kept ({share})"
    )


@classes_command.command("apply")
@run_option
@run_config_option
@break_lock_option
def apply_command(run_dir: str, config_path: str | None, break_lock: bool) -> None:
    """Veto the classes raters dropped (ranking.vetoed) and build the run again from rank on."""
    from imagenot.pipeline.frame.build import build
    from imagenot.pipeline.frame.preflight import build_stages, preflight
    from imagenot.pipeline.review.candidates import ranked_classes
    from imagenot.pipeline.review.class_results import (
        dropped_classes,
        export_classes,
        review_config,
        with_vetoes,
        write_vetoes,
    )
    from imagenot.pipeline.review.promotions import record_promotions
    from imagenot.pipeline.run.journal import rewriting, texts
    from imagenot.wordnet.index import load_index

    _require_rank(run_dir, "apply")
    config, index = review_config(run_dir, config_path), load_index()

    def wnids(value: object) -> list[str]:  # as remembered: each a synset of WordNet's
        if unknown := [wnid for wnid in texts(value) if wnid not in index]:
            raise ValueError(f"{unknown[0]!r} is no WordNet noun synset's wnid")
        return value

    args = {"--run": run_dir, "--config": config_path}
    with rewriting(
        run_dir,
        config.runner.lock_stale_after_s,
        break_lock,
        "review classes apply",
        args,
        check=lambda: preflight(config, run_dir, build_stages(config)),  # the vetoes change none of its checks
    ) as intent:
        # what it sets out to do is in the run's journal before the first write: a rerun of a killed
        # apply reads it back (the run it left half rebuilt would say nothing is left to veto)
        dropped = intent.remembered(
            "vetoes", lambda: dropped_classes(export_classes(run_dir, config, index)), read=wnids
        )
        if not dropped:
            click.echo("class review apply: no class was dropped (more drop than keep answers); nothing to do")
            return
        before = set(
            intent.remembered("classes before", lambda: [r["wnid"] for r in ranked_classes(run_dir)], read=wnids)
        )
        config = with_vetoes(config, dropped)
        export_classes(run_dir, config, index)  # the card the build writes lists the vetoes
        click.echo(f"class review apply: vetoing {', '.join(dropped)}; building the run again from rank on", err=True)
        with stages_shown(BUILD, ROUNDS):
            ran = build(config, run_dir)
        listed = write_vetoes(run_dir, config.ranking.vetoed, index)  # once the run is built without them
        promoted = sorted({r["wnid"] for r in ranked_classes(run_dir)} - before)
        record_promotions(run_dir, promoted, [w for w in dropped if w in before])  # their pages say whom they replaced
    click.echo(
        f"class review apply: vetoed {', '.join(dropped)} (listed in {listed}, which every build of the run "
        "keeps out); "
        f"promoted {', '.join(promoted) or 'none (no candidate left)'}, now up for review; "
        f"stages run again: {', '.join(ran)}"
    )

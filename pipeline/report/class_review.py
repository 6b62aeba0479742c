"""The card's and the report's Class review section, from `review/class_results.json` (`imagenot
review classes export` or `apply`): how many classes people kept of those they reviewed, with its
interval, each class they dropped with every rater's answer, and each class of the dataset no
rater decided (a candidate promoted after a veto stays so until raters answer it)."""

from __future__ import annotations

import html

from imagenot.pipeline.report.markdown import count_of, table
from imagenot.pipeline.run.files import read_json
from imagenot.pipeline.run.filesystems import FileSystems
from imagenot.pipeline.run.layout import REVIEW, VETOES_FILE, stage_path

CLASS_RESULTS_FILE = "class_results.json"


def results_path(run_dir: str) -> str:
    return stage_path(run_dir, REVIEW, CLASS_RESULTS_FILE)


def read_class_results(run_dir: str) -> dict | None:
    path = results_path(run_dir)
    return read_json(path) if FileSystems.exists(path) else None


def _plain(text: str) -> str:
    return html.escape(text).replace("|", "\\|")


def _where(dropped: list[dict]) -> str:
    named = ", ".join(f"`{c['wnid']}` {c['name']}" for c in dropped)
    return (
        f" ({named}), listed in the run folder's `{VETOES_FILE}`: every build and `imagenot rank` of the run "
        "keeps them out, whatever config it is given (they join `ranking.vetoed`):"
    )


def _undecided(results: dict, classes: list[dict]) -> str:
    """The bullet naming the dataset's classes no rater decided."""
    decided = {c["wnid"] for c in results["classes"] if c["verdict"] is not None}
    left = [c for c in classes if c["wnid"] not in decided]
    if not left:
        return f"- **Not decided by the raters**: none; every one of the dataset's {len(classes):,} classes was kept."
    named = ", ".join(f"`{c['wnid']}` {c['name']}" for c in left)
    return (
        f"- **Not decided by the raters**: {count_of(len(left), 'class')} of the dataset's {len(classes):,} "
        f"({named}): promoted after a veto or not answered yet, their place rests on the pipeline's ranking alone "
        + (
            "(`imagenot review classes serve` offers them next)."
            if results.get("unsure_classes_again", True)  # older results: the server then offered only those short
            else f"(`imagenot review classes serve` offers those with fewer than {results['raters_wanted']} answers "
            "next; those answered only unsure stay undecided: `review.unsure_classes_again` is false)."
        )
    )


def class_review_lines(results: dict | None, classes: list[dict]) -> list[str]:
    """The card's section (Markdown lines) over the dataset's `classes` (wnid, name); none without a
    class review."""
    if results is None:
        return []
    confidence = round(100 * results["confidence"])
    share = (
        f"{results['share']:.3f} [{results['low']:.3f}, {results['high']:.3f}] ({confidence}% Clopper-Pearson)"
        if results["reviewed"]
        else "not measured yet"
    )
    dropped = [c for c in results["classes"] if c["wnid"] in set(results["vetoed"])]
    rows = [
        (
            f"`{c['wnid']}` {c['name']}",
            c["keep"],
            c["drop"],
            c["unsure"],
            "; ".join(f"{_plain(rater)}: {answer}" for rater, answer in c["answers"]),
        )
        for c in dropped
    ]
    lines = [
        "## Class review",
        "",
        f"{count_of(len(results['raters']), 'rater')} read the candidate classes "
        f"(name, gloss, WordNet path, {results['captions_shown']} captions each; "
        f"{results['raters_wanted']} answers wanted a class): "
        f"{results['kept']:,} of the {results['reviewed']:,} classes decided were kept, {share}. "
        "A class is dropped when more raters answered drop than keep; the next candidates in rank order "
        "took the dropped classes' places.",
        "",
        f"- **Dropped by the class review**: {count_of(len(dropped), 'class')}" + (_where(dropped) if dropped else "."),
        "",
    ]
    if rows:
        lines += table(("class", "keep", "drop", "unsure", "answers"), rows, "lrrrl")
    pending = [c for c in results["classes"] if c["verdict"] == "drop" and c["wnid"] not in set(results["vetoed"])]
    if pending:
        named = ", ".join(f"`{c['wnid']}` {c['name']}" for c in pending)
        lines += [f"- **Dropped and not applied yet** (`imagenot review classes apply` vetoes them): {named}.", ""]
    return [*lines, _undecided(results, classes), ""]

"""The card's Class review section, from `review/class_results.json` (`imagenot review classes
export` or `apply`): how many classes people kept of those they reviewed, with its interval, and
each class they dropped with every rater's answer."""

from __future__ import annotations

import html

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.report.markdown import count_of, table
from imagenot.pipeline.run.files import read_json
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


def class_review_lines(results: dict | None) -> list[str]:
    """The card's section (Markdown lines); none without a class review."""
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
    return lines

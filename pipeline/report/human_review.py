"""The card's and the report's Human review section, from `review/results.json` (`imagenot review export`)."""

from __future__ import annotations

import html

from imagenot.pipeline.report.markdown import count_of, table

NOT_DONE = (
    "No person looked at the images: no image's label was checked by a person "
    "(`imagenot review plan --run RUN` starts a review)."
)
LISTED_DROPS = 20


def _interval(row: dict) -> str:
    return "" if row["precision"] is None else f"{row['precision']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"


def pooled_classes(overall: dict, classes_in_dataset: int) -> str | None:
    """How many classes the pooled figure rests on when that is not all of them ("3 of 50 classes"),
    so that it is not called overall; None when it rests on every class."""
    classes = overall.get("classes", classes_in_dataset)  # older results did not say
    return None if classes >= classes_in_dataset else f"{classes:,} of {classes_in_dataset:,} classes"


def _class_figure(row: dict, results: dict) -> str:
    """A class's precision [interval], or why the table gives none: as the headline's rule says."""
    if row["precision"] is not None:
        return _interval(row)
    if results["overall"].get("withheld"):
        return "withheld, as the headline is"
    return f"no image with all {results['raters_wanted']} answers and a yes or no yet"


def _plain(text: str) -> str:
    """A rater's name as text in Markdown: no markup, no table breaks."""
    return html.escape(text).replace("|", "\\|")


def headline(results: dict) -> str:
    """The overall label precision with what it rests on, or why it is withheld."""
    overall, confidence = results["overall"], round(100 * results["confidence"])
    if overall.get("withheld"):
        return f"withheld: {overall['withheld']}"
    if overall["precision"] is None:
        return "not measured yet: no sampled image has a yes or no answer"
    kept = f"{_interval(overall)} ({confidence}% Clopper-Pearson), {overall['accepted']:,} of {overall['decided']:,}"
    if "withheld" not in overall:  # a results.json exported before the headline said what it rests on
        return f"{kept} sampled images kept by the raters"
    return (
        f"{kept} sampled images kept by the raters, in {count_of(overall['classes'], 'class')} of "
        f"{results['classes_in_dataset']:,}, on {count_of(overall['answers'], 'answer')} "
        f"(every image with all {results['raters_wanted']} answers wanted)"
    )


def review_found(results: dict | None) -> str:
    """One sentence on whether people looked at the images, and what they found."""
    if results is None or not results["answers"]:
        return "No person looked at them."
    found = f": label precision {headline(results)}"
    return (
        f"People checked the labels of {count_of(results['images_answered'], 'image')} of them "
        f"(see Human review){found}; "
        "the rest were not looked at."
    )


def _before_complete(results: dict) -> str:
    """Names the images `review apply --drop-incomplete` dropped before their answers were in."""
    n = results.get("dropped_before_complete", 0)
    if not n:
        return ""
    return (
        f" Of these, {n:,} had fewer than the {results['raters_wanted']} answers wanted and no majority of no "
        "(`imagenot review apply --drop-incomplete`)."
    )


def review_lines(results: dict | None) -> list[str]:
    """The card's section (Markdown lines)."""
    if results is None:
        return ["## Human review", "", NOT_DONE, ""]
    confidence = round(100 * results["confidence"])
    raters = [
        (
            _plain(r["name"]),
            r["answers"],
            "no image shared" if r["dawid_skene_accuracy"] is None else r["dawid_skene_accuracy"],
            "no image shared" if r["agreement_with_others"] is None else r["agreement_with_others"],
        )
        for r in results["raters"]
    ]
    wanted = results["raters_wanted"]
    classes = [
        (
            r["name"],
            r["sampled"],
            r["decided"],
            r["accepted"],
            r.get("partly_answered", "not counted"),  # older results counted them as decided
            r["unsure_only"],
            _class_figure(r, results),
        )
        for r in results["per_class"]
    ]
    stated = results["overall"]["precision"] is not None
    pooled = pooled_classes(results["overall"], results["classes_in_dataset"]) if stated else None
    captions = "shown" if results["show_captions"] else "hidden"
    if results.get("placeholder_images") and not results["show_captions"]:
        captions = "hidden, but each of this demo run's placeholder images prints its caption"
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in results["answers_by_kind"].items()) or "none"
    dropped = results["dropped"]
    lines = [
        "## Human review",
        "",
        f"{count_of(len(results['raters']), 'rater')} gave {count_of(results['answers'], 'answer')} ({kinds}) on "
        f"{results['images_answered']:,} of the {results['planned_images']:,} images planned for review "
        f"({wanted} answers wanted each; captions {captions}). "
        f"Unsure answers count as neither yes nor no: {count_of(results['unsure_answers'], 'unsure answer')} "
        f"given; {count_of(results['images_unsure_only'], 'image')} with only unsure answers.",
        "",
        f"- **{f'Label precision in {pooled}' if pooled else 'Overall label precision'}**: {headline(results)}. "
        f"An image is kept when yes / (yes + no) reaches "
        f"{results['min_selection']}; each class's sample is random, audit-flagged extras are left out.",
        f"- **Dropped by review**: {count_of(len(dropped), 'image')}"
        + (
            " (`imagenot review apply`, reason `review_rejected`): "
            f"{', '.join(f'`{r}`' for r in dropped[:LISTED_DROPS])}"
            + (f" and {len(dropped) - LISTED_DROPS:,} more" if len(dropped) > LISTED_DROPS else "")
            if dropped
            else ""
        )
        + "."
        + _before_complete(results),
        "",
        "Instructions raters saw on class pages:",
        "",
        f"> {results['instructions']['class']}",
        "",
        "and on flagged pages (an audit's suspect beside examples of its given and suggested class):",
        "",
        f"> {results['instructions']['flagged']}",
        "",
        "Raters, with Dawid-Skene's estimate of each one's accuracy and their agreement with the others' majority "
        "(both only for a rater who shares images with another):",
        "",
        *table(("rater", "answers", "Dawid-Skene accuracy", "agrees with others"), raters, "lrrr"),
        f"Per class, over the images of its random sample with all {wanted} answers wanted and a yes or no, as "
        f"the headline counts them ({confidence}% Clopper-Pearson intervals; images with fewer answers are "
        "counted apart and left out), and plotted sorted:",
        "",
        "![Label precision per class with its interval, sorted](../review/precision.png)",
        "",
        *table(
            ("class", "sampled", "all answers in", "kept", "fewer answers", "only unsure", "precision [interval]"),
            classes,
            "lrrrrrl",
        ),
    ]
    return lines

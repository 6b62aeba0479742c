"""From raters' answers to figures: per image, per rater, per class and overall.

Per image: yes, no and unsure answers (on a flagged page, `given` and `both` count as yes,
`suggested` and `neither` as no), the selection frequency yes / (yes + no) (ImageNetV2's), the
majority, and Dawid-Skene's probability that the label is right (crowd-kit's EM over the yes/no
answers, which also estimates each rater's accuracy: the chance their answer is the true one,
weighted by the estimated share of right labels). An image is accepted when its selection
frequency reaches `review.min_selection`. Unsure answers are counted, never read as yes or no;
an image with only unsure answers is counted apart and left out of the precision.

Per class: precision = accepted / decided among its sampled images (flagged extras are not a
random sample, so they do not enter it), with a Clopper-Pearson interval. The headline (overall)
pools only the sampled images that have every answer wanted (`review.raters`), and is withheld,
with the reason, while fewer than `review.min_decided_images` of them are decided: a figure on a
few images with one answer each claims more than the answers show. Each class's figure follows
the same rule, so the table and the headline give one account: it counts only the images with
every answer wanted (those with fewer are counted apart), and is withheld while the headline is.
Dawid-Skene's accuracy means something only for a rater who shares an image with another; the
others get none.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import pyarrow as pa

from imagenot.pipeline.config.schema import Review
from imagenot.pipeline.review.sizing import clopper_pearson

AS_LABEL_CHECK = {
    "yes": "yes",
    "given": "yes",
    "both": "yes",
    "no": "no",
    "suggested": "no",
    "neither": "no",
    "unsure": None,
}
IMAGE_SCHEMA = pa.schema(
    [
        ("row_id", pa.string()),
        ("image", pa.string()),
        ("class_index", pa.int32()),
        ("kind", pa.string()),
        ("sampled", pa.bool_()),
        ("yes", pa.int32()),
        ("no", pa.int32()),
        ("unsure", pa.int32()),
        ("selection_frequency", pa.float64()),
        ("majority", pa.string()),
        ("dawid_skene_yes", pa.float64()),
        ("accepted", pa.bool_()),
    ]
)


def dawid_skene(answers: list[tuple[str, str, str]]) -> tuple[dict[str, float], dict[str, float]]:
    """(image -> probability its label is right, rater -> estimated accuracy) from (rater, image,
    yes|no) answers, by crowd-kit's Dawid-Skene EM."""
    if not answers:
        return {}, {}
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    data = pd.DataFrame(answers, columns=["worker", "task", "label"])
    model = DawidSkene(n_iter=100).fit(data)
    probas = model.probas_
    right = probas["yes"] if "yes" in probas.columns else pd.Series(0.0, index=probas.index)
    priors = model.priors_
    accuracy = {}
    for worker in sorted(data["worker"].unique()):
        errors = model.errors_.loc[worker]  # rows: observed label, columns: true label
        accuracy[worker] = float(
            sum(priors[label] * errors.loc[label, label] for label in priors.index if label in errors.index)
        )
    return {image: float(p) for image, p in right.items()}, accuracy


def image_figures(
    plan: pa.Table, answers: list[tuple[str, str, str]], settings: Review
) -> tuple[pa.Table, dict[str, float]]:
    """Per planned image its answers and verdicts (IMAGE_SCHEMA), and the raters' accuracies;
    `answers` are (rater, image, answer) as given."""
    counts: dict[str, Counter] = defaultdict(Counter)
    decisive = []
    for rater, image, answer in answers:
        label = AS_LABEL_CHECK[answer]
        counts[image][label or "unsure"] += 1
        if label is not None:
            decisive.append((rater, image, label))
    right, accuracy = dawid_skene(decisive)
    rows = []
    for r in plan.select(["row_id", "image", "class_index", "kind", "sampled"]).to_pylist():
        c = counts.get(r["image"], Counter())
        decided = c["yes"] + c["no"]
        frequency = c["yes"] / decided if decided else None
        majority = None if not decided else "yes" if c["yes"] > c["no"] else "no" if c["no"] > c["yes"] else "tie"
        rows.append(
            {
                **r,
                "yes": c["yes"],
                "no": c["no"],
                "unsure": c["unsure"],
                "selection_frequency": frequency,
                "majority": majority,
                "dawid_skene_yes": right.get(r["image"]),
                "accepted": None if frequency is None else frequency >= settings.min_selection,
            }
        )
    return pa.Table.from_pylist(rows, IMAGE_SCHEMA), accuracy


def precision(accepted: int, decided: int, confidence: float) -> dict:
    low, high = clopper_pearson(accepted, decided, confidence) if decided else (None, None)
    share = accepted / decided if decided else None
    return {"accepted": accepted, "decided": decided, "precision": share, "low": low, "high": high}


def answers_given(row: dict) -> int:
    return row["yes"] + row["no"] + row["unsure"]


def overall_precision(images: pa.Table, settings: Review) -> dict:
    """The headline over the sampled images with every answer wanted, with what it rests on, or
    withheld (`precision` None, `withheld` the reason) below `review.min_decided_images`."""
    decided = [r for r in images.to_pylist() if r["sampled"] and r["accepted"] is not None]
    complete = [r for r in decided if answers_given(r) >= settings.raters]
    figures = precision(sum(r["accepted"] for r in complete), len(complete), settings.confidence)
    figures.update(
        classes=len({r["class_index"] for r in complete}),
        answers=sum(answers_given(r) for r in complete),
        partly_answered=len(decided) - len(complete),
        withheld=None,
    )
    if len(complete) < settings.min_decided_images:
        figures.update(precision=None, low=None, high=None)
        figures["withheld"] = (
            f"{len(complete):,} sampled images have all {settings.raters} answers wanted and a yes or no, "
            f"fewer than the {settings.min_decided_images:,} `review.min_decided_images` asks for"
            + (f" ({len(decided) - len(complete):,} more have fewer answers)" if len(decided) > len(complete) else "")
        )
    return figures


def raters_sharing(answers: list[tuple[str, str, str]]) -> set[str]:
    """The raters who answered yes or no on an image another rater answered too."""
    by_image: dict[str, set[str]] = defaultdict(set)
    for rater, image, answer in answers:
        if AS_LABEL_CHECK[answer] is not None:
            by_image[image].add(rater)
    return {rater for raters in by_image.values() if len(raters) > 1 for rater in raters}


def droppable(row: dict, wanted: int) -> bool:
    """A rejected image `review apply` drops: its answers are complete, or a majority of the
    answers wanted already say no (more answers cannot save it)."""
    return row["accepted"] is False and (answers_given(row) >= wanted or 2 * row["no"] > wanted)


def class_precision(images: pa.Table, classes: list[dict], settings: Review, stated: bool) -> list[dict]:
    """Per class over its sampled images, by the headline's rule: those with every answer wanted and
    a yes or no (decided, accepted), the precision over them with its interval (none unless the
    headline is `stated`), and apart those with a yes or no but fewer answers and those with only
    unsure answers."""
    by_class: dict[int, Counter] = defaultdict(Counter)
    for r in images.to_pylist():
        if not r["sampled"]:
            continue
        tally = by_class[r["class_index"]]
        tally["sampled"] += 1
        if r["accepted"] is not None and answers_given(r) >= settings.raters:
            tally["decided"] += 1
            tally["accepted"] += r["accepted"]
        elif r["accepted"] is not None:
            tally["partly_answered"] += 1
        elif r["unsure"]:
            tally["unsure_only"] += 1
    rows = []
    for c in classes:
        tally = by_class.get(c["index"])
        if tally:
            rows.append(
                {
                    "class_index": c["index"],
                    "wnid": c["wnid"],
                    "name": c["name"],
                    "sampled": tally["sampled"],
                    "partly_answered": tally["partly_answered"],
                    "unsure_only": tally["unsure_only"],
                    **precision(tally["accepted"], tally["decided"], settings.confidence),
                }
            )
            if not stated:
                rows[-1].update(precision=None, low=None, high=None)
    return rows


def rater_agreement(answers: list[tuple[str, str, str]]) -> dict[str, float | None]:
    """Per rater: the share of their yes/no answers that match the majority of the others' on
    the same image (images where the others are tied or absent are left out)."""
    by_image: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for rater, image, answer in answers:
        if AS_LABEL_CHECK[answer] is not None:
            by_image[image].append((rater, AS_LABEL_CHECK[answer]))
    agree, compared = Counter(), Counter()
    for given in by_image.values():
        for rater, label in given:
            others = Counter(lbl for r, lbl in given if r != rater)
            if others["yes"] != others["no"]:
                compared[rater] += 1
                agree[rater] += label == ("yes" if others["yes"] > others["no"] else "no")
    raters = sorted({rater for rater, _, _ in answers})
    return {r: (agree[r] / compared[r] if compared[r] else None) for r in raters}

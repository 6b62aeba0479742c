"""The report's figures as PNG bytes. matplotlib's object API on the Agg canvas (no pyplot state)
and no Software tag in the PNG, so the same data gives the same bytes."""

from __future__ import annotations

import io
from typing import NamedTuple

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from imagenot.pipeline.report.facts import RunFacts
from imagenot.pipeline.report.funnel import FunnelRow, funnel_rows
from imagenot.pipeline.report.similarity import EDGES, ClassSimilarities
from imagenot.pipeline.report.structure_plots import structure_plots

BOXES = 30  # classes shown as box plots (evenly spread over the ranking)
SHORT = "tab:red"
FULL = "tab:blue"


def _figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def png(figure: Figure) -> bytes:
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _short_name(name: str) -> str:
    """dog.n.01 -> dog (the sense number only when it is not 01)."""
    lemma, _, sense = name.rsplit(".", 2)
    return lemma.replace("_", " ") + ("" if sense == "01" else f" ({sense})")


def funnel_plot(rows: list[FunnelRow]) -> bytes:
    """Synsets and captions left after each step, as two bar charts on log scales."""
    figure = _figure(11, 0.42 * len(rows) + 1.4)
    axes = figure.subplots(1, 2, sharey=True)
    positions = np.arange(len(rows))[::-1]
    for ax, values, title, colour in (
        (axes[0], [r.synsets for r in rows], "synsets left", "tab:green"),
        (axes[1], [r.captions for r in rows], "captions (rows, images) left", FULL),
    ):
        shown = [(p, v) for p, v in zip(positions, values) if v]
        ax.barh([p for p, _ in shown], [v for _, v in shown], color=colour)
        for p, v in shown:
            ax.annotate(f"{v:,}", (v, p), xytext=(3, 0), textcoords="offset points", va="center", fontsize="small")
        ax.set_xscale("log")
        ax.set_xlim(right=max((v for _, v in shown), default=1) * 8)
        ax.set_title(title, fontsize="medium")
    axes[0].set_yticks(positions, [r.step for r in rows])
    return png(figure)


def similarity_summary_plot(similarities: ClassSimilarities) -> bytes:
    """The ImageNot paper's Figure 2: per class, the minimum, mean, median and maximum caption-gloss
    similarity of its captions; each panel is the distribution of one of them over the classes."""
    stats = {
        "minimum": similarities.minimum,
        "mean": similarities.mean,
        "median": similarities.quantile(0.5),
        "maximum": similarities.maximum,
    }
    figure = _figure(11, 2.8)
    axes = figure.subplots(1, 4, sharey=True)
    values = np.concatenate([v[~np.isnan(v)] for v in stats.values()])
    bins = np.linspace(min(values.min(), 0.0), 1.0, 41)
    for ax, (name, v) in zip(axes, stats.items()):
        ax.hist(v[~np.isnan(v)], bins=bins, color=FULL)
        ax.set_xlabel(f"{name} similarity")
    axes[0].set_ylabel("classes")
    return png(figure)


def candidate_scores_plot(candidates: list[dict], threshold: float) -> bytes:
    """Every scored candidate's score (mean top-n first-pass similarity) by its fate, with the threshold."""
    candidates = [c for c in candidates if c["score"] != ""]  # unscored: they could not become classes
    if not candidates:
        return _nothing_to_show("no candidate scored: none could become a class")
    scores = np.array([float(c["score"]) for c in candidates])
    fates = sorted({c["fate"] for c in candidates}, key=lambda f: (f != "class", f))
    figure = _figure(11, 3.0)
    ax = figure.subplots()
    bins = np.linspace(min(scores.min(), threshold) - 0.01, max(scores.max(), threshold) + 0.01, 61)
    stacked = [scores[[c["fate"] == fate for c in candidates]] for fate in fates]
    ax.hist(stacked, bins=bins, stacked=True, label=[f"{f} ({len(s):,})" for f, s in zip(fates, stacked)])
    ax.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold}")
    ax.set_xlabel("synset score: mean of its top-n first-pass caption similarities")
    ax.set_ylabel("candidate synsets")
    ax.legend(fontsize="small")
    return png(figure)


def class_distributions_plot(similarities: ClassSimilarities, names: list[str], scores: list[float]) -> bytes:
    """The ImageNot paper's Figure 3: each class's caption-gloss similarity distribution (left, as
    the share of its captions at or below each similarity, a line per class coloured by the class's
    score), and box plots of BOXES classes spread over the ranking (whiskers at the class's minimum
    and maximum). Cumulative lines stay readable for classes of a few captions and for many classes."""
    figure = _figure(11, 5.5)
    left, right = figure.subplots(1, 2, width_ratios=(3, 2))
    norm = Normalize(min(scores), max(scores))
    colours = colormaps["viridis"]
    alpha = float(np.clip(8 / len(names), 0.15, 0.9))
    for histogram, count, score in zip(similarities.histograms, similarities.counts, scores):
        if count:
            left.step(
                EDGES[1:],
                np.cumsum(histogram) / count,
                where="post",
                color=colours(norm(score)),
                alpha=alpha,
                linewidth=1,
            )
    used = np.flatnonzero(similarities.histograms.sum(axis=0))
    left.set_xlim(EDGES[used[0]] - 0.02, EDGES[used[-1] + 1] + 0.02)
    left.set_xlabel("caption-gloss similarity")
    left.set_ylabel("share of the class's captions at or below")
    figure.colorbar(ScalarMappable(norm=norm, cmap=colours), ax=left, label="class score")

    ranked = np.argsort(-np.asarray(scores), kind="stable")
    picked = ranked[np.unique(np.linspace(0, len(ranked) - 1, min(BOXES, len(ranked))).round().astype(int))]
    picked = [i for i in picked if similarities.counts[i]]
    q1, median, q3 = (similarities.quantile(q) for q in (0.25, 0.5, 0.75))
    boxes = [
        {
            "label": _short_name(names[i]),
            "whislo": similarities.minimum[i],
            "q1": q1[i],
            "med": median[i],
            "q3": q3[i],
            "whishi": similarities.maximum[i],
            "fliers": [],
        }
        for i in picked
    ]
    right.bxp(boxes[::-1], orientation="horizontal", showfliers=False)
    right.tick_params(axis="y", labelsize="x-small")
    right.set_xlabel("caption-gloss similarity")
    right.set_title(f"{len(boxes)} classes, best score at the top", fontsize="small")
    return png(figure)


def lexname_plot(structure: dict) -> bytes:
    """Share of each set's classes per WordNet lexicographer file, this dataset beside ImageNet-1k."""
    sides = {side: structure[side]["lexname_histogram"] for side in ("classes", "reference")}
    names = sorted(set(sides["classes"]) | set(sides["reference"]), reverse=True)
    figure = _figure(11, 0.28 * len(names) + 1.2)
    ax = figure.subplots()
    positions = np.arange(len(names))
    for offset, (side, histogram) in zip((0.2, -0.2), sides.items()):
        total = sum(histogram.values())
        label = f"{structure[side]['source']} ({total})"
        ax.barh(positions + offset, [histogram.get(n, 0) / total for n in names], height=0.4, label=label)
    ax.set_yticks(positions, names, fontsize="small")
    ax.set_xlabel("share of classes")
    ax.legend(fontsize="small", loc="lower right")
    return png(figure)


def image_counts_plot(classes: list[dict], target: int) -> bytes:
    """Images per class, fewest first; classes short of the target in red."""
    ordered = sorted(classes, key=lambda c: (c["images"], c["index"]))
    counts = [c["images"] for c in ordered]
    figure = _figure(11, 3.2 if len(ordered) > 40 else 0.25 * len(ordered) + 2.5)
    ax = figure.subplots()
    colours = [SHORT if n < target else FULL for n in counts]
    if len(ordered) > 40:
        ax.bar(np.arange(len(counts)), counts, width=1.0, color=colours)
        ax.set_xlabel("classes, fewest images first")
        ax.set_xticks([])
    else:
        ax.barh(np.arange(len(counts))[::-1], counts, color=colours)
        ax.set_yticks(np.arange(len(counts))[::-1], [_short_name(c["name"]) for c in ordered], fontsize="small")
        ax.set_xlabel("images")
    line = ax.axhline if len(ordered) > 40 else ax.axvline
    line(target, color="black", linestyle="--", linewidth=1, label=f"target {target:,}")
    short = sum(1 for n in counts if n < target)
    ax.set_title(f"{short:,} of {len(counts):,} classes short of the target (red)", fontsize="medium")
    ax.legend(fontsize="small", loc="lower right")
    return png(figure)


def failures_plot(failures: dict[str, int]) -> bytes:
    """Download failures by reason."""
    ordered = sorted(failures.items(), key=lambda item: (item[1], item[0]))
    figure = _figure(11, 0.3 * len(ordered) + 1.2)
    ax = figure.subplots()
    ax.barh(np.arange(len(ordered)), [n for _, n in ordered], color=SHORT)
    ax.set_yticks(np.arange(len(ordered)), [reason for reason, _ in ordered], fontsize="small")
    ax.set_xlabel("failed URLs")
    return png(figure)


class Plots(NamedTuple):
    """The report's PNGs; the audits' own plots come with the facts."""

    funnel: bytes
    similarity_summary: bytes
    candidate_scores: bytes
    class_distributions: bytes
    depth: bytes
    siblings: bytes
    lexnames: bytes
    image_counts: bytes
    failures: bytes | None


def _nothing_to_show(what: str) -> bytes:
    """A small figure that says why a plot is empty (a run with no classes)."""
    figure = _figure(11, 1.0)
    ax = figure.subplots()
    ax.text(0.5, 0.5, what, ha="center", va="center")
    ax.set_axis_off()
    return png(figure)


def draw_all(facts: RunFacts) -> Plots:
    failures = facts.download["failures"] if facts.download else None
    if not facts.classes:
        empty = _nothing_to_show("no classes: nothing to plot")
        scores = candidate_scores_plot(facts.candidates, facts.config.threshold) if facts.candidates else empty
        return Plots(
            funnel_plot(funnel_rows(facts)),
            empty,
            scores,
            empty,
            empty,
            empty,
            empty,
            empty,
            failures_plot(failures) if failures else None,
        )
    depth, siblings = structure_plots(facts.structure)
    return Plots(
        funnel=funnel_plot(funnel_rows(facts)),
        similarity_summary=similarity_summary_plot(facts.similarities),
        candidate_scores=candidate_scores_plot(facts.candidates, facts.config.threshold),
        class_distributions=class_distributions_plot(
            facts.similarities, [c["name"] for c in facts.classes], [c["score"] for c in facts.classes]
        ),
        depth=depth,
        siblings=siblings,
        lexnames=lexname_plot(facts.structure),
        image_counts=image_counts_plot(facts.classes, facts.config.sampling.images_per_class),
        failures=failures_plot(failures) if failures else None,
    )

"""A class set's place in WordNet beside a reference set's, as plots: each set's share of classes
by depth and by siblings. The card shows them and `imagenot stats` writes them."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from imagenot.pipeline.run.paths import name

SIBLING_BUCKETS = (0, 1, 2, 3, 5, 10, 20, 50, 100, 200)  # sibling counts run from 0 to hundreds


def plot_shares(report: dict, key: str, xlabel: str, lows: tuple[int, ...] | None = None) -> bytes:
    """Grouped bars: each set's share of classes per value of a per-class figure (PNG bytes).

    `lows` are the lower bounds of wider buckets (the last one open); default one bar per value.
    """
    hists = {side: {int(value): n for value, n in report[side][key].items()} for side in ("classes", "reference")}
    top = max(max(hist) for hist in hists.values())
    lows = lows or tuple(range(top + 1))
    highs = (*lows[1:], max(top, lows[-1]) + 1)
    labels = [str(lo) if hi - lo == 1 else f"{lo}+" if hi > top else f"{lo}-{hi - 1}" for lo, hi in zip(lows, highs)]
    fig = Figure(figsize=(6.4, 3.8), dpi=100)  # no pyplot: no global figure state
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    positions = np.arange(len(labels))
    for offset, (side, hist) in zip((-0.2, 0.2), hists.items()):
        total = sum(hist.values())
        shares = [sum(n for value, n in hist.items() if lo <= value < hi) / total for lo, hi in zip(lows, highs)]
        label = f"{side}: {name(report[side]['source'])} ({total})"
        ax.bar(positions + offset, shares, width=0.4, label=label)
    ax.set_xticks(positions, labels, fontsize="small")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of classes")
    ax.legend(fontsize="small", loc="lower left", bbox_to_anchor=(0, 1), frameon=False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def structure_plots(report: dict) -> tuple[bytes, bytes]:
    """(depth, siblings) plots of `imagenot.wordnet.stats_report`'s figures, PNG bytes."""
    depth = plot_shares(report, "depth_histogram", "depth in WordNet")
    return depth, plot_shares(report, "siblings_histogram", "siblings per class", SIBLING_BUCKETS)

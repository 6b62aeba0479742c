"""`imagenot stats`: a class set's place in WordNet beside a reference set's, written as
stats.json, stats.md and PNG plots (the figures: `imagenot.wordnet.stats_report`)."""

from __future__ import annotations

import io
import json

import click
import numpy as np
from apache_beam.io.filesystems import FileSystems
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from imagenot.pipeline.config.reference_lists import read_class_list, reference_wnids
from imagenot.pipeline.run.files import write_bytes
from imagenot.pipeline.run.paths import name
from imagenot.wordnet.classlists import ClassListError
from imagenot.wordnet.index import load_index
from imagenot.wordnet.stats_report import build_report, render_markdown

PLOTS = ("depth_histogram.png", "siblings_histogram.png")
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


def write_report(report: dict, out: str) -> list[str]:
    """stats.json, stats.md and the plots in `out`, each written atomically; their paths."""
    files = {
        "stats.json": (json.dumps(report, indent=1, ensure_ascii=False) + "\n").encode("utf-8"),
        "stats.md": render_markdown(report).encode("utf-8"),
        PLOTS[0]: plot_shares(report, "depth_histogram", "depth in WordNet"),
        PLOTS[1]: plot_shares(report, "siblings_histogram", "siblings per class", SIBLING_BUCKETS),
    }
    paths = {FileSystems.join(out, file): data for file, data in files.items()}
    for path, data in paths.items():
        write_bytes(path, data)
    return list(paths)


@click.command("stats")
@click.option("--classes", required=True, help="Class list: one wnid per line (any FileSystems path).")
@click.option(
    "--reference", default="imagenet1k", show_default=True, help="imagenet1k, imagenet21k or a class-list file."
)
@click.option("--out", required=True, help="Folder for stats.json, stats.md and the plots (any FileSystems path).")
def stats(classes: str, reference: str, out: str) -> None:
    """Describe a class set's place in WordNet beside a reference set's."""
    index = load_index()
    class_wnids = read_class_list(classes, index)
    reference_list = reference_wnids(reference, index)
    for source, wnids in ((classes, class_wnids), (reference, reference_list)):
        if not wnids:
            raise ClassListError(f"{source}: no wnids found (expected one wnid per line)")
    report = build_report(index, class_wnids, reference_list, classes, reference)
    for path in write_report(report, out):
        click.echo(f"wrote {path}")

"""`imagenot stats`: a class set's place in WordNet beside a reference set's, written as
stats.json, stats.md and PNG plots (the figures: `imagenot.wordnet.stats_report`)."""

from __future__ import annotations

import json

import click

PLOTS = ("depth_histogram.png", "siblings_histogram.png")


def write_report(report: dict, out: str) -> list[str]:
    """stats.json, stats.md and the plots in `out`, each written atomically; their paths."""
    from apache_beam.io.filesystems import FileSystems

    from imagenot.pipeline.report.structure_plots import structure_plots
    from imagenot.pipeline.run.files import write_bytes
    from imagenot.wordnet.stats_report import render_markdown

    files = {
        "stats.json": (json.dumps(report, indent=1, ensure_ascii=False) + "\n").encode("utf-8"),
        "stats.md": render_markdown(report).encode("utf-8"),
        **dict(zip(PLOTS, structure_plots(report))),
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
    # imported here, so that `--help` loads no Beam or matplotlib
    from imagenot.pipeline.config.reference_lists import read_class_list, reference_wnids
    from imagenot.wordnet.classlists import ClassListError
    from imagenot.wordnet.index import load_index
    from imagenot.wordnet.stats_report import build_report

    index = load_index()
    class_wnids = read_class_list(classes, index)
    reference_list = reference_wnids(reference, index)
    for source, wnids in ((classes, class_wnids), (reference, reference_list)):
        if not wnids:
            raise ClassListError(f"{source}: no wnids found (expected one wnid per line)")
    report = build_report(index, class_wnids, reference_list, classes, reference)
    for path in write_report(report, out):
        click.echo(f"wrote {path}")

"""The report's images: per class a row of its best images (by sampling order) with their
captions, the classes short of images marked."""

from __future__ import annotations

import html

import pyarrow as pa

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.report.thumbnails import labelled_thumbnail, read_thumbnails

COLUMNS = ["class_index", "order", "split", "caption", "tar", "key"]


def _shown(dataset: pa.Table, per_class: int) -> dict[int, list[dict]]:
    """class index -> its first `per_class` images by sampling order."""
    rows = dataset.select(COLUMNS).sort_by([("class_index", "ascending"), ("order", "ascending")]).to_pylist()
    shown: dict[int, list[dict]] = {}
    for row in rows:
        chosen = shown.setdefault(row["class_index"], [])
        if len(chosen) < per_class:
            chosen.append(row)
    return shown


def class_gallery(config: Config, run_dir: str, classes: list[dict], dataset: pa.Table) -> str:
    """The gallery's HTML; classes are rank/classes.json rows with `images` and `shortfall`, and
    `dataset` the download stage's final images as the report's facts read them (with `tar` and `key`)."""
    settings = config.report
    if not config.download.enabled:
        return "<p>No images: the download stage did not run (<code>download.enabled</code> is false).</p>"
    if settings.thumbnails_per_class == 0:
        return "<p>No images shown (<code>report.thumbnails_per_class</code> is 0).</p>"
    shown = _shown(dataset, settings.thumbnails_per_class)
    pictures = read_thumbnails(
        run_dir, [(r["tar"], r["key"]) for rows in shown.values() for r in rows], settings.thumbnail_pixels
    )
    target = config.sampling.images_per_class
    intro = (
        f"<p>Each class's first {settings.thumbnails_per_class:,} images by sampling order (its best by gloss "
        "similarity under the <code>top</code> strategy), the caption beneath and in full on hover; classes short "
        "of their target are marked.</p>"
    )
    parts = [intro]
    for c in classes:
        short = c["shortfall"] > 0
        mark = (
            f' <span class="shortmark">short: {c["images"]:,} of {target:,} images</span>'
            if short
            else f" ({c['images']:,} images)"
        )
        cells = "".join(
            labelled_thumbnail(pictures.get((r["tar"], r["key"])), r["split"], r["caption"])
            for r in shown.get(c["index"], [])
        )
        parts.append(
            f'<div class="class{" short" if short else ""}"><h4>{c["index"]} <code>{html.escape(c["wnid"])}</code> '
            f'{html.escape(c["name"])}{mark}</h4><div class="grid">{cells or "(no images)"}</div></div>'
        )
    return "\n".join(parts)

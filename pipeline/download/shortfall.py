"""The download stage's closing warning, which `imagenot build` gives too: the classes the
reserve could not fill, read from the stage's figures in summary.json."""

from __future__ import annotations

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.run.layout import DOWNLOAD, read_classes
from imagenot.pipeline.run.summary import read_summary

SHORT_CLASSES_SHOWN = 10  # classes named in the warning; summary.json and the card hold them all


def image_shortfall(config: Config, run_dir: str) -> str | None:
    """A warning naming the classes left with fewer than `sampling.images_per_class` images (the
    reserve ran out), with their counts, or saying the dataset is empty; None when every class is
    full. Read from the download stage's figures in summary.json (`short_classes`)."""
    figures = read_summary(run_dir).get(DOWNLOAD)
    if not figures:
        return None
    if figures["images"] == 0:
        return (
            f"the dataset is empty: none of its {figures['classes']:,} classes has an image left "
            "(see the card's collection section for what removed them)"
        )
    short = figures.get("short_classes", {})
    if not short:
        return None
    names = {c["wnid"]: c["name"] for c in read_classes(run_dir)}
    listed = sorted(short.items(), key=lambda item: (item[1], item[0]))
    shown = ", ".join(f"{names.get(wnid, wnid)} {images:,}" for wnid, images in listed[:SHORT_CLASSES_SHOWN])
    more = f" and {len(listed) - SHORT_CLASSES_SHOWN:,} more" if len(listed) > SHORT_CLASSES_SHOWN else ""
    return (
        f"{len(short):,} of {figures['classes']:,} classes have fewer than {config.sampling.images_per_class:,} "
        f"images (sampling.images_per_class; the reserve ran out): {shown}{more}"
    )

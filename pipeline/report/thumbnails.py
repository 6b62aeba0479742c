"""Small inline pictures of the dataset's images for the report: a grid per class, and the
duplicate audit's pairs, each labelled with its class and caption (in full on hover).

Images come out of the download stage's tars (read once per tar), shrunk to JPEGs inside the page
as base64, so the report stays one file that loads nothing from elsewhere.
"""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict

from apache_beam.io.filesystems import FileSystems
from PIL import Image

from imagenot.pipeline.dataset.webdataset import read_samples

IMAGE_EXTENSIONS = {"jpg", "png", "webp"}  # img2dataset's encode formats
CAPTION_CHARACTERS = 90  # shown beneath a thumbnail; the whole caption is its hover text


def thumbnail(data: bytes, pixels: int) -> str:
    """An image shrunk to fit `pixels` square, as base64 JPEG (the same bytes in, the same out)."""
    with Image.open(io.BytesIO(data)) as image:
        small = image.convert("RGB")
        small.thumbnail((pixels, pixels))
    buffer = io.BytesIO()
    small.save(buffer, "JPEG", quality=80)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def read_thumbnails(run_dir: str, where: list[tuple[str, str]], pixels: int) -> dict[tuple[str, str], str]:
    """(tar relative to the run, key) -> thumbnail, for the images at `where`."""
    by_tar = defaultdict(set)
    for tar, key in where:
        by_tar[tar].add(key)
    found = {}
    for tar, keys in sorted(by_tar.items()):
        for key, members in read_samples(FileSystems.join(run_dir, tar), keys, IMAGE_EXTENSIONS).items():
            found[(tar, key)] = thumbnail(next(iter(members.values())), pixels)
    return found


def labelled_thumbnail(picture: str | None, label: str, caption: str) -> str:
    """A thumbnail with its label and caption beneath, the full caption on hover; None: no image."""
    short = caption if len(caption) <= CAPTION_CHARACTERS else caption[: CAPTION_CHARACTERS - 1] + "…"
    image = (
        f'<img src="data:image/jpeg;base64,{picture}" alt="{html.escape(caption)}" title="{html.escape(caption)}">'
        if picture
        else '<div class="noimage">(no image)</div>'
    )
    return (
        f'<figure class="thumb">{image}<figcaption><b>{html.escape(label)}</b><br>'
        f"{html.escape(short)}</figcaption></figure>"
    )

"""What img2dataset may decode: real, complete images of at most a pixel cap.

img2dataset's Resizer decodes with OpenCV first and checks `max_image_area` after, so a small
PNG declaring 20000x20000 pixels is fully decoded (1.2 GB) before it is refused; and OpenCV
decodes a JPEG cut short as a gray-bottomed image without an error. `GuardedResizer` is a
Resizer whose call first reads the header with Pillow (dimensions without decoding), refuses an
image over the cap, then makes sure the image is complete, and only then hands the bytes to
img2dataset. A JPEG is complete when an end-of-image marker follows its last scan's start (in a
scan's coded data a 0xFF byte is always escaped, so neither marker can occur there by chance; an
embedded thumbnail's end comes before the main scans): a byte test, where decoding would cost a
third of img2dataset's own decode and resize. Other formats are decoded with Pillow, which raises
on truncated data.
Before any of that, an image whose original bytes' sha256 or md5 is on a blocklist is refused, so
nothing of it is decoded or written (`pipeline.download.blocklists`). Each refusal returns an
error message that `reasons.failure_reason` maps.
"""

from __future__ import annotations

import io
import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # albumentations would check for updates online

from img2dataset.resizer import Resizer
from PIL import Image, UnidentifiedImageError

from imagenot.pipeline.download.blocklists import hash_problem

JPEG_SCAN, JPEG_END = b"\xff\xda", b"\xff\xd9"


def jpeg_complete(data: bytes) -> bool:
    """An end-of-image marker follows the last start-of-scan."""
    return data.rfind(JPEG_END) > data.rfind(JPEG_SCAN) >= 0


def image_problem(data: bytes, max_pixels: int, draft_size: int) -> str | None:
    """Why `data` is not a complete image of at most `max_pixels` pixels, or None
    (`draft_size`: a format other than JPEG is decoded at no less than this size)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > max_pixels:
                return f"too many pixels: {width}x{height} > {max_pixels}"
            if image.format == "JPEG":
                return None if jpeg_complete(data) else "truncated image: no end-of-image marker after the last scan"
            image.draft(None, (draft_size, draft_size))
            image.load()
    except Image.DecompressionBombError as err:
        return f"too many pixels: {err}"
    except UnidentifiedImageError:
        return "not an image: no image format recognised"
    except (OSError, SyntaxError, ValueError) as err:
        if "truncated" in str(err).lower():
            return f"truncated image: {err}"
        return f"image decoding error: {err}"
    return None


class GuardedResizer(Resizer):
    """img2dataset's Resizer behind `hash_problem` and `image_problem`; takes Resizer's
    arguments plus the cap and the blocklisted hashes (kind -> hex digests)."""

    def __init__(self, max_image_pixels: int, blocked_hashes: dict[str, frozenset[str]] | None = None, **resizer_args):
        super().__init__(**resizer_args)
        self.max_image_pixels = max_image_pixels
        self.blocked_hashes = blocked_hashes or {}

    def __call__(self, img_stream, blurring_bbox_list=None):
        data = img_stream.getvalue()
        problem = hash_problem(data, self.blocked_hashes) or image_problem(data, self.max_image_pixels, self.image_size)
        if problem is not None:
            return None, None, None, None, None, problem
        img_stream.seek(0)
        return super().__call__(img_stream, blurring_bbox_list)

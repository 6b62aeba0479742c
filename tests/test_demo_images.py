"""The demo's images fit their classes (issue 43): the loopback server draws each corpus image from
its caption, so a class's images show the class's words, marked as placeholders; the failures and
the stock copies across the web stay as they were."""

from __future__ import annotations

import io
import tarfile
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest
from PIL import Image

from imagenot.pipeline.demo.image_server import (
    PICTURE_SIDE,
    LoopbackImageServer,
    caption_picture_jpeg,
    corpus_photo_jpeg,
)
from imagenot.pipeline.demo.serving import sample_captions


def _get(server: LoopbackImageServer, path: str) -> bytes:
    with urllib.request.urlopen(server.url(path), timeout=10) as response:
        return response.read()


def test_each_image_is_drawn_from_its_caption_and_the_web_s_faults_stay():
    captions = {
        "/img/5.jpg": "a bear cub in the grass",
        "/img/6.jpg": "bloodstone ring",
        "/img/19.jpg": "x",
        "/img/35.jpg": "y",
    }
    with LoopbackImageServer(captions=captions) as server:
        bear, ring = _get(server, "/img/5.jpg"), _get(server, "/img/6.jpg")
        assert bear == caption_picture_jpeg("a bear cub in the grass", 5) and ring != bear
        assert Image.open(io.BytesIO(bear)).size == (PICTURE_SIDE, PICTURE_SIDE)
        assert _get(server, "/img/19.jpg") == _get(server, "/img/35.jpg")  # a stock copy, the same bytes
        assert _get(server, "/img/7.jpg") == corpus_photo_jpeg(7)  # no caption given: a photo, as before
        with pytest.raises(urllib.error.HTTPError):
            _get(server, "/img/13.jpg")  # 1 in 10 dead, whatever the caption


def test_the_demo_build_s_images_are_its_captions_pictures(downloaded_run):
    """Every image of the shared demo-config run came from the picture of its own caption."""
    captions = sample_captions(str(downloaded_run))
    dataset = pq.read_table(downloaded_run / "download/dataset").to_pylist()
    assert dataset and all(urlsplit(r["url"]).path in captions for r in dataset)
    row = next(r for r in dataset if int(urlsplit(r["url"]).path[5:-4]) % 8 != 3)  # not a stock copy
    with tarfile.open(downloaded_run / row["tar"]) as tar:
        stored = Image.open(tar.extractfile(f"{row['key']}.jpg")).convert("L")
    n = int(urlsplit(row["url"]).path[5:-4])
    drawn = Image.open(io.BytesIO(caption_picture_jpeg(captions[urlsplit(row["url"]).path], n))).convert("L")
    drawn = drawn.resize(stored.size)
    difference = sum(abs(a - b) for a, b in zip(stored.getdata(), drawn.getdata())) / (stored.size[0] * stored.size[1])
    assert difference < 12, difference  # the same picture, resized and encoded again

"""The download stage's guards: URL schemes, response size, image pixels, broken images, and
the normalised failure reasons, each against real responses from the loopback server."""

from __future__ import annotations

import io
import socket
import urllib.error

import pytest
from image_server import LoopbackImageServer, bomb_png, photo_jpeg
from PIL import Image

from imagenot.pipeline.config.schema import Download
from imagenot.pipeline.download.crawler import Crawler
from imagenot.pipeline.download.http_guard import ResponseTooLarge, is_fetchable
from imagenot.pipeline.download.image_guard import GuardedResizer, image_problem
from imagenot.pipeline.download.reasons import REASONS, failure_reason


@pytest.fixture(scope="module")
def server():
    with LoopbackImageServer(slow_seconds=2) as server:
        yield server


@pytest.mark.parametrize(
    ("url", "fetchable"),
    [
        ("http://example.org/a.jpg", True),
        ("HTTPS://example.org/a.jpg", True),
        ("  https://example.org/a.jpg ", True),
        ("file:///etc/passwd", False),
        ("ftp://example.org/a.jpg", False),
        ("data:image/png;base64,iVBORw0KGgo=", False),
        ("//example.org/a.jpg", False),
        ("example.org/a.jpg", False),
        ("http:///a.jpg", False),
        ("http://[::1", False),
        ("", False),
        (None, False),
    ],
)
def test_only_absolute_http_urls_are_fetchable(url, fetchable):
    assert is_fetchable(url) is fetchable


def _fetch(url: str, max_bytes: int = 1_000_000, timeout: float = 5) -> bytes:
    settings = Download(max_response_bytes=max_bytes, timeout_s=timeout, allowed_networks=["127.0.0.1/32"])
    with Crawler(settings).opener.open(url, timeout=timeout) as response:
        return response.read()


def test_guarded_opener_reads_a_photo_and_follows_a_redirect(server):
    assert _fetch(server.url("/photo/coffee.jpg")) == photo_jpeg("coffee")
    assert _fetch(server.url("/redirect/moon.jpg")) == photo_jpeg("moon")


def test_declared_oversized_response_is_refused_before_reading(server):
    with pytest.raises(ResponseTooLarge, match="Content-Length 3000000 > 1000000"):
        _fetch(server.url("/huge/3000000.jpg"))


def test_undeclared_oversized_response_stops_at_the_cap(server):
    with pytest.raises(ResponseTooLarge, match="over 1000000 bytes"):
        _fetch(server.url("/huge-stream/3000000.jpg"))
    # just under the cap still reads in full
    assert len(_fetch(server.url("/huge-stream/999999.jpg"))) == 999_999


def test_file_and_other_schemes_are_never_opened(tmp_path, server):
    local = tmp_path / "secret.jpg"
    local.write_bytes(photo_jpeg("camera"))
    for url in (local.as_uri(), "data:text/plain,hello", "ftp://127.0.0.1/x.jpg"):
        with pytest.raises(urllib.error.URLError, match="unknown url type"):
            _fetch(url)
    with pytest.raises(urllib.error.HTTPError, match="not allowed"):
        _fetch(server.url(f"/to-file?path={local}"))


def test_image_problem_accepts_real_photos():
    for name in ("coffee", "camera"):
        assert image_problem(photo_jpeg(name), 50_000_000, 256) is None


def test_image_problem_names_each_broken_image():
    jpeg = photo_jpeg("rocket")
    png = io.BytesIO()
    Image.open(io.BytesIO(jpeg)).save(png, format="PNG")
    png = png.getvalue()
    assert image_problem(jpeg[: len(jpeg) // 2], 50_000_000, 256).startswith("truncated image")
    assert image_problem(png[: len(png) // 2], 50_000_000, 256).startswith("truncated image")
    assert image_problem(b"<!doctype html><html></html>", 50_000_000, 256).startswith("not an image")
    assert image_problem(bomb_png(), 50_000_000, 256).startswith("too many pixels")
    assert image_problem(bomb_png(64), 50_000_000, 256) is None
    assert image_problem(jpeg, 100_000, 256) == "too many pixels: 640x427 > 100000"


def test_guarded_resizer_refuses_a_bomb_and_resizes_a_photo():
    resizer = GuardedResizer(50_000_000, image_size=64, resize_mode="keep_ratio", resize_only_if_bigger=False)
    img, width, height, original_width, original_height, error = resizer(io.BytesIO(photo_jpeg("rocket")))
    assert (width, height, original_width, original_height, error) == (96, 64, 640, 427, None)
    assert Image.open(io.BytesIO(img)).size == (96, 64)
    assert resizer(io.BytesIO(bomb_png()))[-1].startswith("too many pixels")
    small_cap = GuardedResizer(100_000, image_size=64, resize_mode="keep_ratio", resize_only_if_bigger=False)
    assert small_cap(io.BytesIO(photo_jpeg("rocket")))[-1] == "too many pixels: 640x427 > 100000"


def _real_message(url: str) -> str:
    """The message img2dataset records: str() of the exception the fetch raised."""
    try:
        _fetch(url, timeout=0.5)
    except Exception as err:  # noqa: BLE001 (img2dataset records any exception the same way)
        return str(err)
    raise AssertionError("expected the fetch to fail")


def test_failure_reasons_of_real_fetch_errors(server):
    closed_port = socket.socket()
    closed_port.bind(("127.0.0.1", 0))
    port = closed_port.getsockname()[1]
    closed_port.close()
    cases = {
        "/missing/x": "http_404",
        "/error/x": "http_5xx",
        "/loop/1": "redirect_loop",
        "/to-file?path=/etc/hostname": "url_not_http",
        "/huge/3000000.jpg": "too_large",
        "/huge-stream/3000000.jpg": "too_large",
        "/slow/coffee.jpg": "timeout",
    }
    for path, reason in cases.items():
        message = _real_message(server.url(path))
        assert failure_reason(message) == reason, message
    assert failure_reason(_real_message("file:///etc/hostname")) == "url_not_http"
    # RFC 9309: a host whose robots.txt cannot be fetched is entirely disallowed
    assert failure_reason(_real_message(f"http://127.0.0.1:{port}/a.jpg")) == "robots_unreachable"


@pytest.mark.parametrize(
    ("message", "reason"),
    [  # messages img2dataset 1.47 recorded on the loopback server, and urllib's for dead hosts
        ("HTTP Error 404: Not Found", "http_404"),
        ("HTTP Error 503: Service Unavailable", "throttled"),
        ("HTTP Error 502: Bad Gateway", "http_5xx"),
        ("HTTP Error 403: Forbidden", "http_4xx"),
        ("HTTP Error 429: Too Many Requests", "throttled"),
        (
            "<urlopen error address refused: localhost resolves to 127.0.0.1 (loopback), "
            "not in download.allowed_networks>",
            "address_refused",
        ),
        ("disallowed by robots.txt: http://127.0.0.2/a.jpg", "robots_txt"),
        (
            "robots.txt unreachable (<urlopen error [Errno 111] Connection refused>): "
            "everything on the host is disallowed",
            "robots_unreachable",
        ),
        ("host given up: 127.0.0.3 (10 failures in a row, the last 429)", "host_given_up"),
        ("timed out: fetch deadline of 3 s passed", "timeout"),
        ("blocklisted image: sha256 match", "blocklist_sha256"),
        ("blocklisted image: md5 match", "blocklist_md5"),
        ("blocklisted domain: http://127.0.0.12:8000/a.jpg", "blocklist_domain"),
        ("timed out", "timeout"),
        ("The read operation timed out", "timeout"),
        ("<urlopen error timed out>", "timeout"),
        ("<urlopen error [Errno 111] Connection refused>", "unreachable"),
        ("<urlopen error [Errno -2] Name or service not known>", "unreachable"),
        ("Remote end closed connection without response", "unreachable"),
        ("not an image: no image format recognised", "not_an_image"),
        ("Image decoding error", "not_an_image"),
        ("truncated image: image file is truncated (106 bytes not processed)", "truncated"),
        ("IncompleteRead(36163 bytes read, 36163 more expected)", "truncated"),
        ("response too large: Content-Length 3000000 > 1000000 bytes", "too_large"),
        ("too many pixels: 20000x20000 > 50000000", "too_many_pixels"),
        ("image area too large", "too_many_pixels"),
        ("HTTP Error 302: Found - Redirection to url 'file:///etc/hostname' is not allowed", "url_not_http"),
        ("<urlopen error unknown url type: ftp>", "url_not_http"),
        (
            (
                "HTTP Error 302: The HTTP server returned a redirect error that would lead to an infinite loop.\n"
                "The last 30x error message was:\nFound"
            ),
            "redirect_loop",
        ),
        ("Use of image disallowed by X-Robots-Tag directive", "disallowed"),
        ("hash mismatch", "other"),
        (None, "other"),
    ],
)
def test_failure_reason_mapping(message, reason):
    assert failure_reason(message) == reason
    assert reason in REASONS


def test_a_jpeg_cut_in_its_scans_is_truncated_even_with_a_complete_thumbnail_before_them():
    photo = Image.open(io.BytesIO(photo_jpeg("astronaut")))
    thumbnail = io.BytesIO()
    photo.resize((64, 64)).save(thumbnail, format="JPEG")  # its own scan and end-of-image marker
    progressive, baseline = io.BytesIO(), io.BytesIO()
    photo.save(progressive, format="JPEG", progressive=True)
    photo.save(baseline, format="JPEG")
    segment = (
        b"\xff\xef" + (len(thumbnail.getvalue()) + 2).to_bytes(2, "big") + thumbnail.getvalue()
    )  # an APP15 segment
    with_thumbnail = baseline.getvalue()[:2] + segment + baseline.getvalue()[2:]
    for data in (progressive.getvalue(), with_thumbnail):
        assert image_problem(data, 50_000_000, 256) is None
        assert image_problem(data + b"\x00trailing", 50_000_000, 256) is None
        assert image_problem(data[: len(data) * 2 // 3], 50_000_000, 256).startswith("truncated image")

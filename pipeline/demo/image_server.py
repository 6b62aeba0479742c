"""A loopback HTTP server of real photos, pictures drawn from captions, and the ways downloads go
wrong, for tests and demos.

`LoopbackImageServer` serves, on 127.0.0.1 (or another loopback address, each its own host for
a crawler) and an ephemeral port, from a background thread:

    /robots.txt               the `robots` text given (404 when None)
    /.well-known/tdmrep.json  the `tdmrep` text given (404 when None)

    /photo/<name>.jpg         a real photo from scikit-image (`PHOTOS`), JPEG
    /slow/<name>.jpg          the same after `slow_seconds` (longer than a test's timeout)
    /delay/<ms>/<name>.jpg    the same after <ms> milliseconds
    /trickle/<name>.jpg       the photo one byte every 0.2 s (each read is quick, the whole is not)
    /throttle/<s>/<name>.jpg  429 Too Many Requests with `Retry-After: <s>`
    /busy/<code>/<how>/<name>.jpg  <code> (429 or 503) with `Retry-After: <n>` for how = <n>, an
                              HTTP date <n> s ahead for how = date<n>, none for how = none
    /headers/<name>.jpg?h=<Name: value>  the photo with each `h` as a response header
    /redirect/<name>.jpg      302 to /photo/<name>.jpg
    /loop/<n>                 302 to itself: a redirect loop
    /to-file?path=<path>      302 to file://<path> (a client must refuse it)
    /to?url=<url>             302 to <url> (another loopback host, say)
    /missing/<anything>       404
    /error/<anything>         500
    /page.html                an HTML page (200, text/html): not an image
    /truncated/<name>.jpg     the first half of the photo's JPEG bytes (complete transfer)
    /cut/<name>.jpg           Content-Length of the whole photo, half of it sent, then closed
    /huge/<bytes>.jpg         a photo padded to <bytes>, with Content-Length
    /huge-stream/<bytes>.jpg  the same without Content-Length (read until the connection closes)
    /bomb.png                 an 80 kB PNG declaring 20000x20000 pixels (a decompression bomb)
    /img/<n>.jpg              a synthetic corpus's image URL (`imagenot synth`): an image for most
                              n and a web-like share of failures (`corpus_image_kind`). Given the
                              URLs' captions (`captions`, as the demo's build gives them), the
                              image is drawn from its caption (`caption_picture_jpeg`: its words on
                              a plain picture, marked as a placeholder), so a class's images show
                              the class's words; else a photo (`corpus_photo_jpeg`: its own crop).
                              Either way 1 in 8 n serve one of two stock images copied across the web

Any query string is ignored, so `?id=...` makes distinct URLs for one resource. `hits` counts
requests per path with query; `log` lists every request (path, start, end: time.monotonic()),
from which a test reads the concurrency and rate a crawler kept to. It only serves, and stops
(slow responses cut short) when the `with` block ends:

    with LoopbackImageServer() as server:
        server.url("/photo/coffee.jpg")  # http://127.0.0.1:<port>/photo/coffee.jpg
"""

from __future__ import annotations

import errno
import functools
import io
import re
import struct
import threading
import time
import zlib
from collections import Counter
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self
from urllib.parse import parse_qs, urlsplit

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "coins", "moon", "retina", "hubble_deep_field")
STOCK_EVERY = 8  # 1 in STOCK_EVERY corpus image URLs serves a stock photo copied across the web
PICTURE_SIDE = 384  # a drawn picture's side, in pixels
STOCK_TEXTS = ("a stock picture copied across the web", "another stock picture copied across the web")
BOMB_SIDE = 20_000
PORT_POLL_S = 0.5  # how often `start` tries a fixed port another server holds


@functools.cache
def _pixels(name: str):
    import skimage.data  # slow to import; only the server needs it

    if name not in PHOTOS:
        raise KeyError(name)
    return getattr(skimage.data, name)()


def _jpeg(pixels) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


@functools.cache
def photo_jpeg(name: str) -> bytes:
    """scikit-image's photo `name` as JPEG bytes."""
    return _jpeg(_pixels(name))


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


@functools.cache
def bomb_png(side: int = BOMB_SIDE) -> bytes:
    """A valid 1-bit PNG of side x side white pixels: tiny compressed, huge decoded."""
    row = b"\x00" + b"\xff" * ((side + 7) // 8)  # filter byte, then the packed pixels
    compressor = zlib.compressobj(9)
    body = b"".join(compressor.compress(row) for _ in range(side)) + compressor.flush()
    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1 bit, grayscale
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", body) + _png_chunk(b"IEND", b"")


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args) -> None:  # quiet: tests read `hits` instead
        pass

    def do_GET(self) -> None:
        start = self.server.count(self.path)
        try:
            self._route()
        finally:
            self.server.done(self.path, start)

    def _route(self) -> None:
        parts = urlsplit(self.path)
        for pattern, method in _ROUTES:
            match = re.fullmatch(pattern, parts.path)
            if match:
                try:
                    method(self, *match.groups(), query=parse_qs(parts.query))
                except (BrokenPipeError, ConnectionResetError):  # the client gave up: fine here
                    pass
                return
        self.send_error(404)

    def _send(self, body: bytes, content_type: str = "image/jpeg", length: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def photo(self, name, query):
        self._send(photo_jpeg(name), length=len(photo_jpeg(name)))

    def slow(self, name, query):
        if not self.server.stopping.wait(self.server.slow_seconds):
            self.photo(name, query)

    def robots(self, query):
        if self.server.robots is None:
            self.send_error(404)
        else:
            body = self.server.robots.encode("utf-8")
            self._send(body, "text/plain", len(body))

    def tdmrep(self, query):
        if self.server.tdmrep is None:
            self.send_error(404)
        else:
            body = self.server.tdmrep.encode("utf-8")
            self._send(body, "application/json", len(body))

    def busy(self, code, how, name, query):
        self.send_response(int(code))
        if how.isdigit():
            self.send_header("Retry-After", how)
        elif how.startswith("date"):
            self.send_header("Retry-After", formatdate(time.time() + int(how.removeprefix("date")), usegmt=True))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def with_headers(self, name, query):
        data = photo_jpeg(name)
        self.send_response(200)
        for header in query.get("h", []):
            key, _, value = header.partition(":")
            self.send_header(key.strip(), value.strip())
        self.send_header("Content-Type", "image/jpeg")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def delay(self, ms, name, query):
        if not self.server.stopping.wait(int(ms) / 1000):
            self.photo(name, query)

    def trickle(self, name, query):
        data = photo_jpeg(name)
        self.send_response(200)
        self.send_header("Content-Type", "image/jpeg")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        for byte in data:
            if self.server.stopping.wait(0.2):
                break
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
        self.close_connection = True

    def throttle(self, seconds, name, query):
        self.send_response(429)
        self.send_header("Retry-After", seconds)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def redirect(self, name, query):
        self._redirect(f"/photo/{name}.jpg")

    def loop(self, n, query):
        self._redirect(f"/loop/{n}")

    def to(self, query):
        self._redirect(query["url"][0])

    def to_file(self, query):
        self._redirect("file://" + query.get("path", ["/etc/hostname"])[0])

    def missing(self, rest, query):
        self.send_error(404)

    def error(self, rest, query):
        self.send_error(500)

    def page(self, query):
        body = b"<!doctype html><html><body><p>Not an image.</p></body></html>"
        self._send(body, "text/html; charset=utf-8", len(body))

    def truncated(self, name, query):
        data = photo_jpeg(name)[: len(photo_jpeg(name)) // 2]
        self._send(data, length=len(data))

    def cut(self, name, query):
        data = photo_jpeg(name)
        self._send(data[: len(data) // 2], length=len(data))
        self.close_connection = True

    def huge(self, size, query, declare: bool = True):
        size = int(size)
        self.send_response(200)
        self.send_header("Content-Type", "image/jpeg")
        if declare:
            self.send_header("Content-Length", str(size))
        self.end_headers()
        head = photo_jpeg("coffee")[:size]
        self.wfile.write(head)
        zeros, left = bytes(1 << 16), size - len(head)
        while left > 0 and not self.server.stopping.is_set():
            self.wfile.write(zeros[:left])
            left -= len(zeros)
        self.close_connection = True

    def huge_stream(self, size, query):
        self.huge(size, query, declare=False)

    def bomb(self, query):
        self._send(bomb_png(), "image/png", len(bomb_png()))

    def corpus_image(self, n, query):
        kind = corpus_image_kind(int(n))
        if kind == "missing":
            self.send_error(404)
        elif kind == "page":
            self.page(query)
        else:
            caption = self.server.captions.get(urlsplit(self.path).path) if self.server.captions else None
            data = corpus_photo_jpeg(int(n)) if caption is None else corpus_picture_jpeg(int(n), caption)
            data = data[: len(data) // 2] if kind == "truncated" else data
            self._send(data, length=len(data))


def corpus_image_kind(n: int) -> str:
    """What `/img/<n>.jpg` serves: 1 in 10 is dead (404), 1 in 50 a web page, 1 in 50 truncated,
    the rest a photo; fixed by n, so a rebuild meets the same web."""
    if n % 10 == 3:
        return "missing"
    if n % 50 == 11:
        return "page"
    if n % 50 == 27:
        return "truncated"
    return "photo"


def corpus_photo_jpeg(n: int) -> bytes:
    """The photo of `/img/<n>.jpg`. For 1 in 8 n, one of two stock photos, the same bytes behind
    every such URL, as web copies are (for the duplicates audit to find); for the others, a
    square crop of one of the photos, its place enumerated by n, so other URLs give other images
    (the smallest photo has 35,802 places: no crop repeats within 322,000 URLs)."""
    if n % STOCK_EVERY == 3:
        return photo_jpeg(PHOTOS[n // STOCK_EVERY % 2])
    pixels = _pixels(PHOTOS[n % len(PHOTOS)])
    height, width = pixels.shape[:2]
    side = min(height, width) // 2
    place = n // len(PHOTOS)  # the how-manyth URL of this photo
    top, left = place % (height - side + 1), place // (height - side + 1) % (width - side + 1)
    return _jpeg(pixels[top : top + side, left : left + side])


@functools.lru_cache(maxsize=64)
def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)  # Pillow's own scalable font: no system font needed


def _wrapped(draw, text: str, font, width: int) -> list[str]:
    """`text`'s words in lines no wider than `width` pixels (a longer word stands alone)."""
    lines: list[str] = []
    for word in text.split():
        line = f"{lines[-1]} {word}" if lines else word
        if lines and draw.textlength(line, font=font) <= width:
            lines[-1] = line
        else:
            lines.append(word)
    return lines


def caption_picture_jpeg(caption: str, hue: int) -> bytes:
    """A plain picture of a caption's words, a placeholder for the photo a web URL would show: dark
    letters on a pale ground whose tint comes from `hue`, and a note that it is a placeholder."""
    from PIL import Image, ImageDraw

    tint = [(hue * k) % 56 for k in (7, 13, 29)]
    image = Image.new("RGB", (PICTURE_SIDE, PICTURE_SIDE), tuple(200 + t for t in tint))
    draw = ImageDraw.Draw(image)
    margin, size = 18, 44
    while size > 14:  # the largest letters at which the caption fits
        lines = _wrapped(draw, caption, _font(size), PICTURE_SIDE - 2 * margin)
        if len(lines) * size * 1.2 <= PICTURE_SIDE - 2 * margin - 24:
            break
        size -= 4
    for i, line in enumerate(lines):
        draw.text((margin, margin + i * size * 1.2), line, fill=(20, 20, 40), font=_font(size))
    draw.text((margin, PICTURE_SIDE - 28), "demo placeholder drawn from the caption", fill=(90, 90, 90), font=_font(14))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


@functools.cache
def stock_picture_jpeg(k: int) -> bytes:
    """The demo's k-th (0 or 1) stock picture: the same bytes behind every URL that serves it."""
    return caption_picture_jpeg(STOCK_TEXTS[k], k)


def corpus_picture_jpeg(n: int, caption: str) -> bytes:
    """The drawn image of `/img/<n>.jpg`: its caption's, or for 1 in 8 n (as `corpus_photo_jpeg`)
    one of two stock pictures, the same bytes behind every such URL."""
    return stock_picture_jpeg(n // STOCK_EVERY % 2) if n % STOCK_EVERY == 3 else caption_picture_jpeg(caption, n)


_ROUTES = (
    (r"/photo/(\w+)\.jpg", _Handler.photo),
    (r"/robots\.txt", _Handler.robots),
    (r"/\.well-known/tdmrep\.json", _Handler.tdmrep),
    (r"/busy/(429|503)/(\d+|date\d+|none)/(\w+)\.jpg", _Handler.busy),
    (r"/headers/(\w+)\.jpg", _Handler.with_headers),
    (r"/slow/(\w+)\.jpg", _Handler.slow),
    (r"/delay/(\d+)/(\w+)\.jpg", _Handler.delay),
    (r"/trickle/(\w+)\.jpg", _Handler.trickle),
    (r"/throttle/(\d+)/(\w+)\.jpg", _Handler.throttle),
    (r"/redirect/(\w+)\.jpg", _Handler.redirect),
    (r"/loop/(\w+)", _Handler.loop),
    (r"/to-file", _Handler.to_file),
    (r"/to", _Handler.to),
    (r"/missing/(.*)", _Handler.missing),
    (r"/error/(.*)", _Handler.error),
    (r"/page\.html", _Handler.page),
    (r"/truncated/(\w+)\.jpg", _Handler.truncated),
    (r"/cut/(\w+)\.jpg", _Handler.cut),
    (r"/huge/(\d+)\.jpg", _Handler.huge),
    (r"/huge-stream/(\d+)\.jpg", _Handler.huge_stream),
    (r"/bomb\.png", _Handler.bomb),
    (r"/img/(\d+)\.jpg", _Handler.corpus_image),
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        slow_seconds: float,
        host: str,
        port: int,
        robots: str | None,
        tdmrep: str | None,
        captions: dict[str, str] | None,
    ):
        super().__init__((host, port), _Handler)
        self.slow_seconds, self.robots, self.tdmrep, self.captions = slow_seconds, robots, tdmrep, captions
        self.stopping = threading.Event()
        self.hits: Counter[str] = Counter()
        self.log: list[tuple[str, float, float]] = []
        self.in_flight = 0
        self._lock = threading.Condition()

    def count(self, path: str) -> float:
        with self._lock:
            self.hits[path] += 1
            self.in_flight += 1
        return time.monotonic()

    def done(self, path: str, start: float) -> None:
        with self._lock:
            self.log.append((path, start, time.monotonic()))
            self.in_flight -= 1
            self._lock.notify_all()


class LoopbackImageServer:
    """The server above; a context manager (or `start()`/`stop()`)."""

    def __init__(
        self,
        slow_seconds: float = 3.0,
        port: int = 0,
        host: str = "127.0.0.1",
        robots: str | None = None,
        tdmrep: str | None = None,
        port_wait_s: float = 0.0,
        captions: dict[str, str] | None = None,
    ):
        """`port` 0 picks a free one; a fixed port serves URLs written before the server started;
        `host` a loopback address; `robots` the text of its /robots.txt, `tdmrep` of its
        /.well-known/tdmrep.json; `port_wait_s`: how long `start` waits for a fixed port another
        server holds (two demo builds at once: the second waits for the first's download); `captions`:
        per `/img/<n>.jpg` path its caption, from which its image is drawn."""
        self.slow_seconds, self.port, self.host, self.robots, self.tdmrep = slow_seconds, port, host, robots, tdmrep
        self.captions = captions
        self.port_wait_s = port_wait_s
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        for name in PHOTOS:  # encoded before serving, so no first request waits on it
            photo_jpeg(name)
        bomb_png()
        deadline = time.monotonic() + self.port_wait_s
        while True:
            try:
                self._server = _Server(self.slow_seconds, self.host, self.port, self.robots, self.tdmrep, self.captions)
                break
            except OSError as err:
                if err.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                    raise
                time.sleep(PORT_POLL_S)
        self._thread = threading.Thread(target=self._server.serve_forever, name="loopback-images", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stopping.set()
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    @property
    def hits(self) -> Counter[str]:
        """Requests so far per path (with query string)."""
        with self._server._lock:
            return Counter(self._server.hits)

    @property
    def log(self) -> list[tuple[str, float, float]]:
        """Every request answered so far: (path with query, start, end), time.monotonic(). Waits
        (up to 5 s) for requests in flight: a client may have read its whole answer before the
        handler's thread logs it."""
        with self._server._lock:
            self._server._lock.wait_for(lambda: self._server.in_flight == 0, timeout=5)
            return list(self._server.log)

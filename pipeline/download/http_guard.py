"""What img2dataset may fetch: http(s) URLs only, and response bodies up to a byte cap.

img2dataset fetches with `urllib.request.urlopen`, which also opens `file://`, `ftp://` and
`data:` URLs and reads a body of any length into memory. Two guards close that:

- `is_fetchable(url)` filters the rows before img2dataset sees them (counted `url_not_http`);
- `guarded_opener(max_bytes)` is the opener `urlopen` uses once installed with urllib's own
  hook, `urllib.request.install_opener` (`install_guarded_opener`): it has handlers for http and https only (a redirect to
  any other scheme fails), and its responses refuse a declared `Content-Length` over the cap and
  stop reading a body that grows past it.
"""

from __future__ import annotations

import urllib.request
from urllib.parse import urlsplit

FETCHABLE_SCHEMES = ("http", "https")
READ_CHUNK = 1 << 16


class ResponseTooLarge(OSError):
    """A response body over the cap; its message starts with `response too large`."""


def is_fetchable(url: str | None) -> bool:
    """True for an absolute http or https URL with a host."""
    if not url:
        return False
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in FETCHABLE_SCHEMES and bool(parts.netloc)


class _CappedBody:
    """A response whose `read` yields at most `max_bytes`, raising beyond; other attributes
    (headers, status, close, the context manager) are the wrapped response's."""

    def __init__(self, response, max_bytes: int):
        self._response, self._max_bytes = response, max_bytes

    def __getattr__(self, name):
        return getattr(self._response, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._response.close()

    def read(self, amount: int | None = None) -> bytes:
        limit = self._max_bytes + 1 if amount is None else min(amount, self._max_bytes + 1)
        chunks, size = [], 0
        while size < limit:
            chunk = self._response.read(min(READ_CHUNK, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > self._max_bytes:
            raise ResponseTooLarge(f"response too large: over {self._max_bytes} bytes")
        return b"".join(chunks)


class _ResponseCap(urllib.request.BaseHandler):
    """Response processor: refuses what declares too many bytes, caps what does not declare."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes

    def http_response(self, request, response):
        declared = response.headers.get("Content-Length")
        if declared and declared.strip().isdigit() and int(declared) > self.max_bytes:
            response.close()
            raise ResponseTooLarge(f"response too large: Content-Length {int(declared)} > {self.max_bytes} bytes")
        return _CappedBody(response, self.max_bytes)

    https_response = http_response


def guarded_opener(max_bytes: int) -> urllib.request.OpenerDirector:
    """urllib's default opener without the file, ftp and data handlers, with the body cap."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        urllib.request.HTTPHandler(),
        urllib.request.HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
        _ResponseCap(max_bytes),
    ):
        opener.add_handler(handler)
    return opener


def install_guarded_opener(max_bytes: int) -> None:
    """Make `urllib.request.urlopen`, which img2dataset calls, go through the guarded opener.

    urllib has one opener per process; the guards only narrow what it does, so it stays in
    place for the process's lifetime (a download worker's)."""
    urllib.request.install_opener(guarded_opener(max_bytes))

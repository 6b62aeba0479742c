"""What img2dataset may fetch: absolute http(s) URLs only (the crawler's opener enforces the
rest, see `pipeline.download.crawler`).

`is_fetchable(url)` filters the rows before img2dataset sees them (counted `url_not_http`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

FETCHABLE_SCHEMES = ("http", "https")


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

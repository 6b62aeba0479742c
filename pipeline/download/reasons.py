"""img2dataset's free-text error messages, normalised into a few failure reasons."""

from __future__ import annotations

import re

# Checked in order; the first pattern found in the message names the reason.
_PATTERNS: tuple[tuple[str, str], ...] = (
    # Before robots: a robots.txt that could not be fetched names why in its message.
    ("address_refused", r"address refused"),
    ("host_given_up", r"host given up"),
    ("robots_txt", r"disallowed by robots\.txt"),
    ("tdmrep", r"^opted out by tdmrep"),
    ("content_usage", r"^opted out by content-usage"),
    ("content_signal", r"^opted out by content-signal"),
    ("robots_unreachable", r"robots\.txt unreachable"),
    ("blocklist_sha256", r"blocklisted image: sha256"),
    ("blocklist_md5", r"blocklisted image: md5"),
    ("blocklist_url", r"^blocklisted url"),
    ("blocklist_domain", r"^blocklisted domain"),
    ("url_not_http", r"unknown url type|redirection to url .* is not allowed"),
    ("redirect_loop", r"infinite loop|exceeded \d+ redirections|maximum redirections"),
    ("too_large", r"response too large"),
    ("too_many_pixels", r"too many pixels|image area too large|decompression bomb"),
    ("truncated", r"truncated|incompleteread|premature end"),
    ("not_an_image", r"not an image|image decoding error|cannot identify image"),
    ("timeout", r"timed out|timeout"),
    ("http_404", r"^http error 404\b"),
    ("throttled", r"^http error (429|503)\b"),
    ("http_5xx", r"^http error 5\d\d\b"),
    ("http_4xx", r"^http error 4\d\d\b"),
    ("disallowed", r"disallowed by x-robots-tag"),
    (
        "unreachable",
        (
            r"connection refused|connection reset|name or service not known|no address associated|"
            r"temporary failure in name resolution|network is unreachable|no route to host|"
            r"remote end closed connection|certificate verify failed|ssl"
        ),
    ),
)
_COMPILED = tuple((reason, re.compile(pattern, re.IGNORECASE)) for reason, pattern in _PATTERNS)
REASONS = tuple(reason for reason, _ in _PATTERNS) + ("other",)


def failure_reason(message: str | None) -> str:
    """The failure reason of an img2dataset `error_message` (`other` when none fits)."""
    text = (message or "").strip()
    for reason, pattern in _COMPILED:
        if pattern.search(text):
            return reason
    return "other"

"""The opt-out signals a crawler honours (`pipeline.download.opt_outs`), asked before and after a fetch.

`before_fetch(url)` reads what the host said once for all its URLs (its robots.txt's
`Content-Usage` and `Content-Signal` lines, its tdmrep.json, each fetched once per run per host
by the crawler's `SiteFileCache`s): a declined URL is never requested. `declined_by_headers`
reads the image's own response headers (`tdm-reservation`, `Content-Usage`): a declined image's
body is never read, so nothing of it is written. Each refusal raises `OptedOut`, whose message
`reasons.failure_reason` maps to the signal's counted reason. Each switch in the settings
turns one signal off; X-Robots-Tag is img2dataset's (`download.disallowed_header_directives`).
"""

from __future__ import annotations

import threading
from collections import Counter
from email.message import Message
from urllib.parse import urlsplit

from imagenot.pipeline.config.schema import Download
from imagenot.pipeline.download.opt_outs import (
    Malformed,
    OptedOut,
    PathRule,
    header_reserved,
    longest_match,
    parse_dictionary,
    tdmrep_reserved,
    tdmrep_rules,
    usage_declined,
)
from imagenot.pipeline.download.robots import RobotsCache, SiteFileCache


def tdmrep_file(outcome: dict) -> tuple[list[PathRule], list[str]]:
    """tdmrep.json's rules (none when the file is absent, unreachable or malformed: no signal)."""
    if "body" not in outcome:
        return [], []
    try:
        return tdmrep_rules(outcome["body"]), []
    except Malformed:
        return [], ["tdmrep.json"]


def _path(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class SignalGuard:
    def __init__(self, settings: Download, robots: RobotsCache | None, tdmrep: SiteFileCache | None):
        self._settings, self._robots, self._tdmrep = settings, robots, tdmrep
        self._lock = threading.Lock()
        self._malformed_headers: Counter[str] = Counter()

    def before_fetch(self, url: str) -> None:
        """Raises `OptedOut` when the host's robots.txt or tdmrep.json declines the URL."""
        s, path = self._settings, _path(url)
        if self._robots is not None and (s.ai_preferences or s.content_signal):
            file = self._robots.get(url)
            usage = longest_match(file.usage, path) if s.ai_preferences else None
            if usage is not None and usage.value is not None:
                declined = usage_declined(usage.value, s.ai_preferences_categories)
                if declined:
                    raise OptedOut(f"opted out by Content-Usage in robots.txt ({declined}=n): {url}")
            signal = longest_match(file.signals, path) if s.content_signal else None
            if signal is not None and signal.value:
                raise OptedOut(f"opted out by Content-Signal in robots.txt (ai-train=no): {url}")
        if self._tdmrep is not None and tdmrep_reserved(self._tdmrep.get(url), path):
            raise OptedOut(f"opted out by TDMRep in tdmrep.json (tdm-reservation 1): {url}")

    def declined_by_headers(self, url: str, headers: Message) -> OptedOut | None:
        """The refusal to raise when the image's response headers decline it (once its
        connection is accounted for), else None."""
        s = self._settings
        if s.tdmrep and self._header(headers, "tdm-reservation", header_reserved):
            policy = f" (policy {headers.get('tdm-policy')})" if headers.get("tdm-policy") else ""
            return OptedOut(f"opted out by TDMRep in a tdm-reservation header{policy}: {url}")
        if s.ai_preferences:
            preferences = self._header(headers, "Content-Usage", parse_dictionary) or {}
            declined = usage_declined(preferences, s.ai_preferences_categories)
            if declined:
                return OptedOut(f"opted out by Content-Usage header ({declined}=n): {url}")
        return None

    def _header(self, headers: Message, name: str, parse):
        """The header's field lines, combined as RFC 9110 does, parsed; None when absent or
        malformed (counted)."""
        lines = headers.get_all(name)
        if not lines:
            return None
        try:
            return parse(", ".join(lines))
        except Malformed:
            with self._lock:
                self._malformed_headers[f"{name} header"] += 1
            return None

    def malformed(self) -> Counter[str]:
        """Signals that did not parse, by kind: files this process fetched, headers it read."""
        with self._lock:
            counts = Counter(self._malformed_headers)
        for cache in (self._robots, self._tdmrep):
            if cache is not None:
                counts.update(cache.malformed())
        return counts

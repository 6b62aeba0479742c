"""robots.txt (RFC 9309): read once per host by a worker, obeyed for every request to it.

`RobotsCache.check(url)` fetches `<scheme>://<host>[:port]/robots.txt` the first time a host is
asked about (one thread fetches, the others of the process wait for it) and stores what it found
in the run (`download/robots/<sha256 of the robots.txt URL>.json`), so later rounds and other
workers read it from there: once per run per host (two workers asking at the same moment may
both fetch it). The fetch goes through the crawler's
own opener, so the request obeys the address guard, the host's politeness limits, the body cap
and the fetch deadline, and follows at most `MAX_REDIRECTS` redirects. What the answer means is
the RFC's (section 2.3.1):

- 2xx: its rules, parsed by Protego (the group naming our User-Agent token, else `*`; the
  longest matching path wins, `Allow` on a tie; `*` and `$` patterns), of at most
  `download.robots_max_bytes` bytes (the RFC asks for at least 500 KiB);
- 4xx other than 429 ("unavailable"), or too many redirects: everything is allowed;
- 429, 5xx, or no answer at all ("unreachable"): everything is disallowed, for the round.
"""

from __future__ import annotations

import hashlib
import threading
import urllib.error
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

from apache_beam.io.filesystems import FileSystems
from protego import Protego

from imagenot.pipeline.atomic import write_json
from imagenot.pipeline.shards import read_json

MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: at least five consecutive redirects


class RobotsDisallowed(OSError):
    """The host's robots.txt forbids the URL (message: `disallowed by robots.txt`), or could not
    be read, which disallows everything (message: `robots.txt unreachable`)."""


class Rules(Protocol):
    def can_fetch(self, url: str, user_agent: str) -> bool: ...


class _Everything:
    def __init__(self, allowed: bool, why: str):
        self.allowed, self.why = allowed, why

    def can_fetch(self, url: str, user_agent: str) -> bool:
        return self.allowed


def robots_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}/robots.txt"


def fetch_outcome(read: Callable[[str], bytes], url: str) -> dict:
    """What robots.txt at `url` says, as stored: {"body": text} when it parsed, else
    {"allowed": bool, "why": text}; `read(url)` returns its body or raises as urllib does."""
    try:
        return {"body": read(url).decode("utf-8", errors="replace")}
    except urllib.error.HTTPError as err:
        if 400 <= err.code < 500 and err.code != 429:
            return {"allowed": True, "why": f"robots.txt unavailable (HTTP {err.code})"}
        if 300 <= err.code < 400:
            return {"allowed": True, "why": f"robots.txt behind too many redirects (HTTP {err.code})"}
        return {"allowed": False, "why": f"robots.txt unreachable (HTTP {err.code})"}
    except (OSError, ValueError) as err:  # URLError, timeouts, refused addresses, resets
        return {"allowed": False, "why": f"robots.txt unreachable ({err})"}


def rules_of(outcome: dict) -> Rules:
    if "body" in outcome:
        return Protego.parse(outcome["body"])
    return _Everything(outcome["allowed"], outcome["why"])


class RobotsCache:
    """robots.txt rules per scheme and host, fetched once, shared by a process's threads."""

    def __init__(self, read: Callable[[str], bytes], token: str, folder: str | None = None):
        """`folder`: where the run keeps what each robots.txt said (None: memory only)."""
        self._read, self._token, self._folder = read, token, folder
        self._rules: dict[str, Rules] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def rules(self, url: str) -> Rules:
        key = robots_url(url)
        with self._lock:
            host_lock = self._locks.setdefault(key, threading.Lock())
        with host_lock:
            if key not in self._rules:
                self._rules[key] = rules_of(self._outcome(key))
            return self._rules[key]

    def _outcome(self, key: str) -> dict:
        if self._folder is None:
            return fetch_outcome(self._read, key)
        path = FileSystems.join(self._folder, f"{hashlib.sha256(key.encode()).hexdigest()}.json")
        if FileSystems.exists(path):
            return read_json(path)
        outcome = {"url": key, **fetch_outcome(self._read, key)}
        write_json(path, outcome)
        return outcome

    def check(self, url: str) -> None:
        """Raises `RobotsDisallowed` unless the host's robots.txt allows `url` for our
        User-Agent token."""
        rules = self.rules(url)
        if not rules.can_fetch(url, self._token):
            if isinstance(rules, _Everything):
                raise RobotsDisallowed(f"{rules.why}: everything on the host is disallowed")
            raise RobotsDisallowed(f"disallowed by robots.txt: {url}")

    def fetched(self) -> dict[str, str]:
        """robots.txt URL -> what was found there ("rules" when it parsed)."""
        with self._lock:
            return {key: getattr(rules, "why", "rules") for key, rules in self._rules.items()}

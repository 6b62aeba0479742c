"""robots.txt (RFC 9309): read once per host by a worker, obeyed for every request to it.

`RobotsCache.check(url)` fetches `<scheme>://<host>[:port]/robots.txt` the first time a host
is asked about (one thread fetches, the others of the process wait for it) and stores what it
found in the run (`download/robots/<sha256 of the robots.txt URL>.json`), so later rounds and
other workers read it from there: once per run per host (two workers asking at the same moment
may both fetch it). `SiteFileCache` does this for any one file per host (tdmrep.json as well,
see `pipeline.download.crawler`). The fetch goes through the crawler's own opener, so the
request obeys the address guard, the host's politeness limits, the body cap and the fetch
deadline, and follows at most `MAX_REDIRECTS` redirects. What the answer means is the RFC's
(section 2.3.1):

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
from collections import Counter
from collections.abc import Callable
from typing import Generic, NamedTuple, Protocol, TypeVar
from urllib.parse import urlsplit

from apache_beam.io.filesystems import FileSystems
from protego import Protego

from imagenot.pipeline.download.opt_outs import (
    CONTENT_SIGNAL,
    CONTENT_USAGE,
    Malformed,
    PathRule,
    parse_dictionary,
    robots_lines,
    signal_declined,
)
from imagenot.pipeline.run.files import read_json, write_json

MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: at least five consecutive redirects
ROBOTS_PATH = "/robots.txt"
T = TypeVar("T")


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


def site_url(url: str, path: str) -> str:
    """`<scheme>://<host>[:port]<path>` of the URL's site."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}"


class SiteFileCache(Generic[T]):
    """One file per scheme and host (robots.txt, tdmrep.json), fetched the first time the host
    is asked about (one thread fetches, the others of the process wait for it), stored in the run
    when given a folder, parsed once per process. `parse(outcome)` returns what the file means
    and the names of the parts of it that did not parse, counted (`malformed()`) when this
    process fetched it (so once per run per host)."""

    def __init__(
        self,
        read: Callable[[str], bytes],
        path: str,
        parse: Callable[[dict], tuple[T, list[str]]],
        folder: str | None = None,
    ):
        """`read(url)`: the file's body, raising as urllib does; `folder`: where the run keeps
        what each host's file said (None: memory only)."""
        self._read, self._path, self._parse, self._folder = read, path, parse, folder
        self._parsed: dict[str, T] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._malformed: Counter[str] = Counter()

    def get(self, url: str) -> T:
        key = site_url(url, self._path)
        with self._lock:
            host_lock = self._locks.setdefault(key, threading.Lock())
        with host_lock:
            if key not in self._parsed:
                outcome, fresh = self._outcome(key)
                self._parsed[key], malformed = self._parse(outcome)
                if fresh:
                    with self._lock:
                        self._malformed.update(malformed)
            return self._parsed[key]

    def _outcome(self, key: str) -> tuple[dict, bool]:
        if self._folder is None:
            return fetch_outcome(self._read, key), True
        path = FileSystems.join(self._folder, f"{hashlib.sha256(key.encode()).hexdigest()}.json")
        if FileSystems.exists(path):
            return read_json(path), False
        outcome = {"url": key, **fetch_outcome(self._read, key)}
        write_json(path, outcome)
        return outcome, True

    def parsed(self) -> dict[str, T]:
        with self._lock:
            return dict(self._parsed)

    def malformed(self) -> Counter[str]:
        """Parts of the files this process fetched that did not parse, by kind."""
        with self._lock:
            return Counter(self._malformed)


class RobotsFile(NamedTuple):
    """What a host's robots.txt says: its crawl rules, and its opt-out lines for our token
    (`Content-Usage` and `Content-Signal`, see `pipeline.download.opt_outs`)."""

    rules: Rules
    usage: list[PathRule]  # value: the preferences (key -> token), None when malformed
    signals: list[PathRule]  # value: whether it declines AI training, None when malformed


class RobotsCache(SiteFileCache[RobotsFile]):
    """robots.txt per scheme and host: `check` obeys its rules (when `obey`), `file` gives the
    opt-out lines as well."""

    def __init__(self, read: Callable[[str], bytes], token: str, folder: str | None = None, obey: bool = True):
        super().__init__(read, ROBOTS_PATH, self._robots_file, folder)
        self._token, self._obey = token, obey

    def _robots_file(self, outcome: dict) -> tuple[RobotsFile, list[str]]:
        body, malformed = outcome.get("body", ""), []

        def parsed(field: str, parse: Callable[[str], object]) -> list[PathRule]:
            rules = []
            for rule in robots_lines(body, self._token, field):
                try:
                    rules.append(rule._replace(value=parse(rule.value)))
                except Malformed:
                    malformed.append(f"{field.title()} in robots.txt")
                    rules.append(rule._replace(value=None))
            return rules

        usage, signals = parsed(CONTENT_USAGE, parse_dictionary), parsed(CONTENT_SIGNAL, signal_declined)
        return RobotsFile(rules_of(outcome), usage, signals), malformed

    def check(self, url: str) -> None:
        """Raises `RobotsDisallowed` unless the host's robots.txt allows `url` for our
        User-Agent token (nothing when not obeyed)."""
        if not self._obey:
            return
        rules = self.get(url).rules
        if not rules.can_fetch(url, self._token):
            if isinstance(rules, _Everything):
                raise RobotsDisallowed(f"{rules.why}: everything on the host is disallowed")
            raise RobotsDisallowed(f"disallowed by robots.txt: {url}")

    def fetched(self) -> dict[str, str]:
        """robots.txt URL -> what was found there ("rules" when it parsed)."""
        return {key: getattr(file.rules, "why", "rules") for key, file in self.parsed().items()}

"""Per-host politeness: a cap on concurrent requests and on their rate, backoff, giving up.

Shared by every thread of a download worker process (`Politeness` is the process's, see
`pipeline.download.crawler`). For each host: at most `per_host_connections` requests in flight,
request starts at least 1/`per_host_rate` seconds apart, and after a 429 or 503 answer no
request until the backoff is over (a thread that waited for its start slot while a throttled
answer came looks again, so no thread starts inside the window): `Retry-After` (seconds or an
HTTP date) when the host sends one, else
`backoff_base_s` doubled with every throttled answer in a row, at most `max_backoff_s` (a host
asking for longer is given up). A host that fails `host_max_failures` times in a row (throttled,
5xx, unreachable, timed out) is given up: its remaining requests fail at once, counted
`host_given_up`, and the reserve backfills them in the next round, which starts afresh.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

THROTTLED = (429, 503)


class HostGivenUp(OSError):
    """The host failed too often this round; the message starts with `host given up`."""


class SlotTimeout(TimeoutError):
    """The host's next free slot comes after the fetch's deadline; the message says `timed out`."""


@dataclass(frozen=True)
class HostLimits:
    connections: int
    rate: float  # requests per second
    backoff_base_s: float
    max_backoff_s: float
    max_failures: int


@dataclass
class HostState:
    slots: threading.BoundedSemaphore
    next_start: float = 0.0  # time.monotonic() of the earliest next request start
    backoff_until: float = 0.0
    failures: int = 0  # in a row
    given_up: str | None = None
    requests: int = 0
    throttled: int = 0
    first: float | None = None  # time.time() of the first and last request starts
    last: float | None = None


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A `Retry-After` header's delay in seconds (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        date = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if date is None or date.tzinfo is None:
        return None
    return max(0.0, date.timestamp() - (time.time() if now is None else now))


class Politeness:
    def __init__(self, limits: HostLimits):
        self.limits = limits
        self._hosts: dict[str, HostState] = {}
        self._lock = threading.Lock()

    def _host(self, host: str) -> HostState:
        with self._lock:
            if host not in self._hosts:
                self._hosts[host] = HostState(threading.BoundedSemaphore(self.limits.connections))
            return self._hosts[host]

    def _check(self, host: str, state: HostState) -> None:
        if state.given_up:
            raise HostGivenUp(f"host given up: {host} ({state.given_up})")

    @contextmanager
    def slot(self, host: str, deadline: float | None) -> Iterator[None]:
        """Hold one of the host's connections for a request, starting it no sooner than the
        rate and any backoff allow; raises `HostGivenUp`, or `SlotTimeout` past `deadline`."""
        state = self._host(host)
        self._check(host, state)
        state.slots.acquire()
        try:
            self._wait_for_start(host, state, deadline)
            yield
        finally:
            state.slots.release()

    def _wait_for_start(self, host: str, state: HostState, deadline: float | None) -> None:
        """Sleep until the host's next start slot. A throttled answer that came while sleeping
        moves the backoff past the slot taken: the slot is then given up and the wait starts again."""
        while True:
            with self._lock:
                now = time.monotonic()
                start = max(now, state.next_start, state.backoff_until)
                if deadline is not None and start > deadline:
                    raise SlotTimeout(f"timed out: {host}'s next request slot is past the fetch deadline")
                state.next_start = start + 1 / self.limits.rate
            time.sleep(start - now)
            self._check(host, state)
            with self._lock:
                if time.monotonic() >= state.backoff_until:
                    state.requests += 1
                    state.first = state.first or time.time()
                    state.last = time.time()
                    return

    def answered(self, host: str, status: int, retry_after: str | None = None) -> None:
        """Record an HTTP answer: a 429 or 503 backs the host off, a 5xx counts as a failure,
        anything else ends a run of failures."""
        state = self._host(host)
        with self._lock:
            if status in THROTTLED:
                state.throttled += 1
                wait = retry_after_seconds(retry_after)
                wait = self.limits.backoff_base_s * 2**state.failures if wait is None else wait
                if wait > self.limits.max_backoff_s:
                    state.given_up = f"asked to wait {wait:.0f} s > download.max_backoff_s"
                state.backoff_until = max(state.backoff_until, time.monotonic() + wait)
                self._failed(state, f"{status}")
            elif status >= 500:
                self._failed(state, f"{status}")
            else:
                state.failures = 0

    def failed(self, host: str, error: str) -> None:
        """Record a request that got no answer (unreachable, timed out)."""
        state = self._host(host)
        with self._lock:
            self._failed(state, error)

    def _failed(self, state: HostState, what: str) -> None:
        state.failures += 1
        if state.failures >= self.limits.max_failures and not state.given_up:
            state.given_up = f"{state.failures} failures in a row, the last {what}"

    def stats(self) -> dict[str, dict]:
        """Per host: requests, throttled answers, first and last request start (epoch
        seconds), and why it was given up (None if not)."""
        with self._lock:
            return {
                host: {
                    "requests": s.requests,
                    "throttled": s.throttled,
                    "first": s.first,
                    "last": s.last,
                    "given_up": s.given_up,
                }
                for host, s in self._hosts.items()
            }

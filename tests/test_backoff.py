"""Backoff that holds: after a 429 or 503, no request reaches the host inside its backoff window
(Retry-After in seconds, as an HTTP date, or the exponential backoff when there is none), from
any of the threads of a worker. Checked from the loopback server's own request timestamps."""

from __future__ import annotations

import queue
import threading
import time
import urllib.error
from contextlib import contextmanager

from image_server import LoopbackImageServer

from imagenot.pipeline.config.schema import Download
from imagenot.pipeline.download.crawler import Crawler

THREADS, RATE, BASE = 8, 10, 0.4
# A request whose slot the crawler granted before it recorded the throttled answer may reach the
# server inside the window. Both moments are timed inside the crawler's own lock (`_LockTimes`), so
# a thread paused after either cannot move them; GRANT_SLACK is only the clocks' margin.
GRANT_SLACK = 0.01


def _window(path: str) -> float:
    """The least backoff a throttled answer asks for (an HTTP date counts whole seconds)."""
    how = path.split("/")[3]
    if how.isdigit():
        return float(how)
    if how.startswith("date"):
        return int(how.removeprefix("date")) - 1
    return BASE


class _LockTimes:
    """The crawler's politeness lock, noting for each thread when it last let go of it, read while
    still holding it: the moment a grant or a recorded answer took effect for the other threads."""

    def __init__(self, lock):
        self._lock, self.released = lock, {}

    def __enter__(self):
        self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self.released[threading.get_ident()] = time.monotonic()
        self._lock.release()


def _timed(crawler: Crawler, current: threading.local) -> tuple[dict[str, float], dict[str, float]]:
    """When each request's slot was granted, and when each answer was recorded, by the path the
    server logs, on the server's clock (time.monotonic in this process): the last release of the
    crawler's lock by the thread in `slot` (its granting hold) and in `answered` (its update)."""
    granted, answered_at = {}, {}
    politeness = crawler.politeness
    slot, answered = politeness.slot, politeness.answered
    politeness._lock = times = _LockTimes(politeness._lock)

    @contextmanager
    def timed_slot(host, deadline):
        with slot(host, deadline):
            granted[current.path] = times.released[threading.get_ident()]
            yield

    def timed_answered(host, status, retry_after=None):
        answered(host, status, retry_after)
        answered_at[current.path] = times.released[threading.get_ident()]

    politeness.slot, politeness.answered = timed_slot, timed_answered
    return granted, answered_at


def test_no_request_goes_to_a_host_inside_its_backoff_window():
    settings = Download(
        allowed_networks=["127.0.0.26/32"],
        threads=THREADS,
        timeout_s=5,
        per_host_connections=4,
        per_host_rate=RATE,
        backoff_base_s=BASE,
        host_max_failures=100,
        robots_txt=False,
        tdmrep=False,
        ai_preferences=False,
        content_signal=False,
    )
    throttles = [
        "/busy/429/1/coffee.jpg",
        "/busy/503/date2/moon.jpg",
        "/busy/503/none/coins.jpg",
        "/busy/429/none/camera.jpg",
    ]
    paths = []
    for i in range(28):
        paths.append(f"/delay/20/coffee.jpg?id={i}")
        if i % 7 == 3:
            paths.append(throttles[i // 7] + f"?id={i}")
    errors = []
    with LoopbackImageServer(host="127.0.0.26") as server:
        crawler, todo, current = Crawler(settings), queue.Queue(), threading.local()
        granted, answered_at = _timed(crawler, current)
        for path in paths:
            todo.put(path)

        def fetch():
            while True:
                try:
                    current.path = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    with crawler.opener.open(server.url(current.path), timeout=5) as response:
                        response.read()
                except urllib.error.HTTPError as err:
                    if err.code not in (429, 503):
                        errors.append((current.path, err))
                except Exception as err:  # any other failure fails the test below
                    errors.append((current.path, err))

        threads = [threading.Thread(target=fetch) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        log = server.log
    assert errors == []
    assert sorted(path for path, _, _ in log) == sorted(paths)
    throttled = [(path, end) for path, _, end in log if path.startswith("/busy/")]
    assert len(throttled) == len(throttles)
    for path, end in throttled:
        inside = [p for p, start, _ in log if end < start < end + _window(path)]
        # what reached the host inside the window was granted its slot before the crawler knew
        late = [p for p in inside if granted[p] > answered_at[path] + GRANT_SLACK]
        assert late == [], (path, late)
    assert crawler.politeness.stats()["127.0.0.26"]["throttled"] == len(throttles)

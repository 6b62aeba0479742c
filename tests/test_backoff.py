"""Backoff that holds: after a 429 or 503, no request reaches the host inside its backoff window
(Retry-After in seconds, as an HTTP date, or the exponential backoff when there is none), from
any of the threads of a worker. Checked from the loopback server's own request timestamps."""

from __future__ import annotations

import queue
import threading
import urllib.error

from image_server import LoopbackImageServer

from imagenot.pipeline.config.schema import Download
from imagenot.pipeline.download.crawler import Crawler

THREADS, RATE, BASE = 8, 10, 0.4
IN_FLIGHT = 0.03  # a request the client started before the throttled answer reached it may arrive just after


def _window(path: str) -> float:
    """The least backoff a throttled answer asks for (an HTTP date counts whole seconds)."""
    how = path.split("/")[3]
    if how.isdigit():
        return float(how)
    if how.startswith("date"):
        return int(how.removeprefix("date")) - 1
    return BASE


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
    with LoopbackImageServer(host="127.0.0.26") as server:
        crawler, todo = Crawler(settings), queue.Queue()
        for path in paths:
            todo.put(server.url(path))

        def fetch():
            while True:
                try:
                    url = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    with crawler.opener.open(url, timeout=5) as response:
                        response.read()
                except urllib.error.HTTPError as err:
                    assert err.code in (429, 503)

        threads = [threading.Thread(target=fetch) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        log = server.log
    assert len(log) == len(paths)
    throttled = [(path, end) for path, _, end in log if path.startswith("/busy/")]
    assert len(throttled) == len(throttles)
    for path, end in throttled:
        inside = [p for p, start, _ in log if end + IN_FLIGHT < start < end + _window(path)]
        assert inside == [], (path, inside)
    assert crawler.politeness.stats()["127.0.0.26"]["throttled"] == len(throttles)

"""A total deadline on a fetch: a watchdog thread that shuts a socket down when its time is up.

A socket timeout bounds each read, not the fetch: a server trickling a byte per read keeps a
fetch going for ever. Every connection the crawler opens is watched until its fetch's deadline
(`download.fetch_deadline_s` after the fetch's first connection, redirects included); the
watchdog then shuts the socket down, which ends any read blocked on it, and the crawler reports
the fetch as timed out. One thread per process serves every connection.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time


class FetchDeadline(TimeoutError):
    """The fetch's total deadline passed; the message starts with `timed out`."""


class Watchdog:
    def __init__(self):
        self._heap: list[tuple[float, int, socket.socket]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, sock: socket.socket, deadline: float) -> None:
        """Shut `sock` down at `deadline` (time.monotonic()) unless it is closed by then."""
        with self._wake:
            heapq.heappush(self._heap, (deadline, next(self._order), sock))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="fetch-deadlines", daemon=True)
                self._thread.start()
            if self._heap[0][2] is sock:  # the watchdog sleeps until the earliest deadline: wake it only for a new one
                self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    _, _, sock = heapq.heappop(self._heap)
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:  # closed already: the fetch ended in time
                        pass
                self._wake.wait(self._heap[0][0] - now if self._heap else None)

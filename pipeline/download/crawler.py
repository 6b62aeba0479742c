"""The crawler img2dataset fetches through: urllib's opener with every guard in its handlers.

img2dataset fetches each image with `urllib.request.urlopen`, which uses the opener installed
in the process (`urllib.request.install_opener`). `Crawler.opener` replaces urllib's default
opener with one whose only URL handlers are `CrawlHandler`s for http and https (so file://,
ftp:// and data: URLs, and redirects to them, fail). A request through it, and every redirect
it follows:

1. is refused when a blocklist names its URL or domain (a redirect to a listed site, say), and
   checked against the host's robots.txt (`pipeline.download.robots`), unless
   `download.robots_txt` is off, and against the opt-out signals the host states for all its
   URLs (robots.txt's Content-Usage and Content-Signal lines, tdmrep.json; see
   `pipeline.download.signal_guard`);
2. waits for a connection slot of its host (`pipeline.download.politeness`);
3. connects only to an address the address guard allows (`pipeline.download.address_guard`);
4. reads the whole response while it holds the slot, refusing a declared or actual body over
   `download.max_response_bytes`, and gives up when the fetch's deadline passes
   (`pipeline.download.deadline`); an image whose response headers opt out (tdm-reservation,
   Content-Usage) is refused without reading its body;
5. reports the answer to the host's politeness state (429 and 503 back the host off).

robots.txt and tdmrep.json themselves ("site files") are fetched through the same opener, with
the body cut at `download.robots_max_bytes` and no signal checked.

There is no proxy handler: a proxy would connect where the address guard cannot see.
Each refusal raises an error whose message `reasons.failure_reason` maps to a counted reason.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import io
import threading
import time
import urllib.error
import urllib.request
import urllib.response
from collections.abc import Iterator

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.config.schema import Download
from imagenot.pipeline.download.address_guard import AddressGuard, AddressRefused
from imagenot.pipeline.download.blocklists import Blocklist
from imagenot.pipeline.download.deadline import FetchDeadline, Watchdog
from imagenot.pipeline.download.hosts import host_of
from imagenot.pipeline.download.http_guard import ResponseTooLarge
from imagenot.pipeline.download.opt_outs import TDMREP_PATH
from imagenot.pipeline.download.politeness import HostLimits, Politeness
from imagenot.pipeline.download.robots import MAX_REDIRECTS, RobotsCache, SiteFileCache
from imagenot.pipeline.download.signal_guard import SignalGuard, tdmrep_file

READ_CHUNK = 1 << 16
ROBOTS_DIR, TDMREP_DIR = "robots", "tdmrep"  # in the stage folder: what each host's file said, for every round


class BlockedURL(OSError):
    """A request to a URL or domain a blocklist names; the message starts with `blocklisted`."""


def _guarded(connection_class):
    """`connection_class` connecting through the address guard, watched until `deadline`."""

    class Guarded(connection_class):
        def __init__(self, *args, guard: AddressGuard, watchdog: Watchdog, deadline: float, **kwargs):
            super().__init__(*args, **kwargs)
            self._guard, self._watchdog, self._deadline = guard, watchdog, deadline
            self._create_connection = self._connect_guarded

        def _connect_guarded(self, address, timeout, source_address=None):
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise FetchDeadline("timed out: the fetch deadline passed before connecting")
            return self._guard.connect(address, min(timeout, left), source_address)

        def connect(self):
            super().connect()
            self._watchdog.watch(self.sock, self._deadline)  # after TLS wrapped it, if https

    return Guarded


GuardedHTTPConnection = _guarded(http.client.HTTPConnection)
GuardedHTTPSConnection = _guarded(http.client.HTTPSConnection)


def read_body(response, max_bytes: int, truncate: bool = False) -> bytes:
    """The whole body, at most `max_bytes`: beyond, `ResponseTooLarge` (or the first
    `max_bytes` when `truncate`)."""
    declared = response.headers.get("Content-Length")
    if not truncate and declared and declared.strip().isdigit() and int(declared) > max_bytes:
        raise ResponseTooLarge(f"response too large: Content-Length {int(declared)} > {max_bytes} bytes")
    chunks, size = [], 0
    while size <= max_bytes:
        chunk = response.read(min(READ_CHUNK, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    body = b"".join(chunks)
    if size > max_bytes:
        if not truncate:
            raise ResponseTooLarge(f"response too large: over {max_bytes} bytes")
        body = body[:max_bytes]
    return body


class CrawlHandler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """http and https through the guards above (see the module's docstring)."""

    def __init__(self, crawler: Crawler):
        urllib.request.HTTPHandler.__init__(self)
        urllib.request.HTTPSHandler.__init__(self)
        self.crawler = crawler

    def http_open(self, request):
        return self._open(request, GuardedHTTPConnection)

    def https_open(self, request):
        return self._open(request, GuardedHTTPSConnection, context=self._context)

    def _open(self, request, connection_class, **connection_args):
        crawler, settings = self.crawler, self.crawler.settings
        url = request.full_url
        host = host_of(url)
        site_file = getattr(request, "site_file", False)
        blocked = crawler.blocklist.row_reason(url)
        if blocked:
            raise BlockedURL(f"blocklisted {blocked.removeprefix('blocklist_')}: {url}")
        if not site_file:
            if crawler.robots is not None:
                crawler.robots.check(url)
            crawler.signals.before_fetch(url)
        opted_out = None
        with crawler.politeness.slot(host, getattr(request, "deadline", None)):
            if getattr(request, "deadline", None) is None:
                request.deadline = time.monotonic() + settings.fetch_deadline()
            connect = functools.partial(
                connection_class, guard=crawler.guard, watchdog=crawler.watchdog, deadline=request.deadline
            )
            try:
                response = self.do_open(connect, request, **connection_args)
                # recorded before the body is read, so a 429's backoff binds every slot that opens after it
                crawler.politeness.answered(host, response.status, response.headers.get("Retry-After"))
                if not site_file and 200 <= response.status < 300:
                    opted_out = crawler.signals.declined_by_headers(url, response.headers)
                max_bytes = settings.robots_max_bytes if site_file else settings.max_response_bytes
                body = b"" if opted_out else read_body(response, max_bytes, truncate=site_file)
                if time.monotonic() >= request.deadline:  # the watchdog ended the body early
                    raise FetchDeadline("timed out: the body's end came after the deadline")
            except (OSError, http.client.HTTPException) as err:
                if time.monotonic() >= request.deadline:
                    crawler.politeness.failed(host, "timeout")
                    raise FetchDeadline(f"timed out: fetch deadline of {settings.fetch_deadline():g} s passed") from err
                if not isinstance(getattr(err, "reason", err), (AddressRefused, ResponseTooLarge)):
                    crawler.politeness.failed(host, type(err).__name__)
                raise
        if opted_out:
            response.close()
            raise opted_out
        answer = urllib.response.addinfourl(io.BytesIO(body), response.headers, url, response.status)
        answer.msg = response.reason
        return answer


class RedirectHandler(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, carrying the fetch's deadline (and a site file request's nature,
    with robots.txt's redirect limit) to the next request."""

    def redirect_request(self, request, fp, code, msg, headers, newurl):
        new = super().redirect_request(request, fp, code, msg, headers, newurl)
        if new is not None:
            new.deadline = getattr(request, "deadline", None)
            new.site_file = getattr(request, "site_file", False)
            if new.site_file and len(getattr(request, "redirect_dict", {})) >= MAX_REDIRECTS:
                raise urllib.error.HTTPError(request.full_url, code, "site file: too many redirects", headers, fp)
        return new


class Crawler:
    """A download worker's guards and per-host state, shared by its threads."""

    def __init__(self, settings: Download, files_dir: str | None = None, blocklist: Blocklist | None = None):
        """`files_dir`: where the run keeps what each host's robots.txt and tdmrep.json said, in
        `robots/` and `tdmrep/` (None: memory only); `blocklist`: URLs and domains never
        requested (None: none)."""
        self.settings, self.blocklist = settings, blocklist or Blocklist()
        self.guard = AddressGuard(settings.allowed_networks)
        self.watchdog = Watchdog()
        self.politeness = Politeness(
            HostLimits(
                connections=settings.per_host_connections,
                rate=settings.per_host_rate,
                backoff_base_s=settings.backoff_base_s,
                max_backoff_s=settings.max_backoff_s,
                max_failures=settings.host_max_failures,
            )
        )
        self.opener = urllib.request.OpenerDirector()
        for handler in (
            urllib.request.UnknownHandler(),
            CrawlHandler(self),
            urllib.request.HTTPDefaultErrorHandler(),
            RedirectHandler(),
            urllib.request.HTTPErrorProcessor(),
        ):
            self.opener.add_handler(handler)

        def folder(name: str) -> str | None:
            return None if files_dir is None else FileSystems.join(files_dir, name)

        read_robots = settings.robots_txt or settings.ai_preferences or settings.content_signal
        self.robots = (
            RobotsCache(self._read_site_file, settings.user_agent_token, folder(ROBOTS_DIR), obey=settings.robots_txt)
            if read_robots
            else None
        )
        self.tdmrep = None
        if settings.tdmrep:
            self.tdmrep = SiteFileCache(self._read_site_file, TDMREP_PATH, tdmrep_file, folder(TDMREP_DIR))
        self.signals = SignalGuard(settings, self.robots, self.tdmrep)

    def _read_site_file(self, url: str) -> bytes:
        request = urllib.request.Request(
            url, headers={"User-Agent": f"Mozilla/5.0 (compatible; {self.settings.user_agent_token})"}
        )
        request.site_file = True
        with self.opener.open(request, timeout=self.settings.timeout_s) as response:
            return response.read()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """`urllib.request.urlopen`, which img2dataset calls, goes through this crawler inside
        the block. urllib has one opener per process: the one before is put back after, so
        nothing else in the process (a test, a user's notebook) fetches through the crawler."""
        previous = urllib.request._opener  # urllib offers no getter for the installed opener
        urllib.request.install_opener(self.opener)
        try:
            yield
        finally:
            urllib.request.install_opener(previous)


_crawlers: dict[tuple[str, str], Crawler] = {}
_crawlers_lock = threading.Lock()


def process_crawler(round_dir: str, settings: Download, files_dir: str, blocklist: Blocklist) -> Crawler:
    """This process's crawler for a round: every fetching thread of the process shares it, and
    the next round starts with fresh per-host state."""
    key = (round_dir, settings.model_dump_json())
    with _crawlers_lock:
        if key not in _crawlers:
            _crawlers.clear()
            _crawlers[key] = Crawler(settings, files_dir, blocklist)
        return _crawlers[key]

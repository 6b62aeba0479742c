"""Review server latency: page render, answer save and image read with 8 raters at once.

    python benchmarks/bench_review.py [--run runs/demo] [--clients 8] [--seconds 60]

Copies the run's rank/, download/ and config (a finished `make demo` run by default) into a
temporary folder, plans a review there with as many raters wanted as clients (so every client
always has pages), and serves it with waitress on 127.0.0.1 in this process's threads, as
`imagenot review serve` does. `--clients` raters then answer page after page for `--seconds`,
each in its own thread with its own cookie: GET /next (redirected to a page, timed as the page
render), GET one image of it (timed), POST the page's answers (timed as the save, one SQLite
transaction, up to the server's 303). The baseline is the same waitress, threads and clients against a WSGI app that
returns one of the review's pages as fixed bytes: the transport's own floor. The last line is one JSON
object: p50 and p99 per kind of request, in ms, and each over the baseline's; the goal is a
p99 under 100 ms.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import waitress.server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from ports import free_loopback_port  # noqa: E402

from imagenot.pipeline.config.schema import load_run_config  # noqa: E402
from imagenot.pipeline.review import plan as review_plan  # noqa: E402
from imagenot.pipeline.review.app import create_app  # noqa: E402
from imagenot.pipeline.review.session import ReviewSession  # noqa: E402
from imagenot.pipeline.review.store import Store  # noqa: E402
from imagenot.wordnet.index import load_index  # noqa: E402

COPIED = ("config.yaml", "rank", "download")


def _serve(app, clients: int) -> tuple[waitress.server.BaseWSGIServer, str]:
    port = free_loopback_port()
    server = waitress.server.create_server(app, host="127.0.0.1", port=port, threads=clients)
    threading.Thread(target=server.run, daemon=True).start()
    return server, f"http://127.0.0.1:{port}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a POST's 303 ends its timing; the next page is fetched and timed on its own


def _rater(base: str, name: str, until: float, timings: dict[str, list[float]]) -> None:
    cookies = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    opener, poster = urllib.request.build_opener(cookies), urllib.request.build_opener(cookies, _NoRedirect)

    def timed(kind: str, path: str, form: dict | None = None) -> tuple[str, str]:
        started = time.perf_counter()
        if form is not None:
            try:
                poster.open(base + path, data=urllib.parse.urlencode(form).encode(), timeout=30).close()
            except urllib.error.HTTPError as answer:
                if answer.code != 303:
                    raise
            timings[kind].append(time.perf_counter() - started)
            return "", ""
        with opener.open(base + path, timeout=30) as response:
            body, url = response.read(), response.geturl()
        timings[kind].append(time.perf_counter() - started)
        return url, body.decode("utf-8", "replace")

    timed("sign_in", "/rater", {"name": name})
    while time.monotonic() < until:
        with opener.open(base + "/next", timeout=30) as response:  # the redirect itself is not timed
            path = urllib.parse.urlsplit(response.geturl()).path
        if not path.startswith("/task/"):
            return
        _, page = timed("page", path)
        timings["pages"][:] = [page]  # the baseline serves one of them
        images = list(dict.fromkeys(re.findall(r'name="a-([0-9a-f]{24})"', page)))
        timed("image", f"/image/{images[0]}")
        timed("save", path, {f"a-{image}": "yes" for image in images})


def _load(base: str, clients: int, seconds: float) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"sign_in": [], "page": [], "image": [], "save": [], "pages": []}
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=_rater, args=(base, f"bench {i}", until, timings)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    return timings


def _baseline(page: bytes):
    """A WSGI app that answers as the review server does, with fixed bytes and no work."""

    def app(environ, start_response):
        if environ["REQUEST_METHOD"] == "POST":
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        path = environ["PATH_INFO"]
        if path in ("/rater", "/next") or environ["REQUEST_METHOD"] == "POST" and path.startswith("/task/"):
            start_response("303 See Other", [("Location", "/task/t"), ("Content-Length", "0")])
            return [b""]
        body = page if path.startswith("/task/") else b"jpeg"
        start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
        return [body]

    return app


def _percentiles(values: list[float]) -> dict[str, float]:
    ms = np.array(values) * 1000
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", default="runs/demo", help="a run with downloaded images (make demo)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-review-") as folder:
        run_dir = Path(folder) / "run"
        run_dir.mkdir()
        for name in COPIED:
            source = Path(args.run) / name
            (shutil.copytree if source.is_dir() else shutil.copy2)(source, run_dir / name)
        config = load_run_config(str(run_dir))
        config = config.model_copy(update={"review": config.review.model_copy(update={"raters": args.clients})})
        plan = review_plan.make_plan(config, str(run_dir))
        review_plan.write_plan(str(run_dir), plan)
        store = Store(str(run_dir))
        session = ReviewSession(str(run_dir), config.review, load_index(), store)
        server, base = _serve(create_app(session, store.secret()), args.clients)
        review = _load(base, args.clients, args.seconds)
        server.close()
        stored = len(store.all_answers())
        server, base = _serve(_baseline(review["pages"][0].encode()), args.clients)
        floor = _load(base, args.clients, args.seconds)
        server.close()
    figures = {"clients": args.clients, "seconds": args.seconds, "plan_images": plan.num_rows, "answers_stored": stored}
    for kind in ("page", "image", "save"):
        ours, baseline = _percentiles(review[kind]), _percentiles(floor[kind])
        figures[kind] = {
            **ours,
            "baseline_p50_ms": baseline["p50_ms"],
            "baseline_p99_ms": baseline["p99_ms"],
            "p99_over_baseline": round(ours["p99_ms"] / baseline["p99_ms"], 2),
        }
        print(
            f"{kind:>5}: p50 {ours['p50_ms']:7.2f} ms  p99 {ours['p99_ms']:7.2f} ms  ({ours['n']:,} requests; "
            f"baseline p50 {baseline['p50_ms']:.2f} p99 {baseline['p99_ms']:.2f})"
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

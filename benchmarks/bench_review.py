"""Review server latency: page render, answer save and image read with 8 raters at once.

    python benchmarks/bench_review.py [--run runs/demo] [--clients 8] [--seconds 60] [--before REV] [--classes]

`--classes` measures the class review (`imagenot review classes serve`: one candidate class a
page, its captions and thumbnails, `review.class_raters` 50) instead of the image review; its run
copy also takes score/ and select/ (the captions), and it wants no plan. A run's few classes have
their answers in seconds; `--classes --list FILE --corpus GLOB [--config YAML]` reviews a class
list instead (1000 classes: a minute's load), its captions read from a sample of the corpus
(the config maps its columns), no thumbnails.

Copies the run's rank/, download/ and config (a finished `make demo` run by default) into a
temporary folder, plans a review there with 50 answers wanted an image (review.raters' most),
and starts `imagenot review serve` on it on 127.0.0.1 in a process of its own
(`--threads` as many as clients), as a rater's machine would run it; the clients are threads of
this process, each with its own cookie, under a new rater name whenever its name has nothing left
(until `--seconds` are up or the review has all its answers): GET /next (redirected to a page, timed as
the page render), GET one image of it (timed), POST the page's answers (timed as the save, one
SQLite transaction, up to the server's 303).

After each run the answers in the review's SQLite are compared with what each client sent in the
pages the server confirmed: an answer sent and not stored is lost (unless its item had all the
answers it wants by then: those are counted apart, as refused), one stored twice (or stored and
never sent) is doubled. Errors are counted per client thread, and the first of each shown.

`--before REV` first runs the same load against the review package of git revision REV (its
`pipeline/review/*.py`, put ahead of this tree's on the server's import path; everything else is
this tree's), so a change is measured against what it replaced in one run, under the same load.
The baseline is the same waitress, threads and clients against a WSGI app that returns one of the
review's pages as fixed bytes: the transport's and the clients' own floor. The last line is one
JSON object: p50 and p99 per kind of request, in ms, for each server, with the load average
around each run; the goal is a p99 under 100 ms.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from ports import free_loopback_port  # noqa: E402

KINDS = ("page", "image", "save")
RATERS = 50  # answers wanted per image or class (review.raters' most), so the clients have pages for a while
IMAGE = re.compile(r'src="/image/([0-9a-f]{24})"')
REVIEWS = {  # what differs between the two reviews, for the clients, the run's copy and the server
    "images": {
        "page": "/task/",
        "field": re.compile(r'name="a-([0-9a-f]{24})"'),
        "answer": "yes",
        "copied": ("config.yaml", "rank", "download"),
        "database": "answers.sqlite",
        "serve": ["review", "serve"],
    },
    "classes": {
        "page": "/class/",
        "field": re.compile(r'name="a-(n[0-9]{8})"'),
        "answer": "keep",
        "copied": ("config.yaml", "select", "score", "rank", "download"),
        "database": "classes.sqlite",
        "serve": ["review", "classes", "serve"],
    },
}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a POST's 303 ends its timing; the next page is fetched and timed on its own


class Client:
    """One rater in its own thread: its timings, the answers the server confirmed, its errors."""

    def __init__(self, base: str, name: str, review: dict):
        self.base, self.name, self.review = base, name, review
        self.timings: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.sent: list[tuple[str, str, str]] = []  # (rater, image, answer) of each confirmed page
        self.errors: list[str] = []
        self.page = ""
        self.ended = 0.0  # when its last page was sent
        cookies = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        self.opener = urllib.request.build_opener(cookies)
        self.poster = urllib.request.build_opener(cookies, _NoRedirect)

    def _post(self, path: str, form: dict) -> None:
        try:
            self.poster.open(self.base + path, data=urllib.parse.urlencode(form).encode(), timeout=30).close()
        except urllib.error.HTTPError as answer:
            if answer.code != 303:
                raise

    def _timed_get(self, kind: str, path: str) -> tuple[str, str]:
        started = time.perf_counter()
        with self.opener.open(self.base + path, timeout=30) as response:
            body, url = response.read(), response.geturl()
        self.timings[kind].append(time.perf_counter() - started)
        return url, body.decode("utf-8", "replace")

    def run(self, until: float) -> None:
        try:
            rater, names, fresh = f"{self.name}.0", 1, 0  # fresh: pages answered under this name
            self._post("/rater", {"name": rater})
            while time.monotonic() < until:
                with self.opener.open(self.base + "/next", timeout=30) as response:  # the redirect is not timed
                    path = urllib.parse.urlsplit(response.geturl()).path
                if not path.startswith(self.review["page"]):
                    if not fresh:
                        return  # a new name found nothing: the review has all its answers
                    rater, names, fresh = f"{self.name}.{names}", names + 1, 0
                    self._post("/rater", {"name": rater})
                    continue
                _, page = self._timed_get("page", path)
                self.page = page
                items = list(dict.fromkeys(self.review["field"].findall(page)))
                if shown := IMAGE.search(page):
                    self._timed_get("image", f"/image/{shown.group(1)}")
                started = time.perf_counter()
                answer = self.review["answer"]
                self._post(path, {f"a-{item}": answer for item in items})
                self.timings["save"].append(time.perf_counter() - started)
                self.sent += [(rater, item, answer) for item in items]
                fresh += 1
                self.ended = time.monotonic()
        except Exception as err:  # noqa: BLE001  (counted and reported per client)
            self.errors.append(f"{type(err).__name__}: {err}")


def _load(base: str, clients: int, seconds: float, prefix: str, review: dict) -> tuple[list[Client], float]:
    """The clients after `seconds` of answering (or once the review has all its answers), and how
    long they answered."""
    raters = [Client(base, f"{prefix} {i}", review) for i in range(clients)]
    started = time.monotonic()
    threads = [threading.Thread(target=r.run, args=(started + seconds,)) for r in raters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    return raters, max(r.ended for r in raters) - started


def _start(command: list[str], port: int, log: Path) -> subprocess.Popen:
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}):\n{log.read_text()}")
        try:
            with urllib.request.build_opener().open(f"http://127.0.0.1:{port}/", timeout=2):
                return process
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"the server did not answer within 180 s:\n{log.read_text()}")


def _stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _review_run(source: Path | None, folder: Path, kind: str, config_path: str | None = None) -> Path:
    """A copy of the stages the review reads (none for a class list's review: `config_path`'s
    config), RATERS answers wanted an item; the image review's planned."""
    from imagenot.pipeline.config.schema import load_run_config
    from imagenot.pipeline.review import plan as review_plan

    run_dir = folder / "run"
    run_dir.mkdir(parents=True)
    for name in () if source is None else REVIEWS[kind]["copied"]:
        (shutil.copytree if (source / name).is_dir() else shutil.copy2)(source / name, run_dir / name)
    if config_path:
        shutil.copy2(config_path, run_dir / "config.yaml")
    config = yaml.safe_load((run_dir / "config.yaml").read_text()) if (run_dir / "config.yaml").exists() else {}
    config["review"] = {**config.get("review", {}), "raters": RATERS, "class_raters": RATERS}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    if kind == "images":
        review_plan.write_plan(str(run_dir), review_plan.make_plan(load_run_config(str(run_dir)), str(run_dir)))
    return run_dir


def _review_package(revision: str, folder: Path) -> Path:
    """`pipeline/review/*.py` of a git revision, as folder/review (a namespace package's portion)."""
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{revision}:pipeline/review"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    (folder / "review").mkdir(parents=True)
    for name in names:
        if name.endswith(".py"):
            text = subprocess.run(
                ["git", "show", f"{revision}:pipeline/review/{name}"], cwd=REPO, check=True, capture_output=True
            ).stdout
            (folder / "review" / name).write_bytes(text)
    return folder


def _stored(run_dir: Path, database: str) -> list[tuple[str, str, str]]:
    with sqlite3.connect(run_dir / "review" / database) as db:
        rows = db.execute(
            "SELECT raters.name, image, answer FROM answers JOIN raters ON raters.id = answers.rater"
        ).fetchall()
    return [tuple(r) for r in rows]


def _check(raters: list[Client], stored: list[tuple[str, str, str]] | None) -> dict:
    """What the clients sent against what was stored; each client's errors."""
    sent = Counter(a for r in raters for a in r.sent)
    found = {
        "pages": sum(len(r.timings["save"]) for r in raters),
        "answers_sent": sum(sent.values()),
        "errors": {r.name: len(r.errors) for r in raters if r.errors},
        "first_errors": {r.name: r.errors[0] for r in raters if r.errors},
    }
    if stored is not None:
        kept = Counter(stored)
        full = {item for item, n in Counter(item for _, item, _ in stored).items() if n >= RATERS}
        missing = sent - kept
        found |= {
            "answers_stored": len(stored),
            "refused_item_full": sum(n for (_, item, _), n in missing.items() if item in full),
            "lost": sum(n for (_, item, _), n in missing.items() if item not in full),
            "doubled": sum((kept - sent).values()),
        }
    return found


def _percentiles(values: list[float]) -> dict[str, float]:
    ms = np.array(values or [float("nan")]) * 1000
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p99_ms": round(float(np.percentile(ms, 99)), 2),
    }


def _measure(command: list[str], port: int, folder: Path, args, prefix: str, stored_in: Path | None) -> dict:
    process = _start(command, port, folder / f"{prefix}.log")
    load_before = os.getloadavg()
    review = REVIEWS[args.kind]
    try:
        raters, answering = _load(f"http://127.0.0.1:{port}", args.clients, args.seconds, prefix, review)
    finally:
        load_after = os.getloadavg()
        _stop(process)
    figures = {
        "load_average_1m": [round(load_before[0], 2), round(load_after[0], 2)],
        "answering_s": round(answering, 1),
        **_check(raters, _stored(stored_in, review["database"]) if stored_in else None),
    }
    for kind in KINDS:
        figures[kind] = _percentiles([t for r in raters for t in r.timings[kind]])
    figures["_page"] = next((r.page for r in raters if r.page), "")
    return figures


def _serve_review(args) -> None:
    """The server process: `imagenot review serve`, with an older review package first if asked."""
    if args.source:
        import imagenot.pipeline

        imagenot.pipeline.__path__.insert(0, args.source)
    from imagenot.pipeline.cli import main as cli

    serve = REVIEWS[args.kind]["serve"]
    listed = ["--list", args.list, "--corpus", args.corpus] if args.list else []
    cli([*serve, "--run", args.serve_run, "--port", str(args.port), "--threads", str(args.threads), *listed])


def _serve_baseline(args) -> None:
    """The floor: the same waitress answering as the review server does, with fixed bytes and no work."""
    import waitress

    page, prefix = Path(args.page).read_bytes(), REVIEWS[args.kind]["page"]

    def app(environ, start_response):
        if environ["REQUEST_METHOD"] == "POST":
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        path = environ["PATH_INFO"]
        if path in ("/rater", "/next") or environ["REQUEST_METHOD"] == "POST" and path.startswith(prefix):
            start_response("303 See Other", [("Location", f"{prefix}t"), ("Content-Length", "0")])
            return [b""]
        body = page if path.startswith(prefix) else b"jpeg"
        start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
        return [body]

    waitress.serve(app, host="127.0.0.1", port=args.port, threads=args.threads, _quiet=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", default="runs/demo", help="a run with downloaded images (make demo)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--before", help="also measure the review package of this git revision, first")
    parser.add_argument("--classes", action="store_true", help="the class review instead of the image review")
    parser.add_argument("--list", help="with --classes: review this class list (wnids) instead of the run's classes")
    parser.add_argument("--corpus", help="with --list: the corpus whose captions are shown")
    parser.add_argument("--config", help="with --list: a config (its corpus columns)")
    parser.add_argument("--serve", choices=("review", "baseline"), help=argparse.SUPPRESS)  # a server process
    parser.add_argument("--serve-run", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--page", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--kind", choices=tuple(REVIEWS), help=argparse.SUPPRESS)  # a server process's review
    args = parser.parse_args()
    args.kind = args.kind or ("classes" if args.classes else "images")
    if args.list and not (args.kind == "classes" and args.corpus):
        parser.error("--list reviews a class list: it goes with --classes and --corpus")
    if args.classes and args.before:
        parser.error("--before measures the image review's package: a revision before the class review has none")
    if args.serve == "review":
        return _serve_review(args)
    if args.serve == "baseline":
        return _serve_baseline(args)

    me = [sys.executable, str(Path(__file__).resolve())]
    servers = {}
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp:
        folder = Path(tmp)
        sources = {"before": _review_package(args.before, folder / "before-source")} if args.before else {}
        sources["after"] = None
        for label, source in sources.items():
            source_run = None if args.list else Path(args.run)
            run_dir = _review_run(source_run, folder / label, args.kind, args.config)
            port = free_loopback_port()
            command = [*me, "--serve", "review", "--kind", args.kind, "--serve-run", str(run_dir), "--port", str(port)]
            command += ["--threads", str(args.clients), *(["--source", str(source)] if source else [])]
            command += ["--list", args.list, "--corpus", args.corpus] if args.list else []
            servers[label] = _measure(command, port, folder, args, label, run_dir)
        page = folder / "page.html"
        page.write_text(servers["after"]["_page"])
        port = free_loopback_port()
        command = [*me, "--serve", "baseline", "--kind", args.kind, "--page", str(page), "--port", str(port)]
        command += ["--threads", str(args.clients)]
        servers["baseline"] = _measure(command, port, folder, args, "baseline", None)
    figures = {"review": args.kind, "clients": args.clients, "seconds": args.seconds, "before": args.before}
    for label, found in servers.items():
        found.pop("_page")
        figures[label] = found
        checked = f"{found['pages']:,} pages sent in {found['answering_s']} s" + (
            f", {found['answers_sent']:,} answers confirmed, {found['answers_stored']:,} stored, "
            f"{found['refused_item_full']} refused (item full), {found['lost']} lost, {found['doubled']} doubled"
            if "lost" in found
            else ""
        )
        print(f"{label} (load {found['load_average_1m'][0]} -> {found['load_average_1m'][1]}): {checked}")
        for kind in KINDS:
            p = found[kind]
            print(f"  {kind:>5}: p50 {p['p50_ms']:7.2f} ms  p99 {p['p99_ms']:7.2f} ms  ({p['n']:,} requests)")
        for name, error in found["first_errors"].items():
            print(f"  {name}: {found['errors'][name]} errors, first: {error}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

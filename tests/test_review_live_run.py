"""A review server and the commands that rewrite its run, each as a user runs them: `imagenot
review serve` in its own process, raters over HTTP, `imagenot blocklist apply` and `imagenot review
apply` while it serves. The server keeps to the dataset as it is: an image taken out of a tar is
404 at once (never another member's bytes), an answer to an image the dataset no longer holds is
refused and not stored, a replacement put up for review is served, and `review status` counts the
dataset's images only. Also: a POST from another site is refused whatever cookie it carries, an
image collects no more answers than the plan wants however many raters send at once, and what the
commands print (an IPv6 address, a precision) reads as it should."""

from __future__ import annotations

import re
import sqlite3
import tarfile
import threading
import time
import urllib.error
import urllib.request

import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import invoke
from ports import free_loopback_port
from review_claims import check_people_claims
from review_server import Client, Server
from shared_runs import copy_run

from imagenot.pipeline.amend.blocklist import blocklist_command
from imagenot.pipeline.review.command import review_command
from imagenot.pipeline.review.plan import image_id

IMAGE = re.compile(r'name="a-([0-9a-f]{24})"')


def _review(*args: str) -> str:
    result = invoke(review_command, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _dataset(run_dir) -> list[dict]:
    return pq.read_table(run_dir / "download/dataset").to_pylist()


def _stored(run_dir, image: str) -> int:
    with sqlite3.connect(run_dir / "review/answers.sqlite") as db:
        return db.execute("SELECT COUNT(*) FROM answers WHERE image = ?", (image,)).fetchone()[0]


def _answer_everything(client: Client, no: set[str] = frozenset()) -> list[tuple[str, list[str]]]:
    """Answer page after page (no for the images in `no`, yes for the rest); the pages and their images."""
    pages = []
    while True:
        status, url, body = client.open("/next")
        images = list(dict.fromkeys(IMAGE.findall(body.decode())))
        if not images:
            assert b"Nothing left for you" in body, body[:300]
            return pages
        path = url[len(client.base) :]
        status, _, reply = client.open(path, {f"a-{i}": "no" if i in no else "yes" for i in images})
        assert status == 200, reply
        pages.append((path, images))


def _wait_for(check, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "the server did not see the change"
        time.sleep(0.2)


class Poller(threading.Thread):
    """A rater's browser reloading every page and image over and over while a command rewrites the
    run: each answer's (path, status, body, Retry-After) kept for the test to check."""

    def __init__(self, base: str, paths: list[str]):
        super().__init__(daemon=True)
        self.base, self.paths, self.seen, self.stop = base, paths, [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for path in self.paths:
                try:
                    with urllib.request.urlopen(self.base + path, timeout=30) as response:
                        self.seen.append((path, response.status, response.read(), None))
                except urllib.error.HTTPError as error:
                    self.seen.append((path, error.code, error.read(), error.headers.get("Retry-After")))

    def __enter__(self) -> Poller:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.join(60)


@pytest.fixture
def serving(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["review"] = {"raters": 2, "min_decided_images": 1}  # a few images: the headline is stated
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    _review("plan", "--run", str(run_dir))
    server = Server(run_dir, free_loopback_port(), tmp_path / "server.log")
    server.start()
    yield run_dir, server
    server.kill()


def test_the_server_follows_blocklist_apply_and_review_apply(serving, tmp_path):
    run_dir, server = serving
    rows = _dataset(run_dir)
    by_tar: dict[str, list[dict]] = {}
    for r in rows:
        by_tar.setdefault(r["tar"], []).append(r)
    tar, members = max(by_tar.items(), key=lambda item: len(item[1]))
    assert len(members) >= 2, "the test wants a tar with more than one image"
    blocked, kept = members[0], members[1:]
    blocked_id = image_id(blocked["row_id"], blocked["sha256"])
    rater = Client(server.base)
    assert rater.open(f"/image/{blocked_id}")[0] == 200
    before = {
        image_id(r["row_id"], r["sha256"]): rater.open(f"/image/{image_id(r['row_id'], r['sha256'])}")[2] for r in kept
    }
    rater.sign_in("before the list")
    _, blocked_page, body = rater.open("/next")

    listed = tmp_path / "takedown.txt"
    listed.write_text(f"sha256 {blocked['sha256']}\n")
    known = {**before, blocked_id: rater.open(f"/image/{blocked_id}")[2]}
    with Poller(server.base, [f"/image/{i}" for i in known]) as poller:  # issue 42: no byte of a run rewritten
        result = invoke(blocklist_command, ["apply", "--run", str(run_dir), "--list", str(listed)])
    assert result.exit_code == 0, result.output
    for path, status, data, retry in poller.seen:
        image = path.rsplit("/", 1)[1]
        assert (
            (status == 200 and data == known[image])
            or (status == 503 and retry)
            or (status == 404 and image == blocked_id)
        ), (path, status, data[:80])
    assert any(status == 503 for _, status, _, _ in poller.seen), "the poller never met the command's lock"
    check_people_claims(run_dir)
    with tarfile.open(run_dir / tar) as rewritten:  # the tar was written again without it
        assert not any(m.name.startswith(blocked["key"] + ".") for m in rewritten.getmembers())

    # at once: the image taken out is gone, its tar's other images are their own bytes
    assert rater.open(f"/image/{blocked_id}")[0] == 404
    for image, data in before.items():
        assert rater.open(f"/image/{image}") == (200, f"{server.base}/image/{image}", data)
    # an answer to it is refused and stores nothing, whatever page it claims to be on
    for page in {urllib_path(blocked_page), *(f"/task/{t}" for t in _tasks(run_dir, blocked_id))}:
        status, _, reply = rater.open(page, {f"a-{blocked_id}": "yes"})
        assert 400 <= status < 500, reply
    assert _stored(run_dir, blocked_id) == 0

    # two raters answer everything: one image of the dataset rejected by both; the blocked one never shown
    current = {image_id(r["row_id"], r["sha256"]) for r in _dataset(run_dir)}
    refillable = _classes_with_reserve_left(run_dir)
    rejected = sorted(
        image_id(r["row_id"], r["sha256"])
        for r in _dataset(run_dir)
        if r["class_index"] in refillable and image_id(r["row_id"], r["sha256"]) in set(_planned(run_dir))
    )[0]
    shown = set()
    for name in ("Ann", "Bo"):
        client = Client(server.base)
        client.sign_in(name)
        shown |= {i for _, images in _answer_everything(client, {rejected}) for i in images}
    assert blocked_id not in shown and rejected in shown
    status = _review("status", "--run", str(run_dir))
    planned_now = len(current & set(_planned(run_dir)))
    assert f"0 of {planned_now} images need more" in status  # the blocked image is not counted

    _review("export", "--run", str(run_dir))
    applied = _review("apply", "--run", str(run_dir))
    assert "review apply: dropped 1 image the raters rejected;" in applied
    check_people_claims(run_dir)
    after = {image_id(r["row_id"], r["sha256"]) for r in _dataset(run_dir)}
    added = after - current
    assert rejected not in after and added, applied
    _wait_for(lambda: rater.open(f"/image/{next(iter(added))}")[0] == 200)  # the replacement is served
    assert rater.open(f"/image/{rejected}")[0] == 404
    newcomer = Client(server.base)
    newcomer.sign_in("after apply")
    seen = {i for _, images in _answer_everything(newcomer) for i in images}
    assert added <= seen and rejected not in seen and blocked_id not in seen
    status = _review("status", "--run", str(run_dir))
    assert f"{len(added)} of {planned_now - 1 + len(added)} images need more" in status
    assert "more on images no longer in the dataset" in status


def _classes_with_reserve_left(run_dir) -> set[int]:
    import csv

    def table(path):
        return {int(r["class_index"]): r for r in csv.DictReader(path.read_text().splitlines(), delimiter="\t")}

    sampled, fetched = table(run_dir / "sample/class_sampling.tsv"), table(run_dir / "download/class_downloads.tsv")
    left = {c for c, r in fetched.items() if int(sampled[c]["reserve"]) > int(r["reserve_used"])}
    assert left, "the shared run has no class with reserve left: nothing to backfill from"
    return left


def urllib_path(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url)


def _planned(run_dir) -> list[str]:
    return pq.read_table(run_dir / "review/plan.parquet").column("image").to_pylist()


def _tasks(run_dir, image: str) -> set[str]:
    plan = pq.read_table(run_dir / "review/plan.parquet").to_pylist()
    return {r["task"] for r in plan if r["image"] == image}


def test_twenty_raters_at_once_store_no_more_answers_than_wanted(serving):
    """20 raters open the same first page and send it at the same moment: each image keeps the 2
    answers the plan wants, the first two sent; the other pages sent are taken (303) and store nothing."""
    run_dir, server = serving
    clients = [Client(server.base) for _ in range(20)]
    pages = []
    for i, client in enumerate(clients):
        client.sign_in(f"rater {i}")
        status, url, body = client.open("/task/" + _first_task(run_dir))
        pages.append(list(dict.fromkeys(IMAGE.findall(body.decode()))))
    images = pages[0]
    assert images and all(p == images for p in pages)
    start = threading.Barrier(20)
    replies = []

    def send(client: Client) -> None:
        start.wait()
        replies.append(client.open("/task/" + _first_task(run_dir), {f"a-{i}": "yes" for i in images})[0])

    threads = [threading.Thread(target=send, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert replies == [200] * 20
    assert [_stored(run_dir, i) for i in images] == [2] * len(images)


def _first_task(run_dir) -> str:
    return pq.read_table(run_dir / "review/plan.parquet").column("task")[0].as_py()


def test_a_post_from_another_site_is_refused_whatever_its_cookie(serving):
    run_dir, server = serving
    rater = Client(server.base)
    rater.sign_in("rater")
    task = _first_task(run_dir)
    status, _, body = rater.open(f"/task/{task}")
    image = IMAGE.findall(body.decode())[0]
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": f"http://127.0.0.1:{server.port + 1}"},
        {"Referer": "http://evil.example/form.html"},
        {"Origin": "http://evil.example", "Referer": f"{server.base}/task/{task}"},
    ):
        status, _, reply = rater.open(f"/task/{task}", {f"a-{image}": "no"}, headers)
        assert status == 403 and b"another site" in reply, headers
        status, _, reply = Client(server.base).open("/rater", {"name": "forged"}, headers)
        assert status == 403, headers
    # a page of another site reaching the server by a name that resolves to it (DNS rebinding)
    status, _, _ = rater.open("/next", headers={"Host": f"evil.example:{server.port}"})
    assert status == 403
    assert _stored(run_dir, image) == 0
    own = {"Origin": server.base, "Referer": f"{server.base}/task/{task}"}
    assert rater.open(f"/task/{task}", {f"a-{image}": "no"}, own)[0] == 200
    assert _stored(run_dir, image) == 1


def _serve_output(run_dir, monkeypatch, *args: str) -> str:
    import waitress

    monkeypatch.setattr(waitress, "serve", lambda app, **kwargs: None)  # nothing binds
    return _review("serve", "--run", str(run_dir), *args)


def test_an_ipv6_address_is_printed_in_brackets_and_a_precision_rounded(serving, monkeypatch):
    run_dir, server = serving
    assert "open http://[::1]:8782/   " in _serve_output(run_dir, monkeypatch, "--host", "::1", "--port", "8782")
    assert "open http://127.0.0.1:8782/   " in _serve_output(run_dir, monkeypatch, "--port", "8782")
    rejected = {_planned(run_dir)[0]}
    for name in ("a", "b"):  # every image with both answers wanted: the headline is stated, not withheld
        client = Client(server.base)
        client.sign_in(name)
        _answer_everything(client, rejected)
    exported = _review("export", "--run", str(run_dir))
    precision = re.search(r"overall precision (\S+) over", exported).group(1)
    assert re.fullmatch(r"\d\.\d{3}", precision), exported

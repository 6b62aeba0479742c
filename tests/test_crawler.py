"""The crawler end to end: the download stage against several loopback hosts (127.0.0.2, .3, ...),
each its own server with its own robots.txt, checked from the servers' own request logs: no
disallowed path requested, no host over its concurrency or rate limit, a 429 host backed off
for its Retry-After, a refused address never connected to, blocklisted URLs never requested and
a blocklisted image's bytes nowhere in the run directory, a trickling response cut at the
fetch deadline."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from image_server import LoopbackImageServer, photo_jpeg, write_sample_stage

from imagenot.pipeline.amend.blocklist import apply_blocklist
from imagenot.pipeline.config.schema import Config, Download, Sampling
from imagenot.pipeline.download.drops import read_drops
from imagenot.pipeline.frame.registry import declared, run_in_folder

ROBOTS_A = """\
User-agent: *
Disallow: /

User-agent: imagenot
Disallow: /photo/
Allow: /photo/coffee.jpg
"""
CONNECTIONS, RATE, RETRY_AFTER, DEADLINE = 2, 8, 1, 2
SETTINGS = Download(
    enabled=True,
    threads=8,
    timeout_s=1,
    fetch_deadline_s=DEADLINE,
    shard_rows=50,
    image_size=64,
    per_host_connections=CONNECTIONS,
    per_host_rate=RATE,
    allowed_networks=["127.0.0.2/31", "127.0.0.4/32", "127.0.0.6/32"],  # not 127.0.0.5
)
SAMPLING = Sampling(images_per_class=4, test_per_class=1)
BUSY = ("coffee", "moon", "camera", "coins", "rocket", "astronaut")


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("crawl")
    blocklist = tmp_path_factory.mktemp("lists") / "block.txt"
    hosts = {
        name: LoopbackImageServer(host=f"127.0.0.{n}", robots=ROBOTS_A if name == "a" else None)
        for n, name in enumerate("abcdef", 2)
    }
    for server in hosts.values():
        server.start()
    try:
        a, b, c, d, e, f = (hosts[name].url for name in "abcdef")
        blocklist.write_text(
            "# a test list\n"
            f"sha256 {hashlib.sha256(photo_jpeg('chelsea')).hexdigest()}\n"
            f"url {b('/photo/rocket.jpg?id=blockme')}\n"
            "domain 127.0.0.7\n"  # f's host: blocked before any resolution
        )
        busy = [b(f"/delay/150/{BUSY[i % len(BUSY)]}.jpg?id=b{i}") for i in range(24)]
        classes = {
            "n00000001": (
                [a("/photo/coffee.jpg?id=a0"), a("/photo/moon.jpg?id=a1")],
                [a("/delay/0/camera.jpg?id=a2"), a("/photo/coins.jpg")],
            ),
            "n00000002": (busy[:20], busy[20:]),
            "n00000003": (
                [c(f"/throttle/{RETRY_AFTER}/coffee.jpg"), c("/photo/moon.jpg?id=c1"), c("/photo/camera.jpg?id=c2")],
                [c("/photo/coins.jpg?id=c3"), c("/photo/rocket.jpg?id=c4")],
            ),
            "n00000004": (
                [d("/photo/coffee.jpg?id=d0"), f("/photo/coffee.jpg?id=f0"), b("/photo/chelsea.jpg?id=x0")],
                [
                    b("/photo/rocket.jpg?id=blockme"),
                    b("/trickle/coffee.jpg"),
                    b("/photo/moon.jpg?id=x1"),
                    e("/photo/coins.jpg?id=e0"),
                ],
            ),
        }
        row_ids = write_sample_stage(run_dir, classes)
        settings = SETTINGS.model_copy(update={"blocklists": [str(blocklist)]})
        figures = run_in_folder(declared("download"), Config(download=settings, sampling=SAMPLING), str(run_dir))
        logs = {name: s.log for name, s in hosts.items()}
        yield {
            "run_dir": run_dir,
            "figures": figures,
            "logs": logs,
            "row_ids": row_ids,
            "url": hosts,
            "settings": settings,
        }
    finally:
        for server in hosts.values():
            server.stop()


def _results(run_dir: Path) -> dict[str, dict]:
    """url -> img2dataset's result row, over every round."""
    rows = [r for p in (run_dir / "download" / "rounds").glob("*/0*.parquet") for r in pq.read_table(p).to_pylist()]
    return {r["url"]: r for r in rows}


def test_robots_txt_is_read_once_and_obeyed(crawled):
    paths = [path for path, _, _ in crawled["logs"]["a"]]
    assert paths.count("/robots.txt") == 1  # rounds and workers share what it said
    assert [p for p in paths if p.startswith("/photo/")] == ["/photo/coffee.jpg?id=a0"]
    assert "/delay/0/camera.jpg?id=a2" in paths  # no rule for imagenot matches it
    assert crawled["figures"]["failures"]["robots_txt"] == 1  # moon; camera from the reserve replaced it


def _max_in_flight(log) -> int:
    events = sorted([(start, 1) for _, start, _ in log] + [(end, -1) for _, _, end in log])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    return peak


def test_a_busy_host_gets_at_most_its_connections_and_rate(crawled):
    log = [entry for entry in crawled["logs"]["b"] if entry[0].startswith("/delay/")]
    assert len(log) == 20
    assert _max_in_flight(log) == CONNECTIONS  # the limit binds, and holds
    starts = sorted(start for _, start, _ in log)
    window = 1 - 0.05  # the server's clock sees the client's spacing give or take a few ms
    assert max(sum(1 for t in starts if s <= t < s + window) for s in starts) <= RATE
    (busiest,) = [h for h in crawled["figures"]["busiest_hosts"] if h["host"] == "127.0.0.3"]
    assert busiest["requests"] >= 20 and 0 < busiest["peak_rate_per_s"] <= RATE * 1.05


def test_a_throttled_host_is_backed_off_for_its_retry_after(crawled):
    log = crawled["logs"]["c"]
    (throttled_end,) = [end for path, _, end in log if path.startswith("/throttle/")]
    later = [start for path, start, _ in log if start > throttled_end]
    assert later and min(later) >= throttled_end + RETRY_AFTER - 0.05
    assert crawled["figures"]["failures"]["throttled"] == 1
    assert crawled["figures"]["images_per_class"]["n00000003"] == 3  # the reserve filled in


def test_refused_and_domain_blocked_hosts_are_never_contacted(crawled):
    assert crawled["logs"]["d"] == [] and crawled["logs"]["f"] == []
    failures = crawled["figures"]["failures"]
    assert failures["address_refused"] == 1 and failures["blocklist_domain"] == 1


def test_blocklisted_url_is_never_requested_and_hashed_image_never_written(crawled):
    assert not any("blockme" in path for path, _, _ in crawled["logs"]["b"])
    failures = crawled["figures"]["failures"]
    assert failures["blocklist_url"] == 1 and failures["blocklist_sha256"] == 1
    chelsea_url = crawled["url"]["b"].url("/photo/chelsea.jpg?id=x0")
    assert _results(crawled["run_dir"])[chelsea_url]["error_message"] == "blocklisted image: sha256 match"
    original = photo_jpeg("chelsea")
    for path in Path(crawled["run_dir"]).rglob("*"):
        if path.is_file():
            assert original[1000:1200] not in path.read_bytes(), path
            if path.suffix == ".tar":
                with tarfile.open(path) as tar:
                    metas = [json.load(tar.extractfile(m)) for m in tar.getmembers() if m.name.endswith(".json")]
                assert chelsea_url not in [m["url"] for m in metas]


def test_a_trickling_response_ends_at_the_fetch_deadline(crawled):
    (trickle,) = [(start, end) for path, start, end in crawled["logs"]["b"] if path.startswith("/trickle/")]
    assert trickle[1] - trickle[0] < DEADLINE + 1  # not the photo's 50 kB at 5 bytes a second
    assert _results(crawled["run_dir"])[crawled["url"]["b"].url("/trickle/coffee.jpg")]["error_message"].startswith(
        "timed out"
    )
    assert crawled["figures"]["failures"]["timeout"] == 1


def test_every_image_has_the_sha256_of_its_original_bytes(crawled):
    table = pq.read_table(crawled["run_dir"] / "download" / "dataset").to_pylist()
    assert len(table) == crawled["figures"]["images"]
    by_url = {r["url"]: r["sha256"] for r in table}
    assert (
        by_url[crawled["url"]["a"].url("/photo/coffee.jpg?id=a0")] == hashlib.sha256(photo_jpeg("coffee")).hexdigest()
    )
    assert all(len(sha) == 64 for sha in by_url.values())


def test_every_row_is_accounted_for(crawled):
    figures = crawled["figures"]
    assert figures["urls_tried"] == figures["images"] + sum(figures["failures"].values())
    assert figures["blocklists"][0]["entries"] == {"url": 1, "domain": 1, "sha256": 1, "md5": 0}


def _tar_keys(run_dir: Path, tar: str) -> set[str]:
    with tarfile.open(run_dir / tar) as archive:
        return {m.name.split(".")[0] for m in archive.getmembers()}


def test_a_new_list_applied_to_the_finished_dataset_takes_rows_and_bytes_out(crawled, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(crawled["run_dir"], run_dir)
    images = {r["url"]: r for r in pq.read_table(run_dir / "download" / "dataset").to_pylist()}
    coffee_url, coins_url = (
        crawled["url"]["a"].url("/photo/coffee.jpg?id=a0"),
        crawled["url"]["e"].url("/photo/coins.jpg?id=e0"),
    )
    listed = tmp_path / "new.txt"
    listed.write_text(f"sha256 {images[coffee_url]['sha256']}\ndomain 127.0.0.6\nmd5 {'0' * 32}\n")
    record = apply_blocklist(Config(download=crawled["settings"], sampling=SAMPLING), str(run_dir), str(listed))
    coffees = [r for r in images.values() if r["sha256"] == images[coffee_url]["sha256"]]  # class 2 has 4 more
    assert (
        record["removed"] == {"blocklist_domain": 1, "blocklist_sha256": len(coffees)}
        and record["md5_not_checked"] == 1
    )
    assert record["passes"] == 1 and record["still_listed"] == 0
    after = {r["url"] for r in pq.read_table(run_dir / "download" / "dataset").to_pylist()}
    assert not after & {coins_url, *(r["url"] for r in coffees)}
    for removed in [images[coins_url], *coffees]:  # a key is unique within its round's tars
        assert removed["key"] not in _tar_keys(run_dir, removed["tar"])
        assert removed["key"] in _tar_keys(crawled["run_dir"], removed["tar"])
    assert {r["reason"] for r in read_drops(str(run_dir / "download")).to_pylist()} == {
        "blocklist_domain",
        "blocklist_sha256",
    }
    assert json.loads((run_dir / "download" / "blocklists_applied.json").read_text())[0]["path"] == str(listed)
    figures = json.loads((run_dir / "download" / "figures.json").read_text())
    assert figures["dropped_by_blocklists"] == record["removed"] and figures["dropped_by_audits"] == {}
    assert figures["blocklists_applied"][0]["removed"] == record["removed"]

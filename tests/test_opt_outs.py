"""Opt-out signals end to end: the download stage against four loopback hosts (127.0.0.21-24), each
with its own robots.txt, tdmrep.json and response headers. Checked from the servers' own request
logs (no request to a path a site file reserves; each site file read once per host per run) and
from the run (a reserved image in no tar, counted under its reason; malformed signals counted
and read as no signal)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from urllib.parse import quote

import pytest
from image_server import LoopbackImageServer, write_sample_stage

from imagenot.pipeline.config.schema import Config, Download, Sampling
from imagenot.pipeline.download.crawler import Crawler
from imagenot.pipeline.download.opt_outs import (
    Malformed,
    OptedOut,
    PathRule,
    longest_match,
    parse_dictionary,
    robots_lines,
    tdmrep_reserved,
    tdmrep_rules,
    usage_declined,
)
from imagenot.pipeline.frame.registry import declared, run_in_folder

ROBOTS_A = """\
User-agent: *
Content-Usage: train-ai=y
Content-Usage: /photo/moon train-ai=n, search=y
Content-Usage: /photo/chelsea train-ai=
Content-Signal: /photo/rocket ai-train=no, search=yes
Disallow: /private/
"""
TDMREP_A = json.dumps([{"location": "/photo/camera*", "tdm-reservation": 1}, {"location": "/*", "tdm-reservation": 0}])
ROBOTS_C = "User-agent: imagenot\nContent-Signal: ai-train=no\n\nUser-agent: *\nAllow: /\n"
TDMREP_D = json.dumps([{"location": "/", "tdm-reservation": 1, "tdm-policy": "http://127.0.0.24/policy.json", "x": 1}])
SITE_FILES = ("/robots.txt", "/.well-known/tdmrep.json")
SAMPLING = Sampling(images_per_class=6, test_per_class=1)
SETTINGS = Download(
    enabled=True,
    threads=4,
    timeout_s=2,
    shard_rows=50,
    image_size=64,
    per_host_rate=50,
    allowed_networks=["127.0.0.21/32", "127.0.0.22/31", "127.0.0.24/32"],
)


def _headers(name: str, *headers: str) -> str:
    return f"/headers/{name}.jpg?" + "&".join(f"h={quote(h)}" for h in headers)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("opt-outs")
    servers = {
        "a": LoopbackImageServer(host="127.0.0.21", robots=ROBOTS_A, tdmrep=TDMREP_A),
        "b": LoopbackImageServer(host="127.0.0.22", tdmrep="{not json"),
        "c": LoopbackImageServer(host="127.0.0.23", robots=ROBOTS_C),
        "d": LoopbackImageServer(host="127.0.0.24", tdmrep=TDMREP_D),
    }
    for server in servers.values():
        server.start()
    try:
        a, b, c, d = (servers[name].url for name in "abcd")
        urls = {
            "kept_a": a("/photo/coffee.jpg?id=a0"),
            "usage_robots": a("/photo/moon.jpg?id=a1"),
            "tdmrep_file": a("/photo/camera.jpg?id=a2"),
            "signal_robots": a("/photo/rocket.jpg?id=a3"),
            "malformed_usage_line": a("/photo/chelsea.jpg?id=a4"),
            "tdm_header": b(_headers("coffee", "tdm-reservation: 1", "tdm-policy: http://127.0.0.22/policy.json")),
            "usage_header": b(_headers("moon", "Content-Usage: train-ai=n")),
            "x_robots_tag": b(_headers("coins", "X-Robots-Tag: noai")),
            "usage_yes_decides": b(_headers("rocket", "Content-Usage: bots=n, train-ai=y;x=1, newkey=?0")),
            "malformed_tdm_header": b(_headers("camera", "tdm-reservation: maybe")),
            "malformed_usage_header": b(_headers("astronaut", 'Content-Usage: train-ai=n, "x')),
        }
        classes = {
            "n00000001": (list(urls.values())[:5], [a("/photo/coins.jpg?id=a5"), a("/photo/astronaut.jpg?id=a6")]),
            "n00000002": (list(urls.values())[5:], [b("/photo/coffee.jpg?id=b6"), b("/photo/moon.jpg?id=b7")]),
            "n00000003": (
                [c("/photo/coffee.jpg?id=c0"), d("/photo/moon.jpg?id=d0")],
                [c("/photo/coins.jpg?id=c1"), d("/photo/coins.jpg?id=d1")],
            ),
        }
        write_sample_stage(run_dir, classes)
        figures = run_in_folder(declared("download"), Config(download=SETTINGS, sampling=SAMPLING), str(run_dir))
        yield {"run_dir": run_dir, "figures": figures, "logs": {n: s.log for n, s in servers.items()}, "urls": urls}
    finally:
        for server in servers.values():
            server.stop()


def _paths(log) -> list[str]:
    return [path for path, _, _ in log]


def test_each_site_file_is_read_at_most_once_per_host(crawled):
    for name in "abd":
        site_files = [p for p in _paths(crawled["logs"][name]) if p in SITE_FILES]
        assert site_files == list(SITE_FILES), name  # robots.txt first
    assert _paths(crawled["logs"]["c"]) == ["/robots.txt"]  # it declines every URL: tdmrep.json is not needed


def test_a_path_a_site_file_reserves_is_never_requested(crawled):
    a = _paths(crawled["logs"]["a"])
    assert not [p for p in a if p.startswith(("/photo/moon", "/photo/camera", "/photo/rocket"))]
    assert "/photo/coffee.jpg?id=a0" in a and "/photo/chelsea.jpg?id=a4" in a  # a malformed line is no signal
    for name in "cd":  # everything reserved: only the site files were read
        assert set(_paths(crawled["logs"][name])) <= set(SITE_FILES), name


def _tar_urls(run_dir: Path) -> set[str]:
    urls = set()
    for path in (run_dir / "download").rglob("*.tar"):
        with tarfile.open(path) as tar:
            urls |= {json.load(tar.extractfile(m))["url"] for m in tar.getmembers() if m.name.endswith(".json")}
    return urls


def test_each_reserved_image_is_in_no_tar_and_counted_under_its_reason(crawled):
    urls, figures = crawled["urls"], crawled["figures"]
    in_tars = _tar_urls(crawled["run_dir"])
    reserved = ("usage_robots", "tdmrep_file", "signal_robots", "tdm_header", "usage_header", "x_robots_tag")
    assert not in_tars & {urls[k] for k in reserved}
    kept = ("kept_a", "malformed_usage_line", "usage_yes_decides", "malformed_tdm_header", "malformed_usage_header")
    assert {urls[k] for k in kept} <= in_tars
    failures = figures["failures"]
    # c's rows by its Content-Signal, d's by its tdmrep.json: never requested
    assert failures == {"tdmrep": 1 + 1 + 2, "content_usage": 1 + 1, "content_signal": 1 + 2, "disallowed": 1}
    assert figures["images_per_class"] == {"n00000001": 4, "n00000002": 5, "n00000003": 0}
    assert figures["urls_tried"] == figures["images"] + sum(failures.values())
    fates = json.loads((crawled["run_dir"] / "download" / "class_fates.json").read_text())
    assert fates["n00000003"]["not_kept"] == {"content_signal": 2, "tdmrep": 2}


def test_header_signals_are_requested_once_and_their_bytes_never_read_into_the_run(crawled):
    b = _paths(crawled["logs"]["b"])
    for key in ("tdm_header", "usage_header"):
        path = crawled["urls"][key].split("127.0.0.22", 1)[1].split("/", 1)[1]
        assert b.count("/" + path) == 1


def test_malformed_signals_are_counted_and_read_as_no_signal(crawled):
    assert crawled["figures"]["malformed_signals"] == {
        "Content-Usage header": 1,
        "Content-Usage in robots.txt": 1,
        "tdm-reservation header": 1,
        "tdmrep.json": 1,
    }


def test_each_signal_has_a_switch_that_turns_it_off():
    robots = "User-agent: *\nContent-Usage: /photo/moon train-ai=n\nContent-Signal: /photo/rocket ai-train=no\n"
    tdmrep = json.dumps([{"location": "/photo/camera.jpg", "tdm-reservation": 1}])
    with LoopbackImageServer(host="127.0.0.25", robots=robots, tdmrep=tdmrep) as server:
        cases = {
            "tdmrep": [server.url("/photo/camera.jpg"), server.url(_headers("coffee", "tdm-reservation: 1"))],
            "ai_preferences": [
                server.url("/photo/moon.jpg"),
                server.url(_headers("coins", "Content-Usage: train-ai=n")),
            ],
            "content_signal": [server.url("/photo/rocket.jpg")],
        }
        for switch, urls in cases.items():
            for on in (True, False):
                crawler = Crawler(Download(allowed_networks=["127.0.0.25/32"], **{switch: on}))
                for url in urls:
                    if on:
                        with pytest.raises(OptedOut, match="^opted out by "):
                            crawler.opener.open(url, timeout=2)
                    else:
                        with crawler.opener.open(url, timeout=2) as response:
                            assert response.read()[:2] == b"\xff\xd8", (switch, url)  # a JPEG


def test_a_tdmrep_json_past_the_size_cap_is_cut_counted_malformed_and_no_signal():
    """Read up to `download.robots_max_bytes` only: a file whose rules run past the cap is cut there,
    does not parse, is counted once, and reserves nothing (the spec: no readable file, no signal)."""
    cap = Download().robots_max_bytes
    padded = json.dumps([{"location": "/", "tdm-reservation": 1, "note": "x" * (cap + 1_000)}])
    with LoopbackImageServer(host="127.0.0.27", tdmrep=padded) as server:
        crawler = Crawler(Download(allowed_networks=["127.0.0.27/32"], robots_txt=False))
        for photo in ("coffee", "moon"):
            with crawler.opener.open(server.url(f"/photo/{photo}.jpg"), timeout=5) as response:
                assert response.read()[:2] == b"\xff\xd8"  # fetched: the reservation was past the cap
        log = server.log
    assert [path for path, _, _ in log].count("/.well-known/tdmrep.json") == 1
    assert crawler.signals.malformed() == {"tdmrep.json": 1}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("train-ai=n", {"train-ai": "n"}),
        ("train-ai=y;p=1, bots=n, train-ai=n", {"train-ai": "n", "bots": "n"}),  # the last of a repeated key
        ('search=y, note="a, b", flag', {"search": "y", "note": '"a, b"', "flag": "?1"}),
        ("", {}),
    ],
)
def test_content_usage_is_a_structured_field_dictionary(value, expected):
    assert parse_dictionary(value) == expected


@pytest.mark.parametrize("value", ["train-ai=", "Train-AI=n", 'x="open', "=n", "train-ai=n;;"])
def test_a_malformed_dictionary_raises_malformed(value):
    with pytest.raises(Malformed):
        parse_dictionary(value)


def test_the_first_category_a_site_states_decides():
    categories = ["train-ai", "bots"]
    assert usage_declined({"bots": "n"}, categories) == "bots"  # the parent decides when train-ai is unstated
    assert usage_declined({"bots": "n", "train-ai": "y"}, categories) is None
    assert usage_declined({"train-ai": "maybe", "bots": "y"}, categories) is None  # an unknown value: no preference
    assert usage_declined({"search": "n"}, categories) is None


def test_robots_lines_come_from_our_group_else_the_star_group():
    body = (
        "User-agent: other\nUser-agent: IMAGENOT\nContent-Usage: train-ai=n\n\n"
        "User-agent: *\nContent-Usage: /a train-ai=y\n"
    )
    assert robots_lines(body, "imagenot", "content-usage") == [("/", "train-ai=n")]
    assert robots_lines(body, "somebot", "content-usage") == [("/a", "train-ai=y")]
    rules = [PathRule("/", "all"), PathRule("/img/*.png$", "png"), PathRule("/img/", "img")]
    assert longest_match(rules, "/img/x.png").value == "png" and longest_match(rules, "/img/x.png?v=1").value == "img"


def test_tdmrep_json_first_matching_rule_applies_and_bad_files_are_malformed():
    rules = tdmrep_rules(
        json.dumps(
            [
                {"location": "/free/*", "tdm-reservation": 0},
                {"location": "/*", "tdm-reservation": 1},
                {"tdm-reservation": 1},
                {"location": "/x", "tdm-reservation": "yes"},
            ]
        )
    )
    assert len(rules) == 2  # a rule without a location or with an unknown value is skipped
    assert not tdmrep_reserved(rules, "/free/a.jpg") and tdmrep_reserved(rules, "/other.jpg")
    for bad in ("{not json", '{"location": "/"}', "[1, 2]"):
        with pytest.raises(Malformed):
            tdmrep_rules(bad)

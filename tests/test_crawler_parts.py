"""The crawler's parts one at a time: the address guard (by resolution and by refusing loopback
addresses that are not allowed, never by connecting elsewhere), robots.txt answers as RFC 9309
reads them, Retry-After, the blocklist parser, and tars with the same bytes whatever the order."""

from __future__ import annotations

import hashlib
import io
import ipaddress
import random
import tarfile
import urllib.error

import pytest
from cli_runner import invoke
from image_server import LoopbackImageServer, photo_jpeg

from imagenot.pipeline.amend.blocklist import apply_command
from imagenot.pipeline.config.schema import Download
from imagenot.pipeline.download.address_guard import AddressGuard, AddressRefused, refusal
from imagenot.pipeline.download.blocklists import Blocklist, BlocklistError, hash_problem
from imagenot.pipeline.download.crawler import Crawler
from imagenot.pipeline.download.politeness import HostGivenUp, HostLimits, Politeness, retry_after_seconds
from imagenot.pipeline.download.robots import fetch_outcome, rules_of
from imagenot.pipeline.download.tars import _SortedTarWriter, remove_samples


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("169.254.169.254", "link_local"),  # cloud metadata services
        ("fe80::1", "link_local"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "not_global"),  # shared address space (carrier NAT)
        ("93.184.215.14", None),  # classified only: nothing connects to it
        ("2606:4700::1", None),
    ],
)
def test_refusal_names_each_kind_of_non_public_address(address, kind):
    assert refusal(ipaddress.ip_address(address)) == kind


NO_SITE_FILES = {"robots_txt": False, "tdmrep": False, "ai_preferences": False, "content_signal": False}


def test_localhost_resolves_to_refused_addresses_unless_allowed():
    with pytest.raises(AddressRefused, match=r"address refused: localhost resolves to .* \(loopback\)"):
        AddressGuard([]).resolve("localhost", 80)
    assert AddressGuard(["127.0.0.0/8", "::1/128"]).resolve("localhost", 80)


def test_a_server_outside_the_allowed_networks_is_never_connected_to():
    with LoopbackImageServer(host="127.0.0.9") as server:
        crawler = Crawler(Download(allowed_networks=["127.0.0.8/32"], **NO_SITE_FILES))
        with pytest.raises(urllib.error.URLError, match="address refused: 127.0.0.9"):
            crawler.opener.open(server.url("/photo/coffee.jpg"), timeout=2)
        assert server.log == []


def test_a_redirect_to_a_refused_address_is_refused():
    with LoopbackImageServer(host="127.0.0.10") as inner, LoopbackImageServer(host="127.0.0.11") as outer:
        crawler = Crawler(Download(allowed_networks=["127.0.0.11/32"], **NO_SITE_FILES))
        target = inner.url("/photo/coffee.jpg")
        with pytest.raises(urllib.error.URLError, match="address refused: 127.0.0.10"):
            crawler.opener.open(outer.url(f"/to?url={target}"), timeout=2)
        # hits are counted when a request arrives; the log only once its answer is sent
        assert inner.hits == {} and outer.hits == {f"/to?url={target}": 1}


def test_a_redirect_to_a_blocklisted_domain_is_never_followed():
    with LoopbackImageServer(host="127.0.0.12") as listed, LoopbackImageServer(host="127.0.0.13") as outer:
        blocklist = Blocklist()
        blocklist.add("list.txt", b"domain 127.0.0.12\n")
        crawler = Crawler(Download(allowed_networks=["127.0.0.12/31"], **NO_SITE_FILES), blocklist=blocklist)
        with pytest.raises(OSError, match="blocklisted domain: http://127.0.0.12"):
            crawler.opener.open(outer.url(f"/to?url={listed.url('/photo/coffee.jpg')}"), timeout=2)
        assert listed.log == []


def _read_raising(error):
    def read(url):
        raise error

    return read


@pytest.mark.parametrize(
    ("error", "allowed"),
    [
        (urllib.error.HTTPError("u", 404, "Not Found", {}, None), True),  # unavailable: all allowed
        (urllib.error.HTTPError("u", 401, "Unauthorized", {}, None), True),
        (urllib.error.HTTPError("u", 429, "Too Many Requests", {}, None), False),  # unreachable: none
        (urllib.error.HTTPError("u", 503, "Unavailable", {}, None), False),
        (urllib.error.URLError("Connection refused"), False),
        (TimeoutError("timed out"), False),
    ],
)
def test_robots_answers_as_rfc_9309_reads_them(error, allowed):
    outcome = fetch_outcome(_read_raising(error), "http://h/robots.txt")
    assert rules_of(outcome).can_fetch("http://h/a.jpg", "imagenot") is allowed


def test_robots_rules_pick_our_group_and_the_longest_match():
    rules = rules_of(
        {"body": "User-agent: *\nDisallow: /\n\nUser-agent: imagenot\nDisallow: /p/\nAllow: /p/ok*.jpg$\n"}
    )
    assert rules.can_fetch("http://h/x.jpg", "imagenot")
    assert not rules.can_fetch("http://h/p/x.jpg", "imagenot")
    assert rules.can_fetch("http://h/p/ok-1.jpg", "imagenot")
    assert not rules.can_fetch("http://h/x.jpg", "othercrawler")


def test_retry_after_in_seconds_or_as_a_date():
    assert retry_after_seconds("7") == 7
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470) == 10
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_a_host_that_keeps_failing_or_asks_too_long_a_wait_is_given_up():
    politeness = Politeness(HostLimits(connections=1, rate=1000, backoff_base_s=0.01, max_backoff_s=5, max_failures=3))
    for status in (500, 429, 502):
        with politeness.slot("a", None):
            pass
        politeness.answered("a", status)
    with pytest.raises(HostGivenUp, match="host given up: a \\(3 failures in a row, the last 502\\)"):
        with politeness.slot("a", None):
            pass
    politeness.answered("b", 503, "3600")
    with pytest.raises(HostGivenUp, match="asked to wait 3600 s"):
        with politeness.slot("b", None):
            pass
    politeness.answered("c", 500)
    politeness.answered("c", 200)  # an answer ends the run of failures
    politeness.answered("c", 500)
    politeness.answered("c", 500)
    with politeness.slot("c", None):
        pass
    assert politeness.stats()["b"]["throttled"] == 1


def test_blocklist_apply_needs_a_finished_download(tmp_path):
    listed = tmp_path / "list.txt"
    listed.write_text("domain example.org\n")
    (tmp_path / "config.yaml").write_text("download:\n  enabled: true\n")
    result = invoke(apply_command, ["--run", str(tmp_path), "--list", str(listed)])
    assert result.exit_code == 1 and "no finished download/ stage" in result.output


def test_blocklist_parses_kinds_comments_and_matches_domains_and_hashes():
    coffee = photo_jpeg("coffee")
    blocklist = Blocklist()
    blocklist.add(
        "list.txt",
        (
            "\ufeff# published list\n\n"
            f"SHA256 {hashlib.sha256(coffee).hexdigest().upper()}\n"
            "md5 " + hashlib.md5(photo_jpeg("moon")).hexdigest() + "  # a comment\n"
            "url HTTP://Example.ORG/a.jpg\n"
            "domain bad.example\n"
        ).encode(),
    )
    assert blocklist.row_reason("http://example.org/a.jpg") == "blocklist_url"
    assert blocklist.row_reason("http://example.org/A.jpg") is None  # paths are case-sensitive
    assert blocklist.row_reason("https://img.cdn.bad.example./x.jpg") == "blocklist_domain"
    assert blocklist.row_reason("https://notbad.example/x.jpg") is None
    assert hash_problem(coffee, blocklist.hashes()) == "blocklisted image: sha256 match"
    assert hash_problem(photo_jpeg("moon"), blocklist.hashes()) == "blocklisted image: md5 match"
    assert hash_problem(photo_jpeg("camera"), blocklist.hashes()) is None
    assert blocklist.sources[0]["entries"] == {"url": 1, "domain": 1, "sha256": 1, "md5": 1}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("sha1 abc", "list.txt:1: expected `KIND VALUE`"),
        ("url", "list.txt:1: expected `KIND VALUE`"),
        ("# ok\nsha256 abc", "list.txt:2: a sha256 is 64 hex digits"),
        ("md5 " + "g" * 32, "a md5 is 32 hex digits"),
    ],
)
def test_blocklist_errors_name_the_file_and_line(text, problem):
    with pytest.raises(BlocklistError, match=problem):
        Blocklist().add("list.txt", text.encode())


def test_blocklist_parser_parses_or_refuses_any_bytes():
    rng = random.Random(0)
    alphabet = [
        b"url ",
        b"domain ",
        b"sha256 ",
        b"md5 ",
        b"#",
        b"\n",
        b" ",
        b"a",
        b"0f",
        b"\xff",
        b"\xe2\x80\x8b",
        b"\r",
    ]
    for _ in range(2000):
        data = b"".join(rng.choice(alphabet) for _ in range(rng.randrange(30)))
        try:
            Blocklist().add("fuzz.txt", data)
        except BlocklistError:
            pass


def _tar(samples: list[dict]) -> bytes:
    buffer = io.BytesIO()
    writer = _SortedTarWriter(buffer)
    for sample in samples:
        writer.write(sample)
    writer.close()
    return buffer.getvalue()


def test_tars_have_the_same_bytes_whatever_order_the_samples_came_in(tmp_path):
    samples = [{"__key__": f"{k:09d}", "jpg": photo_jpeg("coins")[: 100 + k], "txt": f"caption {k}"} for k in range(5)]
    data = _tar(samples)
    assert data == _tar(samples[::-1])
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, 0, "", "")}
    path = tmp_path / "00000.tar"
    path.write_bytes(data)
    assert remove_samples(str(path), {"000000002"}) == 2
    with tarfile.open(path) as tar:
        assert [m.name for m in tar.getmembers()] == [m.name for m in members if not m.name.startswith("000000002")]


def test_the_datasheet_names_each_blocklist_and_what_it_removed():
    from imagenot.pipeline.report.datasheet import _blocklists

    source = {"path": "gs://lists/hashes.txt", "bytes": 130, "sha256": "ab" * 32}
    download = {
        "blocklists": [source],
        "blocklists_applied": [{**source, "path": "later.txt"}],
        "failures": {"blocklist_sha256": 2, "http_404": 5},
        "dropped_by_audits": {},
        "dropped_by_blocklists": {"blocklist_sha256": 1},
    }
    text = "\n".join(_blocklists(download))
    assert f"| gs://lists/hashes.txt | 130 | {'ab' * 32} | during the build |" in text
    assert "| later.txt | 130 |" in text and "They removed: blocklist_sha256 3." in text
    assert "No blocklist was applied" in "\n".join(_blocklists({"failures": {}, "dropped_by_audits": {}}))
    assert "still in the dataset" not in text
    again = [{**source, "path": "later.txt", "still_listed": 4}, {**source, "path": "later.txt", "still_listed": 1}]
    text = "\n".join(_blocklists({**download, "blocklists_applied": again}))
    assert "**1 listed image still in the dataset**" in text  # the list's last application counts


def test_the_card_opens_with_the_opt_outs_honoured_and_any_safeguard_turned_off():
    from types import SimpleNamespace

    from imagenot.pipeline.config.schema import Config
    from imagenot.pipeline.report.datasheet import crawl_notice

    on = crawl_notice(SimpleNamespace(config=Config(download=Download(enabled=True)), download={}))
    assert len(on) == 2
    assert on[0].startswith("> Opt-out signals honoured (images a site reserves are never kept): TDMRep")
    assert "AI Preferences category `train-ai`" in on[0] and "NOT" not in on[0]
    off = Download(
        enabled=True,
        robots_txt=False,
        tdmrep=False,
        ai_preferences=False,
        content_signal=False,
        disallowed_header_directives=[],
    )
    lines = crawl_notice(SimpleNamespace(config=Config(download=off), download={}))
    assert lines[0].startswith("> Opt-out signals honoured (images a site reserves are never kept): none.")
    assert [line.split("**")[1] for line in lines[1:5]] == [
        "TDMRep (tdmrep.json, tdm-reservation header) was NOT honoured",
        "IETF AI Preferences (Content-Usage in robots.txt and headers; categories train-ai, bots) was NOT honoured",
        "Content-Signal in robots.txt (ai-train=no) was NOT honoured",
        "X-Robots-Tag (no directive) was NOT honoured",
    ]
    assert lines[5].startswith("> **robots.txt was not read**")
    assert crawl_notice(SimpleNamespace(config=Config(download=off), download=None)) == []

"""Requests per host: what each shard's worker sent, and the busiest hosts of a download.

A worker writes, beside each shard's stats, `<shard>_hosts.json` (`shard_hosts`): per host, the
requests it sent while fetching the shard, over how many seconds (first to last request start),
the 429/503 answers, and whether the host was given up. `host_totals` sums them over every
round: requests, and the peak rate one worker sent to the host. A download that starts afresh
(a class veto's new sample) keeps the totals of the downloads before it (`EARLIER_HOSTS_FILE`,
carried over by `carry`), so `busiest_hosts` and `all_requests` count every request the run sent.
The file also counts the opt-out signals that did not parse (`malformed_signals`, summed over
the rounds by `malformed_signals`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from urllib.parse import urlsplit

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import read_json


def host_of(url: str | None) -> str:
    """The URL's host in lower case ("" when it has none)."""
    try:
        return (urlsplit((url or "").strip()).hostname or "").lower()
    except ValueError:
        return ""


def shard_hosts(before: dict[str, dict], after: dict[str, dict], started: float) -> dict[str, dict]:
    """Per host, what a shard added to a worker's politeness stats (`Politeness.stats()` before
    and after the shard; `started`: the shard's start, epoch seconds)."""
    hosts = {}
    for host, now in after.items():
        was = before.get(host, {"requests": 0, "throttled": 0})
        requests = now["requests"] - was["requests"]
        if requests:
            hosts[host] = {
                "requests": requests,
                "seconds": round(now["last"] - max(now["first"], started), 3),
                "throttled": now["throttled"] - was["throttled"],
                "given_up": now["given_up"],
            }
    return hosts


EARLIER_HOSTS_FILE = "earlier_hosts.json"  # download/: per host, what the run's earlier downloads sent


def _empty() -> dict:
    return {"requests": 0, "peak_rate_per_s": 0.0, "throttled": 0, "given_up": None}


def merged(*totals: dict[str, dict]) -> dict[str, dict]:
    """Per host totals summed: requests and 429/503s added, the higher peak, given up if ever."""
    out: dict[str, dict] = defaultdict(_empty)
    for by_host in totals:
        for host, figures in by_host.items():
            total = out[host]
            total["requests"] += figures["requests"]
            total["throttled"] += figures["throttled"]
            total["given_up"] = total["given_up"] or figures["given_up"]
            total["peak_rate_per_s"] = max(total["peak_rate_per_s"], figures["peak_rate_per_s"])
    return dict(sorted(out.items()))


def host_totals(rounds_dir: str) -> dict[str, dict]:
    """Per host over every round in `rounds_dir`: requests, 429/503s, given up, and the peak rate."""
    totals: dict[str, dict] = defaultdict(_empty)
    pattern = FileSystems.join(rounds_dir, "*", "*_hosts.json")
    for meta in FileSystems.match([pattern])[0].metadata_list:
        for host, shard in read_json(meta.path)["hosts"].items():
            total = totals[host]
            total["requests"] += shard["requests"]
            total["throttled"] += shard["throttled"]
            total["given_up"] = total["given_up"] or shard["given_up"]
            if shard["requests"] > 1 and shard["seconds"] > 0:
                rate = (shard["requests"] - 1) / shard["seconds"]  # starts per second between the first and last
                total["peak_rate_per_s"] = max(total["peak_rate_per_s"], round(rate, 2))
    return dict(totals)


def read_earlier(stage_dir: str) -> dict[str, dict]:
    path = FileSystems.join(stage_dir, EARLIER_HOSTS_FILE)
    return read_json(path) if FileSystems.exists(path) else {}


def run_totals(stage_dir: str, rounds_dir: str) -> dict[str, dict]:
    """Per host, every request of the run: this download's rounds and the downloads before it."""
    return merged(read_earlier(stage_dir), host_totals(rounds_dir))


def busiest_hosts(totals: dict[str, dict], count: int) -> list[dict]:
    """The `count` hosts sent the most requests, with their peak rate."""
    ranked = sorted(totals.items(), key=lambda item: (-item[1]["requests"], item[0]))
    return [{"host": host, **figures} for host, figures in ranked[:count]]


def malformed_signals(rounds_dir: str) -> dict[str, int]:
    """Opt-out signals that did not parse (read as no signal), by kind, over every round."""
    counts: Counter[str] = Counter()
    for meta in FileSystems.match([FileSystems.join(rounds_dir, "*", "*_hosts.json")])[0].metadata_list:
        counts.update(read_json(meta.path).get("malformed_signals", {}))
    return dict(sorted(counts.items()))

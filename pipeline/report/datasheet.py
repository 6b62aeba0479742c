"""The dataset card's datasheet: the sections of Datasheets for Datasets (Gebru et al., 2021).

Motivation, composition, collection process, preprocessing, uses, distribution, maintenance:
each from the run's figures and config, with the `datasheet` config section for what no stage
can know (the corpus's provenance, a maintainer contact, motivation, uses, distribution terms).
What is missing is said plainly rather than left out. `crawl_notice` gives the card's first
lines: the opt-out signals honoured, and any safeguard the crawler ran without.
"""

from __future__ import annotations

from collections import Counter

from imagenot.pipeline.config.schema import Config, Download
from imagenot.pipeline.report.crawl import rounds_by_command
from imagenot.pipeline.report.facts import RunFacts
from imagenot.pipeline.report.human_review import review_found
from imagenot.pipeline.report.markdown import count_of, table
from imagenot.pipeline.report.people import who_chose

NOT_GIVEN = "Not stated (set `datasheet.{key}` in the config)"


def opt_out_signals(d: Download) -> list[tuple[str, str, bool]]:
    """(signal, its config switch, honoured) for each opt-out signal the crawler knows."""
    return [
        ("TDMRep (tdmrep.json, tdm-reservation header)", "download.tdmrep", d.tdmrep),
        (
            f"IETF AI Preferences (Content-Usage in robots.txt and headers; categories "
            f"{', '.join(d.ai_preferences_categories)})",
            "download.ai_preferences",
            d.ai_preferences,
        ),
        ("Content-Signal in robots.txt (ai-train=no)", "download.content_signal", d.content_signal),
        (
            f"X-Robots-Tag ({', '.join(d.disallowed_header_directives) or 'no directive'})",
            "download.disallowed_header_directives",
            bool(d.disallowed_header_directives),
        ),
    ]


def crawl_notice(facts: RunFacts) -> list[str]:
    """Lines for the card's top: the opt-out signals honoured, and any safeguard the crawler ran without."""
    d = facts.config.download
    if facts.download is None:
        return []
    signals = opt_out_signals(d)
    honoured = "; ".join(name for name, _, on in signals if on) or "none"
    lines = [
        f"> Opt-out signals honoured (images a site reserves are never kept): {honoured}. Building this dataset "
        f"counts as AI training (AI Preferences category `{d.ai_preferences_categories[0]}`)."
    ]
    lines += [f"> **{name} was NOT honoured** (`{switch}` off)." for name, switch, on in signals if not on]
    if not d.robots_txt:
        lines.append(
            "> **robots.txt was not read** (`download.robots_txt: false`): sites' crawl rules were not obeyed."
        )
    if d.allowed_networks:
        lines.append(f"> The crawler was allowed to reach non-public networks: {', '.join(d.allowed_networks)}.")
    return [*lines, ""]


def _given(config: Config, key: str) -> str:
    return getattr(config.datasheet, key) or NOT_GIVEN.format(key=key)


def _composition(facts: RunFacts) -> list[str]:
    columns = "`url`, `caption`, `class_index`, `wnid`, `gloss_similarity`, `split`, `order`"
    if facts.download is not None:
        columns += ", `tar`, `key`, image sizes, and `sha256` (of the original bytes, for hash lists applied later)"
    licence = "a licence column (counted under Licences)" if facts.licenses is not None else "no licence column"
    return [
        "### Composition",
        "",
        f"{len(facts.classes):,} classes (WordNet noun synsets), {facts.images:,} images labelled from caption text; "
        f"each row: {columns}. The corpus carried {licence}. The images are third-party web content: some may "
        f"show people, text or material a user does not expect. {review_found(facts.review)}",
        "",
    ]


def _crawl_policy(config: Config) -> list[str]:
    d = config.download
    rows = [
        ("User-Agent token", d.user_agent_token),
        ("robots.txt (RFC 9309)", "read once per host, obeyed" if d.robots_txt else "NOT read"),
        *(
            (name, f"honoured (`{switch}`)" if on else f"NOT honoured (`{switch}` off)")
            for name, switch, on in opt_out_signals(d)
        ),
        ("per host, per worker process", f"{d.per_host_connections} connections, {d.per_host_rate:g} requests/s"),
        ("429/503 backoff", f"Retry-After, else {d.backoff_base_s:g} s doubling, at most {d.max_backoff_s:g} s"),
        ("host given up after", f"{d.host_max_failures} failures in a row"),
        ("fetch deadline", f"{d.fetch_deadline():g} s a fetch, {d.timeout_s:g} s a read"),
        ("non-public networks reachable", ", ".join(d.allowed_networks) or "none"),
        ("largest response, image", f"{d.max_response_bytes:,} bytes, {d.max_image_pixels:,} pixels"),
    ]
    return table(("crawl policy", "value"), rows)


def _busiest_hosts(download: dict, workers: int) -> list[str]:
    hosts = download.get("busiest_hosts") or []
    if not hosts:
        return []
    rows = [(h["host"], h["requests"], h["peak_rate_per_s"], h["throttled"], h["given_up"] or "no") for h in hosts]
    total = (
        f"In all the run sent {count_of(download['requests'], 'request')} to {count_of(download['hosts'], 'host')} "
        "over every download of the run (a class veto's new download included). "
        if "requests" in download
        else ""
    )
    return [
        f"{total}The rate limits above hold per worker process: with {count_of(workers, 'worker process')} "
        f"(`runner.workers`) a host may get up to {workers} times the rate. A peak is the fastest one worker sent "
        "to the host over one shard, from its first to its last request start (coarse over a few requests). "
        "The busiest hosts:",
        "",
        *table(("host", "requests", "peak requests/s (one worker)", "429/503", "given up"), rows, "lrrrl"),
    ]


def _blocklists(download: dict) -> list[str]:
    listed = [(s["path"], s["bytes"], s["sha256"], "during the build") for s in download.get("blocklists", [])]
    listed += [
        (s["path"], s["bytes"], s["sha256"], f"`blocklist apply`, {s.get('applied_at', 'after the build')}")
        for s in download.get("blocklists_applied", [])
    ]
    if not listed:
        return [
            "No blocklist was applied (`download.blocklists`): the images were not checked against any URL, "
            "domain or hash list (for example a child-protection organisation's).",
            "",
        ]
    removed = Counter({r: n for r, n in download["failures"].items() if r.startswith("blocklist_")})
    removed.update(download.get("dropped_by_blocklists", {}))
    removed_text = ", ".join(f"{reason} {n:,}" for reason, n in sorted(removed.items())) or "nothing"
    latest = {s["path"]: s for s in download.get("blocklists_applied", [])}  # a list applied again: its last run
    still = sum(s.get("still_listed", 0) for s in latest.values())
    warning = (
        [
            f"**{count_of(still, 'listed image')} still in the dataset**: `blocklist apply` ran out of passes "
            "(image_audit.drop_passes); run it again.",
            "",
        ]
        if still
        else []
    )
    backfilled = sum(s.get("backfilled", 0) for s in download.get("blocklists_applied", []))
    refilled = f" The reserve put {count_of(backfilled, 'image')} in their place." if latest else ""
    return [
        "Blocklists applied:",
        "",
        *table(("file", "bytes", "sha256", "when"), listed, "lrll"),
        f"They removed: {removed_text}.{refilled}",
        "",
        *warning,
    ]


def _collection(facts: RunFacts) -> list[str]:
    config = facts.config
    lines = [
        "### Collection process",
        "",
        f"Corpus provenance: {_given(config, 'corpus_provenance')}. From its captions, "
        f"{who_chose(facts.review, facts.class_review)}.",
        "",
    ]
    if facts.download is None:
        return [*lines, "The images were not fetched by this run.", ""]
    d = facts.download
    lines += [
        "The images were fetched by imagenot's crawler (img2dataset inside), in rounds "
        f"({rounds_by_command(d)}), under this policy:",
        "",
        *_crawl_policy(config),
        *_busiest_hosts(d, config.runner.workers),
        *_blocklists(d),
    ]
    return lines


def _preprocessing(config: Config, fetched: bool) -> list[str]:
    d = config.download
    images = (
        f"images were decoded, checked (complete, at most {d.max_image_pixels:,} pixels) and resized to "
        f"{d.image_size} px (`{d.resize_mode}`), stored as {d.encode_format} in webdataset tars "
        "(members sorted, fixed mtime and owner)."
        if fetched
        else "No image was fetched or processed."
    )
    return ["### Preprocessing", "", f"Captions were normalised and matched to WordNet lemmas; {images}", ""]


def datasheet(facts: RunFacts) -> list[str]:
    """The datasheet sections of the card."""
    config = facts.config
    contact = config.datasheet.maintainer_contact
    maintenance = (
        f"Maintainer, for questions and takedown requests: {contact}."
        if contact
        else "**No maintainer contact was given** (`datasheet.maintainer_contact`): there is nobody to send a takedown "
        "request to. Do not publish this dataset without one."
    )
    return [
        "## Datasheet",
        "",
        "The questions of Datasheets for Datasets (Gebru et al., 2021), answered for this run.",
        "",
        "### Motivation",
        "",
        f"{_given(config, 'motivation')}. imagenot builds ImageNot-style contrast datasets, to test whether models "
        "rank the same way as on ImageNet.",
        "",
        *_composition(facts),
        *_collection(facts),
        *_preprocessing(config, facts.download is not None),
        "### Uses",
        "",
        f"{_given(config, 'intended_uses')}. Not for: identifying or profiling people, or any use the images' "
        "owners' terms forbid.",
        "",
        "### Distribution",
        "",
        f"{_given(config, 'distribution')}. The images stay under their owners' terms (see Licences).",
        "",
        "### Maintenance",
        "",
        maintenance + " Lists published later can be applied to this dataset without fetching it again: "
        "`imagenot blocklist apply --run RUN --list FILE` (it takes the matching rows and their tar samples out and "
        "backfills from the reserve).",
        "",
    ]

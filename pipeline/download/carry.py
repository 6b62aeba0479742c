"""What an earlier download fetched, carried over when the stage starts afresh (a new sample).

A changed upstream (`imagenot review classes apply` vetoes a class: rank, sample and so the
download's fingerprint change) clears the download folder (`pipeline.run.stage_dir`). Before it
is cleared, `retire` copies what its finished rounds fetched for the new sample's candidates
(same row_id and url) into `RUN/download_carried/g<n>/`: per shard, each row's outcome (status,
error, sizes, sha256) and, for a success, its image bytes; and the rows the audits dropped. It
does so only when the stage's settings that decide what a fetch gives (all it records but
`shard_rows`, which only lays the rounds out) are unchanged: a changed image size, format,
opt-out rule or blocklist fetches everything again (a generation's `DONE` names the settings its
outcomes were fetched with; only those of the current settings are read). A generation is whole
once its `DONE` is written; the folder is cleared only after that, and one half written is made
again.

The new rounds are planned as a fresh build plans them. A planned row with a carried outcome is
not requested: its outcome is written into the round's shard under the key img2dataset would have
given it (`tars.SortedSampleWriter`), so the round tars, the dataset and the export are the same
bytes as a fresh build's. Carried drops stay dropped. Each generation also keeps what the
retired download sent to each host (`hosts.json`, its own earlier downloads' included), which the
finished stage keeps as its earlier downloads' requests (`hosts.EARLIER_HOSTS_FILE`), so the card
counts every request of the run, and what it fetched, by command (`fetch_log`), so the card counts
every fetch and every round too. The folder is removed when the stage finishes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.dataset.webdataset import read_samples
from imagenot.pipeline.download import drops, fetch, fetch_log, hosts
from imagenot.pipeline.run.files import atomic_output, read_json, read_table, stage_shards, write_json
from imagenot.pipeline.run.layout import DONE_FILE, DOWNLOAD, FINGERPRINT_FILE, stage_path
from imagenot.pipeline.run.paths import delete_folder
from imagenot.pipeline.run.stage_dir import Fingerprint

CARRY_DIR = "download_carried"  # RUN/download_carried/g<n>/: an earlier download's outcomes
HOSTS_FILE = "hosts.json"  # g<n>/: per host, the requests the retired download (and those before it) sent
OUTCOMES_DIR = "outcomes"
LAYOUT_ONLY = {"shard_rows"}  # recorded settings that do not change what a fetch gives
OUTCOME_COLUMNS = ["status", "error_message", "width", "height", "original_width", "original_height", "sha256"]
SCHEMA = pa.schema(
    [
        ("row_id", pa.string()),
        ("url", pa.string()),
        ("status", pa.string()),
        ("error_message", pa.string()),
        ("width", pa.int32()),
        ("height", pa.int32()),
        ("original_width", pa.int32()),
        ("original_height", pa.int32()),
        ("sha256", pa.string()),
        ("image", pa.binary()),
    ]
)


@dataclass(frozen=True)
class Carried:
    """row_id -> the carried part holding its outcome (rows whose url is the candidate's)."""

    parts: dict[str, str]

    def rows(self, row_ids: list[str]) -> pa.Table:
        """The carried outcomes of `row_ids` (those carried), images included."""
        by_part: dict[str, list[str]] = {}
        for row_id in row_ids:
            if row_id in self.parts:
                by_part.setdefault(self.parts[row_id], []).append(row_id)
        tables = [
            read_table(part).filter(pc.is_in(pc.field("row_id"), pa.array(wanted, pa.string())))
            for part, wanted in sorted(by_part.items())
        ]
        return pa.concat_tables(tables).cast(SCHEMA) if tables else SCHEMA.empty_table()


def _fetch_settings(settings: dict) -> dict:
    return {k: v for k, v in json.loads(json.dumps(settings)).items() if k not in LAYOUT_ONLY}


def _generations(run_dir: str) -> list[str]:
    """The whole generations' folders, oldest first."""
    pattern = stage_path(run_dir, CARRY_DIR, "g*", DONE_FILE)
    done = [FileSystems.split(m.path)[0] for m in FileSystems.match([pattern])[0].metadata_list]
    return sorted(done, key=lambda folder: int(FileSystems.split(folder)[1][1:]))


def retire(run_dir: str, settings: dict, upstream: Fingerprint, candidates: pa.Table, encode_format: str) -> int:
    """Before the download stage opens its folder: carry what it fetched for `candidates` out of
    it when it is about to be cleared (see the module's docstring); the outcomes carried."""
    stage_dir = stage_path(run_dir, DOWNLOAD)
    fingerprint_path = FileSystems.join(stage_dir, FINGERPRINT_FILE)
    if not FileSystems.exists(fingerprint_path):
        return 0
    recorded = read_json(fingerprint_path)
    if recorded["upstream"] == upstream.digest and recorded["settings"] == json.loads(json.dumps(settings)):
        return 0  # the folder is kept
    same_fetch = _fetch_settings(recorded["settings"]) == _fetch_settings(settings)
    urls = dict(zip(candidates.column("row_id").to_pylist(), candidates.column("url").to_pylist()))
    whole = _generations(run_dir)
    folder = stage_path(run_dir, CARRY_DIR, f"g{len(whole)}")
    delete_folder(folder)  # half written by an interrupted run
    shard_rows = recorded["settings"]["shard_rows"]
    carried = _carry_outcomes(stage_dir, folder, urls, encode_format, shard_rows) if same_fetch else 0
    dropped = drops.read_drops(stage_dir)
    kept = [urls.get(r) == u for r, u in zip(dropped.column("row_id").to_pylist(), _drop_urls(stage_dir, dropped))]
    with atomic_output(FileSystems.join(folder, drops.DROPS_FILE)) as stream:
        pq.write_table(dropped.filter(pa.array(kept, pa.bool_())), stream)
    sent = hosts.run_totals(stage_dir, FileSystems.join(stage_dir, fetch.ROUNDS_DIR))
    write_json(FileSystems.join(folder, HOSTS_FILE), sent)
    fetched = fetch_log.download_fetches(stage_dir, len(_round_dirs(stage_dir)))
    write_json(FileSystems.join(folder, fetch_log.GENERATION_FILE), fetched)
    write_json(FileSystems.join(folder, DONE_FILE), {"outcomes": carried, "settings": _fetch_settings(settings)})
    return carried


def _round_dirs(stage_dir: str) -> list[str]:
    """The round folders whose plan reads."""
    plans = FileSystems.match([FileSystems.join(stage_dir, fetch.ROUNDS_DIR, "*", fetch.FETCH_FILE)])[0]
    return [d for d in sorted(FileSystems.split(m.path)[0] for m in plans.metadata_list) if fetch.plan_reads(d)]


def _drop_urls(stage_dir: str, dropped: pa.Table) -> list[str | None]:
    """Each dropped row's url, as the rounds fetched it."""
    urls: dict[str, str] = {}
    for round_dir in _round_dirs(stage_dir):
        table = read_table(FileSystems.join(round_dir, fetch.FETCH_FILE), ["row_id", "url"])
        urls.update(zip(table.column("row_id").to_pylist(), table.column("url").to_pylist()))
    return [urls.get(r) for r in dropped.column("row_id").to_pylist()]


def _carry_outcomes(stage_dir: str, folder: str, urls: dict[str, str], encode_format: str, shard_rows: int) -> int:
    """Each finished shard's outcomes of the candidates into `folder`; the rows carried."""
    carried = 0
    for round_dir in _round_dirs(stage_dir):
        for shard in range(fetch.shard_count(fetch.read_fetch(round_dir).num_rows, shard_rows)):
            carried += _carry_shard(round_dir, shard, folder, urls, encode_format)
    return carried


def _carry_shard(round_dir: str, shard: int, folder: str, urls: dict[str, str], encode_format: str) -> int:
    if not fetch.is_finished(round_dir, shard):
        return 0
    name = FileSystems.join(round_dir, fetch.shard_name(shard))
    results = read_table(f"{name}.parquet", ["row_id", "url", "key", *OUTCOME_COLUMNS]).to_pylist()
    results = [r for r in results if r["row_id"] in urls and urls[r["row_id"]] == r["url"]]
    keys = {r["key"] for r in results if r["status"] == "success"}
    found = read_samples(f"{name}.tar", keys, {encode_format}) if keys else {}
    images = {key: members[encode_format] for key, members in found.items()}
    rows = [
        {**{c: r[c] for c in ("row_id", "url", *OUTCOME_COLUMNS)}, "image": images.get(r["key"])}
        for r in results
        if r["status"] != "success" or r["key"] in images  # a sample removed from its tar is fetched again
    ]
    if rows:
        round_name = FileSystems.split(round_dir)[1]
        path = FileSystems.join(folder, OUTCOMES_DIR, f"r{round_name}-{fetch.shard_name(shard)}.parquet")
        with atomic_output(path) as stream:
            pq.write_table(pa.Table.from_pylist(rows, SCHEMA), stream)
    return len(rows)


def carried_drops(run_dir: str) -> pa.Table:
    """The dropped rows every whole generation carried, in order, each once."""
    tables = [drops.read_drops(g) for g in _generations(run_dir)]
    table = pa.concat_tables(tables) if tables else drops.SCHEMA.empty_table()
    first = {}
    for i, row_id in enumerate(table.column("row_id").to_pylist()):
        first.setdefault(row_id, i)
    return table.take(pa.array(sorted(first.values()), pa.int64()))


def load(run_dir: str, candidates: pa.Table, settings: dict) -> Carried:
    """The carried outcomes of the candidates (same url) that generations made under these fetch
    settings hold, later generations first."""
    urls = dict(zip(candidates.column("row_id").to_pylist(), candidates.column("url").to_pylist()))
    parts: dict[str, str] = {}
    for generation in _generations(run_dir):
        if read_json(FileSystems.join(generation, DONE_FILE))["settings"] != _fetch_settings(settings):
            continue
        for part in stage_shards(generation, OUTCOMES_DIR):
            table = read_table(part, ["row_id", "url"])
            for row_id, url in zip(table.column("row_id").to_pylist(), table.column("url").to_pylist()):
                if urls.get(row_id) == url:
                    parts[row_id] = part
    return Carried(parts)


def keep_earlier(run_dir: str, stage_dir: str) -> None:
    """Before the generations go: what the downloads they retired sent and fetched, into the stage's
    own folder."""
    generations = _generations(run_dir)
    earlier = [FileSystems.join(g, HOSTS_FILE) for g in generations]
    sent = hosts.merged(*(read_json(path) for path in earlier if FileSystems.exists(path)))
    if sent:  # written whole again by a rerun: the generations hold every earlier download's requests
        write_json(FileSystems.join(stage_dir, hosts.EARLIER_HOSTS_FILE), sent)
    fetch_log.keep_earlier(stage_dir, generations)


def clear(run_dir: str) -> None:
    """The carried outcomes are in the finished stage's rounds now: remove them."""
    delete_folder(stage_path(run_dir, CARRY_DIR))

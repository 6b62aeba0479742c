"""Every fetch of the run, by the command whose rounds made it: what the card's crawl figures count.

Each round records in `rounds/<k>/round.json` the command that planned it (the journal's: `build`,
`review classes apply`, `review apply`, an audit's `--drop`...) and, once it finished, its rows,
those whose outcome came over from an earlier download (`pipeline.download.carry`: not fetched
again) and the images that arrived among the rest. A new sample (a class vetoed) clears the
download folder: `carry` keeps the retired download's log, its own earlier downloads' included,
in its generation (`GENERATION_FILE`), and the finished stage keeps them as `EARLIER_FILE`, as it
keeps their requests per host. So the figures count every fetch of the run, those for classes
vetoed since included, and every round, each named by its command.
"""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.download.fetch import ROUNDS_DIR
from imagenot.pipeline.run.files import read_json, write_json
from imagenot.pipeline.run.journal import current

ROUND_FILE = "round.json"  # rounds/<k>/: the command that planned the round, and what it fetched
EARLIER_FILE = "earlier_fetches.json"  # download/: the run's earlier downloads' fetches, by command
GENERATION_FILE = "fetches.json"  # carry's g<n>/: the retired download's fetches, its earlier ones' included


def plan_round(round_dir: str) -> None:
    """The round is planned: it records the command at work (None outside one: a library call)."""
    intent = current()
    write_json(FileSystems.join(round_dir, ROUND_FILE), {"command": intent.entry["command"] if intent else None})


def _record(round_dir: str) -> dict:
    path = FileSystems.join(round_dir, ROUND_FILE)
    return read_json(path) if FileSystems.exists(path) else {"command": None}  # a round planned before the log


def finish_round(round_dir: str, arrived: dict[str, bool], carried: set[str] | dict) -> None:
    """The finished round's rows (`arrived`: row_id -> whether its image came), those whose outcome
    was `carried` over, and the images that arrived among the rest; recorded once, while the
    carried outcomes are still at hand (a rerun of the finished round keeps what it recorded)."""
    record = _record(round_dir)
    if "rows" in record:
        return
    fetched = [ok for row_id, ok in arrived.items() if row_id not in carried]
    record.update(rows=len(arrived), carried=len(arrived) - len(fetched), images=sum(fetched))
    write_json(FileSystems.join(round_dir, ROUND_FILE), record)


def download_fetches(stage_dir: str, rounds: int) -> list[dict]:
    """The fetches of the download in `stage_dir` (its first `rounds` rounds) after its earlier
    downloads': per run of rounds one command made, the command, its rounds, the URLs it fetched,
    the outcomes it took over from an earlier download, and the images that arrived."""
    earlier = FileSystems.join(stage_dir, EARLIER_FILE)
    fetches = read_json(earlier) if FileSystems.exists(earlier) else []
    own: list[dict] = []
    for k in range(rounds):
        record = _record(FileSystems.join(stage_dir, ROUNDS_DIR, str(k)))
        if not own or own[-1]["command"] != record["command"]:
            own.append({"command": record["command"], "rounds": 0, "urls": 0, "carried": 0, "images": 0})
        entry = own[-1]
        entry["rounds"] += 1
        entry["urls"] += record.get("rows", 0) - record.get("carried", 0)
        entry["carried"] += record.get("carried", 0)
        entry["images"] += record.get("images", 0)
    return [*fetches, *own]


def keep_earlier(stage_dir: str, generations: list[str]) -> None:
    """What the downloads the generations retired fetched, into the stage's own folder."""
    earlier = [FileSystems.join(g, GENERATION_FILE) for g in generations]
    fetches = [entry for path in earlier if FileSystems.exists(path) for entry in read_json(path)]
    if fetches:  # written whole again by a rerun: the generations hold every earlier download's fetches
        write_json(FileSystems.join(stage_dir, EARLIER_FILE), fetches)

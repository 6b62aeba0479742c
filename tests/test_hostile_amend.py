"""`imagenot blocklist apply` on a finished run, through the command line: the card counts the
images the list removed and the reserve put back (images, not the tar members that hold them),
and a dataset the list empties reads right in its headline."""

import csv
import json
from collections import Counter

import pyarrow.parquet as pq

from imagenot.pipeline.amend.blocklist import blocklist_command
from tests.cli_runner import invoke
from tests.shared_runs import copy_run


def _apply(run_dir, listed) -> dict:
    result = invoke(blocklist_command, ["apply", "--run", str(run_dir), "--list", str(listed)])
    assert result.exit_code == 0, result.output
    return json.loads((run_dir / "download" / "blocklists_applied.json").read_text())[-1]


def _images(run_dir) -> int:
    return json.loads((run_dir / "download" / "figures.json").read_text())["images"]


def test_the_card_counts_the_images_the_reserve_put_back_not_their_tar_members(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    before = _images(run_dir)
    reserve = Counter(pq.read_table(run_dir / "sample" / "reserve").column("wnid").to_pylist())
    with (run_dir / "download" / "class_downloads.tsv").open() as table:
        unused = {
            row["wnid"]: reserve[row["wnid"]] - int(row["reserve_used"])
            for row in csv.DictReader(table, delimiter="\t")
        }
    wnid = next(w for w, n in sorted(unused.items()) if n >= 2)  # two images of a class with two candidates left
    dataset = pq.read_table(run_dir / "download" / "dataset").to_pylist()
    listed = tmp_path / "takedown.txt"
    taken = [row for row in dataset if row["wnid"] == wnid][:2]
    listed.write_text("".join(f"sha256 {row['sha256']}\n" for row in taken))
    record = _apply(run_dir, listed)
    refetched = _images(run_dir) - before + 2
    assert record["images_removed"] == 2 and record["tar_members_removed"] > 2  # an image is several members
    assert record["backfilled"] == refetched == 2  # the reserve fills both places
    card = (run_dir / "report" / "card.md").read_text()
    assert "The reserve put 2 images in their place." in card


def test_a_dataset_the_list_empties_reads_zero_images_and_no_backfill(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    listed = tmp_path / "everything.txt"
    listed.write_text("domain 127.0.0.1\n")
    record = _apply(run_dir, listed)
    assert _images(run_dir) == 0 and record["backfilled"] == 0
    card = (run_dir / "report" / "card.md").read_text()
    assert "The reserve put 0 images in their place." in card
    assert "**0 images**," in card and "images ()" not in card

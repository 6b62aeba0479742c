"""The image audits in the card and the report, over a small build whose images were really
downloaded (img2dataset, from the demo's loopback server) and embedded (a tiny random-weight CLIP).

One in eight of the demo server's corpus URLs serves one of two stock pictures, byte for byte, as
web copies do: the duplicates audit finds them, `--drop` takes them out, and the report follows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke
from review_claims import check_people_claims
from shared_runs import copy_run
from small_build import SMALL_BUILD
from test_image_embeddings import TINY_VIT

from imagenot.pipeline.audit.agreement import agreement_command
from imagenot.pipeline.audit.duplicates import duplicates_command
from imagenot.pipeline.audit.embeddings import embed_command
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.frame.build import build
from imagenot.pipeline.report.card import REPRODUCE_AUDITS

report_command = cli_command("report")


def _run(command, run_dir: Path, *args: str) -> None:
    result = invoke(command, ["--run", str(run_dir), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _reported(run_dir: Path) -> tuple[str, str]:
    _run(report_command, run_dir)
    return (run_dir / "report/card.md").read_text(), (run_dir / "report/report.html").read_text()


@pytest.fixture(scope="module")
def reports(downloaded_run, tmp_path_factory):
    """The reports of one run: audited, then after `duplicates --drop`, then with agreement rerun.
    The run is a copy of the session's downloaded run (the small run, built on with downloads from
    the demo server), its config given the tiny CLIP."""
    folder = tmp_path_factory.mktemp("images")
    (folder / "tiny-vit.json").write_text(json.dumps(TINY_VIT))
    built = yaml.safe_load((downloaded_run.parent / "config.yaml").read_text())
    config = Config.model_validate(
        {
            **built,
            "image_audit": {
                "clip_model": "tiny-vit",
                "clip_model_config": str(folder / "tiny-vit.json"),
                "batch_size": 16,
                "near_duplicate_threshold": 0.9999,
            },
        }
    )
    # the sample is the small run's: its build downloaded, reported and exported
    assert json.loads((downloaded_run.parent / "ran.json").read_text()) == ["download", "report", "export"]
    run_dir = copy_run(downloaded_run, folder / "run")
    assert build(config, str(run_dir)) == ["report"]  # the card describes the image audit's settings
    _run(embed_command, run_dir)
    _run(duplicates_command, run_dir)
    _run(agreement_command, run_dir)
    audited = _reported(run_dir)
    _run(duplicates_command, run_dir, "--drop")
    rebuilt = build(config, str(run_dir))  # the dataset changed: the report is out of date, the rest is not
    dropped = (run_dir / "report/card.md").read_text(), (run_dir / "report/report.html").read_text()
    _run(agreement_command, run_dir)
    current = _reported(run_dir)
    return run_dir, audited, (rebuilt, dropped), current


def _figures(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "figures.json").read_text())


def test_the_report_lists_the_duplicate_pairs_with_thumbnails(reports):
    _, (card, html), _, _ = reports
    kinds = re.search(r"- \*\*Duplicates\*\*: over [\d,]+ images, pairs by kind: ([^;]+);", card).group(1)
    pairs = dict(item.rsplit(" ", 1) for item in kinds.split(", "))
    assert int(pairs["within_class"]) + int(pairs["cross_class"]) + int(pairs["train_test"]) > 0  # the stock photos
    table = html[html.index('<table class="duplicates">') :]
    assert table.count("data:image/jpeg;base64,") >= 2 and "<td>True</td>" in table  # byte-identical pairs
    assert "- **Image-caption agreement**: over" in card and "RANDOM CLIP WEIGHTS" in card
    assert "Not run" in card and "Out of date" not in card


def test_after_the_drop_the_card_counts_what_went_and_what_is_short(reports):
    run_dir, _, (rebuilt, (card, html)), _ = reports
    check_people_claims(run_dir)  # after an audit's --drop too: no claim about people the review files deny
    assert rebuilt == []  # the drop wrote the report (and export) again itself: nothing left to rebuild
    duplicates, download = _figures(run_dir, "audit/duplicates"), _figures(run_dir, "download")
    dropped = sum(download["dropped_by_audits"].values())
    assert dropped == sum(duplicates["drop"]["dropped"].values()) > 0
    said = f"Audits dropped {dropped:,} image{'' if dropped == 1 else 's'} "
    assert said in card and said in html
    assert f"`--drop` ran {duplicates['drop']['passes']} pass" in card
    assert "imagenot audit duplicates --run NEW_RUN --drop" in card[card.index("## How to rebuild") :]
    assert duplicates["images"] == download["images"] == pq.read_table(run_dir / "download/dataset").num_rows
    if duplicates["drop"]["still_flagged"] == 0:  # random CLIP weights: --drop takes out byte-identical copies only
        pairs = pq.read_table(run_dir / "audit/duplicates/pairs.parquet")
        assert not any(pairs.column("exact").to_pylist()), pairs.to_pylist()


def test_an_audit_made_before_the_drop_is_reported_out_of_date_until_rerun(reports):
    _, _, (_, (card, html)), (current_card, _) = reports
    stale = REPRODUCE_AUDITS["agreement"]
    assert f"- Out of date (the images changed after they ran), to run again: `{stale}`." in card
    assert "Image-caption agreement" not in card and "Out of date" in html
    assert "Out of date" not in current_card and "- **Image-caption agreement**: over" in current_card


def test_the_card_is_a_datasheet_with_the_crawl_policy(reports):
    _, (card, html), _, _ = reports
    top = card.splitlines()[:4]
    assert any("non-public networks: 127.0.0.1/32" in line for line in top)  # the demo server's, allowed explicitly
    for section in (
        "Motivation",
        "Composition",
        "Collection process",
        "Preprocessing",
        "Uses",
        "Distribution",
        "Maintenance",
    ):
        assert f"### {section}\n" in card
    assert "| robots.txt (RFC 9309) | read once per host, obeyed |" in card
    assert "| User-Agent token | imagenot |" in card
    assert "**No maintainer contact was given**" in card and "No blocklist was applied" in card
    assert "| 127.0.0.1 |" in card and "busiest host" in html  # the busiest hosts


def test_why_tells_what_the_download_did_for_a_class(reports):
    from imagenot.pipeline.commands.why import why

    run_dir = reports[0]
    fates = json.loads((run_dir / "download/class_fates.json").read_text())
    wnid, fate = next(iter(fates.items()))
    result = invoke(why, [wnid, "--run", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert f"download: {fate['images']} of {fate['target']} images; candidates not kept, by reason:" in result.output
    assert sum(sum(f["not_kept"].values()) for f in fates.values()) >= sum(
        _figures(run_dir, "download")["failures"].values()
    )


def test_the_report_shows_each_class_with_thumbnails_and_marks_short_ones(reports):
    run_dir, _, _, (_, html) = reports
    gallery = html[html.index('<section id="gallery">') : html.index('<section id="funnel">')]
    download = _figures(run_dir, "download")
    assert gallery.count('<div class="class') == download["classes"]
    short = sum(n < SMALL_BUILD["sampling"]["images_per_class"] for n in download["images_per_class"].values())
    assert gallery.count('<div class="class short">') == short > 0
    assert gallery.count("data:image/jpeg;base64,") == sum(min(n, 6) for n in download["images_per_class"].values())


def test_chromium_renders_every_image_and_requests_nothing(reports, tmp_path):
    from browser import open_page

    run_dir, _, _, _ = reports
    page = run_dir / "report" / "report.html"
    seen = open_page(page, tmp_path)
    assert seen["images"] == page.read_text().count("<img ") > 0
    assert seen["broken"] == [] and seen["requests"] == []
    assert not seen["wider_than_window"] and seen["cut"] == []  # wide tables scroll inside the page
    assert (seen["raw_marks"], seen["nulls"], seen["empty_cells"], seen["repeated_headings"]) == ([], [], 0, [])


def test_the_card_says_where_the_export_is_and_how_to_load_it(reports):
    run_dir, _, _, (card, _) = reports
    using = card[card.index("## Using the dataset") :]
    assert 'load_dataset("RUN/dataset", split="train")' in using and 'to_tuple("jpg", "cls")' in using
    assert "DataLoader" in using
    readme = (run_dir / "dataset" / "README.md").read_text()
    assert readme.startswith("---\n") and "## Using the dataset" in readme

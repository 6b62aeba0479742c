"""`imagenot review classes apply` on the session's downloaded run, through the command line, with
the run's image URLs served by a loopback image server whose request log the tests read.

Two raters drop the best-ranked class. Apply vetoes it and builds the run again: the next
candidate takes its place, and only that class's images are requested: nothing a kept class had
fetched is fetched again (the download carries it over, `pipeline.download.carry`). The files
equal, byte for byte, those of a fresh build with the same veto. The veto is recorded in
RUN/vetoed_classes.txt, so a build from the original config file (which names no veto) and
`imagenot rank` keep it, and the card says which classes were vetoed and where the list lives."""

from __future__ import annotations

import contextlib
import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke, killed_at
from image_server import LoopbackImageServer
from review_claims import check_people_claims
from shared_runs import copy_run

from imagenot.errors import ImagenotError
from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.demo.serving import PORT_WAIT_S, sample_captions
from imagenot.pipeline.frame.build import build
from imagenot.pipeline.review.class_results import CLASS_DB_FILE
from imagenot.pipeline.review.command import review_command
from imagenot.pipeline.review.store import Store
from imagenot.pipeline.run.layout import read_vetoes
from imagenot.wordnet.index import load_index

rank_command = cli_command("rank")


def _ranked(run_dir: Path) -> list[dict]:
    return list(csv.DictReader((run_dir / "rank/ranking.tsv").read_text().splitlines(), delimiter="\t"))


def _classes(run_dir: Path) -> list[str]:
    return [r["wnid"] for r in _ranked(run_dir) if r["fate"] == "class"]


def _path(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def _url_classes(tables) -> dict[str, str]:
    """URL path -> wnid of the rows of these parquet files."""
    rows = [r for t in tables for r in pq.read_table(t, columns=["url", "wnid"]).to_pylist()]
    return {_path(r["url"]): r["wnid"] for r in rows}


def _fetched(run_dir: Path) -> dict[str, str]:
    """Every URL path the run's download rounds planned, with its class."""
    return _url_classes(sorted((run_dir / "download/rounds").glob("*/fetch.parquet")))


def _dataset_files(run_dir: Path) -> dict[str, bytes]:
    """The download's dataset, per-class table and round tars, and the export."""
    paths = [
        *(run_dir / "download").glob("dataset/*.parquet"),
        run_dir / "download/class_downloads.tsv",
        *(run_dir / "download").glob("rounds/*/*.tar"),
        *(p for p in (run_dir / "dataset").rglob("*") if p.is_file()),
    ]
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(paths)}


def _without_demo_server(config: dict) -> dict:
    """The test's own server answers the URLs, so the build must not start the demo's."""
    return {**config, "download": {**config["download"], "demo_server_port": None}}


def _reviewed(downloaded_run: Path, work: Path) -> tuple[Path, int]:
    """A copy of the downloaded run at `work` where two raters dropped the best-ranked class; the
    loopback port its images are served from."""
    copy_run(downloaded_run, work)
    config = yaml.safe_load((work / "config.yaml").read_text())
    (work / "config.yaml").write_text(yaml.safe_dump(_without_demo_server(config)))
    before = _classes(work)
    store = Store(str(work), CLASS_DB_FILE)
    for name in ("Ann", "Bo"):
        rater = store.rater(name)
        for wnid in before:
            store.save(rater, wnid, [(wnid, "drop" if wnid == before[0] else "keep")])
    store.close()
    return work, config["download"]["demo_server_port"]


@pytest.fixture(scope="module")
def applied(downloaded_run, small_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vetoes")
    original = downloaded_run.parent / "config.yaml"
    work, port = _reviewed(downloaded_run, folder / "run")
    config = yaml.safe_load((work / "config.yaml").read_text())
    before, fetched = _classes(work), _fetched(work)
    requests_before = json.loads((work / "download/figures.json").read_text())["requests"]
    vetoed = before[0]
    fresh_config = {**_without_demo_server(yaml.safe_load(original.read_text())), "ranking": config["ranking"]}
    fresh_config["ranking"] = {**fresh_config["ranking"], "vetoed": [vetoed]}
    (folder / "fresh.yaml").write_text(yaml.safe_dump(fresh_config))
    # as the demo's server does: each image drawn from its caption in the run's sample (a URL the apply's new
    # sample adds, the promoted class's, gets a photo here, and so in the fresh build too)
    images = LoopbackImageServer(port=port, port_wait_s=PORT_WAIT_S, captions=sample_captions(str(work)))
    (folder / "third").mkdir()
    with images as server, contextlib.chdir(folder / "third"):  # other tests serve the port too
        # the run named from another folder, as a user of a copied run names it
        result = invoke(review_command, ["classes", "apply", "--run", "../run"], catch_exceptions=False)
        requested = [path for path, *_ in server.log if path.startswith("/img/")]
        requests_sent = len(server.log)
        fresh = copy_run(small_run.run, folder / "fresh" / "run")  # the same name: the export names its run
        build(load_config(folder / "fresh.yaml"), str(fresh))
    assert result.exit_code == 0, result.output
    return {
        "work": work,
        "fresh": fresh,
        "original": original,
        "output": result.output,
        "before": before,
        "fetched": fetched,
        "vetoed": vetoed,
        "requested": requested,
        "requests": requests_before + requests_sent,
    }


def test_apply_requests_only_the_promoted_class_images(applied):
    work, vetoed = applied["work"], applied["vetoed"]
    now = _classes(work)
    (promoted,) = set(now) - set(applied["before"])
    assert vetoed not in now and f"promoted {promoted}" in applied["output"]
    requested = applied["requested"]
    assert requested, "the promoted class's images were fetched"
    assert not [p for p in requested if p in applied["fetched"]], "a URL fetched before was requested again"
    sample = _url_classes(sorted((work / "sample").glob("*/*.parquet")))
    assert {sample[p] for p in requested} == {promoted}
    dataset = _url_classes(sorted((work / "sample/dataset").glob("*.parquet")))
    assert {p for p, wnid in dataset.items() if wnid == promoted} <= set(requested)
    figures = json.loads((work / "download/figures.json").read_text())
    assert figures["fetched_by_this_run"] == len(requested) and figures["carried_over"] > 0
    images = pq.read_table(work / "download/dataset/part-00000.parquet", columns=["wnid"]).column("wnid").to_pylist()
    assert promoted in images and vetoed not in images


def test_the_card_and_report_name_the_promoted_class_unreviewed_and_count_every_request(applied, downloaded_run):
    """Issue 43: a promoted class enters the dataset named as not decided; the crawl table counts
    the download before the veto too, and says its limits are per worker process."""
    work = applied["work"]
    now = _classes(work)
    (promoted,) = set(now) - set(applied["before"])
    figures = json.loads((work / "download/figures.json").read_text())
    assert figures["requests"] == applied["requests"] and figures["requests"] > len(applied["requested"])
    assert sum(h["requests"] for h in figures["busiest_hosts"]) <= figures["requests"]
    card = (work / "report/card.md").read_text()
    name = load_index()[promoted].name
    assert f"**Not decided by the raters**: 1 class of the dataset's {len(now)} (`{promoted}` {name})" in card
    assert f"In all the run sent {figures['requests']:,} requests to" in card and "per worker process" in card
    # every fetch of the run, the vetoed class's too, and every round, by the command that ran it (issue 50)
    first = [pq.read_metadata(p).num_rows for p in sorted((downloaded_run / "download/rounds").glob("*/fetch.parquet"))]
    fetches = figures["fetches"]
    assert [(f["command"], f["rounds"]) for f in fetches] == [
        (None, len(first)),
        ("review classes apply", figures["rounds"]),
    ]
    assert (fetches[0]["urls"], fetches[1]["urls"]) == (sum(first), len(applied["requested"]))
    assert figures["urls_fetched"] == sum(first) + len(applied["requested"])  # the vetoed class's URLs too
    assert figures["images_fetched"] == fetches[0]["images"] + fetches[1]["images"] >= figures["images"]
    assert (
        f"In all the run fetched {figures['urls_fetched']:,} URLs, and {figures['images_fetched']:,} images arrived, "
        f"in {len(first) + figures['rounds']} rounds: {len(first)} by the download stage, {figures['rounds']} by "
        "`imagenot review classes apply`; the later downloads took "
    ) in card
    assert "no person looked at the images or checked an image's label" in card
    assert "no person chose a class" not in card and "people dropping classes from the list" in card
    html = (work / "report/report.html").read_text()
    review = html[html.index('<section id="review">') :]
    assert "<h3>Class review</h3>" in review and "<strong>Not decided by the raters</strong>" in review
    assert name in review
    check_people_claims(work)


def test_the_run_after_apply_has_a_fresh_builds_bytes(applied):
    mine, fresh = _dataset_files(applied["work"]), _dataset_files(applied["fresh"])
    assert any(name.startswith("dataset/") for name in mine)
    assert sorted(mine) == sorted(fresh)
    assert [name for name in mine if mine[name] != fresh[name]] == []


def test_a_build_from_the_original_config_and_rank_keep_the_veto(applied):
    work, vetoed = applied["work"], applied["vetoed"]
    name = load_index()[vetoed].name
    assert (work / "vetoed_classes.txt").read_text() == f"{vetoed} {name}\n"
    assert f"vetoed {vetoed}" in applied["output"] and "vetoed_classes.txt" in applied["output"]
    for said in ("class review apply: vetoing", "  rank: running", "  download: running"):  # not silent while it builds
        assert said in applied["output"], applied["output"]
    assert "vetoed" not in yaml.safe_load(applied["original"].read_text()).get("ranking", {})
    classes = _classes(work)
    rank_fingerprint = (work / "rank/fingerprint.json").read_text()
    result = invoke(build_command, ["--config", str(applied["original"]), "--out", str(work)])
    assert result.exit_code == 0, result.output
    assert (work / "rank/fingerprint.json").read_text() == rank_fingerprint  # current: not run again
    assert {r["wnid"]: r["fate"] for r in _ranked(work)}[vetoed] == "vetoed" and _classes(work) == classes
    result = invoke(rank_command, ["--run", str(work), "--config", str(applied["original"])])
    assert result.exit_code == 0, result.output
    assert {r["wnid"]: r["fate"] for r in _ranked(work)}[vetoed] == "vetoed" and _classes(work) == classes
    card = (work / "report/card.md").read_text()
    section = card[card.index("## Class review") :]
    assert f"(`{vetoed}` {name}), listed in the run folder's `vetoed_classes.txt`" in section


def test_a_vetoes_file_that_names_no_wnid_is_refused_in_one_line(tmp_path):
    (tmp_path / "vetoed_classes.txt").write_text("# vetoed by hand\nn02084071 dog.n.01\n\ndog\n")
    with pytest.raises(ImagenotError, match=r"vetoed_classes.txt: line 4 starts with 'dog', not a wnid"):
        read_vetoes(str(tmp_path))
    (tmp_path / "vetoed_classes.txt").write_text("# vetoed by hand\nn02084071 dog.n.01\nn02084071\n")
    assert read_vetoes(str(tmp_path)) == ["n02084071"]


def test_an_apply_killed_inside_rank_is_finished_by_its_rerun(applied, downloaded_run, tmp_path):
    """Killed once rank had written its outputs (the vetoes chosen, the build under way), the apply
    run again finishes it: the run is the uninterrupted apply's."""
    work, port = _reviewed(downloaded_run, tmp_path / "run")  # the same name: the export names its run
    with LoopbackImageServer(port=port, port_wait_s=PORT_WAIT_S, captions=sample_captions(str(work))):
        killed_at("rank ran", ["review", "classes", "apply", "--run", str(work)])
        result = invoke(review_command, ["classes", "apply", "--run", str(work)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "finishing `imagenot review classes apply" in result.output and "nothing to do" not in result.output
    assert applied["output"].split("; promoted ")[1].split(",")[0] in result.output.split("; promoted ")[1]
    assert _classes(work) == _classes(applied["work"])
    mine, whole = _dataset_files(work), _dataset_files(applied["work"])
    assert sorted(mine) == sorted(whole)
    assert [name for name in mine if mine[name] != whole[name]] == []
    assert read_vetoes(str(work)) == [applied["vetoed"]]


def test_no_named_individual_is_in_the_pool_a_veto_promotes_from(applied):
    """Apply promotes the next of rank's candidates, which are select's: the corpus names instance
    synsets (asia.n.01, white.n.03 ...; with `selection.instance_synsets: true` 33 of them pass every
    synset step), select drops them, and none is ranked."""
    index, work = load_index(), applied["work"]
    with (work / "select" / "synset_fates.tsv").open() as file:
        fates = list(csv.DictReader(file, delimiter="\t"))
    dropped = {f["wnid"] for f in fates if f["step"] == "instance_synsets"}
    assert index.by_name("asia.n.01").wnid in dropped and all(index[w].instance_of for w in dropped)
    ranked = {r["wnid"] for r in _ranked(work)}
    assert len(ranked) > len(_classes(work)) and not [w for w in ranked if index[w].instance_of]

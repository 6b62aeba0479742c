"""The download stage end to end: real img2dataset against the loopback image server, with
dead links, slow responses, redirects, non-images, truncated files, oversized responses, a
decompression bomb and non-http URLs mixed in; then a rerun and a resumed killed round."""

from __future__ import annotations

import csv
import io
import json
import shutil
import tarfile
from collections import Counter

import pyarrow.parquet as pq
import pytest
from cli_runner import cli_command, invoke
from image_server import LoopbackImageServer, photo_jpeg, write_sample_stage
from PIL import Image

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config, Download, Sampling
from imagenot.pipeline.frame.registry import declared, run_in_folder
from imagenot.pipeline.sample.splits import assign_splits

download_command = cli_command("download")

SAMPLING = Sampling(images_per_class=4, test_per_class=1)
SETTINGS = Download(
    enabled=True,
    timeout_s=1,
    max_response_bytes=1_000_000,
    shard_rows=5,
    image_size=64,
    allowed_networks=["127.0.0.1/32"],
)


def _download(run_dir) -> dict:
    """The download stage in its folder, as a command runs it; its figures."""
    return run_in_folder(declared("download"), Config(download=SETTINGS, sampling=SAMPLING), str(run_dir))


def _classes(u, local_file) -> dict[str, tuple[list[str], list[str]]]:
    """3 classes x 4 dataset rows, 3 reserve rows each (comments: the expected fate)."""
    return {
        "n00000001": (
            [
                u("/photo/coffee.jpg?id=a0"),
                u("/missing/a1"),
                u("/photo/chelsea.jpg?id=a2"),
                u("/slow/rocket.jpg?id=a3"),
            ],
            # a4 and a5 replace a1 and a3 in round 1; a5 is a web page, so a6 follows in round 2
            [u("/redirect/moon.jpg?id=a4"), u("/page.html?id=a5"), u("/photo/camera.jpg?id=a6")],
        ),
        "n00000002": (
            # b0 (the test image) is cut short, b2 cut off mid-transfer, b3 a bomb
            [
                u("/truncated/astronaut.jpg?id=b0"),
                u("/photo/coins.jpg?id=b1"),
                u("/cut/chelsea.jpg?id=b2"),
                u("/bomb.png?id=b3"),
            ],
            # all three fetched in round 1; only b5 arrives: the reserve is spent, 2 short
            [u("/huge/3000000.jpg?id=b4"), u("/photo/astronaut.jpg?id=b5"), u("/huge-stream/3000000.jpg?id=b6")],
        ),
        "n00000003": (
            # c0 and c3 are never fetched, so round 0 already takes c4 and c5 from the reserve
            [local_file.as_uri(), u("/photo/retina.jpg?id=c1"), u("/loop/c2"), "ftp://127.0.0.1/c3.jpg"],
            [u(f"/to-file?path={local_file}&id=c4"), u("/photo/hubble_deep_field.jpg?id=c5"), u("/error/c6")],
        ),
    }


@pytest.fixture(scope="module")
def downloaded(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    local_file = tmp_path_factory.mktemp("local") / "private.jpg"
    local_file.write_bytes(photo_jpeg("camera"))  # a real photo: read, it would pass as an image
    with LoopbackImageServer(slow_seconds=3) as server:
        row_ids = write_sample_stage(run_dir, _classes(server.url, local_file))
        figures = _download(run_dir)
        hits = server.hits
        rerun = _download(run_dir)
        rerun_hits = server.hits
        yield {
            "run_dir": run_dir,
            "server": server,
            "row_ids": row_ids,
            "figures": figures,
            "hits": hits,
            "rerun": rerun,
            "rerun_hits": rerun_hits,
            "local_file": local_file,
        }


def _row(d, item_id: str) -> str:
    """The row id of the URL whose `id` query is `item_id`."""
    (row_id,) = [r for url, r in d["row_ids"].items() if url.endswith(f"id={item_id}")]
    return row_id


def _dataset(run_dir):
    return pq.read_table(run_dir / "download" / "dataset" / "part-00000.parquet").to_pylist()


def _classes_tsv(run_dir) -> list[dict]:
    with open(run_dir / "download" / "class_downloads.tsv") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_per_class_counts_backfill_and_shortfall(downloaded):
    rows = _classes_tsv(downloaded["run_dir"])
    assert [(r["wnid"], r["target"], r["images"], r["failed"], r["reserve_used"], r["shortfall"]) for r in rows] == [
        ("n00000001", "4", "4", "3", "3", "0"),
        ("n00000002", "4", "2", "5", "3", "2"),
        ("n00000003", "4", "2", "5", "3", "2"),
    ]
    figures = downloaded["figures"]
    assert figures["images_per_class"] == {"n00000001": 4, "n00000002": 2, "n00000003": 2}
    assert (figures["images"], figures["target"], figures["classes_short"], figures["rounds"]) == (8, 12, 2, 3)
    assert figures["urls_tried"] == 21 and figures["url_success_rate"] == round(8 / 21, 4)
    assert figures["fetched_by_this_run"] == 19  # c0 (file:) and c3 (ftp:) are never fetched
    assert figures["tar_bytes"] > 0


def test_final_images_are_replacements_in_reserve_order_with_their_splits(downloaded):
    images = _dataset(downloaded["run_dir"])
    expected = ["a0", "a2", "a4", "a6", "b1", "b5", "c1", "c5"]
    assert [r["row_id"] for r in images] == [_row(downloaded, i) for i in expected]
    assert [r["round"] for r in images] == [0, 0, 1, 2, 0, 1, 0, 0]
    # splits are drawn anew over each class's final images: one test image per class
    for wnid in {r["wnid"] for r in images}:
        row_ids = [r["row_id"] for r in images if r["wnid"] == wnid]
        assert [r["split"] for r in images if r["wnid"] == wnid] == assign_splits(row_ids, 1, 0)
        assert sum(r["split"] == "test" for r in images if r["wnid"] == wnid) == 1
    assert all(r["width"] == 64 or r["height"] == 64 for r in images)
    assert all(r["tar"].startswith("download/rounds/") for r in images)


def test_failures_by_reason(downloaded):
    assert downloaded["figures"]["failures"] == {
        "http_404": 1,
        "timeout": 1,
        "not_an_image": 1,
        "truncated": 2,
        "too_many_pixels": 1,
        "too_large": 2,
        "redirect_loop": 1,
        "url_not_http": 3,
        "http_5xx": 1,
    }


def test_tars_hold_each_image_with_its_class_caption_and_row_id(downloaded):
    run_dir = downloaded["run_dir"]
    for row in _dataset(run_dir):
        with tarfile.open(run_dir / row["tar"]) as tar:
            meta = json.load(tar.extractfile(f"{row['key']}.json"))
            image = Image.open(io.BytesIO(tar.extractfile(f"{row['key']}.jpg").read()))
            caption = tar.extractfile(f"{row['key']}.txt").read().decode()
        assert (meta["row_id"], meta["class_index"], meta["wnid"], meta["caption"]) == (
            row["row_id"],
            row["class_index"],
            row["wnid"],
            row["caption"],
        )
        assert caption == row["caption"] and image.size == (row["width"], row["height"])


def test_a_file_url_is_never_read(downloaded):
    run_dir, local = downloaded["run_dir"], downloaded["local_file"]
    never = {downloaded["row_ids"][local.as_uri()]}
    fetched = [r for p in (run_dir / "download" / "rounds").glob("*/0*.parquet") for r in pq.read_table(p).to_pylist()]
    assert never.isdisjoint(r["row_id"] for r in fetched)
    assert not any(r["url"].startswith(("file:", "ftp:")) for r in fetched)
    redirected = [r for r in fetched if "to-file" in r["url"]]
    assert [r["status"] for r in redirected] == ["failed_to_download"]
    local_bytes = local.read_bytes()
    for tar_path in (run_dir / "download" / "rounds").glob("*/*.tar"):
        with tarfile.open(tar_path) as tar:
            assert all(local_bytes not in tar.extractfile(m).read() for m in tar.getmembers())


def test_each_url_is_fetched_once_and_a_rerun_fetches_nothing(downloaded):
    hits = downloaded["hits"]
    fetched = Counter({path: n for path, n in hits.items() if not path.startswith(("/photo/moon.jpg", "/loop/"))})
    assert set(fetched.values()) == {1}
    assert downloaded["rerun_hits"] == hits
    assert downloaded["rerun"]["fetched_by_this_run"] == 0
    assert {k: v for k, v in downloaded["rerun"].items() if k != "fetched_by_this_run"} == {
        k: v for k, v in downloaded["figures"].items() if k != "fetched_by_this_run"
    }


def test_a_killed_run_resumes_fetching_only_what_is_missing(downloaded, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(downloaded["run_dir"], run_dir)
    rounds = run_dir / "download" / "rounds"
    # killed in round 1 while its second shard (c6) was being written; round 2 (a6) never began
    (rounds / "1" / "00001_stats.json").unlink()
    whole_tar = (rounds / "1" / "00001.tar").read_bytes()
    (rounds / "1" / "00001.tar").write_bytes(whole_tar[:100])
    shutil.rmtree(rounds / "2")
    (run_dir / "download" / "DONE").unlink()
    server = downloaded["server"]
    before = server.hits
    figures = _download(run_dir)
    assert server.hits - before == Counter({"/error/c6": 1, "/photo/camera.jpg?id=a6": 1})
    assert figures["fetched_by_this_run"] == 2
    assert _dataset(run_dir) == _dataset(downloaded["run_dir"])
    assert _classes_tsv(run_dir) == _classes_tsv(downloaded["run_dir"])
    assert (rounds / "1" / "00001.tar").read_bytes() == whole_tar  # sorted members, fixed mtime and owner


def test_a_round_parquet_that_does_not_read_is_fetched_again(downloaded, tmp_path, caplog):
    run_dir = tmp_path / "run"
    shutil.copytree(downloaded["run_dir"], run_dir)
    shard = run_dir / "download" / "rounds" / "0" / "00001.parquet"
    shard.write_bytes(shard.read_bytes()[:60])  # a second writer's leftover, say
    (run_dir / "download" / "DONE").unlink()
    figures = _download(run_dir)
    assert f"{shard.with_suffix('')}.parquet does not read" in caplog.text
    assert figures["fetched_by_this_run"] == SETTINGS.shard_rows
    assert _dataset(run_dir) == _dataset(downloaded["run_dir"])


def test_a_round_plan_that_does_not_read_is_planned_and_fetched_again(downloaded, tmp_path, caplog):
    run_dir = tmp_path / "run"
    shutil.copytree(downloaded["run_dir"], run_dir)
    plan = run_dir / "download" / "rounds" / "1" / "fetch.parquet"
    plan.write_bytes(b"PAR1 not a parquet")
    (run_dir / "download" / "DONE").unlink()
    figures = _download(run_dir)
    assert f"{plan} does not read" in caplog.text
    assert figures["rounds"] == downloaded["figures"]["rounds"]
    assert _dataset(run_dir) == _dataset(downloaded["run_dir"])


def test_the_command_runs_only_when_enabled(downloaded):
    result = invoke(download_command, ["--run", str(downloaded["run_dir"])])
    assert result.exit_code == 1
    assert "download.enabled is false" in result.output


def test_a_busy_demo_port_is_a_clear_error(tmp_path, monkeypatch):
    import socket

    from imagenot.pipeline.demo import serving
    from imagenot.pipeline.download.stage import DECLARATION
    from imagenot.pipeline.frame.registry import run_stage

    monkeypatch.setattr(serving, "PORT_WAIT_S", 1.0)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]  # an ephemeral port: above 1024
        config = Config(download=Download(enabled=True, demo_server_port=port))
        with pytest.raises(ImagenotError, match=f"cannot serve on 127.0.0.1:{port}"):
            run_stage(DECLARATION, config, str(tmp_path))


def test_a_demo_port_another_build_serves_on_is_waited_for(tmp_path):
    import socket
    import threading
    import urllib.request

    from imagenot.pipeline.demo.serving import serving_demo_images

    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    threading.Timer(1.0, busy.close).start()  # the other build's download ends a second later
    with serving_demo_images(Download(demo_server_port=port), str(tmp_path)):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/photo/coffee.jpg", timeout=10) as answer:
            assert answer.status == 200

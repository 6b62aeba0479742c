"""A new sample (a class vetoed, say) starts the download stage afresh, but what it fetched for the
rows it still has (same row_id and url) is carried over: not requested again, written where a
fresh fetch writes it, byte for byte. A changed image setting fetches everything again, a dropped
row stays dropped, and a download killed after the carry resumes without requesting more."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from image_server import LoopbackImageServer, write_sample_stage

from imagenot.pipeline.config.schema import Config, Download, Runner, Sampling
from imagenot.pipeline.download import drops, fetch
from imagenot.pipeline.download.carry import CARRY_DIR
from imagenot.pipeline.frame.registry import declared, run_in_folder
from imagenot.pipeline.run.stage_dir import finish_stage, open_stage

SAMPLING = Sampling(images_per_class=3, test_per_class=1)
SETTINGS = Download(enabled=True, timeout_s=2, shard_rows=2, image_size=32, allowed_networks=["127.0.0.1/32"])


def _classes(u, second: str) -> dict[str, tuple[list[str], list[str]]]:
    """n00000001 is kept (a1 fails, a3 replaces it in round 1); `second` is the other class."""
    kept = (
        [u("/photo/coffee.jpg?id=a0"), u("/missing/x?id=a1"), u("/photo/chelsea.jpg?id=a2")],
        [u("/photo/camera.jpg?id=a3")],
    )
    other = {
        "n00000002": ([u("/photo/astronaut.jpg?id=b0"), u("/photo/coins.jpg?id=b1")], []),
        # its rows take the row ids b's had (row ids follow the classes' order), with other URLs
        "n00000003": ([u("/photo/rocket.jpg?id=c0"), u("/photo/moon.jpg?id=c1")], []),
    }
    return {"n00000001": kept, second: other[second]}


def _sample(run_dir: Path, classes: dict, tag: str) -> None:
    """The sample stage's files for `classes`, under a fingerprint of its own per `tag`."""
    scratch = run_dir.parent / f"scratch-{tag}"
    shutil.rmtree(scratch, ignore_errors=True)
    write_sample_stage(scratch, classes)
    stage_dir = open_stage(str(run_dir), "sample", {"test": tag})
    for folder in ("dataset", "reserve"):
        shutil.copytree(scratch / "sample" / folder, Path(stage_dir) / folder, dirs_exist_ok=True)
    finish_stage(stage_dir, {})


def _download(run_dir: Path, settings: Download = SETTINGS) -> dict:
    return run_in_folder(
        declared("download"), Config(download=settings, sampling=SAMPLING, runner=Runner()), str(run_dir)
    )


def _requested(server: LoopbackImageServer, before) -> list[str]:
    """The image URLs (`?id=` names each) requested since `before` (server.hits then)."""
    return sorted(path.split("id=")[1] for path, n in (server.hits - before).items() if "id=" in path for _ in range(n))


def _dataset_files(run_dir: Path) -> dict[str, bytes]:
    """What a fresh build must equal: the dataset, the per-class table and every round's tar."""
    download = run_dir / "download"
    paths = [*download.glob("dataset/*.parquet"), download / "class_downloads.tsv", *download.glob("rounds/*/*.tar")]
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(paths)}


def _downloaded_then_resampled(run_dir: Path, server: LoopbackImageServer):
    """A download of the first sample, then the second sample (b's class vetoed, c's promoted) in
    its place; server.hits before the second download."""
    _sample(run_dir, _classes(server.url, "n00000002"), "first")
    _download(run_dir)
    before = server.hits
    _sample(run_dir, _classes(server.url, "n00000003"), "second")
    return before


@pytest.fixture()
def server():
    with LoopbackImageServer() as server:
        yield server


def test_only_rows_never_fetched_are_requested_and_the_files_equal_a_fresh_builds(server, tmp_path):
    run_dir = tmp_path / "run"
    _sample(run_dir, _classes(server.url, "n00000002"), "first")
    first = _download(run_dir)
    assert first["images"] == 5 and first["carried_over"] == 0
    before = server.hits
    _sample(run_dir, _classes(server.url, "n00000003"), "second")  # b's class vetoed, c's promoted
    second = _download(run_dir)
    assert _requested(server, before) == ["c0", "c1"]  # a0-a3 were fetched (a1 failed) and are carried over
    assert (second["carried_over"], second["fetched_by_this_run"], second["images"]) == (4, 2, 5)
    assert second["failures"] == {"http_404": 1}
    assert not (run_dir / CARRY_DIR).exists()

    fresh = tmp_path / "fresh"
    _sample(fresh, _classes(server.url, "n00000003"), "second")
    assert _download(fresh)["carried_over"] == 0
    assert _dataset_files(run_dir) == _dataset_files(fresh)


def test_a_changed_image_setting_fetches_everything_again(server, tmp_path):
    run_dir = tmp_path / "run"
    before = _downloaded_then_resampled(run_dir, server)
    figures = _download(run_dir, SETTINGS.model_copy(update={"image_size": 48}))
    assert _requested(server, before) == ["a0", "a1", "a2", "a3", "c0", "c1"]
    assert figures["carried_over"] == 0


def test_a_dropped_row_stays_dropped(server, tmp_path):
    run_dir = tmp_path / "run"
    _sample(run_dir, _classes(server.url, "n00000002"), "first")
    _download(run_dir)
    a0 = "part-00000:0"  # write_sample_stage numbers the rows in order
    rejected = pa.table({"row_id": [a0], "reason": [drops.REVIEW_REJECTED], "duplicate_of": pa.nulls(1, pa.string())})
    drops.add_drops(str(run_dir / "download"), rejected)
    before = server.hits
    _sample(run_dir, _classes(server.url, "n00000003"), "second")
    figures = _download(run_dir)
    assert drops.reasons(drops.read_drops(str(run_dir / "download"))) == {a0: drops.REVIEW_REJECTED}
    assert figures["dropped_by_review"] == 1 and figures["images_per_class"]["n00000001"] == 2  # a2, a3; reserve spent
    assert _requested(server, before) == ["c0", "c1"]


def test_a_download_killed_after_the_carry_resumes_without_requesting_more(server, tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    before = _downloaded_then_resampled(run_dir, server)
    real = fetch.fetch_round

    def killed_in_round_1(round_dir, *args):
        if round_dir.endswith("/1"):
            raise KeyboardInterrupt
        return real(round_dir, *args)

    monkeypatch.setattr(fetch, "fetch_round", killed_in_round_1)
    with pytest.raises(KeyboardInterrupt):
        _download(run_dir)
    assert (run_dir / CARRY_DIR).exists()
    monkeypatch.setattr(fetch, "fetch_round", real)
    figures = _download(run_dir)
    assert _requested(server, before) == ["c0", "c1"]
    assert figures["carried_over"] == 1  # a3, in round 1; round 0 was done before the kill

    fresh = tmp_path / "fresh"
    _sample(fresh, _classes(server.url, "n00000003"), "second")
    _download(fresh)
    assert _dataset_files(run_dir) == _dataset_files(fresh)


def test_a_carry_made_under_other_settings_is_not_used(server, tmp_path, monkeypatch):
    """Killed right after the carry, the download is run again with another image size: the
    carried outcomes were fetched for the old size, so every row is requested again."""
    run_dir = tmp_path / "run"
    before = _downloaded_then_resampled(run_dir, server)
    real = fetch.fetch_round

    def killed(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(fetch, "fetch_round", killed)
    with pytest.raises(KeyboardInterrupt):
        _download(run_dir)
    monkeypatch.setattr(fetch, "fetch_round", real)
    figures = _download(run_dir, SETTINGS.model_copy(update={"image_size": 48}))
    assert _requested(server, before) == ["a0", "a1", "a2", "a3", "c0", "c1"]
    assert figures["carried_over"] == 0

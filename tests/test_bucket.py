"""A run in a bucket: the small build, its corpus, config and embedding cache in gs:// (a real GCS
API, `gcs_bucket`), gives the same dataset bytes as a local build of the same config, resumes
there after a SIGKILL, and every command works on it: a stage, why, report, stats, the audits.

One bucket build per session: the build is killed once it reaches the score stage and resumed,
so the one run checks both the resume and the local/bucket identity.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from cli_runner import cli_command, invoke
from ports import free_loopback_port
from small_build import SMALL_BUILD
from test_image_embeddings import TINY_VIT

from imagenot.pipeline.audit.agreement import agreement_command
from imagenot.pipeline.audit.duplicates import duplicates_command
from imagenot.pipeline.audit.embeddings import embed_command
from imagenot.pipeline.commands.stats import stats
from imagenot.pipeline.commands.why import why
from imagenot.pipeline.config.schema import Config, load_config
from imagenot.pipeline.corpus.synth_command import synth_command
from imagenot.pipeline.frame.build import build
from imagenot.pipeline.frame.registry import declared, run_in_folder
from imagenot.pipeline.run.files import read_bytes, read_json, read_tsv, write_bytes, write_text
from imagenot.pipeline.run.paths import folder_exists
from imagenot.pipeline.score.cache import EmbeddingCache, text_keys

report_command = cli_command("report")
select_command = cli_command("select")

# What a dataset is: compared byte for byte between the local and the bucket run (the tars by
# their members: img2dataset stamps each member with the time it was written).
DATASET_FILES = (
    "sample/dataset/*.parquet",
    "sample/reserve/*.parquet",
    "sample/manifest.json",
    "rank/class_list.tsv",
    "download/dataset/*.parquet",
    "download/class_downloads.tsv",
    "download/rounds/*/*.tar",
    "dataset/*.tar",
    "dataset/*.parquet",
    "dataset/classes.txt",
    "dataset/README.md",
)


def _members(tar: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers()}


def _files(run_dir: str) -> dict[str, object]:
    """Relative name -> bytes (a tar: its members) of the dataset files of a run, local or in a bucket."""
    prefix = run_dir.rstrip("/") + "/"
    found = {}
    for pattern in DATASET_FILES:
        for meta in FileSystems.match([FileSystems.join(run_dir, pattern)])[0].metadata_list:
            data = read_bytes(meta.path)
            found[meta.path.removeprefix(prefix)] = _members(data) if meta.path.endswith(".tar") else data
    return found


def _ok(command, *args: str) -> str:
    result = invoke(command, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def config_path(gcs_bucket, small_run, tmp_path_factory):
    """The small build's config, in the bucket: its corpus (written there by `imagenot synth`),
    its embedding cache (a copy of the session's small run's: the same captions, embedded once
    per session) and its CLIP model config live there too; images from a loopback server."""
    for chunk in Path(yaml.safe_load(small_run.config.read_text())["scoring"]["cache_dir"]).rglob("*"):
        if chunk.is_file():
            write_bytes(f"{gcs_bucket}/small/embeddings/{chunk.parent.name}/{chunk.name}", chunk.read_bytes())
    local = tmp_path_factory.mktemp("bucket-config")
    (local / "tiny-vit.json").write_text(json.dumps(TINY_VIT))  # open_clip reads model files locally
    root, port = f"{gcs_bucket}/small", free_loopback_port()
    synth = SMALL_BUILD["corpus"]["synth"]
    _ok(
        synth_command,
        "--out",
        f"{root}/corpus",
        "--rows",
        str(synth["rows"]),
        "--seed",
        str(synth["seed"]),
        "--shard-rows",
        str(synth["shard_rows"]),
        "--url-base",
        f"http://127.0.0.1:{port}/img",
        "--captions",
        synth["captions"],
    )
    config = {
        **SMALL_BUILD,
        "corpus": {"paths": [f"{root}/corpus/part-*.parquet"]},
        "scoring": {**SMALL_BUILD["scoring"], "cache_dir": f"{root}/embeddings"},
        "download": {
            "enabled": True,
            "demo_server_port": port,
            "image_size": 64,
            "shard_rows": 20,
            "timeout_s": 5,
            "allowed_networks": ["127.0.0.1/32"],
        },
        "image_audit": {
            "clip_model": "tiny-vit",
            "clip_model_config": str(local / "tiny-vit.json"),
            "batch_size": 16,
            "near_duplicate_threshold": 0.9999,
        },
    }
    path = f"{root}/small.yaml"
    write_text(path, yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def local_run(config_path, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("local") / "run"
    build(load_config(config_path), str(run_dir))
    return str(run_dir)


@pytest.fixture(scope="module")
def bucket_run(gcs_bucket, config_path, local_run):
    """The same config built into the bucket by `imagenot build`, killed (SIGKILL) once it started
    the score stage, then run again by the same command (which finishes the run's journal entry);
    returns the run and the stages the second build ran."""
    run_dir = f"{gcs_bucket}/small/run"
    command = [sys.executable, "-m", "imagenot.pipeline.cli", "build", "--config", config_path, "--out", run_dir]
    process = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    try:
        while not FileSystems.exists(f"{run_dir}/score/fingerprint.json"):
            assert process.poll() is None, "the bucket build ended before the score stage"
            assert time.monotonic() < deadline, "the bucket build never reached the score stage"
            time.sleep(0.2)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not folder_exists(f"{run_dir}/rank")
    resumed = invoke(cli_command("build"), ["--config", config_path, "--out", run_dir])  # as a user finishes it
    assert resumed.exit_code == 0, resumed.output
    ran = next(line for line in resumed.output.splitlines() if line.strip().startswith("ran:"))
    return run_dir, ran.split(":", 1)[1].strip().split(", ")


def test_a_bucket_build_resumes_after_a_kill_to_the_bytes_of_a_local_build(local_run, bucket_run):
    run_dir, ran = bucket_run
    assert ran == ["score", "rank", "sample", "download", "report", "export"]
    local, remote = _files(local_run), _files(run_dir)
    assert {name.split("/")[0] for name in local} == {"sample", "rank", "download", "dataset"}  # the export too
    assert any(name.endswith(".tar") for name in local)
    assert sorted(remote) == sorted(local)
    assert [name for name in local if remote[name] != local[name]] == []
    summary = read_json(FileSystems.join(run_dir, "summary.json"))
    assert summary["download"]["images"] > 0 and summary["score"]["captions_embedded"] == 0  # the shared cache


def test_stage_why_report_and_stats_on_the_bucket_run(gcs_bucket, bucket_run):
    run_dir, _ = bucket_run
    funnel = read_bytes(f"{run_dir}/select/funnel.tsv")
    _ok(select_command, "--run", run_dir)
    assert read_bytes(f"{run_dir}/select/funnel.tsv") == funnel
    classes = read_tsv(f"{run_dir}/rank/class_list.tsv")
    assert "a class" in _ok(why, classes[0]["wnid"], "--run", run_dir)
    assert f"{run_dir}/report/report.html" in _ok(report_command, "--run", run_dir)
    assert "## How to rebuild" in read_bytes(f"{run_dir}/report/card.md").decode()
    class_list, out = f"{gcs_bucket}/stats/classes.txt", f"{gcs_bucket}/stats/out"
    write_text(class_list, "".join(f"{c['wnid']}\n" for c in classes))
    _ok(stats, "--classes", class_list, "--out", out)
    assert read_json(f"{out}/stats.json")["classes"]["count"] == len(classes)


def test_the_image_audits_and_a_drop_on_the_bucket_run(bucket_run):
    run_dir, _ = bucket_run
    _ok(embed_command, "--run", run_dir)
    _ok(duplicates_command, "--run", run_dir, "--drop")
    _ok(agreement_command, "--run", run_dir)
    duplicates = read_json(f"{run_dir}/audit/duplicates/figures.json")
    dropped = read_json(f"{run_dir}/download/figures.json")["dropped_by_audits"]
    assert sum(dropped.values()) == sum(duplicates["drop"]["dropped"].values()) > 0  # the stock photos
    assert FileSystems.exists(f"{run_dir}/audit/agreement/rows.parquet")


def test_the_corpus_stage_writes_a_synthetic_corpus_into_a_bucket(gcs_bucket, tmp_path, index):
    config = Config.model_validate({"corpus": {"synth": {"rows": 400, "seed": 3, "shard_rows": 150}}})
    local, remote = str(tmp_path / "run"), f"{gcs_bucket}/corpus-stage/run"
    for run_dir in (local, remote):
        run_in_folder(declared("corpus"), config, run_dir)
    pattern = "corpus/*.parquet"
    names = sorted(Path(m.path).name for m in FileSystems.match([FileSystems.join(local, pattern)])[0].metadata_list)
    assert names == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]  # the ground truth is beside
    for name in [*(f"corpus/{name}" for name in names), "corpus_ground_truth.parquet"]:
        assert read_bytes(f"{remote}/{name}") == read_bytes(f"{local}/{name}")
    assert read_json(f"{remote}/corpus/figures.json") == {"rows": 400, "shards": 3}


def _copy_run(source: str, dest: str) -> None:
    """Every file of a run (local or in a bucket) copied as it is to `dest` (local or in a bucket)."""
    prefix = source.rstrip("/") + "/"
    for meta in FileSystems.match([f"{prefix}**"])[0].metadata_list:
        target = f"{dest}/{meta.path.removeprefix(prefix)}"
        with FileSystems.create(target, compression_type=CompressionTypes.UNCOMPRESSED) as out:  # nothing reads it yet
            out.write(read_bytes(meta.path))


def test_a_local_run_copied_into_the_bucket_and_back_is_the_same_run_in_each(
    gcs_bucket, local_run, tmp_path, monkeypatch
):
    """The local build copied into the bucket, and the bucket's copy back to another local folder
    (named from a third): in each a build finds every stage done, and the sample stage run again
    checksums the corpus where it lies and writes the same manifest and dataset."""
    remote, back = f"{gcs_bucket}/copied/run", tmp_path / "back" / "run"
    _copy_run(local_run, remote)
    _copy_run(remote, str(back))
    (tmp_path / "third").mkdir()
    monkeypatch.chdir(tmp_path / "third")
    for run_dir in (remote, "../back/run"):
        said = _ok(cli_command("build"), "--config", f"{run_dir}/config.yaml", "--out", run_dir)
        assert "ran:     nothing (all stages up to date)" in said
        _ok(cli_command("sample"), "--run", run_dir)
    manifest = read_bytes(f"{local_run}/sample/manifest.json")
    assert read_bytes(f"{remote}/sample/manifest.json") == manifest == (back / "sample/manifest.json").read_bytes()
    assert _files(remote) == _files(local_run) == _files(str(back))


@pytest.mark.parametrize("where", ["local", "bucket"])
def test_concurrent_writers_of_one_cache_entry_leave_one_whole_chunk(where, gcs_bucket, tmp_path):
    root = str(tmp_path / "cache") if where == "local" else f"{gcs_bucket}/cache-race"
    keys = text_keys([f"caption {i}" for i in range(50)])
    vectors = np.random.default_rng(0).random((50, 4), dtype=np.float32)
    start = threading.Barrier(4)

    def store() -> None:
        cache = EmbeddingCache(root, "model-x", 4)
        start.wait()
        cache.add(keys, vectors)

    writers = [threading.Thread(target=store) for _ in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    names = sorted(Path(m.path).name for m in FileSystems.match([FileSystems.join(root, "*", "*")])[0].metadata_list)
    assert len(names) == 2 and names[0] == "MODEL" and names[1].startswith("chunk-")  # no partial left
    found, stored = EmbeddingCache(root, "model-x", 4).lookup(keys[::-1])
    assert found.all()
    np.testing.assert_array_equal(stored, vectors[::-1])


def test_against_an_emulator_no_process_looks_for_google_credentials(gcs_bucket):
    # A fresh process, as a Beam or img2dataset worker is: it inherits STORAGE_EMULATOR_HOST and
    # must reach the bucket without asking google-auth (whose failed lookup Beam retries ~25 s).
    probe = (
        "import sys, google.auth\n"
        "def refuse(*args, **kwargs):\n"
        "    print('LOOKED UP CREDENTIALS', file=sys.stderr); raise google.auth.exceptions.DefaultCredentialsError()\n"
        "google.auth.default = refuse\n"
        "import imagenot.pipeline, fsspec\n"
        "from apache_beam.io.filesystems import FileSystems\n"
        f"print(FileSystems.exists('{gcs_bucket}/nothing'), fsspec.filesystem('gs').exists('{gcs_bucket}/nothing'))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False"] and "LOOKED UP CREDENTIALS" not in result.stderr


def _serving(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, f"{process.args} exited with {process.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing answered on 127.0.0.1:{port} within {seconds} s")


# Beam's external worker pool with its workers as threads of the pool's process, as Beam's own
# portable tests run it: `worker_pool_main` starts a process per job, which imports Beam, imagenot
# and WordNet anew for each of the build's jobs (the build took twice as long).
THREADED_WORKER_POOL = (
    "import time\n"
    "from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer\n"
    "server = BeamFnExternalWorkerPoolServicer.start(use_process=False, port={port})\n"
    "time.sleep(24 * 3600)\n"
)


@pytest.fixture(scope="module")
def portable_runner(gcs_bucket, tmp_path_factory):
    """Beam's Python job service and an external worker pool, each its own process in its own
    working directory; they reach the bucket like the driver."""
    job_port, pool_port = free_loopback_port(), free_loopback_port()
    commands = {
        "job-service": ["-m", "apache_beam.runners.portability.local_job_service_main", "--port", str(job_port)],
        "worker-pool": ["-c", THREADED_WORKER_POOL.format(port=pool_port)],
    }
    processes = []
    try:
        for name, args in commands.items():
            folder = tmp_path_factory.mktemp(name)
            with (folder / "log").open("wb") as log:
                processes.append(subprocess.Popen([sys.executable, *args], cwd=folder, stdout=log, stderr=log))
        for port, process in zip((job_port, pool_port), processes):
            _serving(port, process)
        yield {
            "job_endpoint": f"127.0.0.1:{job_port}",
            "environment_type": "EXTERNAL",
            "environment_config": f"127.0.0.1:{pool_port}",
        }
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)


def test_a_build_on_the_portable_runner_gives_the_local_builds_dataset(
    gcs_bucket, config_path, local_run, portable_runner
):
    """Every stage up to sample (download is the bucket run's: img2dataset runs inside one
    worker's DoFn, as on any runner) on the portable runner, run and corpus in the bucket."""
    config = load_config(config_path)
    runner = config.runner.model_validate({"kind": "portable", "portable": portable_runner})
    config = config.model_copy(
        update={"runner": runner, "download": config.download.model_copy(update={"enabled": False})}
    )
    run_dir = f"{gcs_bucket}/portable/run"
    assert build(config, run_dir) == ["tag", "select", "score", "rank", "sample", "report"]
    local, remote = (
        {k: v for k, v in _files(run).items() if not k.startswith(("download/", "dataset/"))}
        for run in (local_run, run_dir)
    )
    manifests = [json.loads(files.pop("sample/manifest.json")) for files in (local, remote)]
    assert [name for name in local if remote.get(name) != local[name]] == [] and sorted(remote) == sorted(local)
    for manifest in manifests:  # the manifest holds the config, whose runner and download differ
        manifest["config"] = {k: v for k, v in manifest["config"].items() if k not in ("runner", "download")}
    assert manifests[1] == manifests[0]

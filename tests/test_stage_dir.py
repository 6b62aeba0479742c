"""Stage folders and fingerprints: what keeps a stage's work and what makes downstream stages rerun."""

from imagenot.pipeline.run.stage_dir import finish_stage, is_current, made_from, open_stage, stage_fingerprint


def _revision_file(stage_dir: str) -> str | None:
    """A revision read from the folder, as the download stage reads its dropped list."""
    try:
        with open(f"{stage_dir}/revision.txt") as f:
            return f.read()
    except FileNotFoundError:
        return None


def test_a_new_revision_keeps_the_folder_and_changes_what_downstream_sees(tmp_path):
    run = str(tmp_path)
    stage_dir = open_stage(run, "a", {"x": 1}, None, _revision_file)
    (tmp_path / "a" / "work.bin").write_bytes(b"reusable")
    finish_stage(stage_dir, {})
    finish_stage(open_stage(run, "b", {}, stage_fingerprint(run, "a")), {})
    before = stage_fingerprint(run, "a")

    (tmp_path / "a" / "revision.txt").write_text("dropped: r1")
    assert not is_current(run, "a", {"x": 1}, None, _revision_file)
    finish_stage(open_stage(run, "a", {"x": 1}, None, _revision_file), {})
    after = stage_fingerprint(run, "a")
    assert (tmp_path / "a" / "work.bin").read_bytes() == b"reusable"
    assert after.base == before.base and after.digest != before.digest
    assert is_current(run, "a", {"x": 1}, None, _revision_file)
    assert not made_from(run, "b", "a")  # b describes a as it was

    (tmp_path / "b" / "kept.bin").write_bytes(b"b's work")
    open_stage(run, "b", {}, after)  # same base upstream: b keeps its folder, records the new digest
    assert (tmp_path / "b" / "kept.bin").exists() and not is_current(run, "b", {}, after)


def test_a_changed_setting_clears_the_folder(tmp_path):
    run = str(tmp_path)
    finish_stage(open_stage(run, "a", {"x": 1}), {})
    (tmp_path / "a" / "work.bin").write_bytes(b"old")
    open_stage(run, "a", {"x": 2})
    assert not (tmp_path / "a" / "work.bin").exists()
    assert not is_current(run, "a", {"x": 1}, None)


KILLED_MID_WRITE = """
import sys, time
from imagenot.pipeline.run.files import atomic_output
from imagenot.pipeline.run.stage_dir import open_stage
stage_dir = open_stage(sys.argv[1], "a", {"x": 1})
with atomic_output(stage_dir + "/tagged/part-0.parquet") as stream:
    stream.write(b"half")
    stream.flush()
    print("writing", flush=True)
    time.sleep(120)
"""


def test_files_half_written_by_a_killed_run_are_removed_when_the_stage_resumes(tmp_path):
    import signal
    import subprocess
    import sys

    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_WRITE, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout.readline().strip() == "writing"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    (tmp_path / "a" / "tagged" / "part-1.parquet").write_bytes(b"finished work")
    assert len(list((tmp_path / "a" / "tagged").glob(".part-0.parquet.*.partial"))) == 1
    open_stage(str(tmp_path), "a", {"x": 1})
    assert sorted(p.name for p in (tmp_path / "a" / "tagged").iterdir()) == ["part-1.parquet"]

"""The command line: an imagenot error is one line and exit status 1 (-v adds its traceback);
`--help` and `--version` answer without loading Beam, torch or open_clip."""

import importlib.metadata
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from imagenot.pipeline.cli import QUIET_MODEL_LOADING, main


def _config_with_no_corpus(tmp_path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"corpus": {"paths": [str(tmp_path / "none-*.parquet")]}}))
    return str(path)


def test_a_corpus_glob_that_matches_nothing_is_one_line(tmp_path):
    result = CliRunner().invoke(
        main, ["build", "--config", _config_with_no_corpus(tmp_path), "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "none-*.parquet" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_verbose_adds_the_traceback(tmp_path):
    args = ["-v", "build", "--config", _config_with_no_corpus(tmp_path), "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "Traceback" in result.output and "none-*.parquet" in result.output


def _seconds(code: str) -> float:
    """The best of three wall times of `python -c code` (the best is the least disturbed by other load)."""
    times = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times)


HELP = (
    "import sys; from imagenot.pipeline.cli import main; main({args!r}, standalone_mode=False); "
    "print(*sorted(sys.modules))"
)


# Answers each of ARGS in one process and prints, after each, the heavy libraries loaded so far.
HELPS = """
import json, sys
from imagenot.pipeline.cli import main

loaded = {{}}
for args in {every!r}:
    main(args, standalone_mode=False)
    loaded[" ".join(args)] = sorted(m for m in {heavy!r} if m in sys.modules)
print(json.dumps(loaded))
"""


@pytest.mark.parametrize("anonymous", ["", "1"])
def test_help_and_version_load_no_heavy_library(anonymous):
    # Anonymous GCS access (as with the test bucket's emulator) once imported Beam to skip its credential lookup.
    every = [
        ["--help"],
        ["build", "--help"],
        ["audit", "--help"],
        ["--version"],
        ["review", "--help"],  # 4 s before issue 43: it imported scipy and Beam
        ["review", "apply", "--help"],
        ["review", "classes", "apply", "--help"],
    ]
    heavy = {"torch", "apache_beam", "open_clip", "transformers", "pyarrow", "matplotlib", "scipy", "flask"}
    env = {**os.environ, "IMAGENOT_GCS_ANONYMOUS": anonymous}
    code = HELPS.format(every=every, heavy=sorted(heavy))
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert list(loaded) == [" ".join(args) for args in every]  # each answered, in one process: what one loads stays
    assert {args: found for args, found in loaded.items() if found} == {}


# Renders every command's and sub-command's --help (the click tree walked) in one process, and
# prints each command with the heavy libraries its help loaded first.
EVERY_HELP = """
import json, sys
import click
from imagenot.pipeline.cli import main

HEAVY = {heavy!r}
loaded = {{}}

def walk(group, path, ctx):
    for name in group.list_commands(ctx):
        try:
            main([*path, name, "--help"], standalone_mode=False)
        except SystemExit:
            pass
        loaded[" ".join([*path, name])] = sorted(m for m in HEAVY if m in sys.modules)
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            walk(command, [*path, name], click.Context(command, parent=ctx, info_name=name))

walk(main, [], click.Context(main, info_name="imagenot"))
print(json.dumps(loaded))
"""
HEAVY = (
    "numpy",  # issue 50: synth and audit label-noise loaded it (0.4 s of CPU)
    "torch",
    "apache_beam",
    "open_clip",
    "transformers",
    "sentence_transformers",
    "pyarrow",
    "pandas",
    "matplotlib",
    "scipy",
    "sklearn",
    "faiss",
    "cleanlab",
    "img2dataset",
    "flask",
)


def test_every_commands_help_loads_no_heavy_library():
    # issue 43: stage commands took 2-3 s, blocklist 9 s, audit embed|classes 5 s (Beam, torch, scipy)
    result = subprocess.run(
        [sys.executable, "-c", EVERY_HELP.format(heavy=HEAVY)], check=True, capture_output=True, text=True
    )
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert {"tag", "export", "blocklist apply", "audit embed", "review classes serve"} <= loaded.keys()
    assert {command: heavy for command, heavy in loaded.items() if heavy} == {}


def test_help_starts_about_as_fast_as_python_itself():
    bare = _seconds("pass")
    ratio = max(_seconds(HELP.format(args=args)) for args in (["--help"], ["build", "--help"])) / bare
    assert ratio < 15, f"imagenot --help takes {ratio:.1f}x as long as python -c pass"  # torch alone makes it >100x


@pytest.mark.parametrize("beam_first", [False, True])
def test_anonymous_access_skips_beams_credential_lookup_whenever_beam_loads(beam_first):
    imports = ["import imagenot.pipeline", "from apache_beam.internal.gcp import auth"]
    code = "; ".join([*(reversed(imports) if beam_first else imports), "print(auth._Credentials._credentials_init)"])
    env = {**os.environ, "IMAGENOT_GCS_ANONYMOUS": "1"}
    looked_up = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env)
    assert looked_up.stdout.strip() == "True"  # the lookup's answer is cached: it never waits for the metadata server


def test_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"imagenot {importlib.metadata.version('imagenot')}"


def test_every_command_in_the_table_loads_and_has_its_name():
    from imagenot.pipeline.cli import AUDITS, COMMANDS

    for table, prefix in ((COMMANDS, []), (AUDITS, ["audit"])):
        for name in table:
            result = CliRunner().invoke(main, [*prefix, name, "--help"])
            assert result.exit_code == 0 and f"Usage: main {' '.join([*prefix, name])}" in result.output, result.output


def test_a_missing_caption_column_is_one_line_naming_the_setting_that_fixes_it(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"URL": ["http://127.0.0.1/x.jpg"], "caption_text": ["a dog"]}), tmp_path / "part-0.parquet"
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"corpus": {"paths": [str(tmp_path / "*.parquet")]}}))
    result = CliRunner().invoke(main, ["build", "--config", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "part-0.parquet" in result.output and "set `corpus.columns.caption`" in result.output


@pytest.mark.parametrize(
    ("args", "hidden"),
    [(["audit", "--help"], True), (["-v", "audit", "--help"], True), (["-vv", "audit", "--help"], False)],
)
def test_model_loading_bars_show_only_with_twice_verbose(args, hidden):
    # The group's -v settles the variables before any sub-command runs, its --help too (which loads no WordNet).
    code = (
        f"import os; from imagenot.pipeline.cli import main; main({args!r}, standalone_mode=False); "
        "print(os.environ.get('TQDM_DISABLE'), os.environ.get('HF_HUB_DISABLE_PROGRESS_BARS'))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert result.stdout.splitlines()[-1] == ("1 1" if hidden else "None None")


def test_model_loading_says_nothing_but_progress_unless_twice_verbose():
    """`make demo` runs `imagenot -v build`: -v shows progress, not transformers' LOAD REPORT
    (the packaged MiniLM has an unused position_ids key); -vv shows it. `prepare-models`, whose
    artifacts set-up made, loads the text model as the score stage and `imagenot senses` do; the
    two commands run at once."""
    imagenot = Path(sys.executable).with_name("imagenot")
    env = {k: v for k, v in os.environ.items() if k not in QUIET_MODEL_LOADING}
    processes = {
        flag: subprocess.Popen(
            [str(imagenot), flag, "prepare-models"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for flag in ("-v", "-vv")
    }
    outputs = {}
    try:
        for flag, process in processes.items():
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, stderr
            assert "Loading SentenceTransformer model" in stderr  # -v's progress
            outputs[flag] = stdout + stderr
    finally:
        for process in processes.values():
            process.kill()  # nothing left running after a failure
            process.wait()
    assert "LOAD REPORT" not in outputs["-v"]
    assert "LOAD REPORT" in outputs["-vv"]  # so the first assertion can fail

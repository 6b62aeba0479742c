"""A config that cannot finish is refused before the first stage, in one line naming the key, and
the refused command leaves nothing behind in the run folder (no config.yaml, no lock)."""

import shutil

import pytest
import yaml
from cli_runner import cli_command

from imagenot.pipeline.audit.embeddings import embed_command
from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.plan.command import plan_command
from tests.cli_runner import invoke

score_command = cli_command("score")
tag_command = cli_command("tag")

MISSING_MODEL = "/nonexistent/roberta-large"


@pytest.fixture
def corpus(tmp_path):
    """A one-row corpus: preflight must refuse before anything reads it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"URL": ["http://127.0.0.1:9/a.jpg"], "TEXT": ["a crane at the port"]}), path)
    return path


def _config(tmp_path, corpus, **sections) -> str:
    document = {"corpus": {"paths": [str(corpus)]}, "selection": {"allowed_nsfw_tags": None}, **sections}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def _refused(command, args: list[str]) -> str:
    result = invoke(command, args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    return result.output


def _missing_model_config(tmp_path, corpus) -> str:
    return _config(tmp_path, corpus, scoring={"model": MISSING_MODEL}, ranking={"thresholds": {MISSING_MODEL: 0.8}})


def test_build_refuses_a_model_that_is_not_there_before_any_stage(tmp_path, corpus):
    run_dir = tmp_path / "run"
    output = _refused(build_command, ["--config", _missing_model_config(tmp_path, corpus), "--out", str(run_dir)])
    assert f"scoring.model '{MISSING_MODEL}': no model folder" in output
    assert not run_dir.exists()


# What a config check must not load (seconds each; the stages load them when they run).
HEAVY = {"torch", "transformers", "sentence_transformers", "img2dataset", "webdataset", "matplotlib", "sklearn"}
# Runs each refused command of EVERY in one process; prints, after each, its exit status, what it
# wrote to stderr and the heavy libraries loaded so far.
REFUSED = """
import contextlib, io, json, sys
from imagenot.pipeline.cli import main

seen = {{}}
for name, args in {every!r}.items():
    code, stderr = None, io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            main(args)
        except SystemExit as exit:
            code = exit.code
    seen[name] = [code, stderr.getvalue(), sorted(m for m in {heavy!r} if m in sys.modules)]
print(json.dumps(seen))
"""


def test_a_refused_command_loads_no_model_image_or_plotting_library(tmp_path, corpus):
    import json
    import subprocess
    import sys

    (tmp_path / "model").mkdir()
    (tmp_path / "blocklist").mkdir()
    (tmp_path / "run").mkdir()  # the download command's: a stage command over a run folder
    config, out = _missing_model_config(tmp_path / "model", corpus), str(tmp_path / "out")
    blocked = _config(tmp_path / "blocklist", corpus, download={"enabled": True, "blocklists": [str(tmp_path / "g")]})
    every = {
        "build": ["build", "--config", config, "--out", out],
        "plan": ["plan", "--config", config, "--out", out],
        "download": ["download", "--run", str(tmp_path / "run"), "--config", blocked],  # refused for its blocklist
    }
    script = REFUSED.format(every=every, heavy=sorted(HEAVY))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    refusals = {"build": "scoring.model", "plan": "scoring.model", "download": "download.blocklists[0]"}
    for name, refusal in refusals.items():
        code, stderr, heavy = seen[name]
        assert code == 1 and refusal in stderr, (name, stderr)
        assert heavy == [], (name, heavy)  # loaded by this command or one before it in the same process


def test_plan_and_tag_refuse_it_too(tmp_path, corpus):
    config = _missing_model_config(tmp_path, corpus)
    assert "scoring.model" in _refused(plan_command, ["--config", config, "--out", str(tmp_path / "run")])
    assert "scoring.model" in _refused(tag_command, ["--config", config, "--out", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()


def test_a_stage_command_refuses_it_without_taking_the_lock(tmp_path, corpus):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    output = _refused(score_command, ["--run", str(run_dir), "--config", _missing_model_config(tmp_path, corpus)])
    assert "scoring.model" in output and list(run_dir.iterdir()) == []


def test_a_hub_id_not_in_the_local_cache_is_refused(tmp_path, corpus):
    config = _config(
        tmp_path,
        corpus,
        scoring={"model": "no-such-org/no-such-model"},
        ranking={"thresholds": {"no-such-org/no-such-model": 0.8}},
    )
    output = _refused(build_command, ["--config", config, "--out", str(tmp_path / "run")])
    assert "not a model in the local Hugging Face cache" in output.replace("nor a model", "not a model")


@pytest.mark.parametrize("value", [2.0, -3.0])
def test_a_threshold_out_of_range_names_the_key_the_value_and_the_range(tmp_path, corpus, value):
    config = _config(tmp_path, corpus, ranking={"thresholds": {"packaged:all-MiniLM-L6-v2": value}})
    result = invoke(build_command, ["--config", config, "--out", str(tmp_path / "run")])
    assert result.exit_code == 1 and not (tmp_path / "run").exists()
    assert (
        f"ranking.thresholds['packaged:all-MiniLM-L6-v2'] is {value}: a cosine similarity lies in [-1, 1]"
        in result.output
    )


def test_a_missing_blocklist_is_refused(tmp_path, corpus):
    config = _config(tmp_path, corpus, download={"enabled": True, "blocklists": [str(tmp_path / "gone.txt")]})
    output = _refused(build_command, ["--config", config, "--out", str(tmp_path / "run")])
    assert f"download.blocklists[0]: {tmp_path / 'gone.txt'} does not exist" in output
    assert not (tmp_path / "run").exists()


def test_a_run_folder_that_cannot_be_written_is_refused(tmp_path, corpus):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    output = _refused(build_command, ["--config", _config(tmp_path, corpus), "--out", str(blocker / "run")])
    assert f"{blocker / 'run'}: a file is in the way; it cannot be a run directory" in output


def test_the_audit_refuses_clip_weights_that_are_not_there(tmp_path, corpus):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = _config(tmp_path, corpus, image_audit={"clip_weights": str(tmp_path / "gone.pt")})
    output = _refused(embed_command, ["--run", str(run_dir), "--config", config])
    assert f"image_audit.clip_weights: no file {tmp_path / 'gone.pt'}" in output and list(run_dir.iterdir()) == []


def test_an_unknown_open_clip_model_is_refused(tmp_path, corpus):
    import importlib.util

    assert importlib.util.find_spec("open_clip"), "set-up installs open_clip (without torchvision)"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    config = _config(tmp_path, corpus, image_audit={"clip_model": "ViT-B-99"})
    assert "'ViT-B-99' is not an open_clip model" in _refused(
        embed_command, ["--run", str(run_dir), "--config", config]
    )


def test_a_model_folder_copied_in_passes(tmp_path, corpus):
    """A local folder holding a real model (the packaged MiniLM, copied) is accepted as it is."""
    from imagenot.labels.encoders.models import DEFAULT_MODEL, resolve_model, text_model_problem

    folder = tmp_path / "minilm"
    shutil.copytree(resolve_model(DEFAULT_MODEL)[0], folder)
    assert text_model_problem(str(folder)) is None
    (folder / "config.json").unlink()
    (folder / "modules.json").unlink()
    assert "holds no config.json" in text_model_problem(str(folder))

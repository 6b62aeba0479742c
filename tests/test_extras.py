"""A command that needs a missing extra says which in one line, before it writes anything. The
tests' .venv has every extra, so the gcp extra's modules are hidden from the check."""

import click
import pytest
import yaml
from click.testing import CliRunner

from imagenot.pipeline.cli import main
from imagenot.pipeline.run import extras

GCP_LINE = "needs imagenot[gcp], which is not installed: pip install 'imagenot[gcp]'"


@pytest.fixture
def without_gcp(monkeypatch):
    installed = extras._installed
    monkeypatch.setattr(extras, "_installed", lambda module: module != "gcsfs" and installed(module))


def test_a_bucket_argument_is_refused_in_one_line_before_any_command_starts(without_gcp, tmp_path):
    result = CliRunner().invoke(main, ["why", "gavel.n.01", "--run", "gs://bucket/run"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [f"Error: gs://bucket/run {GCP_LINE}"]
    joined = CliRunner().invoke(main, ["report", "--run=gs://bucket/run"])
    assert joined.exit_code == 1 and f"gs://bucket/run {GCP_LINE}" in joined.output


def test_a_config_in_a_bucket_or_on_dataflow_is_refused_before_the_run_folder_is_made(without_gcp, tmp_path):
    config = tmp_path / "bucket.yaml"
    config.write_text(yaml.safe_dump({"corpus": {"paths": ["gs://bucket/corpus/*.parquet"]}}))
    run = tmp_path / "run"
    result = CliRunner().invoke(main, ["build", "--config", str(config), "--out", str(run)])
    assert result.exit_code == 1 and f"gs://bucket/corpus/*.parquet {GCP_LINE}" in result.output
    assert not run.exists()
    dataflow = {"project": "p", "region": "r", "temp_location": "gs://b/tmp", "worker_image": "i"}
    config.write_text(
        yaml.safe_dump({"corpus": {"synth": {"rows": 100}}, "runner": {"kind": "dataflow", "dataflow": dataflow}})
    )
    result = CliRunner().invoke(main, ["build", "--config", str(config), "--out", str(run)])
    assert result.exit_code == 1 and f"runner.kind 'dataflow' {GCP_LINE}" in result.output
    assert not run.exists()


def test_a_missing_module_names_the_extra_that_brings_it(monkeypatch):
    def needs_flask():
        raise ModuleNotFoundError("No module named 'flask'", name="flask")

    monkeypatch.setitem(main.commands, "needs-flask", click.Command("needs-flask", callback=needs_flask))
    result = CliRunner().invoke(main, ["needs-flask"])
    assert result.exit_code == 1
    assert (
        result.output == "Error: flask needs imagenot[review], which is not installed: pip install 'imagenot[review]'\n"
    )


def test_every_module_of_an_extra_is_one_its_extra_installs():
    import tomllib
    from pathlib import Path

    declared = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    optional = declared["project"]["optional-dependencies"]
    distribution_of = {
        "skimage": "scikit-image",
        "faiss": "faiss-cpu",
        "crowdkit": "crowd-kit",
        "google": "apache-beam[gcp]",
    }
    distribution_of["apitools"] = "apache-beam[gcp]"
    for module, extra in extras.EXTRA_OF_MODULE.items():
        name = distribution_of.get(module, module)
        assert any(d.startswith(name) for d in optional[extra]), (module, extra)

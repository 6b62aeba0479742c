"""The command line's one error path: an imagenot error is one line and exit status 1; -v adds
its traceback."""

import yaml
from click.testing import CliRunner

from imagenot.pipeline.cli import main


def _config_with_no_corpus(tmp_path) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"corpus": {"paths": [str(tmp_path / "none-*.parquet")]}}))
    return str(path)


def test_a_corpus_glob_that_matches_nothing_is_one_line(tmp_path):
    result = CliRunner().invoke(main, ["build", "--config", _config_with_no_corpus(tmp_path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "none-*.parquet" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_verbose_adds_the_traceback(tmp_path):
    args = ["-v", "build", "--config", _config_with_no_corpus(tmp_path), "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert "Traceback" in result.output and "none-*.parquet" in result.output

"""What a careless operator is told, through the command line: every message says what is true,
in one line, before anything is written."""

import pytest
import yaml
from cli_runner import invoke

from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.plan.command import plan_command


def _config(tmp_path, **sections) -> str:
    corpus = tmp_path / "part-0.jsonl"
    corpus.write_text('{"URL":"http://a/1.jpg","TEXT":"a dog"}\n')
    path = tmp_path / "c.yaml"
    settings = {"corpus": {"paths": [str(corpus)]}, "selection": {"allowed_nsfw_tags": None}, **sections}
    path.write_text(yaml.safe_dump(settings))
    return str(path)


@pytest.mark.parametrize(
    ("stage", "why"),
    [
        ("download", "download.enabled is false"),
        ("export", "download.enabled is false"),
        ("corpus", "corpus.synth is not set"),
    ],
)
def test_build_from_a_stage_the_config_does_not_run_is_refused_naming_why(tmp_path, stage, why):
    run = tmp_path / "run"
    result = invoke(build_command, ["--config", _config(tmp_path), "--out", str(run), "--from", stage])
    assert result.exit_code == 1, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: --from {stage}: this config does not run that stage ({why}")
    assert not run.exists()


def test_export_formats_without_webdataset_says_why_the_tars_are_needed_even_beside_hf_parquet(tmp_path):
    result = invoke(plan_command, ["--config", _config(tmp_path, export={"formats": ["hf-parquet", "imagefolder"]})])
    assert result.exit_code == 1, result.output
    assert "export.formats must include 'webdataset': the train/test tars are always written" in result.output
    assert "Hugging Face loader" not in result.output

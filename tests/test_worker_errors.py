"""An error raised inside a Beam worker reaches the user as its one line (the traceback only with
-v), and the select stage checks the tagged shards' columns before Beam starts, naming the setting."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke
from click.testing import CliRunner

from imagenot.pipeline.cli import main

select_command = cli_command("select")
tag_command = cli_command("tag")

CAPTIONS = ["a photo of a dog on the grass", "my cat sleeping", "a red car parked", "the old church tower"]


@pytest.fixture(scope="module")
def tagged_run(tmp_path_factory):
    """A tiny LAION-schema corpus, tagged."""
    folder = tmp_path_factory.mktemp("tiny")
    n = len(CAPTIONS)
    corpus = {
        "URL": [f"http://127.0.0.1:9/img/{i}.jpg" for i in range(n)],
        "TEXT": CAPTIONS,
        "NSFW": ["UNLIKELY"] * n,
        "punsafe": [0.1] * n,
    }
    pq.write_table(pa.table(corpus), folder / "corpus.parquet")
    result = invoke(tag_command, ["--input", str(folder / "corpus.parquet"), "--out", str(folder / "run")])
    assert result.exit_code == 0, result.output
    return folder


def _rewrite_tagged(folder, change) -> None:
    """The tagged shard as if written by other means (or an older imagenot)."""
    tagged = folder / "run" / "tag" / "tagged" / "corpus.parquet"
    pq.write_table(change(pq.read_table(tagged)), folder / "rewritten.parquet")
    (folder / "rewritten.parquet").replace(tagged)


def test_select_refuses_before_beam_naming_the_setting_a_missing_column_needs(tagged_run):
    _rewrite_tagged(tagged_run, lambda table: table.drop_columns(["nsfw"]))
    result = invoke(select_command, ["--run", str(tagged_run / "run")])
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: {tagged_run}/run/tag/tagged/corpus.parquet: no column 'nsfw', which selection.allowed_nsfw_tags "
        "needs; the corpus it was tagged from had none: turn the check off with `selection.allowed_nsfw_tags: null`"
    ]
    assert not (tagged_run / "run" / "select").exists()


@pytest.mark.parametrize("workers", [1, 2])
def test_an_error_a_worker_raises_is_one_line_and_its_traceback_shows_with_v(tagged_run, workers, capfd):
    text = pa.array(["0.1"] * len(CAPTIONS))
    _rewrite_tagged(
        tagged_run, lambda table: table.set_column(table.schema.get_field_index("punsafe"), "punsafe", text)
    )
    config = tagged_run / f"workers{workers}.yaml"
    config.write_text(
        yaml.safe_dump({"selection": {"allowed_nsfw_tags": None, "max_punsafe": 0.5}, "runner": {"workers": workers}})
    )
    args = ["select", "--run", str(tagged_run / "run"), "--config", str(config)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    error, note = result.output.splitlines()[-1].split("; ", 1)  # the journal's note: the stage stopped part way
    assert error == "Error: column 'punsafe' has type string, expected float64" and "run it again to finish it" in note
    assert "Traceback" not in result.output
    assert "Traceback" not in capfd.readouterr().err  # nor from the worker processes themselves
    if workers > 1:
        return  # the traceback under -v: in-process is enough (worker processes cost seconds each run)
    verbose = CliRunner().invoke(main, ["-v", *args])
    assert "Traceback" in verbose.output and "in drop_unsafe_rows" in verbose.output
    error, note = verbose.output.splitlines()[-1].split("; ", 1)  # the journal's note: the stage stopped part way
    assert error == "Error: column 'punsafe' has type string, expected float64" and "run it again to finish it" in note

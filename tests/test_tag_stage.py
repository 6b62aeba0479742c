"""The tag stage on the real Beam runner against the plain function, accounting and resume."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import cli_command, invoke

from imagenot.pipeline.config.schema import Config, Corpus, Runner
from imagenot.pipeline.corpus.reader import CorpusError, read_shard
from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.frame.registry import declared, run_in_folder
from imagenot.pipeline.run.layout import TAG_TALLY_FILE
from imagenot.pipeline.run.summary import read_summary
from imagenot.pipeline.tag.stage import tag_batch

tag_command = cli_command("tag")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    synth_corpus(out, 6_000, 7, "http://127.0.0.1:9/img", 2_500)
    return out


def _config(corpus, workers=1):
    # files of 2,500 rows in one row group, above the bound: one work unit each, named by the file
    corpus = Corpus(paths=[str(corpus / "part-*.parquet")], work_unit_rows=1_000)
    return Config(corpus=corpus, runner=Runner(workers=workers))


@pytest.fixture(scope="module")
def tagged_run(corpus, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    return run_dir / "tag", run_in_folder(declared("tag"), _config(corpus), str(run_dir))


def test_beam_stage_gives_the_plain_functions_tags(corpus, stage_matcher, tagged_run):
    out, _ = tagged_run
    for shard in sorted(corpus.glob("part-*.parquet")):
        expected = pa.Table.from_batches(
            [tag_batch(piece.batch, stage_matcher) for piece in read_shard(str(shard), Config().corpus.columns, 1_000)]
        )
        written = pq.read_table(out / "tagged" / shard.name)
        assert written.column_names[:3] == ["row_id", "wnids", "matched"]
        assert written.num_rows > 0
        assert written.equals(expected.cast(written.schema))


def test_every_row_is_accounted_for(tagged_run):
    _, tally = tagged_run
    assert tally["shards"] == 3
    assert tally["rows_read"] == 6_000
    assert tally["rows_read"] == sum(tally["dropped"].values()) + tally["rows_tagged"] + tally["rows_unmatched"]
    assert set(tally["dropped"]) == {
        "caption_missing",
        "caption_empty",
        "caption_not_text",
        "url_missing",
        "url_not_http",
    }
    assert sum(tally["synset_captions"].values()) >= tally["rows_tagged"]


def test_function_words_are_not_matched(tagged_run, index):
    out, tally = tagged_run
    matched = pq.read_table(out / "tagged", columns=["matched"]).column("matched").combine_chunks().flatten()
    assert not {"a", "in", "it", "as"} & set(matched.to_pylist())
    assert tally["synset_captions"].get("n14706889", 0) < 100  # adenine, tagged via "a" if it were matched


def test_two_workers_write_the_same_bytes(corpus, tagged_run, tmp_path):
    out, _ = tagged_run
    run_in_folder(declared("tag"), _config(corpus, workers=2), str(tmp_path))
    for path in sorted((out / "tagged").iterdir()):
        assert (tmp_path / "tag" / "tagged" / path.name).read_bytes() == path.read_bytes()
    assert (tmp_path / "tag" / TAG_TALLY_FILE).read_bytes() == (out / TAG_TALLY_FILE).read_bytes()


def test_rerun_tags_only_unfinished_shards(corpus, tagged_run, tmp_path):
    out, _ = tagged_run
    run_in_folder(declared("tag"), _config(corpus), str(tmp_path))
    done = tmp_path / "tag" / "tagged" / "part-00000.parquet"
    (tmp_path / "tag" / "tallies" / "part-00001.json").unlink()  # as if killed before its tally
    (tmp_path / "tag" / "tagged" / "part-00001.parquet").unlink()
    before = done.stat().st_mtime_ns
    run_in_folder(declared("tag"), _config(corpus), str(tmp_path))
    assert done.stat().st_mtime_ns == before
    for path in sorted((out / "tagged").iterdir()):
        assert (tmp_path / "tag" / "tagged" / path.name).read_bytes() == path.read_bytes()


def test_bad_shard_stops_before_any_work(corpus, tmp_path):
    bad = tmp_path / "in" / "part-bad.parquet"
    bad.parent.mkdir()
    pq.write_table(pa.table({"URL": ["http://x/1.jpg"], "TEXT": [3]}), bad)
    config = Config(corpus=Corpus(paths=[str(corpus / "part-00000.parquet"), str(bad)]))
    with pytest.raises(
        CorpusError, match=r"part-bad.parquet: column 'TEXT' \(caption\) has type int64, expected string"
    ):
        run_in_folder(declared("tag"), config, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_shards_with_the_same_name_are_refused(corpus, tmp_path):
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "part-00000.parquet").write_bytes((corpus / "part-00000.parquet").read_bytes())
    config = Config(corpus=Corpus(paths=[str(corpus / "part-00000.parquet"), str(tmp_path / "copy" / "*.parquet")]))
    with pytest.raises(CorpusError, match="distinct file names"):
        run_in_folder(declared("tag"), config, str(tmp_path / "out"))


def test_command_writes_counts_and_summary(corpus, tmp_path):
    result = invoke(tag_command, ["--input", str(corpus / "part-00002.parquet"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    summary = read_summary(str(tmp_path))["tag"]
    assert summary["rows_read"] == 1_000
    assert summary["rows_read"] == sum(summary["dropped"].values()) + summary["rows_tagged"] + summary["rows_unmatched"]
    lines = (tmp_path / "tag" / "synset_counts.tsv").read_text().splitlines()
    assert lines[0] == "wnid\tname\tcaptions"
    counts = [int(line.split("\t")[2]) for line in lines[1:]]
    assert counts == sorted(counts, reverse=True) and len(counts) == summary["synsets_found"]


def test_progress_counts_the_rows_validation_read_from_the_footers(corpus, tmp_path, monkeypatch, caplog):
    from imagenot.pipeline.run import progress

    def read_again(path):
        raise AssertionError(f"{path}: footer read a second time")

    monkeypatch.setattr(progress, "parquet_rows", read_again)
    paths = [str(corpus / "part-00000.parquet"), str(corpus / "part-00002.parquet")]
    config = Config(corpus=Corpus(paths=paths, work_unit_rows=1_000))
    with caplog.at_level("INFO", logger=progress.__name__):
        run_in_folder(declared("tag"), config, str(tmp_path))
    assert "tag: 3,500/3,500 rows (2/2 shards)" in caplog.text


def test_command_names_a_missing_input(tmp_path):
    result = invoke(tag_command, ["--input", str(tmp_path / "none-*.parquet"), "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "matches no file" in result.output

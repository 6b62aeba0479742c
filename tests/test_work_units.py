"""Work units (issue 31, item 4): corpus files cut or grouped to at most corpus.work_unit_rows
rows, and outputs and accounting that do not depend on how they were cut."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke
from test_corpus_formats import run_figures, write_as

from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.config.schema import Columns
from imagenot.pipeline.corpus.reader import DEFAULT_LAYOUT, Layout, read_shard
from imagenot.pipeline.corpus.units import (
    count_range,
    file_shape,
    file_shapes,
    number_lines,
    plan_units,
    text_ranges,
)
from imagenot.pipeline.plan.command import plan_command

tag_command = cli_command("tag")

COLUMNS = Columns(nsfw=None, similarity=None, punsafe=None, width=None, height=None, license=None, sample_id=None)


def _table(rows: int, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "URL": [f"http://a/{i}.jpg" for i in range(start, start + rows)],
            "TEXT": [f"a dog and a cat number {i}" for i in range(start, start + rows)],
        }
    )


def _read_units(paths: list[Path], bound: int, layout: Layout = DEFAULT_LAYOUT) -> tuple[list, pa.Table, int, list]:
    """The units of `paths` and every row read through them (row ids, captions), the rows read and
    the malformed lines named, as the tag stage reads them."""
    units = plan_units(file_shapes([str(p) for p in paths], layout), bound)
    counts = {}
    for element in text_ranges(units):
        counts.update(count_range(element)["line_starts"])
    units = number_lines(units, counts)
    batches, rows, malformed = [], 0, []
    for unit in units:
        for piece in unit.pieces:
            for part in read_shard(piece.path, COLUMNS, 1_000, layout, piece.part):
                batches.append(part.batch.select(["row_id", "caption"]))
                rows += part.rows_read
                malformed += part.malformed
    return units, pa.Table.from_batches(batches).sort_by("row_id"), rows, sorted(malformed)


def test_a_parquet_file_is_cut_at_row_groups_and_small_files_are_grouped(tmp_path):
    pq.write_table(_table(5_000), tmp_path / "big.parquet", row_group_size=700)
    pq.write_table(_table(2_500), tmp_path / "huge-group.parquet")  # one row group above the bound
    for i in range(4):
        pq.write_table(_table(300, 1_000 * i), tmp_path / f"small-{i}.parquet")
    paths = sorted(tmp_path.glob("*.parquet"))
    units = plan_units(file_shapes([str(p) for p in paths], Layout()), 1_000)
    assert [(u.id, u.rows) for u in units] == [
        ("big@rg0-0", 700),
        ("big@rg1-1", 700),
        ("big@rg2-2", 700),
        ("big@rg3-3", 700),
        ("big@rg4-4", 700),
        ("big@rg5-5", 700),
        ("big@rg6-7", 800),
        ("huge-group", 2_500),
        ("small-0..small-2", 900),
        ("small-3", 300),
    ]
    assert plan_units(file_shapes([str(p) for p in paths], Layout()), 1_000) == units  # deterministic
    _, whole, rows, _ = _read_units(paths, 100_000_000)
    _, cut, cut_rows, _ = _read_units(paths, 1_000)
    assert rows == cut_rows == 5_000 + 2_500 + 1_200 and cut.equals(whole)
    assert "big:4999" in cut.column("row_id").to_pylist()


def _awkward_lines(fmt: str) -> list[str]:
    """Lines of every kind a range may start or end in: long ones, blank ones, malformed ones."""
    good = [f"http://a/{i}.jpg\ta dog number {i}" for i in range(3_000)]
    good[10] = "no tab at all"  # a field missing
    good[1_200] = "http://a/x.jpg\t" + "a very long caption " * 4_000  # longer than a range
    good[2_000] = ""  # blank: malformed
    good[2_001] = "http://a/y.jpg\ttoo\tmany"
    if fmt == "csv":
        good = [line.replace("\t", ",") for line in good]
        good[500] = 'http://a/q.jpg,"a quoted caption'  # a value holding a newline: two malformed lines
        good[501] = 'that runs on"'
        return ["URL,TEXT", *good]
    if fmt == "jsonl":
        return [json.dumps({"URL": line.split("\t")[0], "TEXT": line.split("\t")[-1]}) for line in good[:10]] + [
            '{"URL": "http://a/b.jpg", "TEXT": "broken',
            *(json.dumps({"URL": f"http://a/{i}", "TEXT": "x " * (i % 50) + "cat"}) for i in range(2_000)),
        ]
    return ["URL\tTEXT", *good]


@pytest.mark.parametrize("fmt", ["tsv", "csv", "jsonl"])
@pytest.mark.parametrize("trailing_newline", [True, False])
def test_a_text_file_cut_into_byte_ranges_reads_as_the_whole_file(tmp_path, fmt, trailing_newline):
    path = tmp_path / f"big.{fmt}"
    path.write_text("\n".join(_awkward_lines(fmt)) + ("\n" if trailing_newline else ""))
    units, whole, rows, malformed = _read_units([path], 100_000_000)
    assert len(units) == 1 and units[0].pieces[0].part is None
    cut_units, cut, cut_rows, cut_malformed = _read_units([path], 1_000)
    assert len(cut_units) >= 2 and all(u.pieces[0].part.kind == "bytes" for u in cut_units)
    assert cut_rows == rows and cut_malformed == malformed and cut.equals(whole)
    assert malformed  # line numbers are the file's: the first malformed line of a tsv is line 12
    if fmt == "tsv":
        assert malformed[0].startswith("big.tsv:12: ")


def test_files_of_other_columns_are_not_grouped(tmp_path):
    """A unit writes one tagged file: a file with LAION's NSFW column beside files without it starts
    a unit of its own, and the stage tags them all."""
    laion = _table(200).append_column("NSFW", pa.array(["UNLIKELY"] * 200))
    pq.write_table(_table(100), tmp_path / "a.parquet")
    pq.write_table(laion, tmp_path / "b.parquet")
    write_as(_table(100, 500), tmp_path / "c.tsv")
    write_as(_table(100, 700), tmp_path / "d.jsonl")
    paths = sorted(tmp_path.iterdir())
    units = plan_units(file_shapes([str(p) for p in paths], DEFAULT_LAYOUT), 1_000)
    assert [u.id for u in units] == ["a", "b", "c..d"]
    config = tmp_path.with_name("c.yaml")
    config.write_text(yaml.safe_dump({"selection": {"allowed_nsfw_tags": None, "max_punsafe": None}}))
    run = tmp_path.with_name("run")
    result = invoke(tag_command, ["--input", str(tmp_path / "*"), "--config", str(config), "--out", str(run)])
    assert result.exit_code == 0, result.output
    assert pq.read_table(run / "tag" / "tagged" / "b.parquet").column_names[-1] == "nsfw"
    assert json.loads((run / "tag" / "tag_tally.json").read_text())["rows_read"] == 500


def test_gzipped_files_and_json_arrays_are_read_whole(tmp_path):
    table = _table(3_000)
    paths = [write_as(table, tmp_path / "a.tsv.gz"), write_as(table, tmp_path / "b.json")]
    units = plan_units(file_shapes([str(p) for p in paths], Layout()), 1_000)
    assert [(u.id, u.pieces[0].part) for u in units] == [("a.tsv", None), ("b", None)]
    assert file_shape(str(paths[0]), Layout()).size is None


def test_a_killed_tag_stage_keeps_its_finished_units_and_drops_another_bounds(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pq.write_table(_table(4_000), corpus / "part-0.parquet", row_group_size=1_000)
    write_as(_table(3_000, 10_000), corpus / "part-1.tsv")
    config = tmp_path / "c.yaml"

    def tag(bound: int, out: Path) -> dict:
        settings = {"corpus": {"paths": [str(corpus / "*")], "work_unit_rows": bound, "columns": COLUMNS.model_dump()}}
        settings["selection"] = {"allowed_nsfw_tags": None, "max_punsafe": None}
        config.write_text(yaml.safe_dump(settings))
        result = invoke(tag_command, ["--config", str(config), "--out", str(out)])
        assert result.exit_code == 0, result.output
        return json.loads((out / "tag" / "tag_tally.json").read_text())

    whole = tag(100_000, tmp_path / "whole")
    cut = tag(1_000, tmp_path / "cut")
    assert cut == whole and cut["shards"] == 2 and cut["rows_read"] == 7_000
    tagged = cut_dir = tmp_path / "cut" / "tag"
    names = sorted(p.name for p in (tagged / "tagged").iterdir())
    assert names[:4] == [f"part-0@rg{i}-{i}.parquet" for i in range(4)] and len(names) == 7
    # killed: one unit unfinished, the stage not done; the rerun redoes that unit only
    (cut_dir / "DONE").unlink()
    (cut_dir / "tallies" / "part-0@rg2-2.json").unlink()
    (cut_dir / "tagged" / "part-0@rg2-2.parquet").unlink()
    kept = cut_dir / "tagged" / "part-0@rg1-1.parquet"
    before = kept.stat().st_mtime_ns
    assert tag(1_000, tmp_path / "cut") == whole
    assert kept.stat().st_mtime_ns == before and (cut_dir / "tagged" / "part-0@rg2-2.parquet").exists()
    # killed, then run under another bound: a setting of the stage, so the other layout's units go
    # (and the stages after it rerun: no stage mixes two layouts' files), no row is read twice
    (cut_dir / "DONE").unlink()
    (cut_dir / "tallies" / "part-0@rg3-3.json").unlink()
    assert tag(2_000, tmp_path / "cut") == whole
    assert json.loads((cut_dir / "fingerprint.json").read_text())["settings"]["reading"]["work_unit_rows"] == 2_000
    assert len(list((cut_dir / "tagged").iterdir())) == len(list((cut_dir / "tallies").iterdir()))


def test_plan_states_the_work_units_and_their_bound(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pq.write_table(_table(4_000), corpus / "part-0.parquet", row_group_size=1_000)
    config = tmp_path / "c.yaml"
    settings = {"corpus": {"paths": [str(corpus / "*")], "work_unit_rows": 2_000, "columns": COLUMNS.model_dump()}}
    settings["selection"] = {"allowed_nsfw_tags": None, "max_punsafe": None}
    config.write_text(yaml.safe_dump(settings))
    result = invoke(plan_command, ["--config", str(config), "--sample", "0"])
    assert result.exit_code == 0, result.output
    assert "work_units 2, work_unit_rows 2,000" in result.output


def test_a_build_cut_into_small_units_gives_the_grouped_builds_classes_samples_and_figures(small_run, tmp_path):
    """The shared small run (4 files of 3,000 rows: one work unit) against the same rows as two
    parquet files of 500-row groups and two jsonl files, cut into units of 1,000 rows."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shards = sorted((small_run.run / "corpus").glob("part-*.parquet"))
    for i, shard in enumerate(shards):
        if i < 2:
            pq.write_table(pq.read_table(shard), corpus / shard.name, row_group_size=500)
        else:
            write_as(pq.read_table(shard), corpus / (shard.stem + ".jsonl"))
    config = yaml.safe_load(small_run.config.read_text())
    config["corpus"] = {"paths": [str(corpus / "part-*")], "work_unit_rows": 1_000}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    result = invoke(build_command, ["--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    ours, theirs = tmp_path / "run", small_run.run
    assert len(list((ours / "tag" / "tagged").iterdir())) >= 12
    assert len(list((theirs / "tag" / "tagged").iterdir())) == 1
    for name in ("rank/classes.json", "rank/class_list.tsv", "select/funnel.tsv", "tag/synset_counts.tsv"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    for folder in ("sample/dataset", "sample/reserve"):
        samples = sorted(p.relative_to(theirs) for p in (theirs / folder).glob("*.parquet"))
        assert samples and [p.relative_to(ours) for p in sorted((ours / folder).glob("*.parquet"))] == samples
        assert all((ours / p).read_bytes() == (theirs / p).read_bytes() for p in samples)

    assert run_figures(ours) == run_figures(theirs)
    shutil.rmtree(ours)

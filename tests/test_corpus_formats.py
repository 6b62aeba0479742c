"""The corpora people hold, read as they are (issue 31): every format img2dataset reads, the
presets, malformed lines, and the corpus checked before any stage writes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke

from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.config.schema import Columns, Config, load_config
from imagenot.pipeline.corpus.reader import DEFAULT_LAYOUT, CorpusError, Layout, read_shard
from imagenot.pipeline.plan.command import plan_command

select_command = cli_command("select")
tag_command = cli_command("tag")

SIZES = {"HEIGHT": pa.int64(), "WIDTH": pa.int64()}
DEFAULT_COLUMNS = Columns()  # LAION-5B's column names


def _rows(path: Path) -> pa.Table:
    """A synthetic shard's rows that a TSV can hold too (no null, tab or newline in a value)."""
    table = pq.read_table(path)
    ok = pc.and_(pc.invert(pc.is_null(table["TEXT"])), pc.invert(pc.is_null(table["URL"])))
    return table.filter(pc.and_(ok, pc.invert(pc.match_substring_regex(table["TEXT"], "[\t\n\r]"))))


def write_as(table: pa.Table, path: Path) -> Path:
    """`table` in the format of `path`'s extension, as its publishers would write it."""
    base = path.name.removesuffix(".gz")
    if base.endswith(".parquet"):
        pq.write_table(table, path)
        return path
    if base.endswith(".csv"):
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(table, sink)
        data = sink.getvalue().to_pybytes()
    elif base.endswith(".tsv"):
        lines = ["\t".join(table.column_names)]
        lines += ["\t".join("" if v is None else str(v) for v in row.values()) for row in table.to_pylist()]
        data = ("\n".join(lines) + "\n").encode()
    elif base.endswith(".jsonl"):
        data = "".join(json.dumps(row) + "\n" for row in table.to_pylist()).encode()
    else:
        data = json.dumps(table.to_pylist(), indent=1).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return path


def read(
    path: Path, layout: Layout = DEFAULT_LAYOUT, columns: Columns = DEFAULT_COLUMNS
) -> tuple[pa.Table, dict, list]:
    pieces = list(read_shard(str(path), columns, 1_000, layout))
    dropped = {reason: sum(p.dropped[reason] for p in pieces) for reason in pieces[0].dropped}
    return pa.Table.from_batches([p.batch for p in pieces]), dropped, [m for p in pieces for m in p.malformed]


FORMATS = ["csv", "tsv", "json", "jsonl", "csv.gz", "tsv.gz", "json.gz", "jsonl.gz"]


def test_the_same_rows_read_the_same_in_every_format(small_run, tmp_path):
    rows = _rows(small_run.run / "corpus" / "part-00000.parquet").slice(0, 2_500)
    expected, expected_dropped, _ = read(write_as(rows, tmp_path / "part-0.parquet"))
    assert expected.num_rows > 2_000 and sum(expected_dropped.values()) > 0
    for extension in FORMATS:
        folder = tmp_path / extension
        folder.mkdir()
        got, dropped, malformed = read(write_as(rows, folder / f"part-0.{extension}"))
        assert got.equals(expected), extension  # row ids, values and canonical types alike
        assert (dropped, malformed) == (expected_dropped, []), extension


def test_imagenot_tag_gives_each_format_the_parquet_files_tagged_rows_and_counts(small_run, tmp_path):
    """Through the command line, every format img2dataset reads: the same rows tag to the same
    tagged table (row ids included) and the same synset counts as their parquet file."""
    rows = _rows(small_run.run / "corpus" / "part-00000.parquet").slice(0, 1_000)
    runs = {}
    for extension in ["parquet", *FORMATS]:
        folder = tmp_path / extension
        folder.mkdir()
        path = write_as(rows, folder / f"part-0.{extension}")
        runs[extension] = tmp_path / f"run-{extension}"
        result = invoke(tag_command, ["--input", str(path), "--out", str(runs[extension])])
        assert result.exit_code == 0, (extension, result.output)
    expected = pq.read_table(runs["parquet"] / "tag" / "tagged")
    counts = (runs["parquet"] / "tag" / "synset_counts.tsv").read_text()
    assert expected.num_rows > 500
    for extension in FORMATS:
        tagged = pq.read_table(runs[extension] / "tag" / "tagged")
        assert tagged.select(["row_id", "wnids", "matched", "url", "caption"]).equals(
            expected.select(["row_id", "wnids", "matched", "url", "caption"])
        ), extension
        assert (runs[extension] / "tag" / "synset_counts.tsv").read_text() == counts, extension


def test_text_files_in_a_bucket_tag_as_their_local_parquet_file_split_into_work_units(gcs_bucket, small_run, tmp_path):
    """gs:// csv.gz (read whole) and jsonl (cut into byte ranges of at most work_unit_rows rows)
    through `imagenot tag`: the local parquet file's tagged rows and synset counts."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    rows = _rows(small_run.run / "corpus" / "part-00000.parquet").slice(0, 2_500)
    config = tmp_path / "units.yaml"
    config.write_text(yaml.safe_dump({"corpus": {"work_unit_rows": 1_000}}))
    runs = {}
    for extension in ("parquet", "csv.gz", "jsonl"):
        local = write_as(rows, tmp_path / f"part-0.{extension}")
        path = str(local)
        if extension != "parquet":
            path = f"{gcs_bucket}/formats/part-0.{extension}"
            with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                f.write(local.read_bytes())  # the file's bytes as they are (Beam would gzip a .gz again)
        runs[extension] = tmp_path / f"run-{extension.replace('.', '-')}"
        result = invoke(tag_command, ["--input", path, "--out", str(runs[extension]), "--config", str(config)])
        assert result.exit_code == 0, (extension, result.output)
    assert len(list((runs["jsonl"] / "tag" / "tagged").glob("*@b*.parquet"))) >= 2  # cut into byte ranges
    columns = ["row_id", "wnids", "matched", "url", "caption"]
    expected = pq.read_table(runs["parquet"] / "tag" / "tagged").select(columns).sort_by("row_id")
    for extension in ("csv.gz", "jsonl"):
        tagged = pq.read_table(runs[extension] / "tag" / "tagged").select(columns).sort_by("row_id")
        assert tagged.equals(expected), extension
        counts = (runs[extension] / "tag" / "synset_counts.tsv").read_text()
        assert counts == (runs["parquet"] / "tag" / "synset_counts.tsv").read_text(), extension


def test_dictionary_encoded_and_large_string_columns_are_read_as_strings(tmp_path):
    urls = pa.array(["http://a/1.jpg", "http://a/2.jpg"]).dictionary_encode()  # what pandas writes for a category
    captions = pa.array(["a dog", "two mice"], pa.large_string())
    path = tmp_path / "part-0.parquet"
    pq.write_table(
        pa.table({"URL": urls, "TEXT": captions, "NSFW": pa.array(["UNLIKELY"] * 2).dictionary_encode()}), path
    )
    table, _, _ = read(path)
    assert table.column("url").to_pylist() == ["http://a/1.jpg", "http://a/2.jpg"]
    assert table.schema.field("url").type == table.schema.field("caption").type == pa.string()
    assert table.column("nsfw").to_pylist() == ["UNLIKELY", "UNLIKELY"]


def test_a_corpus_written_from_pandas_category_columns_tags_as_its_plain_string_twin(tmp_path):
    """Through `imagenot tag`: a parquet file pandas wrote from `category` columns (dictionary-encoded
    URL, TEXT and NSFW) gives the same tagged rows and synset counts as the same rows as plain strings."""
    import pandas as pd

    from imagenot.pipeline.corpus.synth import synth_corpus

    synth_corpus(tmp_path / "synth", 1_500, seed=7, shard_rows=1_500)
    frame = pq.read_table(tmp_path / "synth" / "part-00000.parquet").to_pandas()
    frame = pd.concat([frame, frame.head(300)], ignore_index=True)  # repeated values, as a category column holds
    runs = {}
    for kind in ("plain", "category"):
        folder = tmp_path / kind
        folder.mkdir()
        written = frame.astype({c: "category" for c in ("URL", "TEXT", "NSFW")}) if kind == "category" else frame
        written.to_parquet(folder / "part-0.parquet", index=False)
        runs[kind] = tmp_path / f"run-{kind}"
        result = invoke(tag_command, ["--input", str(folder / "part-0.parquet"), "--out", str(runs[kind])])
        assert result.exit_code == 0, result.output
    encoded = pq.read_schema(tmp_path / "category" / "part-0.parquet")
    assert all(pa.types.is_dictionary(encoded.field(c).type) for c in ("URL", "TEXT", "NSFW"))
    tagged = {kind: pq.read_table(run / "tag" / "tagged") for kind, run in runs.items()}
    assert tagged["plain"].num_rows > 1_000
    assert tagged["category"].sort_by("row_id").equals(tagged["plain"].sort_by("row_id"))
    counts = {kind: (run / "tag" / "synset_counts.tsv").read_text() for kind, run in runs.items()}
    assert counts["category"] == counts["plain"]


MALFORMED = {  # file -> (text, the lines that are malformed)
    "m.tsv": (
        "URL\tTEXT\tWIDTH\nhttp://a/1\ta dog\t10\nhttp://a/2\tno width\nhttp://a/3\ta cat\twide\nhttp://a/4\tfish\t7\n",
        [3, 4],
    ),
    "n.csv": (
        'URL,TEXT,WIDTH\nhttp://a/1,a dog,10\nhttp://a/2,"unterminated,3\nhttp://a/3,a cat,4,extra\nhttp://a/4,fish,7\n',
        [3, 4],
    ),
    "o.jsonl": (
        '{"URL":"http://a/1","TEXT":"a dog"}\n{"URL":"http://a/2","TEXT":\n'
        '{"URL":"http://a/3","TEXT":"a cat","WIDTH":"wide"}\n'
        '{"URL":"http://a/4","TEXT":"fish"}\n',
        [2, 3],
    ),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_a_malformed_line_is_a_counted_drop_or_under_strict_reading_an_error_naming_it(tmp_path, name):
    text, lines = MALFORMED[name]
    path = tmp_path / name
    path.write_text(text)
    table, dropped, malformed = read(path)
    assert dropped["line_malformed"] == 2 and [m.split(":")[1] for m in malformed] == [str(n) for n in lines]
    assert table.column("caption").to_pylist() == ["a dog", "fish"]
    stem = name.split(".")[0]
    assert table.column("row_id").to_pylist() == [f"{stem}:0", f"{stem}:3"]  # a malformed line keeps its place
    with pytest.raises(CorpusError, match=rf"{name}: line {lines[0]}: .*\(corpus.strict is on\)"):
        read(path, Layout(strict=True))


def test_malformed_lines_through_the_cli_are_counted_and_named_in_the_tally(tmp_path):
    for name, (text, _) in MALFORMED.items():
        (tmp_path / name).write_text(text)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"selection": {"allowed_nsfw_tags": None}}))
    inputs = [arg for name in MALFORMED for arg in ("--input", str(tmp_path / name))]
    result = invoke(tag_command, [*inputs, "--out", str(tmp_path / "run"), "--config", str(config)])
    assert result.exit_code == 0, result.output
    tally = json.loads((tmp_path / "run" / "tag" / "figures.json").read_text())
    assert tally["rows_read"] == 12 and tally["dropped"]["line_malformed"] == 6
    named = sorted(key.split(": ")[0] for key in tally["malformed_lines"])
    assert named == sorted(f"{name}:{line}" for name, (_, lines) in MALFORMED.items() for line in lines)

    config.write_text(yaml.safe_dump({"corpus": {"strict": True}, "selection": {"allowed_nsfw_tags": None}}))
    strict = invoke(
        tag_command, ["--input", str(tmp_path / "m.tsv"), "--out", str(tmp_path / "strict"), "--config", str(config)]
    )
    assert strict.exit_code == 1
    assert "m.tsv: line 3: 2 fields where the header has 3 (corpus.strict is on)" in strict.output.splitlines()[-1]


def run_figures(run: Path) -> dict:
    """A run's summary.json figures per stage, less what a run takes (time, CPU: the machine's) and
    what the shared embedding cache already held: what the corpus decides."""
    summary = json.loads((run / "summary.json").read_text())
    varying = {"seconds", "exact_seconds", "cpu_seconds", "cpu_us_per_row", "sense_cpu_seconds", "captions_embedded"}
    return {
        stage: {k: v for k, v in f.items() if k not in varying}
        for stage, f in summary.items()
        if stage not in ("corpus", "totals")
    }


def test_a_build_from_gzipped_json_lines_gives_the_parquet_builds_classes_samples_and_figures(small_run, tmp_path):
    """The shared small run's corpus, the same rows as .jsonl.gz, built through the CLI."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for shard in sorted((small_run.run / "corpus").glob("part-*.parquet")):
        write_as(pq.read_table(shard), corpus / (shard.stem + ".jsonl.gz"))
    config = yaml.safe_load(small_run.config.read_text())
    config["corpus"] = {"paths": [str(corpus / "part-*.jsonl.gz")]}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    result = invoke(build_command, ["--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    ours, theirs = tmp_path / "run", small_run.run
    assert (ours / "rank" / "classes.json").read_bytes() == (theirs / "rank" / "classes.json").read_bytes()
    samples = sorted(p.relative_to(theirs) for p in (theirs / "sample" / "dataset").glob("*.parquet"))
    assert samples and [p.relative_to(ours) for p in sorted((ours / "sample" / "dataset").glob("*.parquet"))] == samples
    assert all((ours / p).read_bytes() == (theirs / p).read_bytes() for p in samples)

    assert run_figures(ours) == run_figures(theirs)


def _laion_urls_and_text(tmp_path: Path) -> Path:
    """A LAION-derived file with URL and TEXT only, the shape of most LAION subsets."""
    path = tmp_path / "laion" / "part-0.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"URL": ["http://a/1.jpg"], "TEXT": ["a dog"]}), path)
    return path


@pytest.mark.parametrize("command", ["build", "plan", "select"])
def test_a_column_the_config_needs_and_the_corpus_lacks_is_refused_before_anything_is_written(tmp_path, command):
    corpus = _laion_urls_and_text(tmp_path)
    config, run = tmp_path / "c.yaml", tmp_path / "run"
    config.write_text(yaml.safe_dump({"corpus": {"paths": [str(corpus)]}}))
    if command == "build":
        result = invoke(build_command, ["--config", str(config), "--out", str(run)])
    elif command == "plan":
        result = invoke(plan_command, ["--config", str(config), "--out", str(run)])
    else:
        run.mkdir()
        result = invoke(select_command, ["--run", str(run), "--config", str(config)])
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert "no column 'NSFW' (mapped by corpus.columns.nsfw), which selection.allowed_nsfw_tags needs" in line
    assert "`selection.allowed_nsfw_tags: null`" in line and str(corpus) in line
    assert not run.exists() or not any(run.iterdir())  # no config.yaml, no lock


def test_the_check_reads_every_file_of_thousands_and_names_the_first_lacking_a_column(tmp_path):
    """Every file's footer is read (many at once): a bucket of thousands of shards where only the
    last lacks a column a setting needs is refused naming that file."""
    folder = tmp_path / "many"
    folder.mkdir()
    whole = pa.table({"URL": ["http://a/1.jpg"], "TEXT": ["a dog"], "NSFW": ["UNLIKELY"]})
    for n in range(2_999):
        pq.write_table(whole, folder / f"part-{n:05d}.parquet")
    pq.write_table(whole.drop_columns(["NSFW"]), folder / "part-02999.parquet")
    config = load_config(None, [str(folder / "*.parquet")])
    from imagenot.pipeline.corpus.preflight import check_corpus_schema

    with pytest.raises(CorpusError, match="part-02999.parquet: the corpus has no column 'NSFW'"):
        check_corpus_schema(config)


@pytest.mark.parametrize("command", ["tag", "build", "plan"])
def test_a_second_file_lacking_a_column_the_preset_needs_is_refused_naming_it_and_the_setting(tmp_path, command):
    """Preset laion reads NSFW for selection.allowed_nsfw_tags: a second parquet without it is
    refused before anything is written, not after tag ran on every row."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pq.write_table(pa.table({"URL": ["http://a/1.jpg"], "TEXT": ["a dog"], "NSFW": ["UNLIKELY"]}), corpus / "a.parquet")
    pq.write_table(pa.table({"URL": ["http://a/2.jpg"], "TEXT": ["a cat"]}), corpus / "b.parquet")
    config, run = tmp_path / "c.yaml", tmp_path / "run"
    config.write_text(yaml.safe_dump({"corpus": {"paths": [str(corpus / "*.parquet")], "preset": "laion"}}))
    if command == "tag":
        result = invoke(tag_command, ["--input", str(corpus / "*.parquet"), "--out", str(run), "--config", str(config)])
    elif command == "build":
        result = invoke(build_command, ["--config", str(config), "--out", str(run)])
    else:
        result = invoke(plan_command, ["--config", str(config), "--out", str(run)])
    assert result.exit_code == 1, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"Error: shard {corpus / 'b.parquet'}: the corpus has no column 'NSFW'")
    assert "selection.allowed_nsfw_tags needs" in line
    assert not run.exists() or not any(run.iterdir())


PRESET_FILES = {  # preset -> (file name, its rows as the corpus ships them, what the preset maps url/caption to)
    "laion": (
        "part-0.parquet",
        {"URL": ["http://a/1.jpg"], "TEXT": ["a dog"], "NSFW": ["UNLIKELY"], "punsafe": [0.01]},
    ),
    "relaion": ("part-0.parquet", {"url": ["http://a/1.jpg"], "caption": ["a dog"], "similarity": [0.31]}),
    "datacomp": (
        "part-0.parquet",
        {
            "uid": ["0a1b"],
            "url": ["http://a/1.jpg"],
            "text": ["a dog"],
            "original_width": [640],
            "original_height": [480],
            "clip_b32_similarity_score": [0.3],
            "sha256": ["ab"],
        },
    ),
    "coyo": (
        "part-0.parquet",
        {
            "id": [7],
            "url": ["http://a/1.jpg"],
            "text": ["a dog"],
            "width": [640],
            "height": [480],
            "clip_similarity_vitb32": [0.3],
            "nsfw_score_opennsfw2": [0.01],
            "aesthetic_score_laion_v2": [5.1],
        },
    ),
    "cc3m": ("Train_GCC-training.tsv", "a dog on the beach\thttp://a/1.jpg\n"),
    "cc12m": ("cc12m.tsv", "http://a/1.jpg\ta dog on the beach\n"),
}


@pytest.mark.parametrize("preset", PRESET_FILES)
def test_each_preset_reads_its_corpus_as_shipped_and_its_values_resolve_into_the_config(tmp_path, preset):
    name, rows = PRESET_FILES[preset]
    path = tmp_path / name
    if isinstance(rows, str):
        path.write_text(rows)
    else:
        pq.write_table(pa.table(rows), path)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"corpus": {"paths": [str(path)], "preset": preset}}))
    result = invoke(plan_command, ["--config", str(config), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["corpus"] == {"rows": 1, "shards": 1}
    resolved = load_config(config)
    table, dropped, _ = read(
        path, Layout(column_names=tuple(resolved.corpus.column_names or ()) or None), resolved.corpus.columns
    )
    assert table.column("url").to_pylist() == ["http://a/1.jpg"] and table.column("caption").to_pylist()[0].startswith(
        "a dog"
    )
    # what the build writes as RUN/config.yaml: the preset's values, resolved
    written = Config.model_validate(yaml.safe_load(yaml.safe_dump(resolved.model_dump())))
    assert written == resolved and written.corpus.preset == preset


def test_a_presets_values_are_overridden_key_by_key(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "corpus": {"paths": ["x.parquet"], "preset": "coyo", "columns": {"caption": "alt"}},
                "selection": {"max_punsafe": 0.2},
            }
        )
    )
    resolved = load_config(config)
    assert resolved.corpus.columns.caption == "alt" and resolved.corpus.columns.url == "url"
    assert resolved.corpus.columns.punsafe == "nsfw_score_opennsfw2" and resolved.selection.max_punsafe == 0.2
    assert resolved.selection.allowed_nsfw_tags is None  # from the preset: COYO has no LAION tag
    defaults = load_config(None)
    assert defaults.corpus.columns == Columns() and defaults.selection.allowed_nsfw_tags == ["UNLIKELY"]

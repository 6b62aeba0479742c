"""Hostile corpus files through the command line, as a user hits them: a `null` where a record
should be (which crashes pyarrow's json reader), a file cut short, a file that is not what its name
says, a file of no rows. Each ends in a counted drop naming the line or in one line naming the
file, exit status 1; never a crash, a traceback or a silent partial read."""

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke

from imagenot.pipeline.plan.command import plan_command

NO_NSFW = {"selection": {"allowed_nsfw_tags": None}}  # the files below have URL and TEXT only
RECORDS = [{"URL": f"http://a/{i}.jpg", "TEXT": f"a dog number {i} on a mat"} for i in range(30_000)]

tag_command = cli_command("tag")


def _config(tmp_path: Path, paths: list[Path], **sections) -> Path:
    config = tmp_path / "c.yaml"
    corpus = {"paths": [str(p) for p in paths], **sections.pop("corpus", {})}
    config.write_text(yaml.safe_dump({**NO_NSFW, "corpus": corpus, **sections}))
    return config


def _last_line(result) -> str:
    return result.output.strip().splitlines()[-1]


NULL_FILES = {  # name -> (text, the lines that are not records)
    "first.jsonl": ('null\n{"URL":"http://a/1","TEXT":"a dog"}\n{"URL":"http://a/2","TEXT":"a cat"}\n', [1]),
    "inside.jsonl": (
        '{"URL":"http://a/1","TEXT":"a dog"}\n  null\n\n[1]\n{"URL":"http://a/2","TEXT":"a cat"}\n',
        [2, 3, 4],
    ),
    "array.json": ('[null, {"URL":"http://a/1","TEXT":"a dog"}, 7, {"URL":"http://a/2","TEXT":"a cat"}]', [1, 3]),
}


def test_a_line_that_is_not_a_json_object_is_a_counted_malformed_line_in_tag(tmp_path):
    # In this process (its WordNet and matcher loaded): were a null line to reach pyarrow's json
    # reader again, the crash would end this test's worker, which xdist reports as this test failed.
    inputs = []
    for name, (text, _) in NULL_FILES.items():
        (tmp_path / name).write_text(text)
        inputs += ["--input", str(tmp_path / name)]
    config = _config(tmp_path, [])
    result = invoke(tag_command, [*inputs, "--out", str(tmp_path / "run"), "--config", str(config)])
    assert result.exit_code == 0, result.output
    tally = json.loads((tmp_path / "run" / "tag" / "figures.json").read_text())
    expected = [f"{name}:{line}" for name, (_, lines) in NULL_FILES.items() for line in lines]
    assert tally["dropped"] == {"line_malformed": len(expected)} and tally["rows_tagged"] == 6
    assert sorted(key.split(": ")[0] for key in tally["malformed_lines"]) == sorted(expected)


def test_under_strict_reading_a_null_line_is_an_error_naming_the_file_and_line(tmp_path):
    path = tmp_path / "first.jsonl"
    path.write_text(NULL_FILES["first.jsonl"][0])
    config = _config(tmp_path, [], corpus={"strict": True})
    result = invoke(tag_command, ["--input", str(path), "--out", str(tmp_path / "run"), "--config", str(config)])
    assert result.exit_code == 1
    error, note = _last_line(result).split("; ", 1)  # the journal's note: the tag command stopped part way
    assert error == f"Error: shard {path}: line 1: not a json object: null (corpus.strict is on)"
    assert note.startswith("`imagenot tag ") and note.endswith("(until then other commands refuse the run)")


def test_plan_samples_a_corpus_with_null_lines(tmp_path):
    path = tmp_path / "first.jsonl"
    path.write_text(NULL_FILES["first.jsonl"][0])
    result = invoke(plan_command, ["--config", str(_config(tmp_path, [path])), "--json"])  # in this process, as above
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["sample"]["rows"] == 3


def test_a_two_worker_tag_reads_null_lines_in_its_worker_processes(tmp_path):
    paths = [tmp_path / f"part-{i}.jsonl" for i in range(2)]
    for path in paths:
        path.write_text(NULL_FILES["first.jsonl"][0])
    config = _config(tmp_path, [], runner={"workers": 2})
    args = ["--input", str(tmp_path / "part-*.jsonl"), "--out", str(tmp_path / "run"), "--config", str(config)]
    result = invoke(tag_command, args)  # the files are read in the worker processes Beam starts
    assert result.exit_code == 0, result.output
    tally = json.loads((tmp_path / "run" / "tag" / "figures.json").read_text())
    assert tally["rows_read"] == 6 and tally["dropped"] == {"line_malformed": 2}


def _cut(path: Path) -> Path:
    cut = path.with_name("cut-" + path.name)
    data = path.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    return cut


def _written(tmp_path: Path, kind: str) -> Path:
    if kind == "parquet":
        path = tmp_path / "whole.parquet"
        pq.write_table(pa.Table.from_pylist(RECORDS), path, row_group_size=5_000)
        return path
    path = tmp_path / f"whole.{kind}.gz"
    with gzip.open(path, "wt") as out:
        if kind == "csv":
            out.write("URL,TEXT\n" + "".join(f"{r['URL']},{r['TEXT']}\n" for r in RECORDS))
        else:
            out.write("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("command", ["tag", "plan"])
def test_a_file_cut_short_is_an_error_naming_it_in_tag_and_plan(tmp_path, kind, command):
    cut = _cut(_written(tmp_path, kind))
    config = _config(tmp_path, [cut])
    if command == "tag":
        result = invoke(tag_command, ["--input", str(cut), "--out", str(tmp_path / "run"), "--config", str(config)])
    else:
        result = invoke(plan_command, ["--config", str(config)])
    assert result.exit_code == 1, result.output
    line = _last_line(result)
    assert line.startswith(f"Error: shard {cut}: ends early:") and "truncated" in line


def test_plan_from_the_footers_alone_tells_a_small_gzip_file_cut_short(tmp_path):
    """Under a megabyte, the head `plan` reads to estimate the rows is the whole file."""
    cut = _cut(_written(tmp_path, "csv"))
    result = invoke(plan_command, ["--config", str(_config(tmp_path, [cut])), "--sample", "0"])
    assert result.exit_code == 1 and "ends early" in _last_line(result)


def test_a_plain_file_named_gz_is_one_line_in_tag_and_plan(tmp_path):
    path = tmp_path / "plain.csv.gz"
    path.write_text("URL,TEXT\nhttp://a/1,a dog\n")
    config = _config(tmp_path, [path])
    for result in (
        invoke(tag_command, ["--input", str(path), "--out", str(tmp_path / "run"), "--config", str(config)]),
        invoke(plan_command, ["--config", str(config)]),
    ):
        assert result.exit_code == 1, result.output
        assert _last_line(result).startswith(f"Error: shard {path}: its name ends in .gz but it is not gzip data")


def test_a_gzip_file_of_several_streams_reads_whole(tmp_path):
    path = tmp_path / "two.csv.gz"
    path.write_bytes(gzip.compress(b"URL,TEXT\nhttp://a/1,a dog\n") + gzip.compress(b"http://a/2,a cat\n"))
    config = _config(tmp_path, [path])
    result = invoke(tag_command, ["--input", str(path), "--out", str(tmp_path / "run"), "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "tag" / "figures.json").read_text())["rows_tagged"] == 2


def test_plan_sample_of_a_header_only_csv_is_one_line(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("URL,TEXT\n")
    result = invoke(plan_command, ["--config", str(_config(tmp_path, [path]))])
    assert result.exit_code == 1, result.output
    assert _last_line(result) == (
        "Error: plan --sample: the corpus's 1 file(s) hold no rows (a header or nothing): there is nothing to "
        "project, and a build would find no class"
    )


def test_a_tsv_without_the_url_column_its_names_need_is_refused_naming_the_column(tmp_path):
    """Preset cc3m names two columns (caption, url); a file of captions alone once read 99.9% of
    its lines as malformed and ended with exit status 0."""
    path = tmp_path / "captions.tsv"
    path.write_text("".join(f"a dog on the beach number {i}\n" for i in range(999)) + "a cat\thttp://a/1.jpg\n")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"corpus": {"paths": [str(path)], "preset": "cc3m"}}))
    result = invoke(tag_command, ["--input", str(path), "--out", str(tmp_path / "run"), "--config", str(config)])
    assert result.exit_code == 1, result.output
    assert _last_line(result) == (
        f"Error: shard {path}: 999 of its first 1,000 lines have 1 field(s), where corpus.column_names names 2 "
        "(caption, url): it has no column ['url']; set corpus.column_names to its columns in order"
    )
    assert not (tmp_path / "run").exists()


def test_text_that_is_not_utf8_is_the_same_reason_in_every_format(tmp_path):
    """A caption or URL whose bytes are not UTF-8 is `caption_not_utf8` / `url_not_utf8` in csv and
    tsv too, as in json lines and parquet (csv once called it a malformed line)."""
    good, caption, url = b"http://a/1\ta dog", b"http://a/2\tcaf\xe9 cat", b"http://a/\xff3\ta cat"
    (tmp_path / "t.tsv").write_bytes(b"\n".join([b"URL\tTEXT", good, caption, url]) + b"\n")
    (tmp_path / "c.csv").write_bytes(
        b"\n".join(line.replace(b"\t", b",") for line in [b"URL\tTEXT", good, caption, url]) + b"\n"
    )
    (tmp_path / "j.jsonl").write_bytes(
        b"".join(b'{"URL":"%s","TEXT":"%s"}\n' % tuple(line.split(b"\t")) for line in [good, caption, url])
    )
    pairs = [line.split(b"\t") for line in [good, caption, url]]
    urls, texts = (pa.array([p[i] for p in pairs], pa.binary()).view(pa.string()) for i in (0, 1))
    pq.write_table(pa.table({"URL": urls, "TEXT": texts}), tmp_path / "p.parquet")
    inputs = [arg for name in ("t.tsv", "c.csv", "j.jsonl", "p.parquet") for arg in ("--input", str(tmp_path / name))]
    config = _config(tmp_path, [])
    result = invoke(tag_command, [*inputs, "--out", str(tmp_path / "run"), "--config", str(config)])
    assert result.exit_code == 0, result.output
    tally = json.loads((tmp_path / "run" / "tag" / "figures.json").read_text())
    assert tally["dropped"] == {"caption_not_utf8": 4, "url_not_utf8": 4} and tally["rows_tagged"] == 4

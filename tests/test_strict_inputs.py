"""Inputs read strictly, through the command line, each refused in one line before any work:
config values that mean a synset are WordNet noun synsets and a boolean is never a number;
`senses` spans are integer character offsets from the caption's start; `audit classes` reads its
corpus as the tag stage does and checks `--out` first; an empty class list is an error; an audit
given a folder that is not a run leaves it as it was."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_runner import cli_command, invoke

from imagenot.pipeline.audit.classes import classes_command
from imagenot.pipeline.audit.label_noise_command import label_noise_command
from imagenot.pipeline.commands.build import build_command
from imagenot.pipeline.commands.senses import senses_command


@pytest.mark.parametrize(
    ("ranking", "named"),
    [
        ({"vetoed": ["n99999999"]}, "ranking.vetoed holds 'n99999999': no WordNet 3.0 noun synset has that id"),
        (
            {"vetoed": ["n０２０８４０７１"]},
            "ranking.vetoed holds 'n０２０８４０７１': a WordNet noun id is n and 8 digits",
        ),
        ({"vetoed": ["n⁰²⁰⁸⁴⁰⁷¹"]}, "ranking.vetoed holds 'n⁰²⁰⁸⁴⁰⁷¹': a WordNet noun id is n and 8 digits"),
        ({"min_pass_share": True}, "ranking.min_pass_share: Value error, a boolean where a number is wanted"),
        ({"classes": False}, "ranking.classes: Value error, a boolean where a number is wanted"),
        ({"thresholds": {"packaged:all-MiniLM-L6-v2": True}}, "ranking.thresholds: Value error, a boolean where"),
    ],
)
def test_a_config_value_that_is_no_synset_or_a_boolean_for_a_number_is_refused(tmp_path, ranking, named):
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"corpus": {"paths": ["x.parquet"]}, "ranking": ranking}, allow_unicode=True))
    result = invoke(build_command, ["--config", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 1 and named in result.output, result.output
    assert not (tmp_path / "run").exists()


def test_a_picturable_root_that_names_no_synset_is_refused(tmp_path):
    config = tmp_path / "bad.yaml"
    selection = {"picturable_roots": ["physical_entity.n.01", "dog.n.99"]}
    config.write_text(yaml.safe_dump({"corpus": {"paths": ["x.parquet"]}, "selection": selection}))
    result = invoke(build_command, ["--config", str(config), "--out", str(tmp_path / "run")])
    assert result.exit_code == 1 and "selection.picturable_roots holds 'dog.n.99': not a WordNet 3.0" in result.output


@pytest.mark.parametrize(
    ("span", "said"),
    [
        ("-37:-32", "offsets count from the caption's start, 0 up"),
        ("9:2", "END must come after START"),
        ("2:99", "the caption has 21 characters"),
    ],
)
def test_a_bad_span_is_an_error_naming_span(span, said):
    result = invoke(senses_command, ["a crane on the harbor", f"--span={span}"])
    assert result.exit_code == 2 and "--span" in result.output and said in result.output, result.output
    assert "--lemma" not in result.output


@pytest.mark.parametrize("kind", [pa.float64(), pa.string()])
def test_span_columns_that_are_not_integers_are_an_error_naming_the_column(tmp_path, kind):
    values = {pa.float64(): [2.0], pa.string(): ["2"]}[kind]
    table = pa.table({"caption": ["a crane"], "lemma": ["crane"], "start": pa.array(values, kind), "end": [7]})
    pq.write_table(table, tmp_path / "in.parquet")
    args = ["--input", str(tmp_path / "in.parquet"), "--out", str(tmp_path / "out.parquet")]
    result = invoke(senses_command, args)
    assert result.exit_code == 1 and f"column start holds {kind}, not integers" in result.output, result.output
    assert not (tmp_path / "out.parquet").exists()


@pytest.fixture
def class_list(tmp_path):
    (tmp_path / "list.txt").write_text("n02084071\n")
    return tmp_path / "list.txt"


def test_audit_classes_reads_its_corpus_as_tag_does(tmp_path, class_list):
    (tmp_path / "text.parquet").write_text("not parquet at all")
    pq.write_table(pa.table({"URL": ["https://x/a"], "TEXT": [3]}), tmp_path / "numbers.parquet")
    for corpus, said in (
        ("text.parquet", "text.parquet: not a readable parquet file"),
        ("numbers.parquet", "column 'TEXT' (caption) has type int64, expected string"),
    ):
        out = tmp_path / "out.tsv"
        result = invoke(
            classes_command, ["--list", str(class_list), "--corpus", str(tmp_path / corpus), "--out", str(out)]
        )
        assert result.exit_code == 1 and said in result.output and "Traceback" not in result.output, result.output
        assert not out.exists()


def test_audit_classes_checks_out_before_the_work(tmp_path, class_list):
    (tmp_path / "folder").mkdir()
    args = ["--list", str(class_list), "--corpus", str(tmp_path / "none-*.parquet"), "--out", str(tmp_path / "folder")]
    result = invoke(classes_command, args)
    assert result.exit_code == 1 and f"--out {tmp_path / 'folder'}: is a folder" in result.output
    assert list((tmp_path / "folder").iterdir()) == []


def test_an_empty_class_list_is_an_error(tmp_path):
    (tmp_path / "empty.txt").write_text("# no class yet\n\n")
    args = ["--list", str(tmp_path / "empty.txt"), "--corpus", "x.parquet", "--out", str(tmp_path / "out.tsv")]
    result = invoke(classes_command, args)
    assert result.exit_code == 1 and "empty.txt: lists no class" in result.output


def test_an_audit_of_a_folder_that_is_not_a_run_leaves_it_as_it_was(tmp_path):
    folder = tmp_path / "not-a-run"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    audit = cli_command("audit")
    for command, args in (
        *((audit.get_command(None, name), []) for name in ("embed", "duplicates", "agreement")),
        (audit.get_command(None, "duplicates"), ["--drop"]),
        (label_noise_command, ["--probs", str(tmp_path / "probs.parquet")]),
    ):
        for run_dir in (folder, tmp_path / "NOPE"):
            result = invoke(command, ["--run", str(run_dir), *args])
            assert result.exit_code == 1 and "Traceback" not in result.output, result.output
            assert len(result.output.strip().splitlines()) == 1, result.output
        assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"] and not (tmp_path / "NOPE").exists()

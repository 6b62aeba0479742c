import pytest
from pydantic import ValidationError

from imagenot.pipeline.config.schema import Config, ConfigError, load_config


def test_defaults_fit_laion(tmp_path):
    config = load_config(None)
    assert config.corpus.columns.url == "URL"
    assert config.corpus.columns.caption == "TEXT"
    assert config.runner.workers == 1


def test_column_mapping_and_unread_columns(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "corpus:\n  paths: [c.parquet]\n  columns:\n    url: url\n    caption: caption\n    nsfw: null\n"
        "selection:\n  allowed_nsfw_tags: null\n"
    )
    columns = load_config(path).corpus.columns
    assert columns.source_columns()["caption"] == "caption"
    assert "nsfw" not in columns.source_columns()


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("corpus:\n  colums: {}\n", "corpus.colums: Extra inputs are not permitted"),
        ("tagging:\n  batch_rows: ten\n", "tagging.batch_rows: Input should be a valid integer"),
        ("tagging:\n  batch_rows: 10\n", "tagging.batch_rows: Input should be greater than or equal to 1000"),
        ("runner:\n  kind: spark\n", "runner.kind: Input should be 'local'"),
    ],
)
def test_invalid_config_names_file_key_and_what_is_allowed(tmp_path, yaml_text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


def test_unreadable_config_is_named(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("corpus: [unclosed\n")
    with pytest.raises(ConfigError, match="broken.yaml: cannot read config"):
        load_config(path)


def test_config_is_frozen():
    with pytest.raises(ValidationError, match="frozen"):
        Config().runner.workers = 3


def test_a_query_template_with_an_unknown_field_is_refused_before_any_work(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("scoring:\n  query_template: '{lemmma}: {gloss}'\n")
    with pytest.raises(ConfigError, match=r"scoring.query_template: .*unknown field \{lemmma\}"):
        load_config(path)


def test_a_class_query_template_with_an_unknown_field_is_refused_before_any_work(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("image_audit:\n  class_query_template: 'a photo of a {lemmma}.'\n")
    with pytest.raises(ConfigError, match=r"image_audit.class_query_template: .*unknown field \{lemmma\}"):
        load_config(path)


@pytest.mark.parametrize(
    ("yaml_text", "setting", "column"),
    [
        ("corpus:\n  columns:\n    nsfw: null\n", "allowed_nsfw_tags", "nsfw"),
        (
            "corpus:\n  columns:\n    punsafe: null\nselection:\n  allowed_nsfw_tags: null\n  max_punsafe: 0.5\n",
            "max_punsafe",
            "punsafe",
        ),
    ],
)
def test_a_row_nsfw_check_without_its_column_is_refused_before_any_work(tmp_path, yaml_text, setting, column):
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError, match=rf"selection.{setting} needs .*corpus.columns.{column} is null"):
        load_config(path)


def test_a_null_column_is_fine_when_its_row_nsfw_check_is_off(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "corpus:\n  paths: [c.parquet]\n  columns:\n    nsfw: null\n    punsafe: null\n"
        "selection:\n  allowed_nsfw_tags: null\n"
    )
    selection = load_config(path).selection
    assert selection.row_nsfw_columns() == {}
    assert Config().selection.row_nsfw_columns() == {"allowed_nsfw_tags": "nsfw"}


def _config(tmp_path, text: str):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_an_empty_config_is_refused_when_it_loads(tmp_path, text):
    with pytest.raises(
        ConfigError, match=r"c.yaml: the config is empty; it needs at least corpus.paths or corpus.synth"
    ):
        load_config(_config(tmp_path, text))


def test_a_config_without_a_corpus_is_refused_unless_the_command_gives_one(tmp_path):
    path = _config(tmp_path, "ranking:\n  classes: 3\n")
    with pytest.raises(ConfigError, match=r"corpus: no corpus given; set corpus.paths .* or corpus.synth"):
        load_config(path, needs_corpus=True)
    given = load_config(path, ["gs://b/shards/*.parquet"], needs_corpus=True)
    assert given.corpus.paths == ["gs://b/shards/*.parquet"]
    assert load_config(path).ranking.classes == 3  # a stage command on a run reads no corpus


def test_a_missing_reference_class_list_is_refused_when_the_config_loads(tmp_path):
    path = _config(tmp_path, f"corpus:\n  paths: [c.parquet]\nselection:\n  reference: {tmp_path}/mine.txt\n")
    with pytest.raises(
        ConfigError, match=r"selection.reference: '.*mine.txt' is neither imagenet1k nor imagenet21k nor an existing"
    ):
        load_config(path)
    (tmp_path / "mine.txt").write_text("n02084071\n")
    assert load_config(path).selection.reference.endswith("mine.txt")


def test_a_repeated_key_is_refused_naming_it_and_both_lines(tmp_path):
    path = _config(tmp_path, "corpus:\n  paths: [c.parquet]\nselection:\n  min_captions: 10\n  min_captions: 1000\n")
    with pytest.raises(ConfigError, match=r"key 'min_captions' appears twice \(lines 4 and 5\)"):
        load_config(path)


def test_url_and_caption_in_one_column_is_refused(tmp_path):
    path = _config(tmp_path, "corpus:\n  paths: [c.parquet]\n  columns:\n    url: TEXT\n")
    with pytest.raises(ConfigError, match=r"corpus.columns.url and corpus.columns.caption both name column 'TEXT'"):
        load_config(path)


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        (
            "corpus:\n  paths: [c.parquet]\nselection:\n  min_caption: 5\n",
            "selection.min_caption: .*did you mean 'min_captions'",
        ),
        ("corpus:\n  paths: [c.parquet]\nsampeling:\n  seed: 1\n", "sampeling: .*did you mean 'sampling'"),
        ("corpus:\n  paths: [c.parquet]\n  colums:\n    url: u\n", "corpus.colums: .*did you mean 'columns'"),
        (
            "corpus:\n  paths: [c.parquet]\nrunner:\n  kind: dataflow\n  dataflow: {project: p, region: r, "
            "temp_location: gs://t, worker_image: i, max_worker: 3}\n",
            "runner.dataflow.max_worker: .*did you mean 'max_workers'",
        ),
    ],
)
def test_a_mistyped_key_gets_a_suggestion(tmp_path, text, hint):
    with pytest.raises(ConfigError, match=hint):
        load_config(_config(tmp_path, text))


def test_a_far_off_key_gets_no_suggestion(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(_config(tmp_path, "corpus:\n  paths: [c.parquet]\nzzzzzz: 1\n"))
    assert "did you mean" not in str(err.value)


def test_a_config_that_is_not_a_mapping_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"a config is a mapping of sections .* not a list"):
        load_config(_config(tmp_path, "- corpus\n- tagging\n"))


def test_the_priority_path_is_refused_for_the_top_strategy(tmp_path):
    (tmp_path / "c.yaml").write_text("corpus: {paths: [x.parquet]}\nscoring: {first_phase: priority}\n")
    with pytest.raises(ConfigError, match=r"first_phase 'priority' needs sampling.strategy 'threshold' or 'matched'"):
        load_config(str(tmp_path / "c.yaml"))
    (tmp_path / "c.yaml").write_text(
        "corpus: {paths: [x.parquet]}\nscoring: {first_phase: priority}\n"
        "sampling: {strategy: threshold, threshold: 0.6}\n"
    )
    assert load_config(str(tmp_path / "c.yaml")).scoring.first_phase == "priority"

import pytest

from imagenot.pipeline.config import Config, ConfigError, load_config


def test_defaults_fit_laion(tmp_path):
    config = load_config(None)
    assert config.corpus.columns.url == "URL"
    assert config.corpus.columns.caption == "TEXT"
    assert config.runner.workers == 1


def test_column_mapping_and_unread_columns(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("corpus:\n  paths: [c.parquet]\n  columns:\n    url: url\n    caption: caption\n    nsfw: null\nselection:\n  allowed_nsfw_tags: null\n")
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
    with pytest.raises(Exception):
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
    path.write_text("corpus:\n  paths: [c.parquet]\n  columns:\n    nsfw: null\n    punsafe: null\nselection:\n  allowed_nsfw_tags: null\n")
    selection = load_config(path).selection
    assert selection.row_nsfw_columns() == {}
    assert Config().selection.row_nsfw_columns() == {"allowed_nsfw_tags": "nsfw"}

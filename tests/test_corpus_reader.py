from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from imagenot.pipeline.config.schema import Columns
from imagenot.pipeline.corpus.reader import (
    DROP_REASONS,
    CorpusError,
    list_shards,
    read_shard,
    validate_shard,
)

OTHER_CORPUS = Columns(
    url="url",
    caption="caption",
    width=None,
    height=None,
    similarity="score",
    punsafe=None,
    nsfw=None,
    sample_id="id",
    license=None,
)
DEFAULT_COLUMNS = Columns()  # LAION-5B's column names


def write(path, columns: dict, schema: pa.Schema | None = None) -> str:
    pq.write_table(pa.table(columns, schema=schema), path)
    return str(path)


def read_all(path: str, columns: Columns = DEFAULT_COLUMNS, batch_rows: int = 1000):
    return list(read_shard(path, columns, batch_rows))


def laion_shard(tmp_path, name="part-00000.parquet", **overrides):
    columns = {
        "SAMPLE_ID": pa.array([10, 11], pa.int64()),
        "URL": ["http://a/1.jpg", "https://b/2.jpg"],
        "TEXT": ["a dog", "two mice"],
        "WIDTH": pa.array([640.0, 320.4]),
        "HEIGHT": pa.array([480, 200], pa.int32()),
        "similarity": pa.array([0.3, 0.31], pa.float32()),
        "punsafe": [0.01, 0.95],
        "NSFW": ["UNLIKELY", "NSFW"],
        "LICENSE": ["?", "?"],
        "pwatermark": [0.1, 0.2],
    }
    columns.update(overrides)
    return write(tmp_path / name, columns)


def test_laion_defaults_give_canonical_columns_and_types(tmp_path):
    path = laion_shard(tmp_path)
    (only,) = read_all(path)
    batch = only.batch
    assert batch.schema.names == [
        "row_id",
        "url",
        "caption",
        "width",
        "height",
        "similarity",
        "punsafe",
        "nsfw",
        "sample_id",
        "license",
    ]
    assert batch.column("row_id").to_pylist() == ["part-00000:0", "part-00000:1"]
    assert batch.column("width").to_pylist() == [640, 320]
    assert batch.schema.field("width").type == pa.int64()
    assert batch.schema.field("height").type == pa.int64()
    assert batch.schema.field("similarity").type == pa.float64()
    assert batch.column("sample_id").to_pylist() == ["10", "11"]
    assert "pwatermark" not in batch.schema.names


def test_column_mapping_reads_only_mapped_columns(tmp_path):
    path = write(
        tmp_path / "shard.parquet",
        {
            "id": ["x1", "x2"],
            "url": ["http://a/1", "http://a/2"],
            "caption": ["cat", "dog"],
            "score": pa.array([0, 1], pa.int16()),
            "junk": pa.array([[1], [2]], pa.list_(pa.int64())),  # unreadable as any canonical column
        },
    )
    (only,) = read_all(path, OTHER_CORPUS)
    assert only.batch.schema.names == ["row_id", "url", "caption", "similarity", "sample_id"]
    assert only.batch.column("similarity").to_pylist() == [0.0, 1.0]
    assert only.batch.column("row_id").to_pylist() == ["shard:0", "shard:1"]


def test_absent_optional_columns_are_not_produced(tmp_path):
    path = write(tmp_path / "p.parquet", {"URL": ["http://a/1"], "TEXT": ["a cat"]})
    (only,) = read_all(path)
    assert only.batch.schema.names == ["row_id", "url", "caption"]


def test_large_strings_and_string_ids_are_read_as_strings(tmp_path):
    path = laion_shard(
        tmp_path,
        TEXT=pa.array(["a dog", "   "], pa.large_string()),
        SAMPLE_ID=pa.array(["abc", "def"], pa.large_string()),
    )
    (only,) = read_all(path)
    assert only.batch.schema.field("caption").type == pa.string()
    assert only.batch.column("sample_id").to_pylist() == ["abc"]
    assert only.dropped["caption_empty"] == 1


def test_float_sizes_that_are_nan_become_null(tmp_path):
    path = laion_shard(tmp_path, WIDTH=pa.array([float("nan"), 99.6]))
    (only,) = read_all(path)
    assert only.batch.column("width").to_pylist() == [None, 100]


@pytest.mark.parametrize("missing", ["URL", "TEXT"])
def test_missing_required_column_is_named(tmp_path, missing):
    columns = {"URL": ["http://a/1"], "TEXT": ["a cat"]}
    del columns[missing]
    path = write(tmp_path / "p.parquet", columns)
    with pytest.raises(CorpusError) as err:
        validate_shard(path, Columns())
    assert path in str(err.value) and repr(missing) in str(err.value)
    assert "missing" in str(err.value) and "string" in str(err.value)


@pytest.mark.parametrize(
    ("column", "values", "found", "expected"),
    [
        ("TEXT", pa.array([1, 2], pa.int64()), "int64", "string"),
        ("TEXT", pa.array([b"a", b"b"], pa.binary()), "binary", "string"),
        ("URL", pa.array([None, None], pa.null()), "null", "string"),
        ("WIDTH", pa.array(["640", "480"]), "string", "integer or float"),
        ("similarity", pa.array([True, False]), "bool", "float or integer"),
        ("SAMPLE_ID", pa.array([1.5, 2.5]), "double", "integer or string"),
        ("NSFW", pa.array([0, 1], pa.int8()), "int8", "string"),
    ],
)
def test_mistyped_column_names_shard_column_found_and_expected(tmp_path, column, values, found, expected):
    path = laion_shard(tmp_path, **{column: values})
    message = f"shard {path}: column {column!r}"
    for check in (lambda: validate_shard(path, Columns()), lambda: read_all(path)):
        with pytest.raises(CorpusError) as err:
            check()
        assert message in str(err.value)
        assert f"has type {found}, expected {expected}" in str(err.value)


def test_all_null_optional_column_is_read_as_nulls(tmp_path):
    path = laion_shard(tmp_path, LICENSE=pa.array([None, None], pa.null()))
    (only,) = read_all(path)
    assert only.batch.column("license").to_pylist() == [None, None]


def test_not_parquet_is_an_error_naming_the_shard(tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_text("URL,TEXT\nhttp://a,cat\n")
    with pytest.raises(CorpusError, match=f"shard {path}: not a readable parquet file"):
        validate_shard(str(path), Columns())


def test_truncated_shard_is_an_error_naming_the_shard(tmp_path):
    path = laion_shard(tmp_path)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(CorpusError, match="part-00000.parquet"):
        read_all(path)


def test_unopenable_path_is_an_error_naming_the_shard(tmp_path):
    path = tmp_path / "folder.parquet"
    path.mkdir()
    with pytest.raises(CorpusError, match=f"shard {path}: cannot open"):
        validate_shard(str(path), Columns())


def test_each_drop_reason_is_counted_once_in_fixed_order(tmp_path):
    rows = [  # (url, caption, reason)
        ("http://a/0", "a tabby cat", None),
        ("http://a/1", None, "caption_missing"),
        (None, None, "caption_missing"),  # several problems: the first reason counts
        ("http://a/3", "", "caption_empty"),
        ("http://a/4", " \t\n", "caption_empty"),
        ("ftp://a/5", "...", "caption_not_text"),
        ("http://a/6", "★★★", "caption_not_text"),
        ("http://a/7", "\u200b", "caption_not_text"),
        (None, "a dog", "url_missing"),
        ("  ", "a dog", "url_missing"),
        ("ftp://a/10", "a dog", "url_not_http"),
        ("file:///etc/passwd", "a dog", "url_not_http"),
        ("//cdn/12.jpg", "a dog", "url_not_http"),
        ("http://", "a dog", "url_not_http"),
        ("HTTPS://A/14.JPG", "2019", None),  # digits are text; scheme is case-insensitive
        ("https://a/15", "Ελληνικά γράμματα", None),
    ]
    path = write(tmp_path / "p.parquet", {"URL": [r[0] for r in rows], "TEXT": [r[1] for r in rows]})
    (only,) = read_all(path)
    expected = {reason: sum(r[2] == reason for r in rows) for reason in DROP_REASONS}
    assert only.dropped == expected
    assert only.batch.column("row_id").to_pylist() == ["p:0", "p:14", "p:15"]
    assert only.rows_read == len(rows)


def test_accounting_and_row_ids_over_a_whole_shard(tmp_path):
    n = 2_500
    urls = [None if i % 7 == 0 else f"http://h/{i}" for i in range(n)]
    captions = ["" if i % 11 == 0 else f"caption {i}" for i in range(n)]
    path = write(tmp_path / "part-00003.parquet", {"URL": urls, "TEXT": captions})
    batches = read_all(path, batch_rows=1_000)
    assert [b.rows_read for b in batches] == [1_000, 1_000, 500]
    for b in batches:
        assert b.rows_read == b.batch.num_rows + sum(b.dropped.values())
    kept = [rid for b in batches for rid in b.batch.column("row_id").to_pylist()]
    assert kept == [f"part-00003:{i}" for i in range(n) if i % 7 and i % 11]
    assert sum(b.dropped["caption_empty"] for b in batches) == len(range(0, n, 11))
    assert sum(b.dropped["url_missing"] for b in batches) == sum(1 for i in range(n) if i % 7 == 0 and i % 11)
    captions_out = [c for b in batches for c in b.batch.column("caption").to_pylist()]
    assert captions_out == [f"caption {i}" for i in range(n) if i % 7 and i % 11]


def test_list_shards_expands_globs_dedupes_and_sorts(tmp_path):
    for name in ("b.parquet", "a.parquet", "c.txt"):
        (tmp_path / name).write_bytes(b"")
    found = list_shards([str(tmp_path / "*.parquet"), str(tmp_path / "a.parquet")])
    assert found == [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]


def test_list_shards_pattern_matching_nothing_is_an_error(tmp_path):
    pattern = str(tmp_path / "nothing-*.parquet")
    with pytest.raises(CorpusError, match="matches no file") as err:
        list_shards([pattern])
    assert pattern in str(err.value)
    with pytest.raises(CorpusError):
        list_shards([])


def _not_utf8(values: list[bytes | None]) -> pa.Array:
    """A string column holding bytes that are not UTF-8, as some writers produce (parquet does
    not check)."""
    return pa.array(values, pa.binary()).view(pa.string())


def test_text_that_is_not_utf8_is_a_counted_drop_and_the_other_rows_go_on(tmp_path):
    path = write(
        tmp_path / "bad.parquet",
        {
            "URL": _not_utf8([b"http://a/1", b"http://a/\xff2", b"http://a/3", b"http://a/4", b"http://a/5"]),
            "TEXT": _not_utf8([b"a dog", b"a cat", b"caf\xe9 cat", None, b"a \xc3\xa9clair"]),
            "LICENSE": _not_utf8([b"?", b"?", b"?", b"?", b"cc\xfe"]),
        },
    )
    columns = Columns(width=None, height=None, similarity=None, punsafe=None, nsfw=None, sample_id=None)
    (only,) = read_all(path, columns)
    assert only.batch.column("caption").to_pylist() == ["a dog"]
    assert only.batch.column("row_id").to_pylist() == ["bad:0"]
    dropped = {reason: n for reason, n in only.dropped.items() if n}
    assert dropped == {"caption_not_utf8": 1, "url_not_utf8": 1, "caption_missing": 1, "text_not_utf8": 1}
    assert only.rows_read == len(only.batch) + sum(only.dropped.values())


def test_a_shard_with_no_rows_reads_as_one_empty_batch(tmp_path):
    schema = pa.schema([("URL", pa.string()), ("TEXT", pa.string()), ("WIDTH", pa.float64())])
    path = write(tmp_path / "empty.parquet", {"URL": [], "TEXT": [], "WIDTH": []}, schema)
    (only,) = read_all(path)
    assert only.rows_read == 0 and len(only.batch) == 0
    assert only.batch.schema.names == ["row_id", "url", "caption", "width"]
    assert sum(only.dropped.values()) == 0


@pytest.mark.parametrize(
    ("column", "values", "reason"),
    [
        ("punsafe", [0.0, 1.0, -0.2, 1.5, float("inf"), None], "punsafe_out_of_range"),
        ("similarity", [-1.0, 1.0, -1.01, 7.0, float("-inf"), None], "similarity_out_of_range"),
        ("WIDTH", [1.0, 4096.0, 0.0, -640.0, float("inf"), None], "size_out_of_range"),
        ("HEIGHT", pa.array([1, 4096, 0, -3, 2**40, None], pa.int64()), "size_out_of_range"),
    ],
)
def test_values_out_of_range_are_their_own_counted_reason(tmp_path, column, values, reason):
    six = {
        "SAMPLE_ID": pa.array(range(6), pa.int64()),
        "URL": ["http://a/1"] * 6,
        "TEXT": ["a dog"] * 6,
        "WIDTH": [640.0] * 6,
        "HEIGHT": [480] * 6,
        "similarity": [0.3] * 6,
        "punsafe": [0.1] * 6,
        "NSFW": ["UNLIKELY"] * 6,
        "LICENSE": ["?"] * 6,
    }
    path = write(tmp_path / "part-00000.parquet", {**six, column: values})
    (only,) = read_all(path)
    assert only.dropped[reason] == 3
    assert only.batch.column("row_id").to_pylist() == ["part-00000:0", "part-00000:1", "part-00000:5"]

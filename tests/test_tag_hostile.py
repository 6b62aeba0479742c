"""Hostile corpus rows through the reader and the tagger: no row content makes the stage raise,
and every row read is tagged, unmatched or dropped under a named reason."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
from cli_runner import cli_command, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imagenot.pipeline.config.schema import Columns
from imagenot.pipeline.corpus.reader import DROP_REASONS, read_shard
from imagenot.pipeline.corpus.synth import synth_corpus
from imagenot.pipeline.tag.stage import tag_batch

tag_command = cli_command("tag")


def _as_utf8_or_not(text: str) -> bytes:
    """A string's bytes; lone surrogates become the invalid bytes a careless writer stores."""
    return text.encode("utf-8", "surrogatepass")


_CAPTIONS = st.one_of(
    st.none(),
    st.text(max_size=40),  # any code point, surrogates included
    st.text(
        alphabet=st.sampled_from("dog cat\u200b\u00ad\ufeff&amp;#39;;\u0000\u202e\uff43\ufb01 ://www./"), max_size=60
    ),
    st.text(min_size=1, max_size=20).map(lambda t: t * 500),  # very long
)
_URLS = st.one_of(
    st.none(), st.sampled_from(["http://a/1.jpg", "https://b/x", "ftp://c", "", " ", "data:x"]), st.text(max_size=20)
)
_NUMBERS = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**40), 2**40).map(float))


def _string_column(values: list, large: bool) -> pa.Array:
    raw = pa.array(
        [None if v is None else _as_utf8_or_not(v) for v in values], pa.large_binary() if large else pa.binary()
    )
    return raw.view(pa.large_string() if large else pa.string())


@st.composite
def shards(draw):
    n = draw(st.integers(0, 30))
    columns = {
        "TEXT": _string_column(draw(st.lists(_CAPTIONS, min_size=n, max_size=n)), draw(st.booleans())),
        "URL": _string_column(draw(st.lists(_URLS, min_size=n, max_size=n)), draw(st.booleans())),
    }
    for name in ("WIDTH", "similarity", "punsafe"):
        kind = draw(st.sampled_from(["float", "int", "null", "absent"]))
        values = draw(st.lists(_NUMBERS, min_size=n, max_size=n))
        if kind == "float":
            columns[name] = pa.array(values, pa.float64())
        elif kind == "int":
            columns[name] = pa.array([int(v) if v is not None and abs(v) < 2**62 else None for v in values], pa.int64())
        elif kind == "null":
            columns[name] = pa.nulls(n)
    if draw(st.booleans()):
        columns["NSFW"] = _string_column(
            draw(
                st.lists(
                    st.one_of(st.none(), st.sampled_from(["UNLIKELY", "NSFW"]), st.text(max_size=5)),
                    min_size=n,
                    max_size=n,
                )
            ),
            False,
        )
    return pa.table(columns)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(table=shards(), batch_rows=st.integers(1, 40))
def test_no_row_content_makes_the_reader_or_tagger_raise(tmp_path_factory, stage_matcher, table, batch_rows):
    path = tmp_path_factory.mktemp("fuzz") / "shard.parquet"
    pq.write_table(table, path)
    rows_read = tagged = unmatched = dropped = 0
    for piece in read_shard(str(path), Columns(), batch_rows):
        assert set(piece.dropped) <= set(DROP_REASONS)
        out = tag_batch(piece.batch, stage_matcher)
        rows_read += piece.rows_read
        tagged += out.num_rows
        unmatched += piece.batch.num_rows - out.num_rows
        dropped += sum(piece.dropped.values())
    assert rows_read == table.num_rows == tagged + unmatched + dropped


def test_an_empty_shard_and_undecodable_text_beside_good_shards(tmp_path):
    corpus = tmp_path / "corpus"
    synth_corpus(corpus, 400, 3, "http://127.0.0.1:9/img", 200)
    pq.write_table(pq.read_table(corpus / "part-00000.parquet").slice(0, 0), corpus / "part-empty.parquet")
    good = pq.read_table(corpus / "part-00001.parquet").slice(0, 3)
    captions = _string_column(["a dog on a mat", "caf\udce9 cat", "a cat"], False)
    urls = _string_column(["http://a/1", "http://a/2", "http://a/\udcff3"], False)
    bad = good.set_column(good.schema.get_field_index("TEXT"), "TEXT", captions)
    bad = bad.set_column(bad.schema.get_field_index("URL"), "URL", urls)
    pq.write_table(bad, corpus / "part-bad.parquet")
    result = invoke(tag_command, ["--input", str(corpus / "part-*.parquet"), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    tally = (tmp_path / "run" / "tag" / "figures.json").read_text()
    assert '"part-empty.parquet": 1' in tally
    assert '"caption_not_utf8": 1' in tally and '"url_not_utf8": 1' in tally
    # the four small files are one work unit, named by its first and last file
    (unit,) = (tmp_path / "run" / "tag" / "tagged").iterdir()
    assert unit.name == "part-00000..part-empty.parquet"
    assert pq.read_table(unit).num_rows == json.loads(tally)["rows_tagged"]

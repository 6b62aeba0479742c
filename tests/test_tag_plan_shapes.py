"""The tag stage cuts its work units from the shapes the preflight read: each footer is read once."""

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.pipeline.config.schema import load_config
from imagenot.pipeline.corpus import units
from imagenot.pipeline.corpus.preflight import check_corpus_schema
from imagenot.pipeline.tag.stage import plan_tagging


def test_tag_plans_its_units_from_the_preflights_pass(tmp_path, monkeypatch):
    table = pa.table({"URL": [f"http://a/{i}.jpg" for i in range(3_000)], "TEXT": ["a dog"] * 3_000})
    table = table.append_column("NSFW", pa.array(["UNLIKELY"] * 3_000))
    for n in range(3):
        pq.write_table(table, tmp_path / f"part-{n}.parquet", row_group_size=500)
    config = load_config(None, [str(tmp_path / "*.parquet")])
    config = config.model_copy(update={"corpus": config.corpus.model_copy(update={"work_unit_rows": 1_000})})
    read, reads = units.file_shape, []
    monkeypatch.setattr(units, "file_shape", lambda path, layout: reads.append(path) or read(path, layout))

    check_corpus_schema(config)
    planned = plan_tagging(config, str(tmp_path / "run"))

    shards = sorted(str(p) for p in tmp_path.glob("*.parquet"))
    assert sorted(reads) == shards  # by the preflight, not again
    assert planned["shards"] == shards
    assert [unit.rows for unit in planned["units"]] == [1_000] * 9

    (tmp_path / "part-1.parquet").unlink()  # a changed corpus is read again
    assert plan_tagging(config, str(tmp_path / "run"))["shards"] == [shards[0], shards[2]]
    assert len(reads) == 5

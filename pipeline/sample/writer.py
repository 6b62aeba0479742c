"""Parquet output in fixed-size shards `part-00000.parquet`, ...: each written atomically."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from imagenot.pipeline.run.files import atomic_output


class ShardWriter:
    """Takes tables in output order and writes them as shards of `shard_rows` rows (the last one
    shorter); a folder that got no rows still gets one empty shard, so it always has a schema."""

    def __init__(self, folder: str, schema: pa.Schema, shard_rows: int):
        self.folder, self.schema, self.shard_rows = folder, schema, shard_rows
        self.paths: list[str] = []
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        self._pending.append(table.select(self.schema.names).cast(self.schema))
        self._pending_rows += table.num_rows
        while self._pending_rows >= self.shard_rows:
            self._flush(self.shard_rows)

    def close(self) -> list[str]:
        if self._pending_rows or not self.paths:
            self._flush(self._pending_rows)
        return self.paths

    def _flush(self, rows: int) -> None:
        pending = (
            pa.concat_tables(self._pending, promote_options="none") if self._pending else self.schema.empty_table()
        )
        shard, rest = pending.slice(0, rows), pending.slice(rows)
        path = FileSystems.join(self.folder, f"part-{len(self.paths):05d}.parquet")
        with atomic_output(path) as stream:
            pq.write_table(shard.combine_chunks(), stream, compression="zstd")
        self.paths.append(path)
        self._pending, self._pending_rows = [rest], rest.num_rows

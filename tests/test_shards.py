from imagenot.pipeline.run.shards import sum_tallies


def test_sum_tallies_adds_counts_and_nested_counts():
    total = sum_tallies(
        [
            {"rows": 3, "dropped": {"b": 1}, "synsets": {"n1": 2}},
            {"rows": 4, "dropped": {"a": 2, "b": 1}, "synsets": {}},
        ]
    )
    assert total == {"dropped": {"a": 2, "b": 2}, "rows": 7, "synsets": {"n1": 2}}
    assert list(total) == ["dropped", "rows", "synsets"]
    assert list(total["dropped"]) == ["a", "b"]


def test_sum_of_partial_sums_is_the_sum():
    parts = [{"rows": n, "by": {str(n % 3): n}} for n in range(10)]
    assert sum_tallies([sum_tallies(parts[:4]), sum_tallies(parts[4:])]) == sum_tallies(parts)
    assert sum_tallies([]) == {}


def test_progress_counts_only_the_shards_this_run_processes(tmp_path):
    from imagenot.pipeline.run.progress import _Done

    (tmp_path / "tallies").mkdir()
    for name, rows in (("a", 3), ("b", 4), ("stale", 100)):  # "stale": a shard the dataset no longer has
        (tmp_path / "tallies" / f"{name}.json").write_text(f'{{"rows": {rows}}}')
    assert _Done(str(tmp_path), ["in/a.parquet", "b", "c"], "rows").refresh() == (2, 7)


def test_progress_takes_the_rows_its_caller_counted_and_opens_no_shard(tmp_path):
    from imagenot.pipeline.run.progress import _Done

    shards = [str(tmp_path / "absent" / f"{name}.parquet") for name in ("a", "b")]  # never opened
    done = _Done(str(tmp_path), shards, "rows_read", [30, 50])
    assert done.total_rows() == 80 and done.refresh() == (0, 0)
    (tmp_path / "tallies").mkdir()
    (tmp_path / "tallies" / "a.json").write_text('{"rows_read": 29}')  # a finished shard counts its given rows
    assert done.refresh() == (1, 30)


def test_time_left_moves_with_the_rows_read_inside_running_shards(tmp_path):
    """Parquet shards: a finished one counts its footer's rows, a running one what its worker last
    reported through `shard_progress` while it read batches."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from imagenot.pipeline.run import shard_progress
    from imagenot.pipeline.run.progress import _Done, time_left
    from imagenot.pipeline.run.shards import read_batches, resumable_shard, shard_files

    shards = []
    for name, rows in (("a", 30), ("b", 50)):
        shards.append(str(tmp_path / f"{name}.parquet"))
        pq.write_table(pa.table({"x": list(range(rows))}), shards[-1])
    stage = tmp_path / "stage"
    done = _Done(str(stage), shards, "rows_read")
    assert done.total_rows() == 80 and done.refresh() == (0, 0)
    resumable_shard(shard_files(str(stage), "out", shards[0]), lambda: {"rows_read": 30})  # a finished shard

    def read_some():  # a shard part read: its worker reported after each batch
        for n, _ in enumerate(read_batches(shards[1], batch_rows=20)):
            if n == 1:
                assert done.refresh() == (1, 30 + 40)
                raise RuntimeError("killed mid-shard")

    shard_progress.INTERVAL = 0.0
    try:
        resumable_shard(shard_files(str(stage), "out", shards[1]), read_some)
    except RuntimeError:
        pass
    finally:
        shard_progress.INTERVAL = 2.0
    assert done.refresh() == (1, 70)
    assert time_left(80 - 70, 5.0) == "about 2 s left" and time_left(10, 0.0) == "time left unknown yet"

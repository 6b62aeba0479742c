from imagenot.pipeline.shards import sum_tallies


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
    from imagenot.pipeline.progress import _Tallies

    (tmp_path / "tallies").mkdir()
    for name, rows in (("a", 3), ("b", 4), ("stale", 100)):  # "stale": a shard the dataset no longer has
        (tmp_path / "tallies" / f"{name}.json").write_text(f'{{"rows": {rows}}}')
    assert _Tallies(str(tmp_path), ["in/a.parquet", "b", "c"], "rows").refresh() == (2, 7)

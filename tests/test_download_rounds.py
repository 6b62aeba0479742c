"""Reserve and backfill planning: which rows each round fetches, and what a class ends with."""

from __future__ import annotations

from imagenot.pipeline.download.rounds import ClassCandidates, next_fetch, walk_class


def _class(urls: list[str], target: int, class_index: int = 0) -> ClassCandidates:
    return ClassCandidates(
        class_index, f"n{class_index:08d}", [f"r{class_index}-{i}" for i in range(len(urls))], urls, target
    )


def _rounds(classes: list[ClassCandidates], good: set[str], max_rounds: int = 10) -> list[list[str]]:
    """The row ids each round fetches when exactly the URLs in `good` succeed."""
    outcomes: dict[str, bool] = {}
    fetched = []
    for _ in range(max_rounds):
        planned = next_fetch(classes, outcomes)
        if not planned:
            break
        rows = [(classes[c].row_ids[p], classes[c].urls[p]) for c, p in planned]
        fetched.append([row_id for row_id, _ in rows])
        outcomes.update({row_id: url in good for row_id, url in rows})
    return fetched


def test_first_round_fetches_the_dataset_rows_only():
    c = _class([f"http://h/{i}" for i in range(7)], target=4)
    assert walk_class(c, {}).to_fetch == [0, 1, 2, 3]


def test_failures_are_replaced_from_the_reserve_in_order_and_nothing_twice():
    urls = [f"http://h/{i}" for i in range(8)]
    c = _class(urls, target=4)
    good = {urls[i] for i in (0, 2, 3, 5, 7)}  # 1 fails, its replacement 4 fails, then 5 succeeds
    assert _rounds([c], good) == [["r0-0", "r0-1", "r0-2", "r0-3"], ["r0-4"], ["r0-5"]]
    outcomes = {
        row_id: urls[int(row_id.split("-")[1])] in good for row_id in ("r0-0", "r0-1", "r0-2", "r0-3", "r0-4", "r0-5")
    }
    walk = walk_class(c, outcomes)
    assert (walk.succeeded, walk.failed, walk.to_fetch) == ([0, 2, 3, 5], [1, 4], [])


def test_shortfall_when_the_reserve_is_spent():
    urls = [f"http://h/{i}" for i in range(5)]
    c = _class(urls, target=3)
    rounds = _rounds([c], good={urls[0]})
    assert rounds == [["r0-0", "r0-1", "r0-2"], ["r0-3", "r0-4"]]
    walk = walk_class(c, {row_id: row_id == "r0-0" for row_id in c.row_ids})
    assert (walk.succeeded, walk.failed, walk.to_fetch) == ([0], [1, 2, 3, 4], [])


def test_non_http_urls_are_passed_over_without_fetching():
    urls = ["file:///etc/passwd", "http://h/1", "ftp://h/2", "http://h/3", "http://h/4"]
    c = _class(urls, target=3)
    walk = walk_class(c, {})
    assert (walk.not_http, walk.to_fetch) == ([0, 2], [1, 3, 4])
    assert _rounds([c], good=set(urls)) == [["r0-1", "r0-3", "r0-4"]]


def test_classes_are_planned_independently():
    a = _class([f"http://a/{i}" for i in range(4)], target=2, class_index=0)
    b = _class([f"http://b/{i}" for i in range(4)], target=2, class_index=1)
    good = {"http://a/0", "http://a/1", "http://b/1", "http://b/3"}
    assert _rounds([a, b], good) == [["r0-0", "r0-1", "r1-0", "r1-1"], ["r1-2"], ["r1-3"]]

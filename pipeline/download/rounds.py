"""Which candidates to fetch next, and what a class ends with: plain data, no I/O.

A class's candidates are its dataset rows in `order`, then its reserve rows in `order`; its
target is the number of dataset rows. Walking them in that order, a candidate that succeeded
counts towards the target, one that failed (or whose URL is not http/https, or that a
blocklist names, or that an audit dropped) is passed over, and untried ones are taken until
successes plus taken reach the target. The first round takes the dataset rows; each later round
takes exactly the replacements for the failures so far, so every class ends with its target or
with its reserve spent, and nothing is fetched twice. Rows an audit drops later are replaced the
same way, by the next round.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field

from imagenot.pipeline.download.http_guard import is_fetchable


@dataclass(frozen=True)
class ClassCandidates:
    class_index: int
    wnid: str
    row_ids: list[str]  # dataset rows by order, then reserve rows by order
    urls: list[str | None]
    target: int  # the number of dataset rows

    def is_reserve(self, position: int) -> bool:
        return position >= self.target


@dataclass
class ClassWalk:
    """Positions (into the class's candidates) by fate, in candidate order."""

    succeeded: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    not_http: list[int] = field(default_factory=list)
    blocked: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    to_fetch: list[int] = field(default_factory=list)


def walk_class(
    candidates: ClassCandidates,
    outcomes: Mapping[str, bool],
    dropped: Container[str] = (),
    blocked: Container[str] = (),
) -> ClassWalk:
    """The class's candidates up to where its target is met or pending; `outcomes`: row_id ->
    whether an earlier round fetched it successfully (absent: never tried); `dropped`: row ids
    an audit removed from the dataset; `blocked`: row ids whose URL a blocklist names."""
    walk = ClassWalk()
    for position, (row_id, url) in enumerate(zip(candidates.row_ids, candidates.urls)):
        if len(walk.succeeded) + len(walk.to_fetch) >= candidates.target:
            break
        if row_id in dropped:
            walk.dropped.append(position)
        elif row_id in blocked:
            walk.blocked.append(position)
        elif not is_fetchable(url):
            walk.not_http.append(position)
        elif row_id not in outcomes:
            walk.to_fetch.append(position)
        elif outcomes[row_id]:
            walk.succeeded.append(position)
        else:
            walk.failed.append(position)
    return walk


def next_fetch(
    classes: list[ClassCandidates],
    outcomes: Mapping[str, bool],
    dropped: Container[str] = (),
    blocked: Container[str] = (),
) -> list[tuple[int, int]]:
    """(class list position, candidate position) of every row the next round fetches, in order."""
    return [
        (c, position)
        for c, candidates in enumerate(classes)
        for position in walk_class(candidates, outcomes, dropped, blocked).to_fetch
    ]

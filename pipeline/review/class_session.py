"""What the class review's server knows: the candidate classes, best first, one page each, and
their thumbnails; who answered what is the `tracker.Tracker`'s (the same choice of next page,
leases and cap as the image review's), each class wanting `review.class_raters` answers, and a
class with only unsure answers offered to more raters until one keeps or drops it (unless
`review.unsure_classes_again` is false).

The candidates are read again when rank's class list changes under the server (a `review classes
apply` promotes the next candidates): a watcher compares `rank/ranking.tsv`'s metadata every
second, as the image review's server does with its dataset.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from imagenot.errors import ImagenotError
from imagenot.pipeline.review.images import ImageSource
from imagenot.pipeline.review.run_state import files_state, run_is_locked, watch
from imagenot.pipeline.review.store import Store
from imagenot.pipeline.review.tracker import Question, Task, Tracker

log = logging.getLogger(__name__)
CANDIDATE = "candidate"  # tracker.ANSWERS' kind of a class page
UNSURE = "unsure"  # the class page's answer that decides nothing

Candidates = Callable[[], tuple[list[dict], dict[str, tuple[str, str]]]]  # rows best first, thumbnails' places


class ClassSession(Tracker):
    def __init__(
        self, run_dir: str, wanted: int, store: Store, read: Candidates, watched: list[str], again: bool = True
    ):
        """`again`: a class with only unsure answers is offered to more raters until one keeps or drops it
        (`review.unsure_classes_again`)."""
        super().__init__(store, wanted, UNSURE if again else None)
        self.run_dir, self._read, self._watched = run_dir, read, watched
        self._reload_lock = threading.Lock()
        self.generation, self.changing = 0, False
        self._load()
        watch(self, lambda session: session.refresh(), "class-review-watch")

    def _load(self) -> None:
        state = files_state(self._watched)
        rows, where = self._read()
        images = ImageSource(self.run_dir, where)
        threading.Thread(target=images.index_all, name="class-review-tar-index", daemon=True).start()
        self.candidates, self.images = {r["wnid"]: r for r in rows}, images
        self.install({r["wnid"]: _page(r) for r in rows})
        self._state = state
        self.generation += 1

    def refresh(self, tars: bool = False) -> None:
        """Read the candidates again once the files they come from changed (not while another
        command holds the run's lock: `changing` is set and answers are refused). `tars` is the
        image review's: the thumbnails' tars change with the dataset's files, which are watched."""
        with self._reload_lock:
            self.changing = run_is_locked(self.run_dir)
            if self.changing or files_state(self._watched) == self._state:
                return
            try:
                self._load()
            except (ImagenotError, OSError, ValueError) as err:  # ValueError: pyarrow's ArrowInvalid
                log.warning("class review: cannot read the changed run yet (%s)", err)
                self.changing = True

    def record(self, rater: int, task: Task, answers: list[tuple[str, str]]) -> int:
        """A page's answers: a class the rater answered before gets the new answer in place of the
        old (kept in the store's `replaced`); the rest as `Tracker.record` stores them."""
        with self._lock:
            again = {item: answer for item, answer in answers if item in self.answered[rater]}
        for item, answer in again.items():
            old = self.store.answer_of(rater, item)
            if self.store.replace(rater, task.id, item, answer) and old is not None:
                with self._lock:
                    self._changed(item, old, answer)
        return super().record(rater, task, [a for a in answers if a[0] not in again]) + len(again)


def _page(candidate: dict) -> Task:
    """A class's page: one question, the class itself."""
    wnid = candidate["wnid"]
    return Task(wnid, CANDIDATE, candidate["position"], None, (Question(wnid, "", ""),))

"""Who answered what, and which page a rater gets next: the part of a review server that both
reviews share (images: `session.ReviewSession`; classes: `class_session.ClassSession`).

A review is pages (`Task`), each of questions about items (an image, or a candidate class). A
rater is given the page with the fewest raters who answered or hold it open, among those that
still want answers and that hold an item the rater has not answered, pages the rater has not
sent before first: the images a rater skipped on a page they sent come back to them after their
other pages, as the page's notice says. A page's items already answered by the rater are not
shown again. The database is the record; the counts, who answered what and who holds which page
open are also kept in memory (read from the database when the pages are installed), so a page
is chosen and its progress line written without a query over every answer. An item collects at
most `wanted` answers (the store checks the count in the transaction that adds one), except
where the review names an answer that decides nothing (`undecided`: the class review's unsure):
an item with only such answers stays open for the raters who have not answered it, until one
decides it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

from imagenot.pipeline.review.store import Store

LEASE_SECONDS = 15 * 60  # a page opened and not sent counts as being answered for this long
ANSWERS = {
    "class": ("yes", "no", "unsure"),  # plan.CLASS: does the image show its class?
    "flagged": ("given", "suggested", "both", "neither"),  # plan.FLAGGED: which class does it show?
    "candidate": ("keep", "drop", "unsure"),  # a candidate class: keep it on the list?
}


@dataclass(frozen=True)
class Question:
    image: str  # the item asked about: an image id, or a candidate's wnid
    row_id: str
    caption: str


@dataclass(frozen=True)
class Task:
    id: str
    kind: str  # a key of ANSWERS
    class_index: int
    suggested_class: int | None
    questions: tuple[Question, ...]

    @property
    def answers(self) -> tuple[str, ...]:
        return ANSWERS[self.kind]


class Tracker:
    """The answers of a review's raters to its pages, as they come."""

    def __init__(self, store: Store, wanted: int, undecided: str | None = None):
        self.store, self.wanted, self.undecided = store, wanted, undecided
        self._lock = threading.Lock()
        self.names: dict[int, str] = {}
        self.tasks: dict[str, Task] = {}

    def install(self, tasks: dict[str, Task]) -> None:
        """Take these pages (in the order to give them) and count the stored answers to them."""
        with self._lock:
            self.tasks = tasks
            self.task_of_image = {q.image: t.id for t in tasks.values() for q in t.questions}
            self.counts: Counter[str] = Counter()  # item -> answers
            self.deciding: Counter[str] = Counter()  # item -> answers other than `undecided`
            self.answered: defaultdict[int, set[str]] = defaultdict(set)  # rater -> items answered
            self.sent: defaultdict[int, set[str]] = defaultdict(set)  # rater -> pages they sent an answer on
            self.times: defaultdict[int, list[float]] = defaultdict(list)  # rater -> [first, last] answer time
            self.leases: defaultdict[str, dict[int, float]] = defaultdict(dict)  # task -> rater -> opened at
            # Kept as answers come, so a page is chosen and its progress line written without a pass
            # over every item: answers still wanted, items still wanting answers ("open"), per rater
            # the open items they answered, and who answered each open item.
            self.missing = self.wanted * len(self.task_of_image)
            self.open_images = len(self.task_of_image)
            self.mine_open: Counter[int] = Counter()
            self.raters_of: defaultdict[str, set[int]] = defaultdict(set)
            # per page the fewest answers any of its open items has (None: none open), a floor under
            # what `next_task` works out for a rater, so most pages are passed over at a glance
            self.least: dict[str, int | None] = {t: 0 for t in tasks}
            for rater, image, at, answer in self.store.answer_times():
                self._count(rater, image, at, answer)

    def _is_open(self, image: str) -> bool:
        """Whether the item still wants answers: fewer than `wanted`, or none that decides."""
        return self.counts[image] < self.wanted or (self.undecided is not None and not self.deciding[image])

    def _wanted_of(self, image: str) -> int:
        """Answers the item still wants: up to `wanted`, or the one that would decide it."""
        return max(self.wanted - self.counts[image], 0) or int(self._is_open(image))

    def _count(self, rater: int, image: str, at: float, answer: str) -> None:
        task = self.task_of_image.get(image)
        was_open, was_wanted = (self._is_open(image), self._wanted_of(image)) if task is not None else (False, 0)
        self.counts[image] += 1
        self.deciding[image] += answer != self.undecided
        self.answered[rater].add(image)
        span = self.times[rater]
        self.times[rater] = [min(span[0], at), max(span[1], at)] if span else [at, at]
        if task is None:  # not in the plan
            return
        self.sent[rater].add(task)
        if not was_open:  # it had its answers already
            return
        self.missing -= was_wanted - self._wanted_of(image)
        if self._is_open(image):
            self.mine_open[rater] += 1
            self.raters_of[image].add(rater)
        else:  # its last wanted answer: no longer open for anyone
            self.open_images -= 1
            for other in self.raters_of.pop(image, ()):
                self.mine_open[other] -= 1
        self._settle(task)

    def _settle(self, task: str) -> None:
        """The page's fewest answers over its open items (None: none open)."""
        counts = [self.counts[q.image] for q in self.tasks[task].questions if self._is_open(q.image)]
        self.least[task] = min(counts) if counts else None

    def _changed(self, image: str, old: str, new: str) -> None:
        """A rater's answer to `image` changed from `old` to `new` (the class review lets a rater change
        theirs): an item that no longer decides opens again, one decided now closes. Under the lock."""
        task = self.task_of_image.get(image)
        was_open, was_wanted = self._is_open(image), self._wanted_of(image)
        self.deciding[image] += (new != self.undecided) - (old != self.undecided)
        if task is None or self._is_open(image) == was_open:
            return
        self.missing += self._wanted_of(image) - was_wanted
        raters = [r for r, items in self.answered.items() if image in items]
        if was_open:
            self.open_images -= 1
            for other in self.raters_of.pop(image, ()):
                self.mine_open[other] -= 1
        else:
            self.open_images += 1
            self.raters_of[image] = set(raters)
            for other in raters:
                self.mine_open[other] += 1
        self._settle(task)

    def rater(self, name: str) -> int:
        rater = self.store.rater(name)
        self.names[rater] = name
        return rater

    def rater_name(self, rater: int) -> str | None:
        if rater not in self.names:
            name = self.store.rater_name(rater)
            if name is None:
                return None
            self.names[rater] = name
        return self.names[rater]

    def record(self, rater: int, task: Task, answers: list[tuple[str, str]]) -> int:
        """Store a page's answers (each image once, the first answer given stays, none past the
        answers an image wants); the answers stored."""
        with self._lock:
            new = dict(a for a in reversed(answers) if a[0] not in self.answered[rater])  # the first of repeats
            stored = self.store.save(rater, task.id, list(new.items()), self.wanted, self.undecided)
            now = time.time()
            for image in stored:
                self._count(rater, image, now, new[image])
            self.leases[task.id].pop(rater, None)
        return len(stored)

    def open_questions(self, task: Task, rater: int) -> list[Question]:
        with self._lock:
            self.leases[task.id][rater] = time.time()
            return [q for q in task.questions if q.image not in self.answered[rater]]

    def next_task(self, rater: int) -> Task | None:
        """The page this rater should answer next (None: nothing left for them)."""
        since = time.time() - LEASE_SECONDS
        with self._lock:
            answered, sent, counts, is_open = self.answered[rater], self.sent[rater], self.counts, self._is_open
            best, best_key = None, None
            for order, task in enumerate(self.tasks.values()):
                least = self.least[task.id]
                if least is None:
                    continue
                leases = self.leases.get(task.id)
                busy = sum(1 for r, at in leases.items() if r != rater and at >= since) if leases else 0
                again = task.id in sent  # the rater sent it with images skipped: those come back after the rest
                if best_key is not None and (again, least + busy) >= best_key[:2]:
                    continue  # it cannot beat the best so far: its key is at least that, its order later
                wanted = [counts[q.image] for q in task.questions if q.image not in answered and is_open(q.image)]
                if not wanted:
                    continue
                key = (again, min(wanted) + busy, order)
                if best_key is None or key < best_key:
                    best, best_key = task, key
            return best

    def progress(self, rater: int) -> dict:
        """What the page tells the rater: images left for them, answers still wanted, their pace."""
        with self._lock:
            left, missing = self.open_images - self.mine_open[rater], self.missing
            given, span = len(self.answered[rater]), self.times.get(rater)
        minutes = (span[1] - span[0]) / 60 if span and given > 1 else 0
        return {
            "left_for_you": left,
            "answers_wanted": missing,
            "given": given,
            "per_minute": given / minutes if minutes else None,
        }

"""What the review server knows of a run: its pages, classes, images, and which page a rater gets next.

Pages come from `review/plan.parquet`. A rater is given the page with the fewest raters who
answered or hold it open, among those that still want answers and that hold an image the rater
has not answered; a page's images already answered by the rater are not shown again.

The database is the record; the server also keeps the answers' counts, who answered what and
who holds which page open in memory (read from the database when it starts), so a page is
chosen and rendered without a query over every answer. An image collects at most
`review.raters` answers: the store checks the count in the transaction that adds one.

The run can change under a running server (`run_state`): the server keeps to the images the
dataset holds now. It reads the plan, the dataset and the answers again when the dataset's
files, its tars or the plan changed (a watcher looks every second, and a page sent is checked
against the dataset's files first), so an image taken out is no longer shown, served or
answered, and one put in is; while another command holds the run's lock, `changing` is set and
pages sent are refused.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Review
from imagenot.pipeline.review.images import ImageSource
from imagenot.pipeline.review.plan import CLASS, FLAGGED, image_id, plan_path, read_dataset, read_plan
from imagenot.pipeline.review.run_state import files_state, run_is_locked, watch
from imagenot.pipeline.review.store import Store
from imagenot.pipeline.run.layout import DATASET_DIR, DONE_FILE, DOWNLOAD, read_classes, stage_path
from imagenot.wordnet.index import NounIndex

log = logging.getLogger(__name__)

LEASE_SECONDS = 15 * 60  # a page opened and not sent counts as being answered for this long
CLASS_ANSWERS = ("yes", "no", "unsure")
FLAGGED_ANSWERS = ("given", "suggested", "both", "neither")


@dataclass(frozen=True)
class Question:
    image: str
    row_id: str
    caption: str


@dataclass(frozen=True)
class Task:
    id: str
    kind: str  # plan.CLASS or plan.FLAGGED
    class_index: int
    suggested_class: int | None
    questions: tuple[Question, ...]

    @property
    def answers(self) -> tuple[str, ...]:
        return CLASS_ANSWERS if self.kind == CLASS else FLAGGED_ANSWERS


def wordnet_path(index: NounIndex, wnid: str) -> list[str]:
    """The synset's names from entity.n.01 down, along its shallowest hypernyms."""
    path = [wnid]
    while index[path[-1]].hypernyms:
        path.append(min(index[path[-1]].hypernyms, key=lambda w: (index[w].depth, w)))
    return [index[w].name for w in reversed(path)]


class ReviewSession:
    def __init__(self, run_dir: str, settings: Review, index: NounIndex, store: Store):
        self.run_dir, self.settings, self.store, self.index = run_dir, settings, store, index
        self._lock, self._reload_lock = threading.Lock(), threading.Lock()
        self.names: dict[int, str] = {}
        self.generation, self.changing = 0, False
        self._load()
        watch(self, lambda session: session.refresh(tars=True), "review-run-watch")

    def _head_state(self) -> tuple:
        """The plan's and the dataset's files (not the tars)."""
        dataset = stage_path(self.run_dir, DOWNLOAD, DATASET_DIR, "*.parquet")
        return files_state([plan_path(self.run_dir), stage_path(self.run_dir, DOWNLOAD, DONE_FILE), dataset])

    def _tar_state(self) -> tuple:
        return files_state([self.images.path(tar) for tar in self.images.tars])

    def _load(self) -> None:
        """Read the plan's pages, keeping the images the dataset holds now (a `review apply` or an
        audit's `--drop` may have taken some out and put others in), and count the answers."""
        run_dir, head = self.run_dir, self._head_state()  # before the reads: a change during them is seen
        plan, dataset = read_plan(run_dir), read_dataset(run_dir)
        current = {
            image_id(r["row_id"], r["sha256"]): (r["tar"], r["key"])
            for r in dataset.select(["row_id", "sha256", "tar", "key"]).to_pylist()
        }
        classes = {c["index"]: {**c, "path": wordnet_path(self.index, c["wnid"])} for c in read_classes(run_dir)}
        tasks: dict[str, Task] = {}
        for task, rows in _group(plan, "task").items():
            rows = [r for r in rows if r["image"] in current]
            if rows:
                questions = tuple(Question(r["image"], r["row_id"], r["caption"]) for r in rows)
                first = rows[0]
                tasks[task] = Task(task, first["kind"], first["class_index"], first["suggested_class"], questions)
        examples, example_where = _examples(dataset, plan, self.settings.examples)
        where = {q.image: current[q.image] for t in tasks.values() for q in t.questions}
        images = ImageSource(run_dir, {**example_where, **where})
        threading.Thread(target=images.index_all, name="review-tar-index", daemon=True).start()
        with self._lock:
            self.classes, self.tasks, self.examples, self.images = classes, tasks, examples, images
            self.task_of_image = {q.image: t.id for t in tasks.values() for q in t.questions}
            self.counts: Counter[str] = Counter()  # image -> answers
            self.answered: defaultdict[int, set[str]] = defaultdict(set)  # rater -> images answered
            self.times: defaultdict[int, list[float]] = defaultdict(list)  # rater -> [first, last] answer time
            self.leases: defaultdict[str, dict[int, float]] = defaultdict(dict)  # task -> rater -> opened at
            # Kept as answers come, so a page is chosen and its progress line written without a pass
            # over every image: answers still wanted, planned images still wanting answers ("open"),
            # per rater the open images they answered, and who answered each open image.
            self.missing = self.settings.raters * len(self.task_of_image)
            self.open_images = len(self.task_of_image)
            self.mine_open: Counter[int] = Counter()
            self.raters_of: defaultdict[str, set[int]] = defaultdict(set)
            # per page the fewest answers any of its open images has (None: none open), a floor under
            # what `next_task` works out for a rater, so most pages are passed over at a glance
            self.least: dict[str, int | None] = {t: 0 for t in tasks}
            for rater, image, at in self.store.answer_times():
                self._count(rater, image, at)
            self._state = (head, self._tar_state())
            self.generation += 1

    def refresh(self, tars: bool = False) -> None:
        """Look whether the run changed under the server: while another command holds its lock,
        set `changing` (pages sent are refused); once the plan or the dataset's files (and, with
        `tars`, its tars) are not what the server read, read them again."""
        with self._reload_lock:
            self.changing = run_is_locked(self.run_dir)
            if self.changing:
                return
            head, tar_state = self._state
            if self._head_state() == head and (not tars or self._tar_state() == tar_state):
                return
            try:
                self._load()
            except (ImagenotError, OSError) as err:  # half written: refuse answers until it is whole
                log.warning("review: cannot read the changed run yet (%s)", err)
                self.changing = True

    def _count(self, rater: int, image: str, at: float) -> None:
        before = self.counts[image]
        self.counts[image] = before + 1
        self.answered[rater].add(image)
        span = self.times[rater]
        self.times[rater] = [min(span[0], at), max(span[1], at)] if span else [at, at]
        task, wanted = self.task_of_image.get(image), self.settings.raters
        if task is None or before >= wanted:  # not in the plan, or it had its answers already
            return
        self.missing -= 1
        if before + 1 < wanted:
            self.mine_open[rater] += 1
            self.raters_of[image].add(rater)
        else:  # its last wanted answer: no longer open for anyone
            self.open_images -= 1
            for other in self.raters_of.pop(image, ()):
                self.mine_open[other] -= 1
        counts = [self.counts[q.image] for q in self.tasks[task].questions if self.counts[q.image] < wanted]
        self.least[task] = min(counts) if counts else None

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
            stored = self.store.save(rater, task.id, list(new.items()), self.settings.raters)
            now = time.time()
            for image in stored:
                self._count(rater, image, now)
            self.leases[task.id].pop(rater, None)
        return len(stored)

    def open_questions(self, task: Task, rater: int) -> list[Question]:
        with self._lock:
            self.leases[task.id][rater] = time.time()
            return [q for q in task.questions if q.image not in self.answered[rater]]

    def next_task(self, rater: int) -> Task | None:
        """The page this rater should answer next (None: nothing left for them)."""
        since, wanted_answers = time.time() - LEASE_SECONDS, self.settings.raters
        with self._lock:
            answered, counts = self.answered[rater], self.counts
            best, best_key = None, None
            for order, task in enumerate(self.tasks.values()):
                least = self.least[task.id]
                if least is None:
                    continue
                leases = self.leases.get(task.id)
                busy = sum(1 for r, at in leases.items() if r != rater and at >= since) if leases else 0
                if best_key is not None and least + busy >= best_key[0]:
                    continue  # it cannot beat the best so far: its key is at least that, its order later
                wanted = [
                    counts[q.image]
                    for q in task.questions
                    if q.image not in answered and counts[q.image] < wanted_answers
                ]
                if not wanted:
                    continue
                key = (min(wanted) + busy, order)
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


def _group(table: pa.Table, column: str) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for row in table.to_pylist():
        groups.setdefault(row[column], []).append(row)
    return groups


def _examples(dataset: pa.Table, plan: pa.Table, count: int) -> tuple[dict[int, list[str]], dict[str, tuple[str, str]]]:
    """For each class a flagged page names: its first `count` images by sampling order that no
    audit flagged (shown beside a flagged image), and where each lies."""
    flagged_rows = plan.filter(pc.equal(plan.column("kind"), FLAGGED))
    if not flagged_rows.num_rows:
        return {}, {}
    wanted = {
        *flagged_rows.column("class_index").to_pylist(),
        *flagged_rows.column("suggested_class").drop_null().to_pylist(),
    }
    flagged = set(flagged_rows.column("row_id").to_pylist())
    examples: dict[int, list[str]] = {}
    where = {}
    for r in dataset.to_pylist():  # in class, then sampling order
        chosen = examples.setdefault(r["class_index"], [])
        if r["class_index"] in wanted and r["row_id"] not in flagged and len(chosen) < count:
            image = image_id(r["row_id"], r["sha256"])
            chosen.append(image)
            where[image] = (r["tar"], r["key"])
    return examples, where

"""What the review server knows of a run: its pages, classes, images, and which page a rater gets next.

Pages come from `review/plan.parquet`. A rater is given the page with the fewest raters who
answered or hold it open, among those that still want answers and that hold an image the rater
has not answered; a page's images already answered by the rater are not shown again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from imagenot.pipeline.config import Review
from imagenot.pipeline.layout import read_classes
from imagenot.pipeline.review.images import ImageSource
from imagenot.pipeline.review.plan import CLASS, FLAGGED, image_id, read_dataset, read_plan
from imagenot.pipeline.review.store import Store
from imagenot.wordnet.index import NounIndex

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
        self.settings, self.store = settings, store
        plan = read_plan(run_dir)
        self.classes = {c["index"]: {**c, "path": wordnet_path(index, c["wnid"])} for c in read_classes(run_dir)}
        self.tasks: dict[str, Task] = {}
        where = {}
        for task, rows in _group(plan, "task").items():
            first = rows[0]
            questions = tuple(Question(r["image"], r["row_id"], r["caption"]) for r in rows)
            self.tasks[task] = Task(task, first["kind"], first["class_index"], first["suggested_class"], questions)
            where.update({r["image"]: (r["tar"], r["key"]) for r in rows})
        self.examples, example_where = _examples(run_dir, plan, settings.examples)
        self.images = ImageSource(run_dir, {**example_where, **where})
        self.task_of_image = {q.image: t.id for t in self.tasks.values() for q in t.questions}

    def open_questions(self, task: Task, rater: int) -> list[Question]:
        answered = self.store.answered_by(rater)
        return [q for q in task.questions if q.image not in answered]

    def next_task(self, rater: int) -> Task | None:
        """The page this rater should answer next (None: nothing left for them)."""
        answered, counts = self.store.answered_by(rater), self.store.answer_counts()
        busy = self.store.leased(time.time() - LEASE_SECONDS, rater)
        best, best_key = None, None
        for order, task in enumerate(self.tasks.values()):
            wanted = [q for q in task.questions if q.image not in answered and counts.get(q.image, 0) < self.settings.raters]
            if not wanted:
                continue
            key = (min(counts.get(q.image, 0) for q in wanted) + busy.get(task.id, 0), order)
            if best_key is None or key < best_key:
                best, best_key = task, key
        return best

    def progress(self, rater: int) -> dict:
        """What the page tells the rater: images left for them, answers still wanted, their pace."""
        answered, counts = self.store.answered_by(rater), self.store.answer_counts()
        images = [q.image for t in self.tasks.values() for q in t.questions]
        left = sum(1 for i in images if i not in answered and counts.get(i, 0) < self.settings.raters)
        wanted = sum(max(0, self.settings.raters - counts.get(i, 0)) for i in images)
        given, per_minute = self.store.pace(rater)
        return {"left_for_you": left, "answers_wanted": wanted, "given": given, "per_minute": per_minute}


def _group(table: pa.Table, column: str) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for row in table.to_pylist():
        groups.setdefault(row[column], []).append(row)
    return groups


def _examples(run_dir: str, plan: pa.Table, count: int) -> tuple[dict[int, list[str]], dict[str, tuple[str, str]]]:
    """For each class a flagged page names: its first `count` images by sampling order that no
    audit flagged (shown beside a flagged image), and where each lies."""
    flagged_rows = plan.filter(pc.equal(plan.column("kind"), FLAGGED))
    if not flagged_rows.num_rows:
        return {}, {}
    wanted = set(flagged_rows.column("class_index").to_pylist()) | set(flagged_rows.column("suggested_class").drop_null().to_pylist())
    flagged = set(flagged_rows.column("row_id").to_pylist())
    examples: dict[int, list[str]] = {}
    where = {}
    for r in read_dataset(run_dir).to_pylist():  # in class, then sampling order
        chosen = examples.setdefault(r["class_index"], [])
        if r["class_index"] in wanted and r["row_id"] not in flagged and len(chosen) < count:
            image = image_id(r["row_id"], r["sha256"])
            chosen.append(image)
            where[image] = (r["tar"], r["key"])
    return examples, where

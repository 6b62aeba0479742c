"""What the image review's server knows of a run: its pages, classes and images.

Pages come from `review/plan.parquet`; which page a rater gets next, and the answers' counts,
are the `tracker.Tracker`'s. The run can change under a running server (`run_state`): the
server keeps to the images the dataset holds now. It reads the plan, the dataset and the
answers again when the dataset's files, its tars or the plan changed (a watcher looks every
second, and a page sent is checked against the dataset's files first), so an image taken out is
no longer shown, served or answered, and one put in is; while another command holds the run's
lock, `changing` is set and pages sent are refused.
"""

from __future__ import annotations

import logging
import threading

import pyarrow as pa
import pyarrow.compute as pc

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Review
from imagenot.pipeline.review.images import ImageSource
from imagenot.pipeline.review.plan import FLAGGED, image_id, plan_path, read_dataset, read_plan
from imagenot.pipeline.review.run_state import files_state, run_is_locked, watch
from imagenot.pipeline.review.store import Store
from imagenot.pipeline.review.tracker import Question, Task, Tracker
from imagenot.pipeline.run.layout import DATASET_DIR, DONE_FILE, DOWNLOAD, read_classes, stage_path
from imagenot.wordnet.index import NounIndex

log = logging.getLogger(__name__)


def wordnet_path(index: NounIndex, wnid: str) -> list[str]:
    """The synset's names from entity.n.01 down, along its shallowest hypernyms."""
    path = [wnid]
    while index[path[-1]].hypernyms:
        path.append(min(index[path[-1]].hypernyms, key=lambda w: (index[w].depth, w)))
    return [index[w].name for w in reversed(path)]


class ReviewSession(Tracker):
    def __init__(self, run_dir: str, settings: Review, index: NounIndex, store: Store):
        super().__init__(store, settings.raters)
        self.run_dir, self.settings, self.index = run_dir, settings, index
        self._reload_lock = threading.Lock()
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
        self.classes, self.examples, self.images = classes, examples, images
        self.install(tasks)
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
            except (ImagenotError, OSError, ValueError) as err:  # half written (ArrowInvalid is a ValueError)
                log.warning("review: cannot read the changed run yet (%s)", err)
                self.changing = True


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

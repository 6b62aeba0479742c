"""The raters' answers, stored as they are given: SQLite (stdlib sqlite3) in WAL mode.

SQLite needs a file on a local disk, so this is the one review module that touches local files.
A local run keeps its database at `RUN/review/answers.sqlite`. A bucket run (gs://) keeps it in
a local working folder, `<IMAGENOT_CACHE>/review/<digest of the run path>/`; `review export`
copies it back into the run beside `answers.parquet`, and a server started where no local copy
exists begins from that copy, so a review can move between machines.

Each submitted page is one transaction: a server killed part way loses at most the page being
answered. An answer is keyed by (rater, image): a page sent twice, or by two tabs, stores each
answer once, as first given. WAL lets the export and `review status` read while raters write;
the server's own writes take turns on a lock (`write_lock`) rather than in SQLite's busy handler,
which sleeps up to 100 ms between tries.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from imagenot.pipeline.run.files import read_bytes, write_bytes
from imagenot.pipeline.run.filesystems import FileSystems, is_local
from imagenot.pipeline.run.layout import REVIEW, REVIEW_DB_FILE, stage_path
from imagenot.wordnet.nltk_data import cache_dir

SCHEMA = """
CREATE TABLE IF NOT EXISTS raters (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    rater INTEGER NOT NULL REFERENCES raters(id), image TEXT NOT NULL, task TEXT NOT NULL,
    answer TEXT NOT NULL, answered_at REAL NOT NULL, PRIMARY KEY (rater, image));
CREATE INDEX IF NOT EXISTS answers_by_task ON answers (task);
CREATE INDEX IF NOT EXISTS answers_by_image ON answers (image);
CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS replaced (
    rater INTEGER NOT NULL, image TEXT NOT NULL, task TEXT NOT NULL, answer TEXT NOT NULL,
    answered_at REAL NOT NULL, replaced_at REAL NOT NULL);
"""


def database_path(run_dir: str, file: str = REVIEW_DB_FILE) -> Path:
    """Where the run's answers live on this machine (see the module's note on bucket runs)."""
    if is_local(run_dir):
        return Path(stage_path(run_dir, REVIEW, file))
    digest = hashlib.sha256(run_dir.rstrip("/").encode()).hexdigest()[:16]
    return cache_dir() / "review" / digest / file


def copy_back(run_dir: str, store: Store) -> str | None:
    """A bucket run: a consistent copy of the local database into the run; its path."""
    if is_local(run_dir):
        return None
    target = stage_path(run_dir, REVIEW, store.path.name)
    snapshot = store.path.with_suffix(".snapshot")
    with sqlite3.connect(snapshot) as copy:
        store.connection().backup(copy)
    copy.close()
    write_bytes(target, snapshot.read_bytes())
    snapshot.unlink()
    return target


class Store:
    """The answers of one run's review (`file`: the image review's, or the class review's
    `classes.sqlite`). One connection per thread (sqlite3 connections stay in theirs)."""

    def __init__(self, run_dir: str, file: str = REVIEW_DB_FILE):
        self.path = database_path(run_dir, file)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        remote = stage_path(run_dir, REVIEW, file)
        if not self.path.exists() and not is_local(run_dir) and FileSystems.exists(remote):
            self.path.write_bytes(read_bytes(remote))
        self._local = threading.local()
        self.write_lock = threading.Lock()
        with self.connection() as db:
            db.executescript(SCHEMA)

    def connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # WAL: a committed page survives a killed process
            self._local.db = db
        return db

    def secret(self) -> str:
        """The key that signs raters' cookies, kept so a restarted server knows its raters."""
        db = self.connection()
        db.execute("INSERT OR IGNORE INTO secrets VALUES ('cookies', ?)", (secrets.token_hex(32),))
        return db.execute("SELECT value FROM secrets WHERE name = 'cookies'").fetchone()[0]

    def rater(self, name: str) -> int:
        """The rater's id; a name seen before is the same rater (so no image is shown twice)."""
        db = self.connection()
        with self.write_lock:
            db.execute("INSERT OR IGNORE INTO raters (name, created) VALUES (?, ?)", (name, time.time()))
        return db.execute("SELECT id FROM raters WHERE name = ?", (name,)).fetchone()[0]

    def rater_name(self, rater: int) -> str | None:
        row = self.connection().execute("SELECT name FROM raters WHERE id = ?", (rater,)).fetchone()
        return row[0] if row else None

    def save(
        self,
        rater: int,
        task: str,
        answers: Iterable[tuple[str, str]],
        wanted: int | None = None,
        undecided: str | None = None,
    ) -> list[str]:
        """Store a page's answers (image, answer) in one transaction, each only while its image has
        fewer than `wanted` answers (None: no limit) or, with `undecided` (an answer that decides
        nothing), only answers of that kind; the images whose answers were stored."""
        now, limit = time.time(), wanted if wanted is not None else 2**62
        db = self.connection()
        stored = []
        with self.write_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                for image, answer in answers:
                    before = db.total_changes
                    db.execute(
                        "INSERT OR IGNORE INTO answers SELECT ?, ?, ?, ?, ? "
                        "WHERE (SELECT COUNT(*) FROM answers WHERE image = ?) < ? "
                        "OR (? IS NOT NULL AND NOT EXISTS (SELECT 1 FROM answers WHERE image = ? AND answer != ?))",
                        (rater, image, task, answer, now, image, limit, undecided, image, undecided),
                    )
                    if db.total_changes > before:
                        stored.append(image)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return stored

    def replace(self, rater: int, task: str, image: str, answer: str) -> bool:
        """A rater's new answer to an item they answered (the class review lets them change it); the
        old one is kept in `replaced`, so nothing a rater did is lost. False if there was none."""
        db = self.connection()
        with self.write_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT INTO replaced SELECT rater, image, task, answer, answered_at, ? FROM answers "
                    "WHERE rater = ? AND image = ? AND answer != ?",
                    (time.time(), rater, image, answer),
                )
                db.execute(
                    "UPDATE answers SET answer = ?, task = ?, answered_at = ? WHERE rater = ? AND image = ?",
                    (answer, task, time.time(), rater, image),
                )
                changed = db.execute("SELECT changes()").fetchone()[0]
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        return bool(changed)

    def answer_of(self, rater: int, image: str) -> str | None:
        row = (
            self.connection()
            .execute("SELECT answer FROM answers WHERE rater = ? AND image = ?", (rater, image))
            .fetchone()
        )
        return row[0] if row else None

    def last_answered(self, rater: int, other_than: str) -> str | None:
        """The item the rater answered last, other than `other_than`."""
        row = (
            self.connection()
            .execute(
                "SELECT image FROM answers WHERE rater = ? AND image != ? ORDER BY answered_at DESC LIMIT 1",
                (rater, other_than),
            )
            .fetchone()
        )
        return row[0] if row else None

    def answered_by(self, rater: int) -> set[str]:
        return {row[0] for row in self.connection().execute("SELECT image FROM answers WHERE rater = ?", (rater,))}

    def answer_times(self) -> list[tuple[int, str, float, str]]:
        """(rater id, image, answered_at, answer) of every answer: what the server keeps in memory."""
        return self.connection().execute("SELECT rater, image, answered_at, answer FROM answers").fetchall()

    def all_answers(self) -> list[tuple[str, str, str, str, float]]:
        """(rater name, image, task, answer, answered_at), in the order given."""
        return (
            self.connection()
            .execute(
                "SELECT raters.name, image, task, answer, answered_at "
                "FROM answers JOIN raters ON raters.id = answers.rater "
                "ORDER BY answered_at, raters.name, image"
            )
            .fetchall()
        )

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

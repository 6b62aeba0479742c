"""The real dev set's judgments: the readers' files, their majority, and the old single reading.

Each reader's file (`real_dev_judged_a.tsv`, `_b`, ...; `real_dev_guide.md`) has `row_id`,
`synset`, `right_sense`, `picturable`, `use`, `sense`, one line per pair of `real_dev_pairs.tsv`.
A pair's answer to a question is the one more than half the readers give (2 of 3, 3 of 4; None
where no answer has that many). `old_judgments` reads the earlier single reader's 361 pairs
(right_sense and picturable only, pairs of earlier defaults): figures from it are for
development, not the dev set's.
"""

from __future__ import annotations

import csv
import subprocess
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from imagenot.labels.none_of_these import FormStats, form_statistics
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.score.senses_command import matched_forms

DATA = Path(__file__).parent / "data"
CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "laion_sample_9614.parquet"
MIN_READERS = 3
QUESTIONS = ("right_sense", "picturable", "use")
# The uses where the word names none of its WordNet noun senses (real_dev_guide.md).
NONE_USES = frozenset({"name", "missing_sense", "letter_abbrev", "modifier", "not_noun", "foreign"})
OLD_COMMIT = "010927c~1"  # the last commit with the single reader's judgments of the earlier pairs
Key = tuple[str, str]  # (row_id, synset)


def reader_files(folder: Path = DATA) -> list[Path]:
    """Each reader's file, by its letter."""
    return sorted(folder.glob("real_dev_judged_?.tsv"))


def reader_names(folder: Path = DATA) -> list[str]:
    return [path.stem.rsplit("_", 1)[1] for path in reader_files(folder)]


def read_tsv(path: Path) -> list[dict]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file, delimiter="\t"))


def read_readers(folder: Path = DATA) -> list[dict[Key, dict]] | None:
    """Each reader's judgments by (row_id, synset); None until at least three files are there."""
    paths = reader_files(folder)
    if len(paths) < MIN_READERS:
        return None
    readings = []
    for path in paths:
        rows = read_tsv(path)
        missing = [q for q in QUESTIONS if rows and q not in rows[0]]
        if missing:
            raise SystemExit(f"{path}: no column {', '.join(missing)}")
        readings.append({(row["row_id"], row["synset"]): row for row in rows})
    return readings


def majority(readings: list[dict[Key, dict]], question: str) -> dict[Key, str | None]:
    """Per pair judged by at least `MIN_READERS` readers (pairs a later default let through are
    judged by three, the earlier ones by four), the answer more than half of them give (else None)."""
    keys = {key for r in readings for key in r}
    answers = {}
    for key in keys:
        given = [r[key][question].strip() for r in readings if key in r]
        if len(given) < MIN_READERS:
            continue
        value, n = Counter(given).most_common(1)[0]
        answers[key] = value if 2 * n > len(given) else None
    return answers


def old_judgments() -> dict[Key, dict]:
    """The single reader's judgments of 361 pairs of earlier defaults (with their caption and
    matched form), from git history."""
    text = subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:benchmarks/data/real_dev_judged.tsv"],
        cwd=DATA,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = csv.DictReader(text.splitlines(), delimiter="\t")
    return {(row["row_id"], row["synset"]): row for row in rows}


def labelled_pairs(folder: Path = DATA) -> tuple[list[dict], str]:
    """(pairs with caption, matched, synset and a `none` label, which judgments): the readers'
    majority `use` where their files are there (pairs without a majority left out), else the old
    reader's right_sense 'no' as a stand-in (a wrong pair, of any kind)."""
    readings = read_readers(folder)
    if readings is None:
        pairs = [{**row, "none": row["right_sense"] == "no"} for row in old_judgments().values()]
        return [p for p in pairs if p["right_sense"] in ("yes", "no")], "old single reader (right_sense no)"
    use, right = majority(readings, "use"), majority(readings, "right_sense")
    pairs = []
    for row in read_tsv(folder / "real_dev_pairs.tsv"):
        key = (row["row_id"], row["synset"])
        answer = use.get(key)
        if answer is not None and answer != "unclear":
            pairs.append({**row, "use": answer, "right_sense": right.get(key), "none": answer in NONE_USES})
    return pairs, f"{len(readings)} readers' majority use"


def sample_form_stats(path: Path, config: Config) -> FormStats:
    """The none-of-these corpus statistics of the real LAION sample, every caption tagged by the
    build's tagger (as select's first pass counts them over the tagged rows)."""
    captions = [
        c if isinstance(c, str) else "" for c in pq.read_table(path, columns=["TEXT"]).column("TEXT").to_pylist()
    ]
    return FormStats(form_statistics(captions, matched_forms(captions, config)))

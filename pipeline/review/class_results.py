"""The class review's answers, out of SQLite into the run, and what `apply` does with them.

Per class: keep, drop and unsure answers, who gave which, and the verdict: drop when more raters
answered drop than keep, keep when keep has at least as many (and one), none with only unsure
answers. The class-level figure is kept / decided with a Clopper-Pearson interval at
`review.confidence`. `export` writes `review/class_answers.parquet` (every answer as given) and
`review/class_results.json` (the card's Class review section reads it). `apply` writes the
dropped classes to `RUN/vetoed_classes.txt` (which every build and stage command on the run adds
to `ranking.vetoed`, whatever config it is given: `registry.stage_config`) and to the run's
`ranking.vetoed`, and builds the run again as resume does: rank and every stage after it run
again, the vetoed classes' places taken by the next candidates in rank order.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq

from imagenot.pipeline.config.schema import Config, load_run_config
from imagenot.pipeline.report.class_review import results_path
from imagenot.pipeline.review.candidates import CAPTIONS_SHOWN
from imagenot.pipeline.review.pages import CANDIDATE_INSTRUCTIONS
from imagenot.pipeline.review.sizing import clopper_pearson
from imagenot.pipeline.review.store import Store, copy_back
from imagenot.pipeline.run.files import atomic_output, write_json, write_text
from imagenot.pipeline.run.layout import REVIEW, read_vetoes, stage_path, vetoes_path
from imagenot.wordnet.index import NounIndex

CLASS_DB_FILE = "classes.sqlite"  # review/: the class review's answers as given
CLASS_ANSWERS_FILE = "class_answers.parquet"  # review/: `review classes export`: every answer
ANSWERS_SCHEMA = pa.schema(
    [("rater", pa.string()), ("wnid", pa.string()), ("answer", pa.string()), ("answered_at", pa.float64())]
)


def verdict(keep: int, drop: int) -> str | None:
    """drop on a majority of drop answers over keep ones; keep on at least as many keeps; None: undecided."""
    if drop > keep:
        return "drop"
    return "keep" if keep else None


def class_figures(config: Config, name_of: Callable[[str], str], store: Store) -> dict:
    """The answers so far, per class and overall (the results JSON but the interval, which
    `export_classes` adds: `review classes status` needs no scipy)."""
    given = store.all_answers()  # (rater, wnid, task, answer, answered_at)
    by_class: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for rater, wnid, _, answer, _ in given:
        by_class[wnid].append((rater, answer))
    classes = []
    for wnid, answers in sorted(by_class.items()):
        counts = Counter(answer for _, answer in answers)
        name = name_of(wnid)
        classes.append(
            {
                "wnid": wnid,
                "name": name,
                "keep": counts["keep"],
                "drop": counts["drop"],
                "unsure": counts["unsure"],
                "answers": answers,
                "verdict": verdict(counts["keep"], counts["drop"]),
            }
        )
    decided = [c for c in classes if c["verdict"] is not None]
    kept = sum(c["verdict"] == "keep" for c in decided)
    return {
        "instructions": CANDIDATE_INSTRUCTIONS,
        "captions_shown": CAPTIONS_SHOWN,
        "confidence": config.review.confidence,
        "raters_wanted": config.review.class_raters,
        "raters": sorted({rater for rater, *_ in given}),
        "answers": len(given),
        "classes": classes,
        "reviewed": len(decided),
        "kept": kept,
        "share": kept / len(decided) if decided else None,
        "vetoed": sorted(config.ranking.vetoed),
        "unsure_classes_again": config.review.unsure_classes_again,
    }


def export_classes(run_dir: str, config: Config, index: NounIndex) -> dict:
    """Write the class review's answers and figures into the run; the figures."""
    store = Store(run_dir, CLASS_DB_FILE)
    try:
        results = class_figures(config, lambda wnid: index[wnid].name if wnid in index else wnid, store)
        decided = (results["kept"], results["reviewed"], config.review.confidence)
        results["low"], results["high"] = clopper_pearson(*decided) if results["reviewed"] else (None, None)
        rows = [{"rater": r, "wnid": w, "answer": a, "answered_at": t} for r, w, _, a, t in store.all_answers()]
        with atomic_output(stage_path(run_dir, REVIEW, CLASS_ANSWERS_FILE)) as stream:
            pq.write_table(pa.Table.from_pylist(rows, ANSWERS_SCHEMA), stream)
        write_json(results_path(run_dir), results)
        copy_back(run_dir, store)
    finally:
        store.close()
    return results


def dropped_classes(results: dict) -> list[str]:
    """The classes the raters dropped and not vetoed yet."""
    vetoed = set(results["vetoed"])
    return [c["wnid"] for c in results["classes"] if c["verdict"] == "drop" and c["wnid"] not in vetoed]


def with_vetoes(config: Config, wnids: list[str]) -> Config:
    ranking = config.ranking.model_copy(update={"vetoed": sorted({*config.ranking.vetoed, *wnids})})
    return config.model_copy(update={"ranking": ranking})


def review_config(run_dir: str, config_path: str | None) -> Config:
    """The run's config (or the one given) with the run's recorded vetoes in `ranking.vetoed`."""
    return with_vetoes(load_run_config(run_dir, config_path), read_vetoes(run_dir))


def write_vetoes(run_dir: str, wnids: list[str], index: NounIndex) -> str:
    """`RUN/vetoed_classes.txt`: `wnid name` a line, sorted; its path."""
    path = vetoes_path(run_dir)
    write_text(path, "".join(f"{w} {index[w].name}\n" if w in index else f"{w}\n" for w in sorted(wnids)))
    return path

"""The class review's candidates as rank listed them: its classes in order (fate `class`), then
those next in line, and how many captions each page shows. Apart from the pages' evidence
(`class_plan`: captions, shares, thumbnails, which load the sense decision and Beam) so that
`review classes status` reads them in a second."""

from __future__ import annotations

from imagenot.errors import ImagenotError
from imagenot.pipeline.rank.ranking import BEYOND_TOP_K
from imagenot.pipeline.run.files import read_tsv
from imagenot.pipeline.run.layout import RANK, RANKING_FILE, stage_path
from imagenot.pipeline.run.stage_dir import is_done

CAPTIONS_SHOWN = 12  # captions a class's page shows
CLASS_FATE = "class"


def ranking_path(run_dir: str) -> str:
    return stage_path(run_dir, RANK, RANKING_FILE)


def ranked_classes(run_dir: str) -> list[dict]:
    """The run's classes in rank's order (wnid, score, pass_share as rank wrote them)."""
    if not is_done(run_dir, RANK):
        raise ImagenotError(f"{run_dir}: no finished rank/ stage; the class review shows rank's class list")
    return [r for r in read_tsv(ranking_path(run_dir)) if r["fate"] == CLASS_FATE]


def ranked_names(run_dir: str) -> dict[str, str]:
    """Every candidate's name as rank listed it, vetoed classes too: what `review classes status`
    names them by without loading WordNet."""
    return {r["wnid"]: r["name"] for r in read_tsv(ranking_path(run_dir))}


def review_candidates(run_dir: str, extra: int) -> list[dict]:
    """The classes in rank's order, then the `extra` candidates next in line (those a veto would
    promote first: rank kept them out only for the class count)."""
    classes = ranked_classes(run_dir)  # refused at once without a finished rank
    beyond = [r for r in read_tsv(ranking_path(run_dir)) if r["fate"] == BEYOND_TOP_K]
    return classes + beyond[:extra]

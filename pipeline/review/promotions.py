"""Which vetoed classes each class `imagenot review classes apply` promoted took the place of
(`review/promoted_classes.json`: promoted wnid -> the classes that apply vetoed), so a promoted
class's page says whom it replaced. Rank fills the vetoed places with the next candidates in its
order, so with several vetoes at once each promoted class names them all."""

from __future__ import annotations

from imagenot.pipeline.run.files import read_json, write_json
from imagenot.pipeline.run.filesystems import FileSystems
from imagenot.pipeline.run.layout import REVIEW, stage_path

PROMOTED_FILE = "promoted_classes.json"


def promotions_path(run_dir: str) -> str:
    return stage_path(run_dir, REVIEW, PROMOTED_FILE)


def read_promotions(run_dir: str) -> dict[str, list[str]]:
    path = promotions_path(run_dir)
    return read_json(path) if FileSystems.exists(path) else {}


def record_promotions(run_dir: str, promoted: list[str], vetoed: list[str]) -> None:
    """`promoted` took the places of `vetoed` (an apply's vetoed classes that were classes); earlier
    applies' promotions are kept."""
    if promoted:
        write_json(promotions_path(run_dir), {**read_promotions(run_dir), **dict.fromkeys(promoted, sorted(vetoed))})

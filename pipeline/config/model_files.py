"""Models by the names a config gives them, on this machine's (or the worker image's) own disk: the
first phase's model2vec folder and the CLIP audit model (text encoders: `labels.encoders.models`).
Nothing here loads weights, so preflight checks every model a config names in milliseconds, and a
loader refuses with the same line where only a worker can tell."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from imagenot.pipeline.config.schema import ImageAudit


def static_model_problem(folder: str | None) -> str | None:
    """Why a configured model2vec folder (scoring.first_phase_model) cannot be loaded, or None;
    None (distilled from scoring.model when first needed) is always fine."""
    if folder is None or (Path(folder).expanduser() / "config.json").is_file():
        return None
    return "no model2vec model folder (with config.json) there"


def clip_model_problem(audit: ImageAudit) -> str | None:
    """Why the CLIP audit model cannot be built offline, or None (no weights loaded)."""
    if audit.clip_model.startswith("local-dir:"):
        folder = Path(audit.clip_model.removeprefix("local-dir:")).expanduser()
        return None if folder.is_dir() else f"image_audit.clip_model: no folder {folder}"
    if audit.clip_weights is not None and not Path(audit.clip_weights).expanduser().is_file():
        return f"image_audit.clip_weights: no file {audit.clip_weights}"
    if audit.clip_model_config is not None:  # registers the model name itself
        return (
            None
            if Path(audit.clip_model_config).is_file()
            else f"image_audit.clip_model_config: no file {audit.clip_model_config}"
        )
    spec = importlib.util.find_spec("open_clip")
    if spec is None:  # the audit command itself names the extra to install
        return None
    configs = Path(next(iter(spec.submodule_search_locations))) / "model_configs"
    if not (configs / f"{audit.clip_model}.json").is_file():
        known = sorted(p.stem for p in configs.glob("*.json"))
        return (
            f"image_audit.clip_model: {audit.clip_model!r} is not an open_clip model "
            f"({len(known)} known, e.g. {known[:3]})"
        )
    return None

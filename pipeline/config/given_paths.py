"""The paths a config names, made absolute as the config is read: a relative path means the place
it names from the working folder of the command that reads it, and is recorded so (in
`RUN/config.yaml`, a manifest, a fingerprint), never as a path that changes meaning with the
working folder of a later command. Scheme paths (gs://, https://), the named reference sets and
hub model ids are left as they are."""

from __future__ import annotations

import copy

from imagenot.pipeline.run.filesystems import FileSystems
from imagenot.pipeline.run.paths import absolute
from imagenot.wordnet.classlists import REFERENCE_SETS

# (section, ..., key) of each file or folder the config names (a list: several).
FILE_KEYS = (
    ("corpus", "paths"),
    ("selection", "caption_rules", "given_names"),
    ("scoring", "cache_dir"),
    ("scoring", "first_phase_model"),
    ("sampling", "reference_scores"),
    ("download", "blocklists"),
    ("image_audit", "clip_model_config"),
    ("image_audit", "clip_weights"),
    ("image_audit", "reference_embeddings"),
)
LOCAL_DIR = "local-dir:"  # image_audit.clip_model's prefix of a model folder
PACKAGED = "packaged"  # scoring.label_model's name of the label model the package ships


def absolute_config_paths(raw: dict) -> dict:
    """The config mapping as read (not validated yet) with every path it names absolute; what is
    not a text where a path goes is left for validation to name."""
    raw = copy.deepcopy(raw)
    for *sections, key in FILE_KEYS:
        holder = _section(raw, sections)
        if holder is not None and key in holder:
            value = holder[key]
            holder[key] = [_absolute(v) for v in value] if isinstance(value, list) else _absolute(value)
    selection = _section(raw, ["selection"])
    if selection is not None and selection.get("reference") not in (None, *REFERENCE_SETS):
        selection["reference"] = _absolute(selection["reference"])
    audit = _section(raw, ["image_audit"])
    if audit is not None and isinstance(model := audit.get("clip_model"), str) and model.startswith(LOCAL_DIR):
        audit["clip_model"] = LOCAL_DIR + absolute(model.removeprefix(LOCAL_DIR))
    _absolute_text_model(raw)
    scoring = _section(raw, ["scoring"])
    if scoring is not None and scoring.get("label_model") not in (None, PACKAGED):
        scoring["label_model"] = _absolute(scoring["label_model"])  # a folder of weights, unless the shipped ones
    return raw


def _absolute_text_model(raw: dict) -> None:
    """scoring.model names a local folder, a hub id or the packaged model: a folder that is there
    is made absolute, and so is the key of its threshold (a threshold is one model's)."""
    scoring = _section(raw, ["scoring"])
    model = scoring.get("model") if scoring is not None else None
    if not isinstance(model, str) or absolute(model) == model or not FileSystems.exists(model):
        return  # not a relative local path (a scheme's, the packaged name's), or no folder there: a hub id
    scoring["model"] = absolute(model)
    ranking = _section(raw, ["ranking"])
    thresholds = ranking.get("thresholds") if ranking is not None else None
    if isinstance(thresholds, dict) and model in thresholds:
        ranking["thresholds"] = {absolute(model) if k == model else k: v for k, v in thresholds.items()}


def _section(raw: dict, keys: list[str]) -> dict | None:
    for key in keys:
        raw = raw.get(key) if isinstance(raw, dict) else None
    return raw if isinstance(raw, dict) else None


def _absolute(value: object) -> object:
    return absolute(value) if isinstance(value, str) and value else value

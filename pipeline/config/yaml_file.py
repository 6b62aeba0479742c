"""Reading a config file strictly, and explaining its errors.

YAML itself lets a key repeat (the last one wins), so a config with `min_captions` twice would
run with whichever the reader noticed last; here a repeated key is an error naming it and both
lines. A mistyped key gets the closest allowed keys of its section as a suggestion.
"""

from __future__ import annotations

import difflib
import types
import typing

import yaml
from pydantic import BaseModel


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping of the document holds the same key twice."""


class _StrictLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key repeated in one mapping."""

    def construct_mapping(self, node, deep=False):
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if isinstance(key, typing.Hashable) and key in seen:
                problem = f"key {key!r} appears twice (lines {seen[key]} and {line}); keep one"
                raise DuplicateKeyError(None, None, problem, key_node.start_mark)
            if isinstance(key, typing.Hashable):
                seen[key] = line
        return super().construct_mapping(node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping)


def parse_yaml(text: str) -> object:
    """The document in `text`; raises yaml.YAMLError, also for a repeated key."""
    return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)


def _section_model(annotation: object) -> type[BaseModel] | None:
    """The pydantic model a field holds, seeing through `X | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        for member in typing.get_args(annotation):
            if (model := _section_model(member)) is not None:
                return model
    return None


def suggestion(model: type[BaseModel], location: tuple) -> str:
    """' (did you mean ...?)' for an unknown key at `location` under `model`, or ''."""
    section: type[BaseModel] | None = model
    for part in location[:-1]:
        field = section.model_fields.get(part) if isinstance(part, str) else None
        section = _section_model(field.annotation) if field else None
        if section is None:
            return ""
    close = difflib.get_close_matches(str(location[-1]), list(section.model_fields), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(k) for k in close)}?)" if close else ""

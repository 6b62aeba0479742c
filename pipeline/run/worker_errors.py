"""Errors raised inside Beam workers, brought back to the user as the error they were.

An `ImagenotError` a worker raises reaches the driver wrapped: on the in-process runner as itself
with Beam's " [while running 'Step']" appended, from worker processes (or Dataflow) as a
RuntimeError whose text holds the worker's traceback, ending in `module.ErrorClass: message`.
`unwrapped` finds that line and raises the error again with its own message, so the command line
prints the one line (its traceback, with the worker's, only under -v).
"""

from __future__ import annotations

import importlib
import re

from imagenot.errors import ImagenotError

_RAISED = re.compile(r"^(imagenot(?:\.\w+)+)\.(\w+): (.+)$", re.M)
_BEAM_STEP = re.compile(r" \[while running '[^']*'\]$")


def _error_class(module: str, name: str) -> type[ImagenotError] | None:
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return found if isinstance(found, type) and issubclass(found, ImagenotError) else None


def unwrapped(err: Exception) -> ImagenotError | None:
    """The ImagenotError a worker raised, as raised, if `err` carries one; else None."""
    if isinstance(err, ImagenotError):
        message = _BEAM_STEP.sub("", str(err))
        return None if message == str(err) else _rebuilt(type(err), message)
    for match in _RAISED.finditer(str(err)):
        if (cls := _error_class(match.group(1), match.group(2))) is not None:
            return _rebuilt(cls, _BEAM_STEP.sub("", match.group(3)))
    return None


def _rebuilt(cls: type[ImagenotError], message: str) -> ImagenotError:
    try:
        return cls(message)
    except TypeError:  # a subclass whose constructor takes more than the message
        return ImagenotError(message)

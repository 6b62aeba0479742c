"""A long review command says what it is doing: the INFO lines of the loggers that name each stage
it runs (the build's, a backfill's) shown on stderr without -v, so `review classes apply` and
`review apply` are not silent for minutes."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

BUILD = "imagenot.pipeline.frame.build"  # each stage a build runs, or skips
BACKFILL = "imagenot.pipeline.amend.backfill"  # each drop pass's download, the report and export written again
ROUNDS = "imagenot.pipeline.download.stage"  # each download round: its rows, those fetched and carried over


@contextlib.contextmanager
def stages_shown(*names: str) -> Iterator[None]:
    """Within the block, the `names` loggers' INFO lines go to stderr (-v shows them already)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("  %(message)s"))
    shown = [logging.getLogger(name) for name in names]
    shown = [logger for logger in shown if logger.getEffectiveLevel() > logging.INFO]
    saved = [(logger.level, logger.propagate) for logger in shown]
    for logger in shown:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # the root's handler would print each line twice
    try:
        yield
    finally:
        for logger, (level, propagate) in zip(shown, saved):
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate

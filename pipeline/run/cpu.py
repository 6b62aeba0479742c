"""What a stage cost in CPU, for `summary.json`, the card and `imagenot plan`.

A command's CPU seconds are its own process's (every thread) and its finished child processes':
Beam's local workers are child processes that the runner waits for when a pipeline ends, so their
CPU is counted once the stage is done. On Dataflow or a portable job server the workers are other
machines' processes: there the figure is the driver's alone, and the job's own accounting holds the
rest. A stage's rate is per corpus row (the rows the run's tag stage read), the unit `imagenot
plan` projects a corpus by.
"""

from __future__ import annotations

import resource


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of the child processes it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cpu_figures(seconds: float, corpus_rows: int | None) -> dict:
    """A stage's CPU figures: its CPU seconds and, with the corpus rows behind it, microseconds a row."""
    figures = {"cpu_seconds": round(seconds, 2)}
    if corpus_rows:
        figures.update(rows=corpus_rows, cpu_us_per_row=round(seconds / corpus_rows * 1e6, 2))
    return figures

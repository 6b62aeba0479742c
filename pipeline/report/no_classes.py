"""A run that ended with no classes: which step cut the last synsets, said once for the card, the
report and `imagenot build`'s last line.

Ordinary mistakes end there (more images per class than any class has, NSFW tags spelled unlike
the corpus's), and such a run still finishes with a card that says so."""

from __future__ import annotations

from imagenot.pipeline.report.facts import RunFacts
from imagenot.pipeline.report.funnel import FunnelRow, funnel_rows, reasons_text


def last_cut(rows: list[FunnelRow]) -> FunnelRow | None:
    """The first funnel step that left no synsets, when the run ended with none; else None."""
    synset_rows = [row for row in rows if row.synsets is not None]
    if not synset_rows or synset_rows[-1].synsets:
        return None
    return next(row for row in synset_rows if row.synsets == 0)


def statement(row: FunnelRow) -> str:
    """One sentence: no classes, and the step (with its reasons) that cut the last synsets."""
    dropped = ", ".join(filter(None, (reasons_text(row.synsets_dropped), reasons_text(row.captions_dropped))))
    reasons = f" ({dropped})" if dropped else ""
    return f"no classes: step '{row.step}' cut the last synsets{reasons}; it keeps {row.what}"


def describe(facts: RunFacts) -> str:
    """The statement for a run with no classes (its funnel says which step)."""
    cut = last_cut(funnel_rows(facts))
    return statement(cut) if cut else "no classes"

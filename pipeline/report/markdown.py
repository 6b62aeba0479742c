"""Markdown pieces the card and its datasheet sections share: table cells, tables, counted nouns."""

from __future__ import annotations

import functools


def cell(value: object) -> str:
    """A Markdown table cell: floats to 4 significant digits, pipes and newlines made harmless."""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: tuple[str, ...], rows: list[tuple], align: str | None = None) -> list[str]:
    align = align or "l" * len(header)
    rule = "|".join("---:" if a == "r" else "---" for a in align)
    return [f"| {' | '.join(header)} |", f"|{rule}|", *(f"| {' | '.join(cell(v) for v in row)} |" for row in rows), ""]


def count_of(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "es" if noun.endswith("s") else "s")


@functools.cache
def _markdown():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table")


def to_html(lines: list[str]) -> str:
    """The card's Markdown lines as HTML for the report (CommonMark with tables; raw HTML in them
    stays text), so both say the same in the same words. A table scrolls inside its box (the
    report's `.scroll`), so a phone's screen holds the page."""
    rendered = _markdown().render("\n".join(lines))
    return rendered.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")


def inline_html(text: str) -> str:
    """A span of the card's Markdown (a sentence, a table cell: `code`, **bold**) as HTML for the
    report, raw HTML in it kept as text."""
    return _markdown().renderInline(text)

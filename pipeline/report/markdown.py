"""Markdown pieces the card and its datasheet sections share: table cells, tables, counted nouns."""

from __future__ import annotations


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


def to_html(lines: list[str]) -> str:
    """The card's Markdown lines as HTML for the report (CommonMark with tables; raw HTML in them
    stays text), so both say the same in the same words."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render("\n".join(lines))

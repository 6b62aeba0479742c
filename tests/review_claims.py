"""What the card and the report say about people, checked against the review's own files: every
statement about what people did matches `review/results.json` and `review/class_results.json`
(issue 43), and the report's review section is rendered (no Markdown marks, no `None`)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def check_people_claims(run_dir: Path) -> None:
    card = (run_dir / "report/card.md").read_text()
    page = (run_dir / "report/report.html").read_text()
    text = _text(page)
    review = _read(run_dir / "review/results.json")
    classes = _read(run_dir / "review/class_results.json")
    for said in (card, text):
        if review and review["answers"]:
            images = review["images_answered"]
            assert f"people checked the labels of {images:,} image" in said.lower()
            assert "no person looked at the images" not in said.lower() and "no human review" not in said.lower()
            assert "no person checked an image" not in said and "no person checked a label" not in said
        else:
            assert "no person looked at the images" in said.lower()
        if classes and classes["answers"]:
            assert f"people read {len(classes['classes']):,} candidate class" in said.lower()
            assert "no person chose a class" not in said
    review_section = page[page.index('<section id="review">') : page.index("</section>", page.index('id="review"'))]
    assert "**" not in review_section and "None" not in _text(review_section) and "`" not in review_section

"""A report opened in Debian's headless chromium: what a reader's browser makes of the page.

A copy of the page gets a script that, once the page has loaded, writes what it saw into the DOM
(images and whether each decoded, every resource the page requested, whether the page is wider
than the window, what a reader would trip on: unrendered Markdown, `null`, empty cells, a heading
twice, anything cut at the window's edge); chromium's `--dump-dom` hands that back.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
]
PROBE = """<script>window.addEventListener("load", () => {
  const images = [...document.images];
  const prose = [...document.querySelectorAll("p, li, td, th, figcaption, h2, h3")].filter(e => !e.closest("pre"))
    .map(e => { const copy = e.cloneNode(true); copy.querySelectorAll("code").forEach(c => c.remove());
                return copy.innerText; });
  const headings = [...document.querySelectorAll("h2, h3")].map(h => h.innerText.trim());
  const seen = {images: images.length, broken: images.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt),
                requests: performance.getEntriesByType("resource").map(e => e.name),
                wider_than_window: document.documentElement.scrollWidth > window.innerWidth,
                // what a reader sees: Markdown left unrendered, YAML's null, empty table cells, a heading twice,
                // and anything reaching past the window's right edge that does not scroll inside its box
                raw_marks: prose.filter(t => t.includes("`") || t.includes("**")).map(t => t.slice(0, 80)),
                nulls: prose.filter(t => /\\b(null|None)\\b/.test(t)).map(t => t.slice(0, 80)),
                empty_cells: [...document.querySelectorAll("td, th")].filter(c => !c.innerText.trim()
                  && !c.querySelector("img")).length,
                repeated_headings: headings.filter((h, i) => headings.indexOf(h) !== i),
                cut: [...document.body.querySelectorAll("*")].filter(e => !e.closest(".scroll, pre")
                  && e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.tagName).slice(0, 10)};
  const out = document.createElement("pre"); out.id = "probe"; out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
});</script>"""


def chromium() -> str:
    """The chromium binary (scripts/setup.sh installs Debian's); skips the test where there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no chromium on PATH (scripts/setup.sh installs Debian's chromium package)")
    return found


def open_page(page: Path, folder: Path, width: int = 390, height: int = 844) -> dict:
    """What chromium saw loading `page` in a window `width` x `height` (a phone's)."""
    probe = folder / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    result = subprocess.run(
        [
            chromium(),
            *FLAGS,
            f"--user-data-dir={folder / 'profile'}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,  # a failed load is reported below
    )
    seen = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout)
    assert seen, f"the page did not finish loading in chromium: {result.stderr[-2000:]}"
    return json.loads(seen.group(1).replace("&quot;", '"').replace("&amp;", "&"))

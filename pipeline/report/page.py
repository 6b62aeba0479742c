"""`report.html`: one self-contained page (inline CSS, plots as base64 PNG) describing a run.

Every text that comes from data (captions, glosses, names, config values) goes through
`html.escape`; nothing on the page loads from elsewhere.
"""

from __future__ import annotations

import base64
import html
from typing import TYPE_CHECKING

from imagenot.pipeline.report.card import (
    STRUCTURE_ROWS,
    WORDNET_LICENCE,
    audit_summary,
    audits_to_run,
    dropped_sentence,
)
from imagenot.pipeline.report.choices import open_choices
from imagenot.pipeline.report.class_review import class_review_lines
from imagenot.pipeline.report.crawl import fetched_sentence
from imagenot.pipeline.report.facts import STRUCTURE_REFERENCE, RunFacts
from imagenot.pipeline.report.funnel import funnel_cells, funnel_rows
from imagenot.pipeline.report.glossary import glossary_rows
from imagenot.pipeline.report.human_review import review_lines
from imagenot.pipeline.report.markdown import count_of, inline_html, to_html
from imagenot.pipeline.report.no_classes import describe
from imagenot.pipeline.report.people import what_people_did

if TYPE_CHECKING:  # matplotlib loads with it: a config check imports this module without drawing
    from imagenot.pipeline.report.plots import Plots

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; color: #222; max-width: 1140px; margin: 0 auto; padding: 0 20px 60px; }
h1 { margin-top: 28px; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 4px; margin-top: 40px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 10px 0 18px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.short td { background: #fdecea; }
img { max-width: 100%; display: block; margin: 8px 0; }
.pair { display: flex; gap: 12px; } .pair img { width: 50%; }
.warning { background: #fff4e5; border-left: 4px solid #f0a020; padding: 8px 12px; }
.figures { display: flex; gap: 28px; flex-wrap: wrap; margin: 12px 0; }
.figures div { font-size: 13px; color: #555; } .figures b { display: block; font-size: 22px; color: #222; }
figcaption { font-size: 13px; color: #555; margin-bottom: 14px; }
code, pre { background: #f6f6f6; } pre { padding: 8px; overflow-x: auto; }
td.caption { max-width: 320px; } td.gloss { max-width: 300px; }
.scroll { overflow-x: auto; max-width: 100%; }
.grid { display: flex; flex-wrap: wrap; gap: 10px; }
figure.thumb { width: 124px; margin: 0; font-size: 11px; line-height: 1.3; color: #444; overflow-wrap: anywhere; }
figure.thumb img { margin: 0 0 3px; }
div.class h4 { margin: 18px 0 6px; } div.class.short h4, .shortmark { color: #b3261e; }
"""
SECTIONS = (
    ("overview", "Overview"),
    ("gallery", "Images by class"),
    ("funnel", "Funnel"),
    ("similarity", "Similarity"),
    ("structure", "WordNet structure"),
    ("images", "Images per class"),
    ("download", "Download"),
    ("audits", "Audits"),
    ("review", "Review by people"),
    ("classes", "Class list"),
    ("rebuild", "Rebuild"),
)


def esc(value: object) -> str:
    return html.escape(str(value))


def number(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return esc(value)


def image(data: bytes, alt: str) -> str:
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}">'


def figure(data: bytes, alt: str, caption: str) -> str:
    return f"{image(data, alt)}\n<figcaption>{caption}</figcaption>"


def table(
    header: tuple[str, ...],
    rows: list[tuple],
    numeric: set[int] = frozenset(),
    row_class: list[str] | None = None,
    cell_class: dict[int, str] | None = None,
    markdown: set[int] = frozenset(),
) -> str:
    """A table of escaped cells; columns in `numeric` right-aligned and formatted as numbers, those
    in `markdown` the card's Markdown (`code`), rendered."""
    cell_class = cell_class or {}
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cells = "".join(
            f'<td class="n">{number(v)}</td>'
            if j in numeric
            else f'<td class="{cell_class[j]}">{esc(v)}</td>'
            if j in cell_class
            else f"<td>{inline_html(v) if j in markdown else esc(v)}</td>"
            for j, v in enumerate(row)
        )
        css = f' class="{row_class[i]}"' if row_class and row_class[i] else ""
        body.append(f"<tr{css}>{cells}</tr>")
    return f'<div class="scroll"><table>\n<tr>{head}</tr>\n' + "\n".join(body) + "\n</table></div>"


def section(key: str, body: str) -> str:
    return f'<section id="{key}">\n<h2>{esc(dict(SECTIONS)[key])}</h2>\n{body}\n</section>'


def _overview(facts: RunFacts) -> str:
    c = facts.config
    warning = (
        '<p class="warning"><b>Synthetic corpus.</b> This dataset was built from a synthetic LAION-style corpus '
        f"(<code>imagenot synth</code>, {c.corpus.synth.rows:,} rows, seed {c.corpus.synth.seed}, "
        f"{c.corpus.synth.captions} captions); its captions and "
        "URLs are made up. It demonstrates the pipeline and is not data to train or evaluate on.</p>"
        if facts.synthetic
        else ""
    )
    if not facts.classes:
        warning += f'<p class="warning"><b>No classes.</b> This run ended with {esc(describe(facts))}.</p>'
    short = sum(1 for row in facts.classes if row["shortfall"] > 0)
    tiles = [
        ("classes", len(facts.classes)),
        ("images", facts.images),
        *((f"{split} images", n) for split, n in facts.splits.items()),
        ("classes short", short),
        ("corpus rows read", facts.tag["rows_read"]),
    ]
    downloaded = (
        "The images were fetched into <code>download/</code>."
        if facts.download is not None
        else "The images were not fetched by this run (<code>download.enabled</code> is false): "
        "the dataset lists their URLs."
    )
    return section(
        "overview",
        f"""{warning}
<div class="figures">{"".join(f"<div><b>{number(n)}</b>{esc(label)}</div>" for label, n in tiles)}</div>
<p>An image classification dataset built the way ImageNot (Salaudeen &amp; Hardt, 2024) was: its classes are
WordNet {esc(facts.manifest["wordnet"])} noun synsets chosen to differ from <code>{esc(c.selection.reference)}</code>,
its images are web image/caption pairs labelled from their caption text alone.
{inline_html(what_people_did(facts.review, facts.class_review))}.
It is a contrast dataset, for testing whether models rank the same way here as on ImageNet.
{downloaded} The dataset card, <code>report/card.md</code>, says how it was built and what to watch for.</p>""",
    )


def _funnel(facts: RunFacts, plots: Plots) -> str:
    funnel = funnel_rows(facts)
    rows = funnel_cells(funnel)
    glossary = glossary_rows(reason for r in funnel for reason in r.reasons())
    choices = open_choices(facts.config, facts.manifest["encoder"]["model_id"])
    return section(
        "funnel",
        f"""{figure(plots.funnel, "funnel", "Synsets and captions left after each step (log scales).")}
{table(("step", "what it does", "synsets left", "captions left", "synsets dropped", "captions dropped"), rows, {2, 3})}
<h3>Drop reasons</h3>
{table(("reason", "meaning"), glossary, markdown={1})}
<h3>Choices the paper leaves open</h3>
{table(("setting", "value", "meaning"), [tuple(choice) for choice in choices], markdown={2})}""",
    )


def _similarity(facts: RunFacts, plots: Plots) -> str:
    return section(
        "similarity",
        f"""<p>Each caption's cosine similarity to its class's query
(<code>{esc(facts.config.scoring.query_template)}</code>) under <code>{
            esc(facts.manifest["encoder"]["model_id"])
        }</code>,
over every selected caption of the classes (not only the sampled ones).</p>
{
            figure(
                plots.similarity_summary,
                "per-class similarity summary",
                "As the ImageNot paper's Figure 2: per class the minimum, mean, median and maximum similarity of its "
                "captions; each panel shows how one of them is spread over the classes.",
            )
        }
{
            figure(
                plots.candidate_scores,
                "candidate scores",
                "Every candidate synset's score (mean of its top-n first-pass similarities) by its fate; the dashed "
                "line is the threshold set for this encoder.",
            )
        }
{
            figure(
                plots.class_distributions,
                "per-class distributions",
                "As the ImageNot paper's Figure 3: each class's similarity distribution (left, as the share of its "
                "captions at or below each similarity, one line per class coloured by its score) and box plots of "
                "classes spread over the ranking (right; whiskers at the minimum and maximum; "
                "quantiles to within 0.0025).",
            )
        }""",
    )


def _structure(facts: RunFacts, plots: Plots) -> str:
    structure = facts.structure
    rows = [(label, structure["classes"][key], structure["reference"][key]) for label, key in STRUCTURE_ROWS]
    readings = "".join(
        f"<li><b>{esc(reading)}</b>: "
        + (
            "satisfied"
            if not broken
            else f"not satisfied by {count_of(len(broken), 'class')}: "
            + "; ".join(esc(b) for b in broken[:20])
            + (" ..." if len(broken) > 20 else "")
        )
        + "</li>"
        for reading, broken in facts.readings.items()
    )
    return section(
        "structure",
        f"""<p>Where the classes sit in WordNet, beside {STRUCTURE_REFERENCE}'s
(as <code>imagenot stats</code> computes it; each set is measured against the other).</p>
<div class="pair">{image(plots.depth, "depth")}{image(plots.siblings, "siblings")}</div>
<figcaption>Share of each set's classes by depth in WordNet (left) and by number of siblings (right).</figcaption>
{figure(plots.lexnames, "lexicographer files", "Share of each set's classes per WordNet lexicographer file.")}
{table(("figure", "this dataset", STRUCTURE_REFERENCE), rows, {1, 2})}
<p>Overlap with the reference set <code>{esc(facts.config.selection.reference)}</code> under the two readings of
step 2 (paper: no reference synset and no shared lemma; strict: also no ancestor or descendant of a reference
synset, and no class an ancestor of another):</p>
<ul>{readings}</ul>""",
    )


def _images(facts: RunFacts, plots: Plots) -> str:
    n = facts.config.sampling.images_per_class
    short = sum(1 for c in facts.classes if c["shortfall"] > 0)
    return section(
        "images",
        f"""{
            figure(
                plots.image_counts,
                "images per class",
                f"Images per class against the target of {n:,}; classes short of it in red.",
            )
        }
<p>{short:,} of {len(facts.classes):,} classes have fewer than {n:,} images (shaded in the class list); they are
reported, never padded, and fill their test split first.</p>""",
    )


def _download(facts: RunFacts, plots: Plots) -> str:
    d = facts.download
    if d is None:
        return section("download", "<p>The download stage did not run (<code>download.enabled</code> is false).</p>")
    failures = figure(plots.failures, "download failures", "Failed URLs by reason.") if plots.failures else ""
    rows = [
        ("images in the dataset", d["images"]),
        ("images it asks for", d["target"]),
        ("its candidates' URLs tried", d["urls_tried"]),
        ("their success rate", "none tried" if d["url_success_rate"] is None else d["url_success_rate"]),
        ("URLs the run fetched, every command", d.get("urls_fetched", "not counted")),
        ("images that arrived, every command", d.get("images_fetched", "not counted")),
        ("classes short", d["classes_short"]),
    ]
    fetched = to_html([fetched_sentence(d, facts.config.download.max_rounds)])
    dropped = f"<p>{inline_html(dropped_sentence(d))}</p>" if d["dropped_by_audits"] else ""
    hosts = [
        (h["host"], h["requests"], h["peak_rate_per_s"], h["throttled"], h["given_up"] or "no")
        for h in d.get("busiest_hosts", [])
    ]
    busiest = (
        table(("busiest host", "requests", "peak requests/s", "429/503", "given up"), hosts, {1, 2, 3}) if hosts else ""
    )
    return section("download", f"{table(('figure', 'value'), rows, {1})}\n{fetched}{dropped}{failures}{busiest}")


def _audits(facts: RunFacts) -> str:
    parts = []
    for name, audit in facts.audits.items():
        title, sentence = audit_summary(name, audit.figures)
        parts.append(f"<p><b>{esc(title)}</b>: {inline_html(sentence)}</p>")
        if "warning" in audit.figures:
            parts.append(f'<p class="warning">{inline_html(audit.figures["warning"])}</p>')
        if audit.plot:
            parts.append(image(audit.plot, name))
        if audit.html:
            parts.append(f'<div class="scroll">{audit.html}</div>')  # written by the audit, its text escaped there
    for lead, commands in audits_to_run(facts):
        parts.append(f"<p>{esc(lead)}: {'; '.join(f'<code>{esc(m)}</code>' for m in commands)}.</p>")
    return section("audits", "\n".join(parts))


def _review(facts: RunFacts) -> str:
    """The card's Class review and Human review sections, rendered, with the sorted precision plot
    in place of the card's link to it."""
    lines = [
        "### " + line[3:] if line.startswith("## ") else line
        for line in (*class_review_lines(facts.class_review, facts.classes), *review_lines(facts.review))
    ]
    plot = next((i for i, line in enumerate(lines) if line.startswith("![")), len(lines))
    shown = (
        figure(facts.review_plot, "per-class precision", "Label precision per class with its interval, sorted.")
        if facts.review_plot and plot < len(lines)
        else ""
    )
    return section("review", "\n".join((to_html(lines[:plot]), shown, to_html(lines[plot + 1 :]))))


def _classes(facts: RunFacts) -> str:
    n = facts.config.sampling.images_per_class
    rows = [
        (
            c["index"],
            c["wnid"],
            c["name"],
            c["gloss"],
            c["score"],
            c["rank"],
            c["captions"],
            c["images"],
            c["train"],
            c["test"],
            c["example"],
        )
        for c in facts.classes
    ]
    header = (
        "index",
        "wnid",
        "name",
        "gloss",
        "score",
        "rank (0 = best)",
        "captions",
        "images",
        "train",
        "test",
        "first image's caption",
    )
    classes = ["short" if c["images"] < n else "" for c in facts.classes]
    return section("classes", table(header, rows, {0, 4, 5, 6, 7, 8, 9}, classes, {3: "gloss", 10: "caption"}))


def _rebuild(facts: RunFacts) -> str:
    manifest = facts.manifest
    outputs = [(e["path"], e["size"], e["sha256"]) for e in manifest["outputs"]]
    licences = (
        ", ".join(f"{esc(value)} {n:,}" for value, n in facts.licenses.items())
        if facts.licenses is not None
        else "no licence column"
    )
    return section(
        "rebuild",
        f"""<pre>imagenot build --config RUN/config.yaml --out NEW_RUN</pre>
<p>The same configuration, seeds and corpus give the same bytes; <code>sample/manifest.json</code> records the
checksums of the {count_of(len(manifest["corpus_shards"]), "corpus shard")}, the stage fingerprints and the \
package versions.
The sample stage's files of this run:</p>
{table(("file in sample/", "bytes", "sha256"), outputs, {1})}
<p>Licences: images stay under their owners' terms (the corpus licence column over the dataset: {licences});
the class list and glosses come from {esc(WORDNET_LICENCE)}; the text encoder is
<code>{esc(manifest["encoder"]["model_id"])}</code> (see its model card).</p>""",
    )


def render_page(facts: RunFacts, plots: Plots, gallery: str) -> str:
    """The page; `gallery` is the per-class thumbnails' HTML (`pipeline.report.gallery`)."""
    nav = "".join(f'<a href="#{key}">{esc(title)}</a>' for key, title in SECTIONS)
    body = "\n".join(
        (
            _overview(facts),
            section("gallery", gallery),
            _funnel(facts, plots),
            _similarity(facts, plots),
            _structure(facts, plots),
            _images(facts, plots),
            _download(facts, plots),
            _audits(facts),
            _review(facts),
            _classes(facts),
            _rebuild(facts),
        )
    )
    title = f"ImageNot-style dataset: {len(facts.classes):,} classes"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{STYLE}</style>
</head>
<body>
<h1>{esc(title)}</h1>
<nav>{nav}</nav>
{body}
</body>
</html>
"""

"""What `imagenot build` says when it ends: what came out, where it is, and a warning when fewer
classes came out than the config asked for, naming the step that cut them."""

from __future__ import annotations

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.run.layout import (
    CARD_FILE,
    DOWNLOAD,
    EXPORT,
    PAGE_FILE,
    RANK,
    REPORT,
    SAMPLE,
    SELECT,
    export_dir,
    stage_path,
)
from imagenot.pipeline.run.summary import read_summary

# rank's reasons for not making a synset a class, and the setting behind each
RANK_CUTS = {
    "below_threshold": "below the gloss-similarity threshold (ranking.thresholds)",
    "too_few_captions": "with too few captions (ranking.min_captions, by default sampling.images_per_class)",
    "low_pass_share": "whose captions pass the caption rules and the sense decision too seldom "
    "(ranking.min_pass_share)",
    "no_captions": "with no scored caption",
}


def closing_summary(config: Config, run_dir: str, ran: list[str]) -> str:
    """A few lines: classes, images, train/test, short classes, and the paths to open."""
    summary = read_summary(run_dir)
    images = summary.get(DOWNLOAD) or summary.get(SAMPLE, {})
    export = summary.get(EXPORT, {})
    split = f" ({export['train']:,} train, {export['test']:,} test)" if export else ""
    short = images.get("classes_short", 0)
    counts = (
        f"{run_dir}: {summary.get(RANK, {}).get('classes', 0):,} classes, {images.get('images', 0):,} images{split}; "
        f"{short:,} class{'es' if short != 1 else ''} short of {config.sampling.images_per_class:,} images"
    )
    lines = [
        counts,
        f"  ran:     {', '.join(ran) or 'nothing (all stages up to date)'}",
        f"  card:    {stage_path(run_dir, REPORT, CARD_FILE)}",
        f"  report:  {stage_path(run_dir, REPORT, PAGE_FILE)}",
    ]
    if export:
        lines.append(f"  dataset: {export_dir(run_dir)}/ (see its README.md)")
    if no_classes := summary.get(REPORT, {}).get("no_classes"):
        lines.append(f"  {no_classes}")
    return "\n".join(lines)


def class_shortfall(config: Config, run_dir: str) -> str | None:
    """Why fewer classes than `ranking.classes` came out, or None when all did."""
    summary = read_summary(run_dir)
    asked, got = config.ranking.classes, summary.get(RANK, {}).get("classes", 0)
    if got >= asked or summary.get(REPORT, {}).get("no_classes"):  # no class: the summary says which step cut them
        return None
    candidates = summary.get(SELECT, {}).get("candidates", 0)
    if candidates < asked:
        return (
            f"{got:,} of the {asked:,} classes asked for (ranking.classes) came out: step 'select' left only "
            f"{candidates:,} candidate synsets (see select/funnel.tsv; a bigger corpus or a lower "
            "selection.min_captions gives more)"
        )
    dropped = summary.get(RANK, {}).get("synsets_dropped", {})
    cuts = ", ".join(f"{dropped[reason]:,} {what}" for reason, what in RANK_CUTS.items() if dropped.get(reason))
    return (
        f"{got:,} of the {asked:,} classes asked for (ranking.classes) came out: of {candidates:,} candidate "
        f"synsets, step 'rank' dropped {cuts or 'none'} (see rank/ranking.tsv)"
    )

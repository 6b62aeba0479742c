"""What the run fetched, in the card's words and the report's: the dataset's images against every
fetch of the run, each download's rounds named by the command that ran them (`download/fetch_log`)."""

from __future__ import annotations

from imagenot.pipeline.report.markdown import count_of

UNNAMED = "the download stage"  # rounds planned before they recorded their command, or outside a command


def rounds_by_command(download: dict) -> str:
    """ "4 by `imagenot build`, 3 by `imagenot review apply`" (Markdown); the bare count where the
    download figures are older than the fetch log."""
    fetches = download.get("fetches")
    if not fetches:
        return f"{download['rounds']:,}"
    return ", ".join(
        f"{f['rounds']:,} by " + (f"`imagenot {f['command']}`" if f["command"] else UNNAMED) for f in fetches
    )


def fetched_sentence(download: dict, max_rounds: int) -> str:
    """Every fetch of the run in one sentence (Markdown), with what `download.max_rounds` allows."""
    fetches = download.get("fetches")
    if not fetches:  # figures of a download before the fetch log
        return f"The download ran {count_of(download['rounds'], 'round')}."
    rounds = sum(f["rounds"] for f in fetches)
    carried = sum(f["carried"] for f in fetches)
    over = (
        f"; the later downloads took {count_of(carried, 'outcome')} over from the earlier ones rather than fetch "
        "those URLs again"
        if carried
        else ""
    )
    return (
        f"In all the run fetched {download['urls_fetched']:,} URLs, and {download['images_fetched']:,} images arrived, "
        f"in {count_of(rounds, 'round')}: {rounds_by_command(download)}{over} (`download.max_rounds` is {max_rounds:,} "
        "for each download and each drop pass)."
    )


def dataset_sentence(download: dict) -> str:
    """The dataset's images against its target and the URLs its candidates took (Markdown)."""
    failures = ", ".join(f"{reason} {n:,}" for reason, n in download["failures"].items()) or "none"
    rate = download["url_success_rate"]
    return (
        f"The dataset holds {download['images']:,} of the {download['target']:,} images it asks for; its candidates' "
        f"{download['urls_tried']:,} URLs were tried ({'none of them' if rate is None else f'success rate {rate}'}); "
        f"failures by reason: {failures}."
    )

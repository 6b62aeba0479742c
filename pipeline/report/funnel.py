"""The whole build as one funnel, corpus rows to final images: what each step did, with this run's
settings, and the synsets and captions it left (select/funnel.json for steps 1-6)."""

from __future__ import annotations

from typing import NamedTuple

from imagenot.pipeline.report.choices import show
from imagenot.pipeline.report.facts import RunFacts
from imagenot.pipeline.run.layout import SAMPLE_COUNTS


class FunnelRow(NamedTuple):
    step: str
    what: str
    synsets: int | None  # synsets left (None: not a synset step)
    captions: int  # captions (rows, images) left
    synsets_dropped: dict[str, int]  # reason -> synsets
    captions_dropped: dict[str, int]  # reason -> captions (rows, images)

    def reasons(self) -> list[str]:
        return [*self.synsets_dropped, *self.captions_dropped]


def reasons_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{reason}={n:,}" for reason, n in counts.items())


def funnel_cells(rows: list[FunnelRow]) -> list[tuple]:
    """The funnel's table rows, as the card and the report show them: every cell says something."""
    return [
        (
            r.step,
            r.what,
            "none found yet" if r.synsets is None else r.synsets,
            r.captions,
            reasons_text(r.synsets_dropped) or "none",
            reasons_text(r.captions_dropped) or "none",
        )
        for r in rows
    ]


def _beyond_first_phase(rank: dict) -> dict[str, int]:
    """Class captions the first phase kept from the encoder (none when it is off)."""
    n = rank.get("rows_beyond_first_phase", 0)
    return {"beyond_first_phase": n} if n else {}


PERSON_STEP_TEXTS = {
    "identity": "safety: no person synset that names people by race, ethnicity, nationality, religion, sexual "
    "orientation, sex or gender, or disability",
    "all": "safety: no person synset at all (selection.person_synsets: all)",
    "keep": "safety: OFF, person synsets are kept, identity ones included (selection.person_synsets: keep)",
}


def _step_texts(facts: RunFacts) -> dict[str, str]:
    s = facts.config.selection
    nsfw = "off" if s.nsfw_synset_threshold is None else f"score >= {s.nsfw_synset_threshold}"
    return {
        "found": "step 1: captions that mention a WordNet noun lemma, and the synsets found",
        "row_nsfw": f"rows kept by LAION's NSFW ratings (tags allowed: {show(s.allowed_nsfw_tags)}; "
        f"max punsafe: {'off' if s.max_punsafe is None else s.max_punsafe}; unrated kept: {show(s.keep_unrated)})",
        "offensive_synsets": "safety: no synset WordNet marks offensive (usage domain or gloss)"
        if s.offensive_synsets
        else "safety: OFF, synsets WordNet marks offensive are kept (selection.offensive_synsets: false)",
        "person_synsets": PERSON_STEP_TEXTS[s.person_synsets],
        "instance_synsets": "OFF: instance synsets are kept (selection.instance_synsets: true)"
        if s.instance_synsets
        else "no instance synset: a named person, place or work (WordNet's instance hypernym) is no class",
        "imagenet_overlap": f"step 2: only synsets of {s.reference} (within reading, as LAIONet)"
        if s.overlap == "within"
        else f"step 2: no overlap with {s.reference} ({s.overlap} reading)",
        "min_captions": f"step 3: at least {s.min_captions:,} usable captions",
        "leaves": "step 4: leaves of the minimal WordNet subtree holding the candidates",
        "nsfw_synsets": f"step 5: lemmas and gloss not flagged by alt-profanity-check ({nsfw})",
        "picturable": "synsets an image can show: under "
        + show(s.picturable_roots)
        + f", not in {show(s.picturable_excluded_lexnames)}",
        "single_synset": "step 6: captions that mention exactly one candidate synset",
        "caption_rules": f"captions whose word names the synset (rules: {show(s.caption_rules.rules)})",
    }


def funnel_rows(facts: RunFacts) -> list[FunnelRow]:
    tag, texts = facts.tag, _step_texts(facts)
    readable = tag["rows_read"] - sum(tag["dropped"].values())
    rows = [
        FunnelRow("corpus", "rows read from the corpus", None, tag["rows_read"], {}, {}),
        FunnelRow("readable", "rows with a text caption and an http(s) url", None, readable, {}, tag["dropped"]),
    ]
    for step in facts.funnel:
        captions = step["captions_dropped"]
        if step["step"] == "found":
            captions = {"no_noun_lemma": readable - step["captions_left"]}
        rows.append(
            FunnelRow(
                step["step"],
                texts.get(step["step"], step["step"]),
                step["synsets_left"],
                step["captions_left"],
                step["synsets_dropped"],
                captions,
            )
        )
    r = facts.config.ranking
    rows.append(
        FunnelRow(
            "rank",
            f"steps 7-8: at least {facts.config.min_class_captions:,} captions, mean top-{r.top_n} gloss similarity "
            f">= {facts.config.threshold}, best {r.classes:,} kept",
            facts.rank["classes"],
            facts.rank["rows_scored"],
            facts.rank["synsets_dropped"],
            _beyond_first_phase(facts.rank),
        )
    )
    sample, n = facts.sample, facts.config.sampling.images_per_class
    reasons = (*SAMPLE_COUNTS[1:], "reserve")  # candidates = images + reserve + the rest, by reason
    empty = sum(1 for short in sample["shortfall_by_class"].values() if short == n)
    rows.append(
        FunnelRow(
            "sample",
            f"step 8: up to {n:,} images per class ({facts.config.sampling.strategy} strategy), "
            "the next ones in reserve",
            sample["classes"] - empty,
            sample["images"],
            {},
            {k: sample[k] for k in reasons if sample.get(k)},
        )
    )
    if facts.download is not None:
        rows.append(
            FunnelRow(
                "download",
                "images fetched, failures replaced from the reserve",
                sum(1 for c in facts.classes if c["images"]),
                facts.download["images"],
                {},
                {k: n for k, n in facts.download["failures"].items() if n},
            )
        )
    return rows

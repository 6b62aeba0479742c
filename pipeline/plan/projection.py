"""The plan of a build projected from a sample of its corpus (`imagenot plan --sample ROWS`).

From the sample's steps 2-6 (`plan/sample.py`), per bound (low, mid, high): the candidates and their
single-synset captions; those that can enter the ranking (`Config.min_class_captions` captions)
and those that can fill N + reserve; the expected classes, min(K, eligible x the share the
threshold keeps), a share no sample can measure without the encoder (`Rates.threshold_keep_*`,
measured by builds); then `make_plan` with what the sample measured in place of the footer-only
plan's guesses: the candidates, the first pass's fill and the captions of a class.

Which eligible candidates become classes depends on their gloss scores, which no sample has; but
it is not blind to size. The few candidates with far more captions than the rest are broad words
(the filler of many captions about something else: "photo", "wallpaper", "beach"), which score low
against their gloss. Assumed (`class_weights`): the eligible candidates above Tukey's upper fence
on log captions (`broad_fence`) pass the threshold at the same share as the others but score below
them, so the K classes are taken from the others first and from these only when the others run
out; each candidate's chance of becoming a class weighs its captions in rank's captions and in its
captions beyond score's first pass. The high end of the captions' range drops the assumption (a
class is like any eligible candidate). Checked on three builds (benchmarks/README.md, "`imagenot
plan --sample` against builds").
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.plan.estimate import Rates, make_plan
from imagenot.pipeline.plan.sample import (
    BOUNDS,
    SampleTally,
    Selected,
    Z,
    projector,
    sample_batches,
    select_sample,
    tag_sample,
)

SUMMARY_KEYS = (
    "candidates",
    "classes",
    "captions_scored",
    "captions_embedded",
    "images",
    "download_requests",
    "download_bytes",
    "vcpu_hours",
    "gpu_hours",
    "cost_usd",
)
RESOLUTION = 10  # sample captions a class needs at the least for its figures to mean much
FENCE_IQRS = 1.5  # Tukey's upper fence: Q3 + 1.5 x (Q3 - Q1), here of log captions


def broad_fence(eligible: list[float]) -> float:
    """Captions above which an eligible candidate is taken for a broad word: Tukey's upper fence
    on log captions (none for fewer than 4 candidates)."""
    if len(eligible) < 4:
        return math.inf
    q1, _, q3 = statistics.quantiles([math.log(c) for c in eligible], n=4)
    return math.exp(q3 + FENCE_IQRS * (q3 - q1))


def class_weights(eligible: list[float], classes: int, keep: float, broad: bool) -> list[tuple[float, float]]:
    """(captions, chance of becoming a class) for each eligible candidate, given `classes` of them
    become classes and the threshold keeps `keep` of them. `broad`: the candidates above the fence
    are the last taken; otherwise each eligible candidate has the same chance."""
    if not eligible:
        return []
    fence = broad_fence(eligible) if broad else math.inf
    typical = [c for c in eligible if c <= fence]
    wide = [c for c in eligible if c > fence]
    from_typical = min(classes, keep * len(typical))
    from_wide = min(max(0.0, classes - from_typical), len(wide))  # rounding aside, at most keep x len(wide)
    return [(c, from_typical / len(typical)) for c in typical] + [(c, from_wide / len(wide)) for c in wide]


def choice_spread(class_sizes: list[tuple[float, float]], classes: int) -> float:
    """The relative half width (Z standard errors) of the classes' mean captions from which of the
    candidates become classes: `classes` drawn without replacement from those with a chance, the
    spread of their captions weighted by it."""
    pool = [(c, w) for c, w in class_sizes if w > 0]
    weight = sum(w for _, w in pool)
    if classes < 1 or not weight:
        return 0.0
    mean = sum(c * w for c, w in pool) / weight
    sd = math.sqrt(sum(w * (c - mean) ** 2 for c, w in pool) / weight)
    return Z * sd / mean / math.sqrt(classes) * math.sqrt(max(0.0, 1 - classes / len(pool)))


def summary(plan: dict, config: Config, candidates: float) -> dict:
    """The figures a builder asks first, from one plan."""
    stages, download = plan["stages"], plan["stages"].get("download", {"work": {"requests": 0, "bytes": 0}})
    return {
        "candidates": round(candidates),
        "classes": config.ranking.classes,
        "captions_scored": stages["score"]["work"]["captions_scored"] + stages["rank"]["work"]["captions_scored"],
        "captions_embedded": stages["score"]["work"]["captions_to_embed"] + stages["rank"]["work"]["captions_to_embed"],
        "images": config.ranking.classes * config.sampling.images_per_class,
        "download_requests": download["work"]["requests"],
        "download_bytes": download["work"]["bytes"],
        **{key: plan[key] for key in ("vcpu_hours", "gpu_hours", "cost_usd")},
    }


def _ranged(values: list) -> dict:
    """{low, mid, high} of the figures of the low, mid and high counts (fewer captions can mean more
    candidates: step 6 drops fewer captions for naming two of them)."""
    return {"low": min(values), "mid": values[1], "high": max(values)}


def _with_classes(config: Config, classes: int) -> Config:
    return config.model_copy(update={"ranking": config.ranking.model_copy(update={"classes": max(classes, 1)})})


def sampled_plan(config: Config, rows: int, shards: int, rates: Rates, workers: int, tally: SampleTally) -> dict:
    project = projector(tally.rows, rows)
    selected = select_sample(config, tally, project)
    sampling, k = config.sampling, config.ranking.classes
    need_rank, need_fill = config.min_class_captions, sampling.images_per_class + sampling.reserve
    keep = dict(zip(BOUNDS, (rates.threshold_keep_low, rates.threshold_keep_share, rates.threshold_keep_high)))
    if config.scoring.label_model is not None:
        labels = (rates.label_keep_low, rates.label_keep_share, rates.label_keep_high)
        keep = {bound: round(keep[bound] * share, 3) for bound, share in zip(BOUNDS, labels)}
    dead = dict(zip(BOUNDS, (rates.dead_url_low, rates.dead_url_share, rates.dead_url_high)))
    plans, per_bound = {}, {}
    for bound in BOUNDS:
        captions = list(selected[bound].captions.values())
        eligible = [c for c in captions if c >= need_rank]
        fence = broad_fence(eligible)
        classes = min(k, round(len(eligible) * keep[bound]))
        class_sizes = class_weights(eligible, classes, keep[bound], broad=bound != "high")
        first_pass = config.scoring.first_pass_captions
        candidates = len(captions) + selected[bound].unseen  # an unseen one: a caption or so
        first_passes = sum(min(first_pass, c) for c in eligible)  # score leaves out those too small to be classes
        fill = first_passes / (candidates * first_pass) if captions else 0.0
        share = sum(c * w for c, w in class_sizes) / classes / rows if classes and eligible else 0.0
        bound_rates = replace(
            rates, candidates=round(candidates), first_pass_fill=fill, class_share=share, dead_url_share=dead[bound]
        )
        bound_config = _with_classes(config, classes)
        plans[bound] = make_plan(bound_config, rows, shards, bound_rates, workers, class_sizes)
        if bound == "mid":
            spread = choice_spread(class_sizes, classes)
        per_bound[bound] = {
            **summary(plans[bound], bound_config, candidates),
            "classes": classes,
            "images": classes * sampling.images_per_class,
            "eligible": len(eligible),
            "can_fill": sum(c >= need_fill for c in captions),
            "broad": sum(c > fence for c in eligible),
            "broad_fence": round(fence) if eligible and math.isfinite(fence) else None,
        }
    figures = {key: _ranged([per_bound[b][key] for b in BOUNDS]) for key in (*SUMMARY_KEYS, "eligible", "can_fill")}
    figures["broad"] = {key: per_bound["mid"][key] for key in ("broad", "broad_fence")}
    rank = plans["mid"]["stages"]["rank"]["work"]
    for key, work in (("captions_scored", "captions_scored"), ("captions_embedded", "captions_to_embed")):
        figure, half = figures[key], round(rank[work] * spread)  # which candidates become classes
        figures[key] = {
            **figure,
            "low": max(0, min(figure["low"], figure["mid"] - half)),
            "high": max(figure["high"], figure["mid"] + half),
        }
    mid = selected["mid"]
    return {
        **plans["mid"],
        **{key: figures[key] for key in SUMMARY_KEYS},
        "sample": _sample_section(config, tally, project, selected, figures, keep),
        "warnings": warnings(config, tally, rows, mid, figures),
    }


def _sample_section(
    config: Config, tally: SampleTally, project, selected: dict[str, Selected], figures: dict, keep: dict
) -> dict:
    mid = selected["mid"]
    captions = sorted(mid.captions.values())
    steps = []
    for b, step in enumerate(mid.funnel.steps):
        synsets = [selected[bound].funnel.steps[b].synsets_left for bound in BOUNDS]
        steps.append(
            {
                "step": step.step,
                "synsets_left": _ranged(synsets),
                "rows_left": _ranged([round(v) for v in project(step.captions_left)]),
            }
        )
    return {
        "rows": tally.rows,
        "scale": round(project(1)[1], 3),
        "rows_dropped_by_reader": _ranged([round(v) for v in project(sum(tally.dropped.values()))]),
        "rows_tagged": _ranged([round(v) for v in project(tally.tagged_rows)]),
        "synsets_found": _ranged([_found(selected[b]) for b in BOUNDS]),
        "select_steps": steps,
        "captions_per_candidate": {
            "median": round(statistics.median(captions)) if captions else 0,
            "mean": round(statistics.fmean(captions)) if captions else 0,
            "max": round(captions[-1]) if captions else 0,
        },
        "min_class_captions": config.min_class_captions,
        "eligible": figures["eligible"],
        "n_plus_reserve": config.sampling.images_per_class + config.sampling.reserve,
        "can_fill": figures["can_fill"],
        "broad": {
            "candidates": figures["broad"]["broad"],
            "fence": figures["broad"]["broad_fence"],
            "source": "assumed: eligible candidates above Tukey's upper fence on log captions are broad words "
            "that pass the threshold as often as the rest but are the last taken as classes (the high end: "
            "any eligible one as likely)",
        },
        "threshold_keeps": {
            **keep,
            "source": "Rates.threshold_keep_*"
            + (" x Rates.label_keep_* (the label model's pass share)" if config.scoring.label_model else "")
            + ": the share measured by builds (benchmarks/README.md, `imagenot plan --sample` against builds); "
            "not from this sample",
        },
    }


def _found(selected: Selected) -> int:
    return len(selected.funnel.classes) + len(selected.funnel.removals)


def warnings(config: Config, tally: SampleTally, rows: int, mid: Selected, figures: dict) -> list[str]:
    """Whether the corpus can give the classes asked, naming the step that binds; whether the
    sample is large enough to say."""
    k, classes = config.ranking.classes, figures["classes"]
    need_fill = config.sampling.images_per_class + config.sampling.reserve
    found = [("tag: synsets found", _found(mid))]
    found += [(f"select: {s.step}", s.synsets_left) for s in mid.funnel.steps]
    found += [
        (f"rank: min_captions ({config.min_class_captions} captions)", figures["eligible"]["mid"]),
        ("rank: threshold (expected share)", classes["mid"]),
    ]
    out = []
    if classes["mid"] < k:
        step, left = next((step, n) for step, n in found if n < k)
        out.append(
            f"cannot fill ranking.classes {k}: about {classes['mid']:,} classes "
            f"({classes['low']:,} to {classes['high']:,}); binding step {step} leaves {left:,}"
        )
    elif classes["low"] < k:
        out.append(f"may not fill ranking.classes {k}: the low end of the range is {classes['low']:,} classes")
    if figures["can_fill"]["mid"] < classes["mid"]:
        out.append(
            f"only about {figures['can_fill']['mid']:,} candidates have N + reserve = {need_fill:,} captions: "
            f"some of the {classes['mid']:,} classes will lack images or reserve"
        )
    per_class = min(config.min_class_captions, need_fill) * tally.rows / rows
    if per_class < RESOLUTION:
        larger = RESOLUTION / per_class * tally.rows
        out.append(
            f"the sample holds about {per_class:.1f} captions of a class that has just enough: figures on "
            f"candidates and classes are rough; a larger --sample ({larger:,.0f} rows) says more"
        )
    return out


def plan_from_sample(
    config: Config, rows: int, shards: int, rates: Rates, workers: int, sample_rows: int, seed: int
) -> dict:
    tally = tag_sample(config, sample_batches(config, sample_rows, seed))
    if not tally.rows:
        raise ImagenotError(
            f"plan --sample: the corpus's {shards:,} file(s) hold no rows (a header or nothing): there is nothing "
            "to project, and a build would find no class"
        )
    return sampled_plan(config, rows, shards, rates, workers, tally)

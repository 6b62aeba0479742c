"""`imagenot plan --config FILE`: the work, the jobs and the bill of a build, before it starts.

Reads only the corpus's parquet footers (row counts and schemas, many shards at once), so it
takes seconds even for thousands of shards in a bucket. It refuses what it can tell will fail
without reading rows: an invalid config (for example a threshold table without the scoring
model: `load_config`), what `pipeline.frame.preflight` refuses (a model that is not there, a missing
file, a place it cannot write), no shard matched, a shard missing a mapped column or unreadable.

The figures are projections from rates and shares measured by `benchmarks/bench_plan.py` (see
benchmarks/README.md: "`imagenot plan` beside these measurements", "LAION-2B-en projection");
every rate, share and price is a flag and is printed as an assumption. The plan follows
`scoring.first_phase`: with `static` or `priority`, the encoder's work is bounded by a multiple of
K x `exact_per_class`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `imagenot plan --help` reads Rates and SAMPLE_ROWS from here, and loads no Beam
    from imagenot.pipeline.config.schema import Config
    from imagenot.pipeline.corpus.units import WorkUnit

SAMPLE_ROWS = 200_000  # `--sample`: at 10 us a row for tag and select, under a minute on one core


@dataclass(frozen=True)
class Rates:
    """Assumptions, each a flag and printed. CPU rates of one stage process and the corpus's
    shares were measured by benchmarks/bench_plan.py on the project machine (2 shared cores; see
    benchmarks/README.md, "`imagenot plan` beside these measurements"); what only a build can know
    (candidates) and prices are stated guesses."""

    # CPU seconds of a stage: a fixed part plus a part per corpus row (tag, select; score hashes
    # every selected row; sample reads one rank shard per corpus shard), and the encoders' rates
    # (measured per CPU second of a stage). The fixed part (`fixed_cpu_seconds`): the command's own
    # process's (`<stage>_driver_s`: Beam's start, and the whole stage's start when one local worker
    # runs in that process) plus, for each worker process of its own, `<stage>_fixed_s`
    # (interpreter, Beam, WordNet, the stage's tables or model). tag and select: fixed parts
    # measured on 2,000 rows with one and two local workers, per-row rates the marginal CPU between
    # 1M and 4M realistic rows (summary.json's CPU, the workers' included; benchmarks/README.md,
    # "Score bounded by the candidates that can become classes"), at load 2-9 on 2 cores: a
    # Dataflow worker is not shared, and contention inflates CPU (at load 15-20: 9.2 and 20.6 us a
    # row, fixed parts 40% more). The other stages' fixed parts were measured in one process: their
    # driver part is taken as the same. Tag and select at LAION-2B-en's candidate density (issue 53,
    # benchmarks/bench_select_density.py, 4 Dec 2026 evening: min_captions 1 at 200,000 and
    # 1,000,000 rows, 19,698 and 26,469 candidates, one local worker, each stage the least CPU of
    # three runs, load about 1, three runs of the script): select's per-row rate is the marginal CPU
    # between the sizes (24.6, 29.9 and 29.6 us, the mean taken; the driver's candidate-bound work
    # included, so that the bill errs high), its driver part the runs' mean intercept (the
    # candidates' senses, the synsets that can still become candidates and their forms: 10-15 s at
    # 20-26k candidates); tag's the same runs' marginal (7.6, 8.4 and 7.5 us: it reads no
    # candidates, but 1M-4M rows at load 2-9 gave 5.8).
    tag_driver_s: float = 2.2
    tag_fixed_s: float = 3.5
    tag_us_per_row: float = 7.8
    select_driver_s: float = 12.0
    select_fixed_s: float = 4.8  # two Beam jobs: each worker process starts twice (WordNet, the caption rules)
    select_us_per_row: float = 28.0
    score_fixed_s: float = 6.4
    score_us_per_row: float = 1.3
    rank_fixed_s: float = 5.0
    sample_fixed_s: float = 0.79
    sample_us_per_row: float = 0.69
    encoder_captions_per_s: float = 271.0  # MiniLM, embedded captions per CPU second in rank (not a dedicated worker)
    static_captions_per_s: float = 5_950.0  # static first phase: class captions per CPU second of rank beyond the rest
    priority_pass_captions_per_s: float = (
        3_600.0  # priority path: class captions per CPU second of its passes (bench_scoring)
    )
    gpu_captions_per_s: float = 20_000.0  # not measured here: a GPU's rate for the configured encoder
    # A sense method that reads the word where it stands (trained, context, both) runs the span encoder
    # over every caption it scores, on the CPU, beyond what the encoder's rate above holds: CPU ms a
    # caption (benchmarks/README.md, issue 44: the score stage's sense CPU, trained against sentence).
    word_pass_ms: float = 2.2
    # The work: shares of the corpus and of the configured caps.
    candidates: int = 10_000  # candidate synsets after select (known only after select)
    first_pass_fill: float = 0.40  # score's captions / (candidates x first_pass_captions): small candidates fill less
    class_share: float = 5.0e-4  # one class's captions per corpus row (the mean over the classes)
    first_pass_duplicate_share: float = 0.15  # score's captions that repeat another (embedded once)
    class_duplicate_share: float = 0.29  # the same among a class's captions in rank
    exact_repeat_share: float = 0.65  # the same among static's exact captions (fitted: it favours frequent ones)
    priority_rounds: float = 2.8  # priority path: captions scored per class / exact_per_class (bench_scoring: 2.6-2.9)
    priority_miss_share: float = 0.16  # priority path: its scored captions not in the cache (bench_scoring: 0.14-0.19)
    # What a sample cannot know (`--sample`): the share of the candidates able to enter the ranking
    # that score at or above the threshold (measured by builds: 0.73 to 0.82, the middle taken;
    # benchmarks/README.md, "`imagenot plan --sample` against builds"), and the web's dead URLs
    # (10-30% of LAION's: docs, method).
    threshold_keep_low: float = 0.6
    threshold_keep_share: float = 0.77
    threshold_keep_high: float = 0.95
    # With the label model on, the share of them whose captions the sense decision passes at least
    # `ranking.min_pass_share` (low_pass_share otherwise), the encoder's too: 0.38 in a default build
    # of the LAION sample at a 10k corpus's settings, 0.55 in tests/small_build.py's synthetic build
    # (4 Dec; benchmarks/README.md, "`imagenot plan --sample` against builds"), the middle taken.
    label_keep_low: float = 0.35
    label_keep_share: float = 0.47
    label_keep_high: float = 0.6
    dead_url_low: float = 0.1
    dead_url_share: float = 0.2
    dead_url_high: float = 0.3
    download_images_per_s: float = 107.0  # one download process (16 threads), loopback hosts: bench_download
    download_bytes_per_image: int = 150_000  # assumed: an image as fetched, before resizing
    # The fleet and its prices.
    vcpus_per_worker: int = 4  # n1-standard-4
    processes_per_worker: int = 2  # stage processes per worker, each as fast as one here
    price_vcpu_hour: float = 0.04  # USD, assumed: check the region's list price
    price_gpu_hour: float = 0.35  # USD, assumed (T4)
    price_traffic_gb: float = 0.045  # USD, assumed: Cloud NAT's processing of the workers' fetched bytes


# Where the default per-row rates of tag and select were measured, printed with every plan: select's
# CPU a row grows with the candidates (the forms it counts, the captions whose synsets hold one),
# so they were measured at LAION-2B-en's candidate density (issue 53), not a small corpus's.
ROW_RATES_MEASURED = (
    "tag and select per row, and select's driver part, as measured at LAION-2B-en's candidate density "
    "(benchmarks/bench_select_density.py, 4 Dec 2026 evening: min_captions projected from the tag counts, "
    "19,698 and 26,469 candidates at 200,000 and 1,000,000 rows)"
)

ROW_STAGES = ("tag", "select", "sample")  # the stages whose CPU grows with the corpus rows alone


def fixed_cpu_seconds(rates: Rates, stage: str, worker_processes: int) -> float:
    """A stage's fixed CPU seconds: its command's process's, and `worker_processes` worker
    processes' of its own (none when one local worker runs in the command's process)."""
    fixed = getattr(rates, f"{stage}_fixed_s")
    return getattr(rates, f"{stage}_driver_s", fixed) + fixed * worker_processes


def local_worker_processes(workers: int) -> int:
    """The worker processes of their own a local run starts: one worker runs in the command's process."""
    return workers if workers > 1 else 0


def measured_problem(summary: object) -> str | None:
    """What keeps a run's summary.json from giving rates (`rates_measured_by`), or None: each
    stage's figures a mapping, its CPU seconds and rows finite numbers of 0 or more."""
    if not isinstance(summary, dict):
        return f"a {type(summary).__name__}, not a mapping of stages"
    for stage in ROW_STAGES:
        figures = summary.get(stage, {})
        if not isinstance(figures, dict):
            return f"{stage}: a {type(figures).__name__}, not the stage's figures"
        for key, kinds in (("cpu_seconds", (int, float)), ("rows", (int,))):
            value = figures.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) or value < 0:
                return f"{stage}.{key} is {value!r}, not a finite number of 0 or more"
    return None


def rates_measured_by(summary: dict, workers: int, rates: Rates) -> Rates:
    """`rates` with the per-row CPU of tag, select and sample as a finished build measured them
    (its `summary.json`: each stage's CPU seconds, less the fixed part of a run with `workers`
    local workers, over its corpus rows); a stage the build did not record keeps its rate."""
    measured = {}
    for stage in ROW_STAGES:
        figures = summary.get(stage, {})
        if figures.get("rows") and "cpu_seconds" in figures:
            own = figures["cpu_seconds"] - fixed_cpu_seconds(rates, stage, local_worker_processes(workers))
            measured[f"{stage}_us_per_row"] = round(max(own, 0.0) / figures["rows"] * 1e6, 2)
    return replace(rates, **measured)


def caption_work(config: Config, rows: int, rates: Rates, class_sizes: list[tuple[float, float]] | None = None) -> dict:
    """Captions per stage: what score and rank score, what their encoder embeds (each distinct
    text once, and not again in rank if score's first pass embedded it), and what the static first
    phase reads.

    Score's first pass scores up to `first_pass_captions` (f) rows of each candidate, a keyed-hash
    sample, and embeds the distinct ones. A class has c captions, spread (assumed) exponentially
    around the mean `class_share x rows`, so over the classes the captions beyond their first pass
    are a share exp(-f / mean) of all, and E[min(M, c)] = mean x (1 - exp(-M / mean)). With
    `scoring.first_phase: static` the encoder scores at most M = `exact_per_class` captions of a
    class (`Config.exact_per_class`, 2 x (N + reserve) by default), whatever the corpus size; a
    static model reads them all first. With `priority` it scores a class's captions in the sample's
    priority order until its list is settled: about `priority_rounds` x M, and most of them are the
    first pass's (the same keyed order when the seeds agree), so only `priority_miss_share` is embedded.

    `class_sizes` (a sampled plan: `projection.py`): (projected captions, weight) of the candidates
    that may become classes, each weighted by its chance of becoming one, in place of the exponential
    spread: the mean, E[min(M, c)] and the share beyond the first pass (sum of max(0, c - f) over sum
    of c) are their weighted ones.
    """
    scoring, classes = config.scoring, config.ranking.classes
    first_pass = min(rates.candidates * scoring.first_pass_captions * rates.first_pass_fill, rows)
    mean = max(rates.class_share * rows, 1e-9)
    bound = {
        "off": math.inf,
        "static": config.exact_per_class,
        "priority": rates.priority_rounds * config.exact_per_class,
    }
    per_class = mean * -math.expm1(-bound[scoring.first_phase] / mean)  # E[min(bound, c)]
    beyond_first_pass = math.exp(-scoring.first_pass_captions / mean)
    weight = sum(w for _, w in class_sizes or [])
    if weight > 0:
        mean = sum(c * w for c, w in class_sizes) / weight
        per_class = sum(min(bound[scoring.first_phase], c) * w for c, w in class_sizes) / weight
        beyond = sum(max(0.0, c - scoring.first_pass_captions) * w for c, w in class_sizes)
        beyond_first_pass = beyond / max(mean * weight, 1e-9)
    if scoring.first_phase == "priority":
        embedded_share = rates.priority_miss_share
    else:
        repeats = rates.class_duplicate_share if scoring.first_phase == "off" else rates.exact_repeat_share
        embedded_share = beyond_first_pass * (1 - repeats)
    return {
        "score_captions": round(first_pass),
        "score_embedded": round(first_pass * (1 - rates.first_pass_duplicate_share)),
        "class_captions": round(classes * mean),
        "rank_captions": round(classes * per_class),
        "rank_embedded": round(classes * per_class * embedded_share),
    }


def corpus_units(config: Config) -> tuple[int, int, list[WorkUnit]]:
    from imagenot.pipeline.corpus.preflight import corpus_shapes
    from imagenot.pipeline.corpus.units import FileShape, plan_units

    """(rows, shards) of the configured corpus, from parquet footers (a text file's rows are
    estimated from its size and its first megabyte), and the work units the tag stage will cut it
    into (`corpus.work_unit_rows`); raises on any shard that a build would refuse (missing mapped
    column, unreadable footer or header), as the preflight does, from the same pass."""
    bound = config.corpus.work_unit_rows
    if config.corpus.synth is not None:
        synth = config.corpus.synth
        sizes = [min(synth.shard_rows, synth.rows - start) for start in range(0, synth.rows, synth.shard_rows)]
        shapes = [FileShape(f"part-{i:05d}.parquet", n, True, (n,)) for i, n in enumerate(sizes)]
        return synth.rows, len(sizes), plan_units(shapes, bound)
    shards, shapes = corpus_shapes(config)  # the preflight's pass
    return sum(s.rows for s in shapes), len(shards), plan_units(shapes, bound)


@dataclass(frozen=True)
class _Billing:
    """A stage's CPU seconds in one process here (and its encoder's captions, on a GPU if
    configured) -> billed vCPU- and GPU-hours (a process holds vcpus / processes of a worker)."""

    rates: Rates
    rows: int
    processes: int  # worker processes of their own: the fleet's, at most one a shard; locally the workers'
    gpu: bool

    def hours(self, cpu_seconds: float, embedded: int = 0) -> dict:
        """The stage's CPU seconds (in one process here), the corpus rows and CPU microseconds a row
        as `summary.json` gives them for a build, and its billed hours."""
        rates = self.rates
        if not self.gpu:
            cpu_seconds += embedded / rates.encoder_captions_per_s
        vcpu = cpu_seconds / 3600 * rates.vcpus_per_worker / rates.processes_per_worker
        gpu_hours = embedded / rates.gpu_captions_per_s / 3600 if self.gpu else 0.0
        return {
            "process_seconds": round(cpu_seconds, 1),
            "rows": self.rows,
            "cpu_us_per_row": round(cpu_seconds / self.rows * 1e6, 2) if self.rows else None,
            "vcpu_hours": vcpu,
            "gpu_hours": gpu_hours,
        }

    def per_row(self, stage: str, us_per_row: float) -> float:
        """CPU seconds of a stage over every corpus row: per row, and its fixed part."""
        return us_per_row * self.rows / 1e6 + self.fixed(stage)

    def fixed(self, stage: str) -> float:
        return fixed_cpu_seconds(self.rates, stage, self.processes)

    def word_pass(self, config: Config, captions: int) -> float:
        """CPU seconds of the sense method's pass over the word where it stands, for `captions` scored."""
        return captions * self.rates.word_pass_ms / 1000 if config.scoring.sense_method != "sentence" else 0.0


def make_plan(
    config: Config,
    rows: int,
    shards: int,
    rates: Rates,
    workers: int,
    class_sizes: list[tuple[float, float]] | None = None,
) -> dict:
    """Per stage: the work, the Beam jobs it submits and its vCPU- and GPU-hours (`class_sizes`:
    `caption_work`'s); and their totals and cost."""
    gpu = config.runner.kind == "dataflow" and config.runner.dataflow.scoring_accelerator is not None
    if config.runner.kind == "local":  # each local worker is one process (Beam starts them all)
        processes = local_worker_processes(workers)
    else:
        processes = min(workers * rates.processes_per_worker, shards)
    bill = _Billing(rates, rows, processes, gpu)
    stages = _stages_to_sample(config, caption_work(config, rows, rates, class_sizes), shards, bill)
    traffic_usd = 0.0
    if config.download.enabled:
        stages["download"], traffic_usd = _download_stage(config, bill)
    vcpu = sum(s["vcpu_hours"] for s in stages.values())
    gpu_hours = sum(s["gpu_hours"] for s in stages.values())
    return {
        "corpus": {"rows": rows, "shards": shards},
        "first_phase": config.scoring.first_phase,
        "stages": {
            name: {**s, "vcpu_hours": _round(s["vcpu_hours"]), "gpu_hours": _round(s["gpu_hours"])}
            for name, s in stages.items()
        },
        "jobs": sum(s["jobs"] for s in stages.values()),
        "vcpu_hours": _round(vcpu),
        "gpu_hours": _round(gpu_hours),
        "cost_usd": round(vcpu * rates.price_vcpu_hour + gpu_hours * rates.price_gpu_hour + traffic_usd, 2),
        "traffic_usd": round(traffic_usd, 2),
        "wall_hours_at_workers": _round(vcpu / (workers * rates.vcpus_per_worker) + gpu_hours / workers),
        "workers": workers,
        "row_rates": ROW_RATES_MEASURED if _default_row_rates(rates) else "tag and select per row as given",
        "assumptions": asdict(rates),
    }


def _default_row_rates(rates: Rates) -> bool:
    defaults = Rates()
    return (rates.tag_us_per_row, rates.select_us_per_row) == (defaults.tag_us_per_row, defaults.select_us_per_row)


def _stages_to_sample(config: Config, work: dict, shards: int, bill: _Billing) -> dict:
    """The stages from tag to sample (`work`: `caption_work`'s captions)."""
    rates, rows = bill.rates, bill.rows
    return {
        "tag": {
            "work": {"rows": rows, "shards": shards},
            "jobs": 1,
            **bill.hours(bill.per_row("tag", rates.tag_us_per_row)),
        },
        "select": {
            "work": {"rows": rows},
            "jobs": 2,
            **bill.hours(bill.per_row("select", rates.select_us_per_row)),
        },
        "score": {
            "work": {
                "candidate_synsets": rates.candidates,
                "captions_scored": work["score_captions"],
                "captions_to_embed": work["score_embedded"],
            },
            "jobs": 2,
            **bill.hours(
                bill.per_row("score", rates.score_us_per_row) + bill.word_pass(config, work["score_captions"]),
                work["score_embedded"],
            ),
        },
        "rank": _rank_stage(config, work, bill),
        "sample": {
            "work": {"images": config.ranking.classes * config.sampling.images_per_class},
            "jobs": 1,
            **bill.hours(bill.per_row("sample", rates.sample_us_per_row)),
        },
    }


def _rank_stage(config: Config, work: dict, bill: _Billing) -> dict:
    """The rank stage: the classes' captions scored, after the first phase's pass over them all."""
    rates = bill.rates
    rank_work = {
        "classes": config.ranking.classes,
        "captions_scored": work["rank_captions"],
        "captions_to_embed": work["rank_embedded"],
    }
    rank_cpu = bill.fixed("rank") + bill.word_pass(config, work["rank_captions"])
    pass_rate = {"static": rates.static_captions_per_s, "priority": rates.priority_pass_captions_per_s}.get(
        config.scoring.first_phase
    )
    if pass_rate:  # the first phase reads every class caption
        rank_work = {"first_phase_captions": work["class_captions"], **rank_work}
        rank_cpu += work["class_captions"] / pass_rate
    return {"work": rank_work, "jobs": 1, **bill.hours(rank_cpu, work["rank_embedded"])}


def _download_stage(config: Config, bill: _Billing) -> tuple[dict, float]:
    """The download stage, and what its fetched bytes cost in traffic (USD)."""
    rates, sampling = bill.rates, config.sampling
    fetch = download_work(config, rates.dead_url_share, rates)
    at_most = config.ranking.classes * (sampling.images_per_class + sampling.reserve)
    stage = {
        "work": {"images_to_fetch_at_most": at_most, "requests": fetch["requests"], "bytes": fetch["bytes"]},
        "jobs": config.download.max_rounds,
        **bill.hours(fetch["requests"] / rates.download_images_per_s),
    }
    return stage, fetch["bytes"] / 1e9 * rates.price_traffic_gb


def download_work(config: Config, dead_share: float, rates: Rates) -> dict:
    """The download's requests and bytes: each class's N images, and for each dead URL another
    from its reserve (the reserve at most)."""
    sampling = config.sampling
    per_class = min(sampling.images_per_class / (1 - dead_share), sampling.images_per_class + sampling.reserve)
    requests = round(config.ranking.classes * per_class)
    return {"requests": requests, "bytes": requests * rates.download_bytes_per_image}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def render(plan: dict) -> str:
    lines = [
        f"corpus: {plan['corpus']['rows']:,} rows in {plan['corpus']['shards']:,} shards (from parquet footers; "
        "text files' rows estimated from their size); "
        f"scoring.first_phase: {plan['first_phase']}"
    ]
    for name, stage in plan["stages"].items():
        work = ", ".join(f"{k} {v:,}" for k, v in stage["work"].items())
        hours = f"{stage['vcpu_hours']:,} vCPU-h, {stage['gpu_hours']:,} GPU-h"
        cpu = f"{stage['process_seconds']:,} CPU s ({stage['cpu_us_per_row']} us a corpus row)"
        lines.append(f"  {name:<9} {work}; {stage['jobs']} job(s); {cpu}; {hours}")
    lines.append(
        f"total: {plan['jobs']} Beam jobs, {_span(plan['vcpu_hours'])} vCPU-hours, "
        f"{_span(plan['gpu_hours'])} GPU-hours, "
        f"USD {_span(plan['cost_usd'])} (about {plan['wall_hours_at_workers']:,} h on {plan['workers']} workers)"
    )
    if "sample" in plan:
        lines += _render_sample(plan)
    if "row_rates" in plan:
        lines.append(f"rates: {plan['row_rates']}")
    lines.append("assumptions (flags): " + ", ".join(f"{k}={v}" for k, v in plan["assumptions"].items()))
    return "\n".join(lines)


def _span(figure) -> str:
    if not isinstance(figure, dict):
        return f"{figure:,}"
    if figure["low"] == figure["high"]:
        return f"{figure['mid']:,}"
    return f"{figure['mid']:,} ({figure['low']:,} to {figure['high']:,})"


def _render_sample(plan: dict) -> list[str]:
    sample = plan["sample"]
    lines = [
        f"sample: {sample['rows']:,} rows read, each stands for {sample['scale']:,} corpus rows; "
        f"rows tagged {_span(sample['rows_tagged'])}, synsets found {_span(sample['synsets_found'])}"
    ]
    for step in sample["select_steps"]:
        left = f"synsets left {_span(step['synsets_left'])}, rows left {_span(step['rows_left'])}"
        lines.append(f"  select {step['step']:<16} {left}")
    per = sample["captions_per_candidate"]
    keeps = sample["threshold_keeps"]
    lines += [
        f"candidates {_span(plan['candidates'])}: captions per candidate median {per['median']:,}, "
        f"mean {per['mean']:,}, max {per['max']:,}; {_span(sample['eligible'])} with min_captions "
        f"{sample['min_class_captions']:,}, "
        f"{_span(sample['can_fill'])} with N + reserve {sample['n_plus_reserve']:,}",
        f"classes {_span(plan['classes'])} (the threshold keeps {keeps['mid']} of them, "
        f"{keeps['low']} to {keeps['high']}: "
        f"{keeps['source']}); images {_span(plan['images'])}",
        f"broad candidates {sample['broad']['candidates']:,} (over {sample['broad']['fence'] or 0:,} captions; "
        f"{sample['broad']['source']})",
        f"captions scored {_span(plan['captions_scored'])}, embedded {_span(plan['captions_embedded'])}; download "
        f"{_span(plan['download_requests'])} requests, {_span(plan['download_bytes'])} bytes; "
        f"{_span(plan['vcpu_hours'])} vCPU-h, {_span(plan['gpu_hours'])} GPU-h, USD {_span(plan['cost_usd'])}",
    ]
    return lines + [f"warning: {warning}" for warning in plan["warnings"]]

"""Do two datasets rank models alike? `imagenot compare-rankings --input CSV --out DIR` (the command:
`rankings_command.py`).

Given each model's accuracy and sample size on dataset A and dataset B (CSV columns
`model,accuracy_a,n_a,accuracy_b,n_b`, accuracies as fractions), as in ImageNetV2 (Recht et al.,
2019, Figure 1) and ImageNot (Salaudeen and Hardt, Figure 8):
- Kendall tau-b and Spearman rho between the two accuracy lists, each with a bootstrap interval;
- a 95% Clopper-Pearson interval per accuracy (k = round(accuracy * n) correct of n);
- the least-squares line accuracy_b = slope * accuracy_a + intercept with R^2 and adjusted R^2;
- each model's progress relative to a base model, accuracy / base accuracy on each dataset.

The bootstrap resamples models with replacement (a seeded numpy Generator, percentile interval),
as ImageNetV2 bootstraps its linear fit; a resample where either dataset's accuracies are all equal
has no correlation or slope, so it is left out and counted as `degenerate`.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass

import numpy as np
from apache_beam.io.filesystems import FileSystems
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats

from imagenot.errors import ImagenotError
from imagenot.pipeline.run.files import read_bytes, read_table, write_bytes, write_json, write_text
from imagenot.pipeline.run.layout import (
    MODEL_RANKINGS_FILE,
    MODEL_RANKINGS_PLOT_FILE,
    REVIEW,
    REVIEW_IMAGES_FILE,
    stage_path,
)

COLUMNS = ("model", "accuracy_a", "n_a", "accuracy_b", "n_b")
MIN_MODELS = 3  # adjusted R^2 of a one-predictor fit needs n - 2 > 0
CONFIDENCE = 0.95


class RankingInputError(ImagenotError, ValueError):
    """A malformed accuracy table; the message names the file, line and field."""


@dataclass(frozen=True)
class ModelAccuracy:
    model: str
    accuracy_a: float
    n_a: int
    accuracy_b: float
    n_b: int


def _field(path: str, line: int, row: dict, name: str) -> float | int:
    text = (row[name] or "").strip()
    try:
        value = int(text) if name.startswith("n_") else float(text)
    except ValueError:
        kind = "an integer sample size" if name.startswith("n_") else "an accuracy as a fraction"
        raise RankingInputError(f"{path}:{line}: field {name!r}: expected {kind}, got {text!r}") from None
    if name.startswith("n_") and value < 1:
        raise RankingInputError(f"{path}:{line}: field {name!r}: expected a sample size >= 1, got {value}")
    if name.startswith("accuracy_") and not 0.0 <= value <= 1.0:
        raise RankingInputError(
            f"{path}:{line}: field {name!r}: expected a fraction in [0, 1], got {text!r} "
            "(accuracies are fractions, not %)"
        )
    return value


def read_accuracies(path: str | os.PathLike) -> list[ModelAccuracy]:
    """The models of an accuracy CSV, in file order, each field checked."""
    path = os.fspath(path)
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise RankingInputError(f"{path}: cannot read: {err}") from err
    with io.StringIO(text, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise RankingInputError(
                f"{path}:1: missing column(s) {', '.join(missing)}; expected columns {','.join(COLUMNS)}"
            )
        models, first_line = [], {}
        for row in reader:
            line = reader.line_num
            name = (row["model"] or "").strip()
            if not name:
                raise RankingInputError(f"{path}:{line}: field 'model': empty model name")
            if name in first_line:
                raise RankingInputError(
                    f"{path}:{line}: field 'model': duplicate model {name!r} (first on line {first_line[name]})"
                )
            first_line[name] = line
            models.append(ModelAccuracy(name, *(_field(path, line, row, c) for c in COLUMNS[1:])))
    if len(models) < MIN_MODELS:
        raise RankingInputError(f"{path}: {len(models)} model(s); at least {MIN_MODELS} are needed")
    return models


def reviewed_accuracies(models: list[ModelAccuracy], predictions_path: str, accepted: set[str]) -> list[ModelAccuracy]:
    """The models with accuracy_b and n_b recomputed over the images human review kept: from a
    parquet of per-image results on dataset B (`model`, `row_id`, `correct`)."""
    table = read_table(predictions_path)
    missing = [c for c in ("model", "row_id", "correct") if c not in table.column_names]
    if missing:
        raise RankingInputError(
            f"{predictions_path}: missing column(s) {', '.join(missing)}; expected model,row_id,correct"
        )
    tally: dict[str, list[int]] = {}
    for row in table.select(["model", "row_id", "correct"]).to_pylist():
        if row["row_id"] in accepted:
            counts = tally.setdefault(row["model"], [0, 0])
            counts[0] += bool(row["correct"])
            counts[1] += 1
    restricted = []
    for m in models:
        if not tally.get(m.model, [0, 0])[1]:
            raise RankingInputError(f"{predictions_path}: model {m.model!r} has no result on an image the review kept")
        correct, n = tally[m.model]
        restricted.append(ModelAccuracy(m.model, m.accuracy_a, m.n_a, correct / n, n))
    return restricted


def clopper_pearson(accuracy: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact binomial interval for round(accuracy * n) correct out of n."""
    interval = stats.binomtest(round(accuracy * n), n).proportion_ci(confidence_level=confidence, method="exact")
    return float(interval.low), float(interval.high)


def linear_fit(a: np.ndarray, b: np.ndarray) -> dict:
    fit = stats.linregress(a, b)
    r2 = fit.rvalue**2
    n = len(a)
    return {
        "slope": float(fit.slope),
        "intercept": float(fit.intercept),
        "r2": float(r2),
        "adj_r2": float(1 - (1 - r2) * (n - 1) / (n - 2)),
    }


def _percentile_interval(values: list[float] | np.ndarray, confidence: float) -> list[float]:
    tail = 50 * (1 - confidence)
    low, high = np.percentile(values, [tail, 100 - tail])
    return [float(low), float(high)]


def _centered(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=1, keepdims=True)


def _row_correlations(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row of x with the same row of y."""
    cx, cy = _centered(x), _centered(y)
    return (cx * cy).sum(axis=1) / np.sqrt((cx * cx).sum(axis=1) * (cy * cy).sum(axis=1))


def bootstrap_intervals(
    a: np.ndarray, b: np.ndarray, resamples: int, seed: int, confidence: float = CONFIDENCE
) -> dict:
    """Percentile intervals of Kendall tau-b, Spearman rho and the slope over model resamples."""
    picks = np.random.default_rng(seed).integers(0, len(a), size=(resamples, len(a)))
    ra, rb = a[picks], b[picks]
    usable = (np.ptp(ra, axis=1) > 0) & (np.ptp(rb, axis=1) > 0)
    ra, rb = ra[usable], rb[usable]
    if not len(ra):
        raise RankingInputError("every bootstrap resample was degenerate; the models need distinct accuracies")
    kendall = [stats.kendalltau(x, y).statistic for x, y in zip(ra, rb)]
    # Spearman rho is Pearson r of the (tie-averaged) ranks, as scipy.stats.spearmanr computes it
    spearman = _row_correlations(stats.rankdata(ra, axis=1), stats.rankdata(rb, axis=1))
    ca, cb = _centered(ra), _centered(rb)
    slopes = (ca * cb).sum(axis=1) / (ca * ca).sum(axis=1)
    return {
        "kendall_tau_ci": _percentile_interval(kendall, confidence),
        "spearman_ci": _percentile_interval(spearman, confidence),
        "slope_ci": _percentile_interval(slopes, confidence),
        "bootstrap": {
            "resamples": resamples,
            "degenerate": int(resamples - len(ra)),
            "seed": seed,
            "confidence": confidence,
        },
    }


def compare_rankings(models: list[ModelAccuracy], base: str | None = None, *, resamples: int, seed: int = 0) -> dict:
    """Every figure of the comparison as plain JSON data (accuracies stay fractions)."""
    names = [m.model for m in models]
    if base is None:
        base = min(models, key=lambda m: m.accuracy_a).model
    elif base not in names:
        raise RankingInputError(f"base model {base!r} is not in the table (models: {', '.join(names)})")
    base_row = models[names.index(base)]
    for side in ("a", "b"):
        if getattr(base_row, f"accuracy_{side}") == 0:
            raise RankingInputError(
                f"base model {base!r} has accuracy 0 on dataset {side.upper()}; progress is undefined"
            )
    a = np.array([m.accuracy_a for m in models])
    b = np.array([m.accuracy_b for m in models])
    for side, accuracies in (("A", a), ("B", b)):
        if np.ptp(accuracies) == 0:
            raise RankingInputError(f"every model has the same accuracy on dataset {side}; nothing to rank or fit")
    rank_a = stats.rankdata(-a, method="min").astype(int)
    rank_b = stats.rankdata(-b, method="min").astype(int)
    kendall, spearman = stats.kendalltau(a, b), stats.spearmanr(a, b)
    per_model = {
        m.model: {
            "accuracy_a": m.accuracy_a,
            "n_a": m.n_a,
            "ci_a": list(clopper_pearson(m.accuracy_a, m.n_a)),
            "accuracy_b": m.accuracy_b,
            "n_b": m.n_b,
            "ci_b": list(clopper_pearson(m.accuracy_b, m.n_b)),
            "rank_a": int(ra),
            "rank_b": int(rb),
            "rank_change": int(ra - rb),  # > 0: the model climbs on dataset B
            "progress_a": m.accuracy_a / base_row.accuracy_a,
            "progress_b": m.accuracy_b / base_row.accuracy_b,
        }
        for m, ra, rb in zip(models, rank_a, rank_b)
    }
    return {
        "model_count": len(models),
        "base": base,
        "kendall_tau": float(kendall.statistic),
        "kendall_tau_p": float(kendall.pvalue),
        "spearman": float(spearman.statistic),
        "spearman_p": float(spearman.pvalue),
        **linear_fit(a, b),
        **bootstrap_intervals(a, b, resamples, seed),
        "models": per_model,
    }


def _by_accuracy_a(result: dict) -> list[tuple[str, dict]]:
    return sorted(result["models"].items(), key=lambda item: (item[1]["rank_a"], item[0]))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _interval(pair: list[float], percent: bool = False) -> str:
    return f"[{_pct(pair[0])}, {_pct(pair[1])}]" if percent else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def render_markdown(result: dict, name_a: str, name_b: str) -> str:
    boot = result["bootstrap"]
    lines = [
        f"# Model rankings: {name_a} (A) vs {name_b} (B)",
        "",
        f"- models: {result['model_count']}",
        f"- Kendall tau-b: {result['kendall_tau']:.3f} (bootstrap {_interval(result['kendall_tau_ci'])})",
        f"- Spearman rho: {result['spearman']:.3f} (bootstrap {_interval(result['spearman_ci'])})",
        (
            f"- linear fit: acc_B = {result['slope']:.3f} * acc_A {result['intercept']:+.4f} "
            f"(slope bootstrap {_interval(result['slope_ci'])}), "
            f"R^2 {result['r2']:.4f}, adjusted R^2 {result['adj_r2']:.4f}"
        ),
        (
            f"- bootstrap: {boot['resamples']} resamples of the models (seed {boot['seed']}, "
            f"{100 * boot['confidence']:.0f}% percentile intervals, {boot['degenerate']} degenerate left out)"
        ),
        f"- progress is accuracy relative to the base model, {result['base']}",
        "",
        "Accuracies in %, with 95% Clopper-Pearson intervals.",
        "",
        "| model | A | CI A | B | CI B | rank A | rank B | progress A | progress B |",
        "|---|---:|---|---:|---|---:|---:|---:|---:|",
    ]
    for name, m in _by_accuracy_a(result):
        lines.append(
            f"| {name} | {_pct(m['accuracy_a'])} | {_interval(m['ci_a'], True)} | {_pct(m['accuracy_b'])} "
            f"| {_interval(m['ci_b'], True)} "
            f"| {m['rank_a']} | {m['rank_b']} | {m['progress_a']:.3f} | {m['progress_b']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def _png(fig: Figure) -> bytes:
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def plot_accuracies(result: dict, name_a: str, name_b: str) -> bytes:
    """Accuracy on B against A with Clopper-Pearson bars, the fitted line and y = x (PNG bytes)."""
    rows = [m for _, m in _by_accuracy_a(result)]
    a, b = np.array([m["accuracy_a"] for m in rows]), np.array([m["accuracy_b"] for m in rows])
    err_a = np.abs(np.array([m["ci_a"] for m in rows]).T - a)
    err_b = np.abs(np.array([m["ci_b"] for m in rows]).T - b)
    fig = Figure(figsize=(5.5, 5), dpi=100)  # no pyplot: no global figure state
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.errorbar(a, b, xerr=err_a, yerr=err_b, fmt="o", markersize=4, capsize=2, label="models (95% CI)")
    span = np.array([min(a.min(), b.min()), max(a.max(), b.max())])
    fit_label = f"fit: slope {result['slope']:.2f}, adj. R² {result['adj_r2']:.3f}"
    ax.plot(span, result["slope"] * span + result["intercept"], color="tab:red", label=fit_label)
    ax.plot(span, span, color="grey", linestyle="--", label="y = x")
    for name, m in _by_accuracy_a(result):
        ax.annotate(
            name, (m["accuracy_a"], m["accuracy_b"]), fontsize="x-small", xytext=(3, -8), textcoords="offset points"
        )
    ax.set_xlabel(f"accuracy on {name_a}")
    ax.set_ylabel(f"accuracy on {name_b}")
    ax.set_title(f"Kendall τ {result['kendall_tau']:.3f}, Spearman ρ {result['spearman']:.3f}", fontsize="medium")
    ax.legend(fontsize="small", loc="upper left")
    return _png(fig)


def plot_progress(result: dict, name_a: str, name_b: str) -> bytes:
    """Each model's accuracy relative to the base model on both datasets (PNG bytes)."""
    ordered = _by_accuracy_a(result)[::-1]  # lowest accuracy on A at the left
    positions = np.arange(len(ordered))
    fig = Figure(figsize=(max(5.0, 0.45 * len(ordered) + 2), 4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for offset, side, name in ((-0.2, "a", name_a), (0.2, "b", name_b)):
        ax.bar(positions + offset, [m[f"progress_{side}"] for _, m in ordered], width=0.4, label=name)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(positions, [name for name, _ in ordered], rotation=60, ha="right", fontsize="x-small")
    ax.set_ylabel(f"accuracy / accuracy of {result['base']}")
    ax.set_title("relative progress", fontsize="medium")
    ax.legend(fontsize="small")
    return _png(fig)


def write_report(result: dict, out_dir: str, name_a: str, name_b: str) -> list[str]:
    """rankings.json, rankings.md, rankings.png and progress.png in `out_dir`, each atomically."""
    paths = [
        FileSystems.join(out_dir, name)
        for name in (MODEL_RANKINGS_FILE, "rankings.md", MODEL_RANKINGS_PLOT_FILE, "progress.png")
    ]
    write_json(paths[0], {**result, "dataset_a": name_a, "dataset_b": name_b})
    write_text(paths[1], render_markdown(result, name_a, name_b))
    write_bytes(paths[2], plot_accuracies(result, name_a, name_b))
    write_bytes(paths[3], plot_progress(result, name_a, name_b))
    return paths


def accepted_rows(run_dir: str) -> set[str]:
    """The row ids human review kept (`review export` must have run)."""
    path = stage_path(run_dir, REVIEW, REVIEW_IMAGES_FILE)
    if not FileSystems.exists(path):
        raise ImagenotError(f"{path} does not exist: run `imagenot review export` first")
    return {r["row_id"] for r in read_table(path, ["row_id", "accepted"]).to_pylist() if r["accepted"]}

"""Ranking comparison: hand-worked cases and ImageNetV2's Table 1 (tests/data/imagenetv2_table1.md)."""

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from cli_runner import invoke
from scipy import stats

from imagenot.pipeline.audit.rankings import (
    ModelAccuracy,
    RankingInputError,
    bootstrap_intervals,
    clopper_pearson,
    compare_rankings,
    read_accuracies,
)
from imagenot.pipeline.audit.rankings_command import compare_rankings_command

DATA = Path(__file__).parent / "data"
IMAGENET = DATA / "imagenetv2_table1_imagenet_top1.csv"
CIFAR = DATA / "imagenetv2_table1_cifar10.csv"
RESAMPLES = 2_000  # enough for the interval checks below, and quick

# Four models, worked by hand. a = .5 .6 .7 .8, b = .4 .6 .5 .7.
# Kendall: of the 6 pairs only (m1, m2) is discordant: tau = (5 - 1) / 6 = 2/3.
# Spearman: ranks of b = 1 3 2 4, d = 0 -1 1 0: rho = 1 - 6 * 2 / (4 * 15) = .8.
# Fit: deviations of a -.15 -.05 .05 .15, of b -.15 .05 -.05 .15: Sxy = .04, Sxx = Syy = .05,
# slope .8, intercept .55 - .8 * .65 = .03, r = .8, R^2 = .64, adjusted 1 - .36 * 3 / 2 = .46.
HAND = [
    ModelAccuracy("m0", 0.5, 100, 0.4, 100),
    ModelAccuracy("m1", 0.6, 100, 0.6, 100),
    ModelAccuracy("m2", 0.7, 100, 0.5, 100),
    ModelAccuracy("m3", 0.8, 100, 0.7, 100),
]


def test_hand_worked_statistics():
    result = compare_rankings(HAND, resamples=200)
    assert result["kendall_tau"] == pytest.approx(2 / 3)
    assert result["spearman"] == pytest.approx(0.8)
    assert result["slope"] == pytest.approx(0.8)
    assert result["intercept"] == pytest.approx(0.03)
    assert result["r2"] == pytest.approx(0.64)
    assert result["adj_r2"] == pytest.approx(0.46)
    models = result["models"]
    assert [models[m]["rank_a"] for m in ("m0", "m1", "m2", "m3")] == [4, 3, 2, 1]
    assert [models[m]["rank_b"] for m in ("m0", "m1", "m2", "m3")] == [4, 2, 3, 1]
    assert models["m1"]["rank_change"] == 1 and models["m2"]["rank_change"] == -1
    # base: the lowest accuracy on A, m0 (.5, .4)
    assert result["base"] == "m0"
    assert (models["m3"]["progress_a"], models["m3"]["progress_b"]) == pytest.approx((1.6, 1.75))
    assert models["m0"]["progress_a"] == models["m0"]["progress_b"] == 1.0


def test_clopper_pearson_closed_forms():
    # k = n: lower bound solves p^n = .025; k = 0 mirrors it; n = 2, k = 1: 1 - (1 - p)^2 = .025
    assert clopper_pearson(1.0, 10) == pytest.approx((0.025**0.1, 1.0))
    assert clopper_pearson(0.0, 10) == pytest.approx((0.0, 1 - 0.025**0.1))
    assert clopper_pearson(1.0, 1) == pytest.approx((0.025, 1.0))
    assert clopper_pearson(0.5, 2) == pytest.approx((1 - math.sqrt(0.975), math.sqrt(0.975)))
    # k = round(accuracy * n): .333 of 3 is 1 correct
    assert clopper_pearson(0.333, 3) == clopper_pearson(1 / 3, 3)


def test_bootstrap_matches_scipy_on_the_same_resamples():
    a = np.array([0.5, 0.6, 0.7, 0.8, 0.65])
    b = np.array([0.4, 0.6, 0.5, 0.7, 0.55])
    result = bootstrap_intervals(a, b, resamples=300, seed=3)
    picks = np.random.default_rng(3).integers(0, 5, size=(300, 5))
    usable = [p for p in picks if len(set(a[p])) > 1 and len(set(b[p])) > 1]
    assert result["bootstrap"]["degenerate"] == 300 - len(usable)
    for key, statistic in (
        ("kendall_tau_ci", lambda x, y: stats.kendalltau(x, y).statistic),
        ("spearman_ci", lambda x, y: stats.spearmanr(x, y).statistic),
        ("slope_ci", lambda x, y: stats.linregress(x, y).slope),
    ):
        values = [statistic(a[p], b[p]) for p in usable]
        assert result[key] == pytest.approx(list(np.percentile(values, [2.5, 97.5])))
    assert bootstrap_intervals(a, b, resamples=300, seed=3) == result


# ImageNetV2 Table 1, ImageNet Top-1 panel: the bracketed 95% Clopper-Pearson intervals in %.
IMAGENET_INTERVALS = {
    "pnasnet_large_tf": ((82.5, 83.2), (71.3, 73.1)),
    "nasnetalarge": ((82.2, 82.8), (71.3, 73.1)),
    "resnet152": ((77.9, 78.7), (66.1, 67.9)),
    "inception_v3_tf": ((77.6, 78.3), (65.1, 67.0)),
    "densenet161": ((76.8, 77.5), (64.4, 66.2)),
    "vgg19_bn": ((73.8, 74.6), (60.9, 62.8)),
    "alexnet": ((56.1, 57.0), (43.0, 45.0)),
    "fv_64k": ((34.7, 35.5), (23.2, 24.9)),
}
CIFAR_INTERVALS = {
    "autoaug_pyramid_net_tf": ((98.1, 98.6), (94.5, 96.4)),
    "shake_shake_64d_cutout": ((96.8, 97.4), (91.8, 94.1)),
    "wide_resnet_28_10": ((95.5, 96.3), (88.3, 91.0)),
    "resnet_basic_110": ((93.0, 93.9), (83.5, 86.7)),
    "vgg_15_BN_64": ((92.5, 93.5), (83.2, 86.4)),
    "cudaconvnet": ((87.9, 89.2), (75.7, 79.3)),
    "random_features_256k_auc": ((84.9, 86.3), (71.1, 75.1)),
}


@pytest.mark.parametrize("path, published", [(IMAGENET, IMAGENET_INTERVALS), (CIFAR, CIFAR_INTERVALS)])
def test_clopper_pearson_reproduces_table_1(path, published):
    # The table prints accuracies to 0.1 points, so k is known to within n / 2000 and each bound to
    # within about 0.05 points before the table's own rounding: 0.1 points covers both.
    for model in read_accuracies(path):
        for accuracy, n, (low, high) in zip(
            (model.accuracy_a, model.accuracy_b), (model.n_a, model.n_b), published[model.model]
        ):
            computed = clopper_pearson(accuracy, n)
            assert 100 * computed[0] == pytest.approx(low, abs=0.1), model.model
            assert 100 * computed[1] == pytest.approx(high, abs=0.1), model.model


def test_clopper_pearson_widths_stated_in_section_2():
    # "With 10,000 data points ... a Clopper-Pearson 95% confidence interval for the test accuracy has
    # size of at most +-1%. Increasing the confidence level to 99.99% yields ... at most +-2%."
    # The widest interval is at 5,000 of 10,000.
    low, high = clopper_pearson(0.5, 10_000)
    assert 0.009 < (high - low) / 2 <= 0.01
    low, high = clopper_pearson(0.5, 10_000, confidence=0.9999)
    assert 0.019 < (high - low) / 2 <= 0.02
    assert clopper_pearson(0.9, 10_000)[1] - clopper_pearson(0.9, 10_000)[0] < high - low


def test_imagenet_panel_of_table_1():
    result = compare_rankings(read_accuracies(IMAGENET), base="alexnet", resamples=RESAMPLES)
    models = result["models"]
    # Orig. Rank 1, 4, 21, 23, 30, 43, 64, 65 keep their order; New Rank puts nasnetalarge (1) over
    # pnasnet_large_tf (3), both 72.2 at the printed precision: a tie, as scipy ranks ties ("min").
    assert [m["rank_a"] for m in models.values()] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert [m["rank_b"] for m in models.values()] == [1, 1, 3, 4, 5, 6, 7, 8]
    # Kendall tau-b by hand: 27 concordant pairs of 28, one tied on B: 27 / sqrt(28 * 27) = sqrt(27/28).
    assert result["kendall_tau"] == pytest.approx(math.sqrt(27 / 28))
    # Spearman: Pearson r of ranks 1..8 with 1.5 1.5 3..8: Sxx = 42, Syy = Sxy = 41.5.
    assert result["spearman"] == pytest.approx(math.sqrt(41.5 / 42))
    # Section 3.3: "the best model on ImageNet (Liu et al., 2018) sees an 11% drop from 83% to 72%";
    # ResNet drops 11%.
    best = models["pnasnet_large_tf"]
    assert (round(100 * best["accuracy_a"]), round(100 * best["accuracy_b"])) == (83, 72)
    assert round(100 * (best["accuracy_a"] - best["accuracy_b"])) == 11
    assert round(100 * (models["resnet152"]["accuracy_a"] - models["resnet152"]["accuracy_b"])) == 11
    # "the original accuracy is highly predictive of the new accuracy and ... can be summarized well
    # with a linear function": on these 8 models slope 1.0074, R^2 0.9979 (Sxy / Sxx of the table).
    assert result["slope"] == pytest.approx(1.007404, abs=1e-6)
    assert result["intercept"] == pytest.approx(-0.119975, abs=1e-6)
    assert result["adj_r2"] == pytest.approx(0.997522, abs=1e-6)
    # The paper's fit over its whole testbed, acc_new = 1.11 acc_orig - 20.2%, lies inside the
    # bootstrap interval of the slope over these 8 models.
    low, high = result["slope_ci"]
    assert low < 1.11 < high
    assert result["kendall_tau_ci"][1] == 1.0 and result["kendall_tau_ci"][0] > 0.8
    # ImageNot Figure 8(b)'s relative progress, accuracy / AlexNet's: .829 / .565 and .722 / .440.
    assert best["progress_a"] == pytest.approx(0.829 / 0.565)
    assert best["progress_b"] == pytest.approx(0.722 / 0.440)
    assert models["alexnet"]["progress_a"] == models["alexnet"]["progress_b"] == 1.0


def test_cifar10_panel_reproduces_the_linear_fit():
    result = compare_rankings(read_accuracies(CIFAR), resamples=RESAMPLES)
    # New Rank 1, 5, 14, 24, 27, 30, 31 keeps the original order: both correlations are 1.
    assert result["kendall_tau"] == pytest.approx(1.0) and result["spearman"] == pytest.approx(1.0)
    assert all(m["rank_a"] == m["rank_b"] for m in result["models"].values())
    # Section 3.3: acc_new = 1.69 acc_orig - 72.7%, 95% bootstrap intervals [1.63, 1.76] for the slope
    # and [-78.6, -67.5]% for the offset. These 7 models give 1.733 and -75.9%, inside both.
    assert result["slope"] == pytest.approx(1.733497, abs=1e-6)
    assert 1.63 <= result["slope"] <= 1.76
    assert -0.786 <= result["intercept"] <= -0.675
    assert result["slope_ci"][0] < 1.69 < result["slope_ci"][1]
    assert result["adj_r2"] > 0.99
    assert result["base"] == "random_features_256k_auc"


def test_command_writes_the_report_reproducibly(tmp_path):
    args = [
        "--input",
        str(IMAGENET),
        "--base",
        "alexnet",
        "--name-a",
        "ImageNet",
        "--name-b",
        "ImageNetV2",
        "--resamples",
        "500",
    ]
    runs = [invoke(compare_rankings_command, [*args, "--out", str(tmp_path / d)]) for d in ("x", "y")]
    for outcome in runs:
        assert outcome.exit_code == 0, outcome.output
    report = json.loads((tmp_path / "x" / "rankings.json").read_text())
    for key in ("kendall_tau", "spearman", "slope", "adj_r2", "kendall_tau_ci", "spearman_ci"):
        assert key in report
    assert report["models"]["resnet152"]["ci_b"] == pytest.approx([0.6607, 0.6792], abs=1e-4)
    assert report["base"] == "alexnet" and report["dataset_b"] == "ImageNetV2"
    for name in ("rankings.json", "rankings.md", "rankings.png", "progress.png"):
        assert (tmp_path / "x" / name).read_bytes() == (tmp_path / "y" / name).read_bytes()
    assert (tmp_path / "x" / "rankings.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (tmp_path / "x" / "rankings.md").read_text()
    assert "| pnasnet_large_tf | 82.9 | [82.6, 83.2] | 72.2 | [71.3, 73.1] | 1 | 1 |" in markdown


GOOD = "model,accuracy_a,n_a,accuracy_b,n_b\nx,0.5,10,0.4,10\ny,0.6,10,0.5,10\nz,0.7,10,0.6,10\n"


@pytest.mark.parametrize(
    "text, message",
    [
        ("model,accuracy_a,n_a,accuracy_b\nx,0.5,10,0.4\n", r":1: missing column\(s\) n_b"),
        (GOOD.replace("y,0.6,", "y,60,"), r":3: field 'accuracy_a': expected a fraction in \[0, 1\], got '60'"),
        (GOOD.replace("z,0.7,10,0.6,10", "z,0.7,10,0.6,0"), r":4: field 'n_b': expected a sample size >= 1, got 0"),
        (GOOD.replace("x,0.5,10", "x,0.5,ten"), r":2: field 'n_a': expected an integer sample size, got 'ten'"),
        (GOOD.replace("z,", "x,"), r":4: field 'model': duplicate model 'x' \(first on line 2\)"),
        (GOOD.replace("y,", ","), r":3: field 'model': empty model name"),
        ("\n".join(GOOD.splitlines()[:3]) + "\n", r": 2 model\(s\); at least 3 are needed"),
    ],
)
def test_bad_csv_names_line_and_field(tmp_path, text, message):
    path = tmp_path / "accuracies.csv"
    path.write_text(text)
    with pytest.raises(RankingInputError, match=re.escape(str(path)) + message):
        read_accuracies(path)
    outcome = invoke(compare_rankings_command, ["--input", str(path), "--out", str(tmp_path / "out")])
    assert outcome.exit_code == 1 and "Error:" in outcome.output


def test_unknown_base_is_an_error(tmp_path):
    path = tmp_path / "accuracies.csv"
    path.write_text(GOOD)
    outcome = invoke(compare_rankings_command, ["--input", str(path), "--out", str(tmp_path / "out"), "--base", "w"])
    assert outcome.exit_code == 1
    assert "base model 'w' is not in the table (models: x, y, z)" in outcome.output


def test_equal_accuracies_on_one_dataset_are_an_error():
    flat = [ModelAccuracy(m.model, m.accuracy_a, m.n_a, 0.5, m.n_b) for m in HAND]
    with pytest.raises(ValueError, match="every model has the same accuracy on dataset B"):
        compare_rankings(flat, resamples=10)

"""Confident learning over a dataset with known label flips, worked by hand from cleanlab's definitions."""

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_runner import invoke

from imagenot.pipeline.audit.label_noise import LabelNoiseInputError, label_noise, per_class, summary
from imagenot.pipeline.audit.label_noise_command import label_noise_command

CLEAN = {0: [0.8, 0.1, 0.1], 1: [0.1, 0.8, 0.1], 2: [0.1, 0.1, 0.8]}
# The flipped rows: (true class, given class, the classifier's probabilities).
FLIPS = {
    "A": (0, 1, [0.75, 0.2, 0.05]),
    "B": (0, 1, [0.85, 0.05, 0.1]),
    "C": (2, 0, [0.15, 0.05, 0.8]),
}


def _tables():
    """10 rows per true class; A and B (truly 0) labelled 1, C (truly 2) labelled 0."""
    ids, labels, probs = [], [], []
    for true in range(3):
        for i in range(10 - sum(t == true for t, _, _ in FLIPS.values())):
            ids.append(f"part-00000:{true}{i}")
            labels.append(true)
            probs.append(CLEAN[true])
    for name, (_, given, p) in FLIPS.items():
        ids.append(name)
        labels.append(given)
        probs.append(p)
    dataset = pa.table({"row_id": ids, "class_index": pa.array(labels, pa.int32()), "split": ["val"] * len(ids)})
    return dataset, pa.table({"row_id": ids, "probs": probs})


# By hand. Thresholds (mean p_j over rows given j): t0 = (8 * .8 + .15) / 9 = .7278,
# t1 = (10 * .8 + .2 + .05) / 12 = .6875, t2 = .8. Each row reaches exactly one threshold, that of
# its true class (A: .75 >= t0), so the confident joint (rows given, columns true) is
CONFIDENT_JOINT = np.array([[8, 0, 1], [2, 10, 0], [0, 0, 9]])
# Its row sums (9, 12, 9) are already the given-label counts and it sums to n = 30, so calibrating
# changes nothing and the joint is CONFIDENT_JOINT / 30. The off-diagonal rows are A, B and C and
# none has its given label as argmax: 3 estimated errors. Pruning by noise rate removes, among rows
# given 1, the 2 with the largest p_0 - p_1 (B .8, A .55) and among rows given 0 the 1 with the
# largest p_2 - p_0 (C .65). Self-confidence (p of the given label): B .05 < C .15 < A .2.


def test_hand_worked_case():
    result = label_noise(*_tables(), num_classes=3)
    np.testing.assert_allclose(result.joint, CONFIDENT_JOINT / 30)
    np.testing.assert_array_equal(result.joint_counts(), CONFIDENT_JOINT)
    assert result.estimated_errors == 3
    assert [result.row_ids[i] for i in result.flagged] == ["B", "C", "A"]
    assert [result.self_confidence[i] for i in result.flagged] == pytest.approx([0.05, 0.15, 0.2])
    rows = per_class(result)
    assert [r["given"] for r in rows] == [9, 12, 9]
    assert [r["estimated_true"] for r in rows] == [10, 10, 10]
    assert [r["estimated_errors"] for r in rows] == [1, 2, 0]
    assert [r["estimated_missing"] for r in rows] == [2, 0, 1]
    assert [r["flagged"] for r in rows] == [1, 2, 0]
    assert [r["noise_rate"] for r in rows] == [round(1 / 9, 6), round(2 / 12, 6), 0.0]
    figures = summary(result)
    assert figures["estimated_errors"] == 3
    assert figures["estimated_error_fraction"] == 0.1
    assert figures["joint_error_fraction"] == pytest.approx(0.1)
    assert "3 of 30 labels (10.0%)" in figures["statement"]


def test_a_row_that_reaches_no_threshold_is_not_counted():
    # A at p_0 = .7 stays under t0 = .7278: cleanlab counts it nowhere, so it is neither estimated
    # nor flagged; the joint then calibrates row 1 ([1, 10, 0] scaled to its 12 rows).
    dataset, probs = _tables()
    rows = probs.to_pylist()
    rows[-3]["probs"] = [0.7, 0.25, 0.05]
    result = label_noise(dataset, pa.Table.from_pylist(rows), num_classes=3)
    assert result.estimated_errors == 2
    assert sorted(result.row_ids[i] for i in result.flagged) == ["B", "C"]
    assert result.joint_counts()[1].tolist() == [1, 11, 0]  # 12 * [1, 10, 0] / 11, rounded keeping the total


def test_class_columns_give_the_same_estimate_as_a_list_column():
    dataset, probs = _tables()
    matrix = np.array(probs.column("probs").to_pylist())
    columns = pa.table({"row_id": probs.column("row_id"), **{f"p_{j}": matrix[:, j] for j in range(3)}})
    by_list, by_columns = label_noise(dataset, probs), label_noise(dataset, columns)
    np.testing.assert_array_equal(by_list.joint, by_columns.joint)
    np.testing.assert_array_equal(by_list.flagged, by_columns.flagged)


def test_rows_on_one_side_only_are_counted_not_estimated():
    dataset, probs = _tables()
    probs = pa.concat_tables([probs.slice(1), pa.table({"row_id": ["stray:0"], "probs": [[0.2, 0.3, 0.5]]})])
    result = label_noise(dataset, probs)
    assert result.rows_without_probs == [dataset.column("row_id")[0].as_py()]
    assert result.probs_without_rows == ["stray:0"]
    assert len(result.labels) == 29
    figures = summary(result)
    assert (figures["rows_without_probs"], figures["probs_without_rows"]) == (1, 1)


def test_simulated_noisy_classifier_finds_most_flips():
    # 4 classes x 150 rows, a classifier right with confidence ~ .7-.95, 10% of labels flipped.
    rng = np.random.default_rng(7)
    n, k = 600, 4
    true = np.repeat(np.arange(k), n // k)
    probs = rng.dirichlet(np.ones(k), size=n) * 0.3
    probs[np.arange(n), true] += rng.uniform(0.4, 0.65, size=n)
    probs /= probs.sum(axis=1, keepdims=True)
    flipped = rng.choice(n, size=60, replace=False)
    given = true.copy()
    given[flipped] = (true[flipped] + rng.integers(1, k, size=60)) % k
    ids = [f"part-00000:{i}" for i in range(n)]
    result = label_noise(
        pa.table({"row_id": ids, "class_index": given}), pa.table({"row_id": ids, "probs": probs.tolist()}), k
    )
    found = set(result.flagged.tolist())
    assert len(found & set(flipped.tolist())) >= 54  # recall >= 90% (55 with this seed)
    assert len(found - set(flipped.tolist())) <= 6  # precision >= 90% (no false flag with this seed)
    # flips whose probabilities reach no threshold go uncounted, so the estimate runs a little low (51)
    assert 45 <= result.estimated_errors <= 66
    assert result.joint.sum() == pytest.approx(1)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d, p: (d, p.set_column(1, "probs", pa.array([[0.5, 0.4, 0.05]] * len(p)))), "not a distribution"),
        (lambda d, p: (d, p.set_column(1, "probs", pa.array([[0.5, 0.5]] * len(p)))), "2 probabilities per row"),
        (lambda d, p: (d, pa.concat_tables([p, p.slice(0, 1)])), "duplicate row_id"),
        (lambda d, p: (d.drop_columns("class_index"), p), "no column 'class_index'"),
        (lambda d, p: (d, p.rename_columns(["row_id", "scores"])), re.escape("p_0 .. p_(K-1)")),
        (lambda d, p: (d, p.set_column(0, "row_id", pa.array([f"x{i}" for i in range(len(p))]))), "no row_id matches"),
    ],
)
def test_bad_input_is_named(change, message):
    dataset, probs = change(*_tables())
    with pytest.raises(LabelNoiseInputError, match=message):
        label_noise(dataset, probs, num_classes=3)


def test_a_missing_class_column_is_named():
    dataset, probs = _tables()
    columns = pa.table({"row_id": probs.column("row_id"), "p_0": [0.5] * 30, "p_2": [0.5] * 30})
    with pytest.raises(LabelNoiseInputError, match="column p_1 is missing"):
        label_noise(dataset, columns)


def _run_dir(tmp_path, stage):
    dataset, probs = _tables()
    (tmp_path / "rank").mkdir()
    classes = [{"index": i, "wnid": f"n0000000{i}", "name": f"class_{i}.n.01"} for i in range(3)]
    (tmp_path / "rank" / "classes.json").write_text(json.dumps(classes))
    (tmp_path / stage / "dataset").mkdir(parents=True)
    pq.write_table(dataset.slice(0, 12), tmp_path / stage / "dataset" / "part-00000.parquet")
    pq.write_table(dataset.slice(12), tmp_path / stage / "dataset" / "part-00001.parquet")
    pq.write_table(probs, tmp_path / "probs.parquet")
    return tmp_path


@pytest.mark.parametrize("stage", ["sample", "download"])
def test_command_writes_the_outputs(tmp_path, stage):
    run = _run_dir(tmp_path, stage)
    outcome = invoke(label_noise_command, ["--run", str(run), "--probs", str(run / "probs.parquet")])
    assert outcome.exit_code == 0, outcome.output
    out = run / "audit" / "label_noise"
    figures = json.loads((out / "summary.json").read_text())
    assert figures["estimated_errors"] == 3 and figures["flagged"] == 3
    assert figures["per_class"]["1"]["wnid"] == "n00000001"
    flagged = pq.read_table(out / "flagged.parquet").to_pylist()
    assert [(r["row_id"], r["given_class"], r["suggested_class"], r["rank"]) for r in flagged] == [
        ("B", 1, 0, 1),
        ("C", 0, 2, 2),
        ("A", 1, 0, 3),
    ]
    per_class_lines = (out / "per_class.tsv").read_text().splitlines()
    assert per_class_lines[0].split("\t")[:5] == ["class_index", "wnid", "name", "given", "estimated_true"]
    assert per_class_lines[2].split("\t")[1:4] == ["n00000001", "class_1.n.01", "12"]
    joint = [line.split("\t") for line in (out / "joint.tsv").read_text().splitlines()]
    assert joint[0] == ["", "true_0", "true_1", "true_2"]
    np.testing.assert_allclose(np.array([row[1:] for row in joint[1:]], float), CONFIDENT_JOINT / 30)
    assert "3 of 30 labels" in outcome.output


def test_command_rejects_a_class_count_mismatch(tmp_path):
    run = _run_dir(tmp_path, "sample")
    classes = json.loads((run / "rank" / "classes.json").read_text())
    (run / "rank" / "classes.json").write_text(json.dumps(classes[:2]))
    outcome = invoke(label_noise_command, ["--run", str(run), "--probs", str(run / "probs.parquet")])
    assert outcome.exit_code == 1
    assert "3 probabilities per row, but the dataset has 2 classes" in outcome.output


def test_command_without_a_dataset_names_the_folders(tmp_path):
    run = _run_dir(tmp_path, "sample")
    for path in (run / "sample" / "dataset").iterdir():
        path.unlink()
    outcome = invoke(label_noise_command, ["--run", str(run), "--probs", str(run / "probs.parquet")])
    assert outcome.exit_code == 1
    assert "download/dataset/ or sample/dataset/" in outcome.output

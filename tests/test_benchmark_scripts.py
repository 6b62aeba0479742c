"""Every other benchmark runs (issue 42): a smoke run of each script of benchmarks/ at a tiny size,
reading the JSON object its last line prints, so that a change that breaks one fails here. A
script whose work is Python in one process runs as `python benchmarks/SCRIPT ARGS` would, but in
this test process (`_main_json`: its `__main__` run with that argv; WordNet, the models and torch
load once per worker, not once per script); one that starts processes of its own runs in a
process (test_benchmarks.py's `_last_json`). The builds' benchmarks are in test_benchmarks.py,
beside the runs they share. `real_dev_judgments.py` is a module of the others (it has no main)."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_benchmarks import BENCHMARKS, _last_json

pytestmark = pytest.mark.benchmarks  # `make test-benchmarks`: CI runs them beside `make test`

SHARED_DATA = BENCHMARKS.parent.parent / "shared" / "data"  # the shared folder beside the checkout, in CI too


def _main_json(capsys, script: str, *args: str) -> dict:
    """`python benchmarks/SCRIPT ARGS`, run in this process: the JSON object of its last line. The
    process-wide settings a script changes (Arrow's thread pools) are put back after."""
    argv, path, threads = sys.argv, sys.path, (pa.cpu_count(), pa.io_thread_count())
    sys.argv, sys.path = [str(BENCHMARKS / script), *args], [str(BENCHMARKS), *sys.path]
    try:
        runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
    except SystemExit as done:  # click's and argparse's way to end
        assert done.code in (None, 0), f"{script} exited with {done.code}"
    finally:
        sys.argv, sys.path = argv, path
        pa.set_cpu_count(threads[0])
        pa.set_io_thread_count(threads[1])
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def laion_rows(tmp_path_factory) -> Path:
    """The shared LAION sample's first 600 rows: the real captions the quality scripts read, in a file
    of the sample's name (a row's id is its file's stem and its place: the judged pairs name them)."""
    path = tmp_path_factory.mktemp("laion") / "laion_sample_9614.parquet"
    pq.write_table(pq.read_table(SHARED_DATA / "laion_sample_9614.parquet").slice(0, 600), path)
    return path


def test_semcor_rule_cost(capsys):
    found = _main_json(capsys, "semcor_rule_cost.py", "--limit", "200")
    assert found["occurrences"] == 200 and "none_of_these" in found["rules"]
    assert all(set(row) == {"dropped", "share", "within_a_point"} for row in found["rules"].values())


def test_fit_none_of_these_dry_run(capsys, laion_rows):
    model_file = BENCHMARKS.parent / "labels" / "none_of_these_model.py"  # what the fit writes without --dry-run
    model = model_file.read_bytes()
    found = _main_json(
        capsys, "fit_none_of_these.py", "--dry-run", "--folds", "2", "--limit", "200", "--corpus", str(laion_rows)
    )
    assert {"pairs", "cv_auc", "cv_by_threshold", "weights", "bias", "semcor_occurrences"} <= set(found)
    assert found["semcor_occurrences"] <= 200
    assert model_file.read_bytes() == model


def test_quality_real(capsys, laion_rows):
    found = _main_json(capsys, "quality_real.py", "--limit", "150", "--corpus", str(laion_rows))
    assert found["pairs"] == 150
    assert {"agreement", "defaults", "defaults_with_class_floor", "none_of_these", "rules", "classes"} <= set(found)


def test_quality_none_of_these_fit(capsys, laion_rows):
    found = _main_json(
        capsys, "quality_none_of_these_fit.py", "--limit", "300", "--folds", "2", "--corpus", str(laion_rows)
    )
    assert {"no_floor", "by_floor", "out_of_fold", "dropped_by_use_at_default"} <= set(found)


def test_quality_signals(capsys, laion_rows):
    found = _main_json(capsys, "quality_signals.py", "--limit", "60", "--corpus", str(laion_rows))
    assert found["pairs"] == 60 and {"defaults", "signals", "combined_out_of_fold"} <= set(found)


def test_quality_classes(capsys, laion_rows):
    found = _main_json(capsys, "quality_classes.py", "--limit", "30", "--corpus", str(laion_rows))
    assert found["classes"] == 30 and {"agreement", "flagged", "out_of_fold", "by_cut", "missed"} <= set(found)


def test_quality_senses(capsys):
    found = _main_json(capsys, "quality_senses.py", "--limit", "40", "--context-only")
    assert found["captions"] == 40 and {"old_rule", "captions_per_s"} <= set(found["minilm"])


def test_quality_wsd(capsys):
    found = _main_json(capsys, "quality_wsd.py", "--limit", "40", "--methods", "sentence")
    assert found["rows"] == {"dev": 40, "test": 40}
    [method] = found["methods"]
    assert method["method"] == "sentence" and {"by_prior", "chosen_prior_on_dev", "test_at_chosen_prior"} <= set(method)


def test_bench_senses(capsys):
    found = _main_json(capsys, "bench_senses.py", "--copies", "1", "--repeats", "1", "--limit", "40")
    assert found["captions"] == 40 and {"captions_per_s", "encoder_alone_captions_per_s", "seconds"} <= set(found)


def test_bench_encoder(capsys):
    found = _main_json(capsys, "bench_encoder.py", "--captions", "200")
    assert {"captions", "int8_min_cosine"} <= set(found)


def test_bench_faiss(capsys):
    found = _main_json(
        capsys, "bench_faiss.py", "--vectors", "3000", "--dim", "32", "--clusters", "20", "--planted", "20"
    )
    assert found["vectors"] == 3000 and {"audit_s", "speedup_vs_flat", "near_duplicate_recall"} <= set(found)


def test_bench_safety_rules(capsys):
    found = _main_json(capsys, "bench_safety_rules.py", "--repeats", "1")
    assert found["nouns"] > 80_000 and {"offensive_synsets", "identity_synsets", "cpu_seconds"} <= set(found)


def test_bench_corpus_read(capsys, tmp_path):
    found = _main_json(capsys, "bench_corpus_read.py", "--rows", "2000", "--repeats", "1", "--corpus", str(tmp_path))
    assert found["rows"] == 2000 and {"parquet", "csv", "jsonl"} <= set(found["formats"])


def test_bench_tagging(tmp_path):
    found = _last_json(
        "bench_tagging.py",
        "--rows",
        "2000",
        "--laionet-sample",
        "20",
        "--memory-rows",
        "500",
        "--corpus",
        str(tmp_path),
    )
    assert found["rows"] == 2000


def test_bench_audit_classes():
    found = _last_json("bench_audit_classes.py", "--captions", "40", "--classes", "3000")
    assert (found["captions"], found["classes"]) == (40, 3000) and {"pairs", "seconds", "peak_rss_mib"} <= set(found)


def test_bench_cli_start():
    found = _last_json("bench_cli_start.py", "--repeats", "1")
    assert {"seconds", "cpu_seconds", "ratio_to_python", "passed"} <= set(found)


def test_bench_worker_start():
    found = _last_json("bench_worker_start.py", "--repeats", "1", "--case", "tag worker, collector paused")
    assert list(found) == ["tag worker, collector paused"] and set(found["tag worker, collector paused"]) == {
        "cpu_s",
        "wall_s",
    }


def test_real_dev_pairs(capsys, laion_rows, tmp_path):
    out = tmp_path / "pairs.tsv"
    found = _main_json(
        capsys,
        "real_dev_pairs.py",
        *("--corpus", str(laion_rows), "--run", str(tmp_path / "run"), "--before-step6", "10", "--out", str(out)),
    )
    assert found["pairs"] == len(out.read_text().splitlines()) - 1 > 0 and "kept" in found["by_source"]


def test_quality_build(capsys, laion_rows, tmp_path):
    found = _main_json(capsys, "quality_build.py", "--corpus", str(laion_rows), "--thresholds", "0.5", "-1")
    assert [s["threshold"] for s in found["settings"]] == [0.5, -1]
    assert found["settings"][0]["labels"] <= found["settings"][1]["labels"] <= found["select_kept"]
    unjudged = _main_json(capsys, "quality_build.py", "--corpus", str(laion_rows), "--pairs", str(tmp_path / "p.tsv"))
    assert unjudged["not_judged"] == len((tmp_path / "p.tsv").read_text().splitlines()) - 1


def test_quality_sense_precision(capsys, tmp_path):
    found = _main_json(
        capsys, "quality_sense_precision.py", "--rows", "2000", "--min-captions", "2", "--run", str(tmp_path)
    )
    assert found["rows"] == 2000 and {"synset_threshold", "caption_threshold", "dataset_images"} <= set(found)


def test_bench_download():
    found = _last_json("bench_download.py", "--urls", "8", "--hosts", "1", "--threads", "2", "--repeats", "1")
    assert found["urls"] == 8 and {"img2dataset", "stage", "ratio", "ratio_wall"} <= set(found)


def test_bench_work_units():
    found = _last_json(
        "bench_work_units.py",
        *("--rows", "4000", "--row-group", "1000", "--bounds", "2000", "100000000", "--workers", "1"),
    )
    assert found["rows"] == 4000 and found["same_tally"] and len(found["runs"]) == 2


def test_bench_review(downloaded_run):
    found = _last_json("bench_review.py", "--run", str(downloaded_run), "--clients", "2", "--seconds", "1")
    assert found["review"] == "images" and {"after", "baseline"} <= set(found)


def test_bench_fresh_clone_dry_run():
    """Its plumbing (the clone, the empty home, each step timed): each step as `make -n`."""
    figures = _last_json("bench_fresh_clone.py", "--dry-run", "--test")
    assert {"setup_demo", "build_demo", "setup_test", "make_test", "make_demo_seconds"} <= set(figures)
    assert figures["setup_demo"]["seconds"] >= 0 and figures["cpus"] >= 1


def test_label_train_pairs(capsys, laion_rows, tmp_path):
    found = _main_json(
        capsys,
        "label_train_pairs.py",
        *("--corpus", str(laion_rows), "--pairs", "40", "--batches", "2", "--doubles", "5", "--out", str(tmp_path)),
    )
    assert found["drawn"] == 40 and found["files"] == ["pairs_01.tsv", "pairs_02.tsv", "doubles.tsv"]
    assert sum(len((tmp_path / f).read_text().splitlines()) - 1 for f in found["files"][:2]) == 40


def test_web_sense_packets_and_lexicon(capsys, laion_rows, tmp_path):
    found = _main_json(
        capsys, "web_sense_packets.py", "--corpus", str(laion_rows), "--out", str(tmp_path), "--packets", "2"
    )
    assert found["words"] > 0 and found["files"] == ["words_01.md", "words_02.md"]
    lexicon = _main_json(capsys, "web_sense_lexicon.py", "--out", str(tmp_path / "web_senses.tsv"))
    assert lexicon["words_read"] >= lexicon["words_with_web_senses"] > 300
    assert (tmp_path / "web_senses.tsv").read_bytes() == (BENCHMARKS.parent / "labels" / "web_senses.tsv").read_bytes()


def test_quality_labels(capsys, laion_rows):
    found = _main_json(capsys, "quality_labels.py", "--corpus", str(laion_rows), "--limit", "400", "--folds", "2")
    assert {"build", "real_dev", "web_senses", "label_model_drops"} <= set(found)
    assert {"nested_out_of_fold", "chosen_on_all_folds", "before_issue_51"} <= set(found["build"])


def test_quality_clean(capsys):
    found = _main_json(capsys, "quality_clean.py", "--limit", "30")
    assert found["captions"] == 30 and {"before_issue_51", "now", "points_lost"} <= set(found)


def test_bench_label_model(capsys, laion_rows):
    found = _main_json(capsys, "bench_label_model.py", "--corpus", str(laion_rows), "--limit", "30", "--repeats", "1")
    assert set(found["ratio_to_wordnet_senses"]) == {"wordnet_senses", "web_senses", "web_senses_and_label_model"}


def test_bench_select_density(tmp_path):
    found = _last_json(
        "bench_select_density.py",
        *("--rows", "3000", "6000", "--repeats", "2", "--in-process", "--tmp", str(tmp_path)),
        timeout=600,
    )
    [small, large] = found["sizes"]
    assert len(small["tag"]["cpu_seconds_runs"]) == len(large["select"]["laion"]["cpu_seconds_runs"]) == 2
    assert small["select"]["laion"]["min_captions"] == 1 and small["select"]["small"]["min_captions"] == 3
    assert small["select"]["laion"]["candidates"] > small["select"]["small"]["candidates"]
    assert set(found["marginal_us_per_row"]["6000-3000"]) >= {"tag", "select_laion", "select_laion_net_of_driver"}

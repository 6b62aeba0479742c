"""What `imagenot build` prints last: the summary of what came out and the fewer-classes warning."""

import json

from imagenot.pipeline.commands.build_summary import class_shortfall, closing_summary
from imagenot.pipeline.config.schema import Config

SUMMARY = {
    "select": {"candidates": 96},
    "rank": {"classes": 43, "synsets_dropped": {"below_threshold": 30, "too_few_captions": 23, "beyond_top_k": 0}},
    "download": {"images": 1_700, "classes_short": 1},
    "export": {"train": 1_270, "test": 430, "path": "dataset"},
}


def _run(tmp_path, summary: dict) -> str:
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    return str(tmp_path)


def _config(classes: int) -> Config:
    return Config.model_validate(
        {"ranking": {"classes": classes}, "sampling": {"images_per_class": 40, "test_per_class": 10}}
    )


def test_the_summary_gives_counts_and_paths(tmp_path):
    run_dir = _run(tmp_path, SUMMARY)
    text = closing_summary(_config(50), run_dir, ["report", "export"])
    assert (
        text.splitlines()[0]
        == f"{run_dir}: 43 classes, 1,700 images (1,270 train, 430 test); 1 class short of 40 images"
    )
    assert (
        f"card:    {run_dir}/report/card.md" in text
        and f"dataset: {run_dir}/dataset/" in text
        and "ran:     report, export" in text
    )


def test_fewer_classes_than_asked_names_the_step_and_setting(tmp_path):
    run_dir = _run(tmp_path, SUMMARY)
    assert class_shortfall(_config(43), run_dir) is None
    warning = class_shortfall(_config(50), run_dir)
    assert warning.startswith(
        "43 of the 50 classes asked for (ranking.classes) came out: of 96 candidate synsets, step 'rank'"
    )
    assert (
        "30 below the gloss-similarity threshold (ranking.thresholds)" in warning
        and "23 with too few captions" in warning
    )
    few = _run(tmp_path, {**SUMMARY, "select": {"candidates": 1}, "rank": {"classes": 1}})
    assert "step 'select' left only 1 candidate synsets" in class_shortfall(_config(50), few)

"""Builds whose settings are all changed from the defaults finish, report and export included, and
`report` and `export` run again on the finished run: each stage records the settings its
`settings(config)` gives, which the build's and the report's checks compare with."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from urllib.parse import urlsplit

import context_spans
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from cli_runner import cli_command, invoke
from ports import kept_loopback_port
from shared_runs import copy_run

from imagenot.pipeline.config.schema import Config, Download, load_config
from imagenot.pipeline.demo.image_server import stock_picture_jpeg
from imagenot.pipeline.frame.build import build
from imagenot.pipeline.frame.registry import settings_differences, stages

export_command = cli_command("export")
report_command = cli_command("report")

CHANGED_DOWNLOAD = {
    "enabled": True,
    "threads": 3,
    "timeout_s": 4,
    "retries": 1,
    "max_rounds": 4,
    "max_response_bytes": 5_000_000,
    "max_image_pixels": 40_000_000,
    "image_size": 48,
    "resize_mode": "center_crop",
    "encode_format": "png",
    "encode_quality": 5,
    "shard_rows": 15,
    "user_agent_token": "imagenot-test",
    "disallowed_header_directives": ["noai"],
    "fetch_deadline_s": 10,
    "robots_txt": False,
    "robots_max_bytes": 600_000,
    "per_host_connections": 2,
    "per_host_rate": 200,
    "backoff_base_s": 0.5,
    "max_backoff_s": 30,
    "host_max_failures": 50,
    "allowed_networks": ["127.0.0.1/32"],
    "tdmrep": False,
    "ai_preferences": False,
    "ai_preferences_categories": ["train-ai"],
    "content_signal": False,
}  # demo_server_port and blocklists are set per run


def _blocklists(folder: Path, sample_url: str) -> list[str]:
    """Two lists between them of every kind: a URL of the sample, a domain, the two stock pictures'
    hashes (the demo's server draws them behind many of the synthetic corpus's URLs)."""
    first, second = folder / "urls.txt", folder / "hashes.txt"
    first.write_text(f"# urls and domains\nurl {sample_url}\ndomain blocked.invalid\n")
    stock = stock_picture_jpeg(0), stock_picture_jpeg(1)  # the demo's server draws them
    sha256, md5 = hashlib.sha256(stock[0]).hexdigest(), hashlib.md5(stock[1]).hexdigest()
    second.write_text(f"sha256 {sha256}\nmd5 {md5}\n")
    return [str(first), str(second)]


def _ok(command, run_dir: Path) -> None:
    result = invoke(command, ["--run", str(run_dir)], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _finishes_and_reruns(config: Config, run_dir: Path, built: list[str]) -> str:
    assert build(config, str(run_dir)) == built
    assert build(config, str(run_dir)) == []  # every stage current: its recorded settings are what the config gives
    for stage in stages():  # the registry's walk (tests/test_registry.py) over download, blocklists and export too
        assert not stage.wanted(config) or settings_differences(stage, config, str(run_dir)) == [], stage.name
    _ok(report_command, run_dir)
    _ok(export_command, run_dir)
    assert (run_dir / "dataset" / "classes.txt").exists()
    return (run_dir / "report" / "card.md").read_text()


def test_a_build_with_every_download_option_changed_finishes(small_run, tmp_path):
    assert set(CHANGED_DOWNLOAD) | {"demo_server_port", "blocklists"} == set(Download.model_fields)
    built = yaml.safe_load(small_run.config.read_text())
    run_dir = copy_run(small_run.run, tmp_path / "run")
    sample_url = pq.read_table(run_dir / "sample" / "dataset").column("url")[0].as_py()
    port = urlsplit(built["corpus"]["synth"]["url_base"]).port
    download = {**CHANGED_DOWNLOAD, "demo_server_port": port, "blocklists": _blocklists(tmp_path, sample_url)}
    config = Config.model_validate({**built, "download": download})
    assert all(getattr(config.download, k) != v for k, v in Download().model_dump().items() if k != "enabled")
    card = _finishes_and_reruns(config, run_dir, ["download", "report", "export"])
    for path in download["blocklists"]:
        assert f"| {path} |" in card
    removed = card[card.index("They removed: ") :].splitlines()[0]
    assert "blocklist_url 1" in removed and "blocklist_sha256" in removed and "blocklist_md5" in removed
    assert "**TDMRep (tdmrep.json, tdm-reservation header) was NOT honoured**" in card.split("## ")[0]


ALL_CHANGED = {
    "corpus": {
        "synth": {"rows": 6_000, "seed": 6, "shard_rows": 2_000, "captions": "compact"},  # full classes from few rows
        "columns": {
            "width": None,
            "height": None,
            "similarity": None,
            "punsafe": "punsafe",
            "nsfw": None,
            "sample_id": None,
            "license": None,
        },
    },
    "tagging": {"batch_rows": 2_000, "ignore_forms": ["a", "an", "the", "it"]},
    "selection": {
        "offensive_synsets": False,
        "person_synsets": "all",
        "instance_synsets": True,
        "picturable_roots": ["physical_entity.n.01"],
        "picturable_excluded_lexnames": [],
        "caption_rules": {"rules": ["size_code", "number", "case"], "foreign_words": ["de", "la"]},
        "overlap": "strict",
        "min_captions": 6,
        "nsfw_synset_threshold": 0.9,
        "allowed_nsfw_tags": None,
        "max_punsafe": 0.95,
        "keep_unrated": True,
    },
    "scoring": {
        "encoder": "transformers",
        "runtime": "onnx",
        "sense_method": "both",  # reads sense_templates, sense_pooling and sense_layers
        "sense_layers": context_spans.LAYERS,  # the context tests' setting: SemCor's vectors prepared once
        "sense_templates": ["{lemma}: {gloss}"],
        "sense_pooling": "max",
        "sense_sentence_weight": 5.0,  # the trained method's alone: a build under both changes no result by it
        "sense_prior": 0.0,
        "sense_margin": 0.02,
        "web_senses": False,  # the both method scores none: with the label model off, as it is by default here
        "web_sense_margin": 0.05,
        "label_floor": 0.3,
        "none_of_these_fit": {"both": 0.05},  # the floor of the method in use: few captions fit no sense so little
        "first_phase": "priority",
        "exact_per_class": 12,
        "pooling": "cls",
        "max_length": context_spans.MAX_LENGTH,
        "batch_size": 64,
        "query_template": "{name}: {gloss}",
        "first_pass_captions": 8,
        "seed": 3,
        "exact_cap": 50,
    },
    "ranking": {
        "top_n": 4,
        "min_captions": 3,
        "thresholds": {"packaged:all-MiniLM-L6-v2": 0.1},
        "classes": 5,
        "vetoed": ["n02084071"],  # dog.n.01: never a class, whatever the corpus
        "min_pass_share": 0.1,
    },
    "sampling": {
        "images_per_class": 3,
        "strategy": "matched",
        "reserve_factor": 0.7,
        "test_per_class": 2,
        "seed": 9,
        "shard_rows": 7,
    },
    "image_audit": {"seed": 4, "batch_size": 8, "near_duplicate_threshold": 0.9, "neighbours": 3, "thumbnails": 4},
    "export": {"formats": ["webdataset", "imagefolder"], "samples_per_shard": 4},
    "report": {"thumbnails_per_class": 2, "thumbnail_pixels": 48},
    "runner": {"torch_threads": 2, "lock_stale_after_s": 3600},
    "datasheet": {
        "corpus_provenance": "synthetic",
        "maintainer_contact": "nobody@127.0.0.1",
        "motivation": "a test",
        "intended_uses": "tests",
        "distribution": "none",
    },
}


# Left at their defaults, each for a reason: the synthetic corpus reads no files; one of two exclusive
# settings (reference_quantiles beside reference_scores, the threshold for strategy threshold only;
# first_phase_model is for first_phase static);
# how the stages are run, not what they record; the audits' and the review's settings (no build stage).
UNCHANGED = {
    "corpus": {"paths", "preset", "format", "column_names", "strict", "work_unit_rows"},
    "scoring": {"model", "first_phase_model"},
    "sampling": {"reference_quantiles", "threshold"},
    "runner": {"kind", "workers", "dataflow", "portable"},
}
NOT_BUILD_STAGES = {"image_audit", "review"}


def _changed(tmp_path: Path, port: int) -> dict:
    """ALL_CHANGED with what needs a place or a port: the embedding cache, a reference class list and
    reference scores, blocklists of every kind."""
    changed = copy.deepcopy(ALL_CHANGED)
    changed["corpus"]["synth"]["url_base"] = f"http://127.0.0.1:{port}/img"
    changed["scoring"]["cache_dir"] = str(tmp_path / "embeddings")
    (tmp_path / "reference.txt").write_text("n02084071\nn03481172\n")  # dog.n.01, hammer.n.02
    changed["selection"]["reference"] = str(tmp_path / "reference.txt")
    pq.write_table(pa.table({"gloss_similarity": [0.1, 0.2, 0.3, 0.45, 0.6]}), tmp_path / "reference.parquet")
    changed["sampling"]["reference_scores"] = str(tmp_path / "reference.parquet")
    blocklists = _blocklists(tmp_path, f"http://127.0.0.1:{port}/img/0.jpg")
    changed["download"] = {**CHANGED_DOWNLOAD, "demo_server_port": port, "blocklists": blocklists}
    return changed


def test_a_build_with_every_option_of_every_stage_changed_finishes(tmp_path, context_spans):
    changed = _changed(tmp_path, kept_loopback_port())
    (tmp_path / "changed.yaml").write_text(yaml.safe_dump(changed))
    config = load_config(tmp_path / "changed.yaml")
    defaults = Config()
    for section in set(Config.model_fields) - NOT_BUILD_STAGES:
        given, default = getattr(config, section), getattr(defaults, section)
        same = {key for key in type(given).model_fields if getattr(given, key) == getattr(default, key)}
        assert same == UNCHANGED.get(section, set()), section
    card = _finishes_and_reruns(
        config, tmp_path / "run", ["corpus", "tag", "select", "score", "rank", "sample", "download", "report", "export"]
    )
    assert "nobody@127.0.0.1" in card and "| robots.txt (RFC 9309) | NOT read |" in card
    assert all(f"| {path} |" in card for path in changed["download"]["blocklists"])

"""The shipped configs validate, and say what they claim to."""

from pathlib import Path

import pytest

from imagenot.pipeline.config.schema import load_config

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.mark.parametrize("name", ["demo.yaml", "imagenot.yaml", "laionet.yaml"])
def test_shipped_configs_validate(name):
    load_config(CONFIGS / name)


def test_imagenot_config_has_the_papers_settings():
    config = load_config(CONFIGS / "imagenot.yaml")
    assert (config.ranking.classes, config.sampling.images_per_class, config.sampling.test_per_class) == (
        1000,
        1000,
        100,
    )
    assert config.scoring.encoder == "transformers" and config.threshold == 0.82
    assert config.runner.kind == "dataflow" and config.runner.dataflow.scoring_accelerator


def test_laionet_config_keeps_imagenet_classes_uncapped():
    config = load_config(CONFIGS / "laionet.yaml")
    assert config.selection.overlap == "within" and config.selection.reference == "imagenet1k"
    assert config.sampling.strategy == "threshold" and config.sampling.images_per_class >= 1_000_000
    assert config.scoring.query_template == "{name} which is {gloss}"


def test_demo_config_is_offline_and_small():
    config = load_config(CONFIGS / "demo.yaml")
    assert config.corpus.synth is not None and config.download.demo_server_port is not None
    assert config.corpus.synth.url_base.startswith(f"http://127.0.0.1:{config.download.demo_server_port}/")
    assert config.scoring.model == "packaged:all-MiniLM-L6-v2"

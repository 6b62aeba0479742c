"""The worker image and the project declare the same things (the image cannot be built here)."""

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = (REPO / "Dockerfile").read_text()
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _instructions(keyword: str) -> list[str]:
    text = DOCKERFILE.replace("\\\n", " ")
    return [line.split(None, 1)[1] for line in text.splitlines() if line.startswith(keyword + " ")]


def test_base_image_is_beams_python311_sdk_at_the_declared_beam_version():
    beam_pin = next(d for d in PYPROJECT["project"]["dependencies"] if d.startswith("apache-beam"))
    version = beam_pin.split("==")[1]
    assert _instructions("FROM") == [f"apache/beam_python3.11_sdk:{version}"]


def test_image_installs_the_project_with_its_constraints():
    copied = " ".join(_instructions("COPY"))
    for needed in ("pyproject.toml", "constraints.txt"):
        assert needed in copied
    for pattern in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]:
        top = pattern.rstrip("*")
        assert re.search(rf"COPY {top} ", DOCKERFILE), f"{top} is not copied into the image"
    installs = [run for run in _instructions("RUN") if "pip install" in run]
    assert installs[0] == "pip install --no-cache-dir -c constraints.txt ."
    # the one package installed apart (without torchvision), pinned as the setup script pins it
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert installs[1:] == ["pip install --no-cache-dir -c constraints.txt --no-deps open_clip_torch==3.3.0"]
    assert "-c constraints.txt --no-deps open_clip_torch==3.3.0" in setup


def test_image_prepares_wordnet_from_debian():
    runs = " ".join(_instructions("RUN"))
    assert "wordnet-base" in runs and "wordnet-sense-index" in runs
    assert "imagenot wordnet-prepare" in runs


def test_setup_script_uses_the_same_constraints():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "-c constraints.txt -e '.[dev]'" in setup
    assert "torch==2.13.0" in (REPO / "constraints.txt").read_text()
    assert "torch==2.13.0" in PYPROJECT["project"]["dependencies"]

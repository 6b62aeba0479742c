"""The worker image and the project declare the same things (the image cannot be built here)."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

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
    for top in PYPROJECT["tool"]["setuptools"]["package-dir"].values():
        assert re.search(rf"COPY {top} ", DOCKERFILE), f"{top} is not copied into the image"
    installs = [run for run in _instructions("RUN") if "pip install" in run]
    assert installs[0] == "pip install --no-cache-dir -c constraints.txt '.[gcp]'"  # workers read and write gs://
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
    assert '-c constraints.txt -e ".[$EXTRAS]"' in setup
    assert "demo) EXTRAS=demo,review ;;" in setup and "test) EXTRAS=demo,review,audit,dev ;;" in setup
    assert "torch==2.13.0" in (REPO / "constraints.txt").read_text()
    assert "torch==2.13.0" in PYPROJECT["project"]["dependencies"]


def test_the_google_cloud_libraries_come_only_with_the_gcp_extra():
    """`make demo` (demo, review) installs no Google Cloud client; gs://, Dataflow, the image and the
    tests get them through the gcp extra."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    demo = [*PYPROJECT["project"]["dependencies"], *extras["demo"], *extras["review"]]
    assert not [d for d in demo if "[gcp]" in d or d.startswith(("gcsfs", "google"))]
    assert extras["gcp"] == ["apache-beam[gcp]==2.77.0", "gcsfs>=2026.1"]
    assert "imagenot[gcp]" in extras["dev"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy: setuptools keeps a build/ folder in the source tree between builds.
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for folder in PYPROJECT["tool"]["setuptools"]["package-dir"].values():
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)], check=True)
    return next(out.glob("imagenot-*.whl"))


def test_wheel_holds_only_the_imagenot_namespace_and_every_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert all(n.startswith(("imagenot/", "imagenot-")) for n in names), [n for n in names if "/" in n][:5]
    mapping = PYPROJECT["tool"]["setuptools"]["package-dir"]
    for package, folder in mapping.items():
        for init in sorted((REPO / folder).rglob("__init__.py")):
            inner = init.relative_to(REPO / folder).as_posix()
            assert f"{package.replace('.', '/')}/{inner}" in names, f"{init.relative_to(REPO)} is not in the wheel"
    assert "imagenot/errors.py" in names
    assert "imagenot/wordnet/data/imagenet1k_wnids.txt" in names


def test_package_data_resolves_from_an_installed_wheel(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)], check=True
    )
    probe = (
        "from importlib import resources; import imagenot.wordnet as w; "
        "text = (resources.files('imagenot.wordnet') / 'data' / 'imagenet1k_wnids.txt').read_text(); "
        "print(w.__file__); print(len(text.split()))"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    module_file, count = result.stdout.split()
    assert module_file.startswith(str(target))
    assert count == "1000"


def test_the_gcs_backend_of_fsspec_is_declared_so_the_image_has_it():
    # img2dataset writes its tars, and fsspec-based readers read, gs:// through gcsfs; the image
    # installs the project with the gcp extra (checked above), so gcsfs is in it.
    gcp = PYPROJECT["project"]["optional-dependencies"]["gcp"]
    declared = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0] for d in gcp}
    assert {"gcsfs", "apache-beam"} <= declared
    assert any(d.startswith("gcp-storage-emulator") for d in PYPROJECT["project"]["optional-dependencies"]["dev"])


def test_the_project_s_own_pyproject_gives_setuptools_no_deprecation_warning(tmp_path):
    """`project.license` as a table printed a deprecation at every install (issue 43)."""
    import warnings

    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply_configuration(Distribution(), str(tmp_path / "pyproject.toml"))
    assert [str(w.message) for w in caught if "deprecat" in str(w.message).lower()] == []


def _tool(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/usr/bin/env bash\n{body}\n")
    path.chmod(0o755)


def test_setup_prints_a_line_per_step_and_keeps_the_tools_output_in_the_log_it_names(tmp_path):
    """The script itself, with the tools it calls standing in (each prints a page, as pip and apt do)."""
    repo, bin_dir = tmp_path / "repo", tmp_path / "bin"
    (repo / "scripts").mkdir(parents=True)
    (repo / ".venv/bin").mkdir(parents=True)
    bin_dir.mkdir()
    shutil.copy(REPO / "scripts/setup.sh", repo / "scripts/setup.sh")
    noisy = 'for i in $(seq 200); do echo "Unpacking something $i"; done; echo "$0 $*" >> "$CALLS"'
    for name in ("apt-get", "sudo"):
        _tool(bin_dir, name, noisy)
    _tool(bin_dir, "dpkg-query", "exit 1")  # nothing installed yet
    for name in ("python", "imagenot"):
        _tool(repo / ".venv/bin", name, noisy)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls")}
    done = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=repo, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "set-up (test): one line per step; the details go to setup.log"
    steps = ["Debian packages", "the virtualenv", "the project (demo,review,audit,dev)", "WordNet 3.0", "the scoring"]
    assert len(lines) == len(steps) + 2 and all(step in line for step, line in zip(steps, lines[1:]))
    assert all(line.rstrip().endswith(" s)") for line in lines[1:-1]) and done.stderr == ""
    assert "chromium-driver" in (tmp_path / "calls").read_text()
    log = (repo / "setup.log").read_text()
    assert log.count("Unpacking something") == 200 * len((tmp_path / "calls").read_text().splitlines())
    elsewhere = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=repo, env={**env, "SETUP_LOG": "other.log"}, capture_output=True, text=True
    )
    assert elsewhere.returncode == 0 and "the details go to other.log" in elsewhere.stdout
    (tmp_path / "calls").unlink()
    demo = subprocess.run(["bash", "scripts/setup.sh", "demo"], cwd=repo, env=env, capture_output=True, text=True)
    steps = ["Debian packages", "the virtualenv", "the project (demo,review)", "WordNet 3.0"]  # models: when needed
    lines = demo.stdout.splitlines()
    assert len(lines) == len(steps) + 2 and all(step in line for step, line in zip(steps, lines[1:]))
    calls = (tmp_path / "calls").read_text()
    assert "wordnet-base=1:3.0-37" in calls and "chromium" not in calls and "open_clip" not in calls
    _tool(repo / ".venv/bin", "imagenot", 'echo "prepare failed here"; exit 3')
    failed = subprocess.run(["bash", "scripts/setup.sh"], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 3 and "FAILED (exit 3)" in failed.stdout and "prepare failed here" in failed.stderr

import gc
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from context_spans import prepared_context_spans
from ports import free_loopback_port
from reference_matcher import ReferenceMatcher
from shared_runs import build_once
from small_build import (
    SmallRun,
    TaggedCorpus,
    build_small_run,
    download_small_run,
    small_run_in,
    tag_corpus,
    tagged_corpus_in,
)

from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.run import storage_auth
from imagenot.pipeline.tag import LemmaMatcher
from imagenot.pipeline.tag.stage import build_matcher
from imagenot.wordnet.index import load_index
from imagenot.wordnet.lemmas import surface_forms

BUCKET = "imagenot-test"

# A test process keeps WordNet's tables, the tagger and the models (millions of objects) for its
# whole life, and each full collection walks them all. A first generation of 50,000 objects
# instead of 700 makes full collections some 5x rarer: the collector's share of a worker's time
# fell from 13% to 8% (tests/test_build.py, test_corpus_formats.py and test_review.py).
gc.set_threshold(50_000, 10, 10)

# The longest test files, longest first. xdist hands each worker whole files (--dist loadfile) in
# collection order (--no-loadscope-reorder; its default order, most tests first, left these files
# to the end, where one worker ran a long one while the other had nothing left); the rest follow
# in the usual order. test_bucket.py and test_benchmarks.py start the two workers: the first
# builds the shared small run, which the next ones need, while the second builds its own.
LONGEST_FIRST = (
    "test_bucket.py",
    "test_benchmarks.py",
    "test_crash_safety.py",
    "test_corpus_formats.py",
    "test_build.py",
    "test_class_vetoes.py",
    "test_cli.py",
    "test_score_rank_stages.py",
    "test_sample_stage.py",
    "test_hostile_corpus.py",
    "test_review.py",
    "test_work_units.py",
    "test_stage_by_stage.py",
    "test_report_images.py",
    "test_changed_settings.py",
    "test_review_browser.py",
    "test_class_review_browser.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's tests keep their order


@pytest.fixture(scope="session")
def index():
    """The real WordNet 3.0 noun index (prepared by scripts/setup.sh, cached after)."""
    return load_index()


@pytest.fixture(scope="session")
def forms(index):
    """Every noun lemma's surface forms -> wnids: the table the tagger matches."""
    return surface_forms(index)


@pytest.fixture(scope="session")
def matcher(forms):
    """A matcher over every surface form (no ignored forms): the matching rules alone."""
    return LemmaMatcher(forms)


@pytest.fixture(scope="session")
def reference_matcher(forms) -> ReferenceMatcher:
    """The per-caption pyahocorasick matcher over the same forms (seconds to build): stateless, so shared."""
    return ReferenceMatcher(forms)


@pytest.fixture(scope="session")
def stage_matcher(index):
    """The tag stage's matcher under the default config (its ignored function words)."""
    return build_matcher(index, Config().tagging.ignore_forms)


@pytest.fixture(scope="session")
def minilm():
    """The packaged text encoder (MiniLM), loaded once per worker: a test that changes an attribute
    (its batch size) puts it back."""
    from imagenot.labels.encoders.text import SentenceTransformerEncoder  # torch: only when asked for

    return SentenceTransformerEncoder()


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory, worker_id) -> Path:
    """This session's tmp base, seen by every xdist worker (each worker's own base lies below it)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@pytest.fixture(scope="session")
def context_spans(shared_tmp):
    """The context method's span encoder (context_spans.py), its SemCor sense vectors prepared once
    for the session's workers. Its batch size may be changed by a test that puts it back."""
    return prepared_context_spans(shared_tmp)


@pytest.fixture(scope="session")
def small_run(shared_tmp) -> SmallRun:
    """The small build (small_build.py, no downloads), built once per session. Read-only by
    convention: copy it (shared_runs.copy_run) before running anything on it."""
    return small_run_in(build_once(shared_tmp / "small-run", build_small_run))


@pytest.fixture(scope="session")
def downloaded_run(small_run, shared_tmp) -> Path:
    """The small run with its images downloaded from the demo's loopback server, reported and
    exported, built once per session (small_build.download_small_run). Read-only by convention."""
    return build_once(shared_tmp / "downloaded-run", lambda folder: download_small_run(folder, small_run)) / "run"


@pytest.fixture(scope="session")
def tagged_corpus(shared_tmp) -> TaggedCorpus:
    """small_build.TAGGED_CORPUS and a run of the tag stage over it, built once per session.
    Read-only by convention: copy the tag folder into a run of your own."""
    return tagged_corpus_in(build_once(shared_tmp / "tagged-corpus", tag_corpus))


def _wait_until_serving(url: str, process: subprocess.Popen, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the GCS emulator exited ({process.returncode}):\n{log.read_text()}")
        try:
            # A fresh opener: a download earlier in this process installs its guarded one globally.
            with urllib.request.build_opener().open(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the GCS emulator did not answer at {url} within {seconds} s:\n{log.read_text()}")


@pytest.fixture(scope="session")
def gcs_bucket(tmp_path_factory):
    """ "gs://imagenot-test": a bucket of a real GCS JSON API (gcp-storage-emulator, in memory)
    served on a free loopback port by its own process, stopped at teardown. STORAGE_EMULATOR_HOST
    points Beam, google-cloud-storage and gcsfs at it, here and in every process a test starts;
    no credentials are looked for. One bucket per session: give each test its own folder."""
    folder = tmp_path_factory.mktemp("gcs-emulator")
    log = folder / "emulator.log"
    port = free_loopback_port()
    command = [
        str(Path(sys.executable).with_name("gcp-storage-emulator")),
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--default-bucket",
        BUCKET,
        "--in-memory",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=folder, stdout=out, stderr=subprocess.STDOUT)
    host = f"http://127.0.0.1:{port}"
    saved = {
        name: os.environ.get(name)
        for name in (storage_auth.EMULATOR_HOST, storage_auth.FSSPEC_GS_TOKEN, storage_auth.GCSFS_BUCKET_TYPE_PROBE)
    }
    try:
        _wait_until_serving(f"{host}/storage/v1/b/{BUCKET}", process, log)
        os.environ[storage_auth.EMULATOR_HOST] = host
        storage_auth.configure()
        yield f"gs://{BUCKET}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

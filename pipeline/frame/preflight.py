"""Checks of a whole config before any stage writes anything: a config that cannot finish is
refused in one line, before the first stage, and leaves nothing behind in the run folder (no
config.yaml, no lock).

Each stage declares the checks of what it will need (`Stage.preflight` in its DECLARATION: the
corpus's columns for tag and select, the text models for score and rank, the blocklists for
download, ...); `preflight` runs those of every stage a command will run, each once, then checks
that every place the run writes can be written and listed. Ranges (a cosine in [-1, 1]) are the
config's own validators. Where only a worker can tell (a model inside a Dataflow worker image),
the model checks are skipped and the worker's loader refuses with the same line.
"""

from __future__ import annotations

import errno
import logging
import uuid
from collections.abc import Iterable

from apache_beam.io.filesystems import CompressionTypes, FileSystems

from imagenot.errors import ImagenotError
from imagenot.labels.encoders.models import text_model_problem
from imagenot.pipeline.config.model_files import clip_model_problem, static_model_problem
from imagenot.pipeline.config.schema import Config
from imagenot.pipeline.frame.registry import Check, Stage, stages
from imagenot.pipeline.frame.stage_order import STAGE_NAMES
from imagenot.pipeline.run.extras import require_gcp, require_gcp_for_paths
from imagenot.pipeline.run.paths import delete_folder, folder_exists

log = logging.getLogger(__name__)


class PreflightError(ImagenotError):
    """The config cannot finish: the message names the key, what it holds and what was expected."""


def _models_checked_here(config: Config) -> bool:
    if config.runner.kind == "local":
        return True
    log.info(
        "models are checked on the workers (runner.kind %s): the first that fails stops the job", config.runner.kind
    )
    return False


def check_text_models(config: Config, run_dir: str) -> None:
    """The scoring model, and the first phase's model2vec folder when one is named, load offline."""
    scoring = config.scoring
    if not _models_checked_here(config):
        return
    if problem := text_model_problem(scoring.model):
        raise PreflightError(f"scoring.model {scoring.model!r}: {problem}")
    if scoring.first_phase == "static" and (problem := static_model_problem(scoring.first_phase_model)):
        raise PreflightError(f"scoring.first_phase_model {scoring.first_phase_model!r}: {problem}")


def check_clip_model(config: Config, run_dir: str) -> None:
    """The image audits' CLIP model can be built offline (its files are there; no weights loaded)."""
    if _models_checked_here(config) and (problem := clip_model_problem(config.image_audit)):
        raise PreflightError(problem)


def files_exist(*keys: str):
    """A check that the files the config names under `keys` (dotted; a list names several) exist."""

    def check(config: Config, run_dir: str) -> None:
        for key in keys:
            section, field = key.split(".")
            value = getattr(getattr(config, section), field)
            for i, path in enumerate(value if isinstance(value, list) else [value] if value else []):
                named = f"{key}[{i}]" if isinstance(value, list) else key
                if not (FileSystems.exists(path) or folder_exists(path)):
                    raise PreflightError(f"{named}: {path} does not exist")

    return check


def check_writable(folder: str) -> None:
    """Write, list and delete a probe object in `folder`: a place the run cannot use fails here,
    not after its first job. A local folder the probe had to create is removed again."""
    probe = FileSystems.join(folder, f".imagenot-probe-{uuid.uuid4().hex}")
    existed = True
    try:
        existed = folder_exists(folder)
        with FileSystems.create(probe, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            f.write(b"imagenot preflight")
        listed = FileSystems.match([probe])[0].metadata_list
        FileSystems.delete([probe])
    except OSError as err:
        if err.errno in (errno.EEXIST, errno.ENOTDIR):  # a file where the folder, or a folder above it, would be
            raise PreflightError(
                f"{folder}: a file is in the way; it cannot be a run directory or output folder"
            ) from err
        raise PreflightError(f"{folder}: cannot write and list there: {type(err).__name__}: {err}") from err
    except Exception as err:  # BeamIOError, google.api_core errors: all mean "cannot use"
        raise PreflightError(f"{folder}: cannot write and list there: {type(err).__name__}: {err}") from err
    finally:
        if not existed and folder_exists(folder):
            delete_folder(folder)
    if not listed:
        raise PreflightError(f"{folder}: a file written there is not listed")


def check_output_file(path: str, option: str) -> None:
    """An output file's name, checked before the work that fills it: not a folder, in a folder that
    can be written (made if missing; removed again by the check)."""
    if _is_folder(path):
        raise PreflightError(f"{option} {path}: is a folder; name the file to write")
    check_writable(FileSystems.split(path)[0] or ".")


def _is_folder(path: str) -> bool:
    if not folder_exists(path):
        return False
    if not FileSystems.get_filesystem(path).has_dirs():  # an object store: objects lie under the name
        return True
    try:
        FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED).close()
    except IsADirectoryError:
        return True
    except Exception as err:  # Beam wraps the local error
        return isinstance(err.__cause__ or err.__context__, IsADirectoryError) or "Is a directory" in str(err)
    return False


def output_places(config: Config, run_dir: str | None) -> list[str]:
    """Where the run writes: its folder, a shared embedding cache, Dataflow's temp_location."""
    dataflow = config.runner.dataflow
    places = [run_dir, config.scoring.cache_dir, dataflow.temp_location if dataflow else None]
    return [p for p in places if p is not None]


def preflight(config: Config, run_dir: str | None, stages: Iterable[Stage]) -> None:
    """The extras the config needs, the places the run writes, then the declared checks of
    `stages` (each check once); raises a PreflightError (or the check's own ImagenotError) on the
    first problem."""
    if config.runner.kind == "dataflow":
        require_gcp("runner.kind 'dataflow'")
    require_gcp_for_paths([*output_places(config, run_dir), *(config.corpus.paths or ())])
    for place in output_places(config, run_dir):  # first: the declared checks may read the run folder
        check_writable(place)
    checks: list[Check] = []
    for stage in stages:
        checks += [check for check in stage.preflight if check not in checks]
    for check in checks:
        check(config, run_dir)


def build_stages(config: Config) -> list[Stage]:
    """The stages `imagenot build` runs for this config."""
    return [stage for stage in stages() if stage.wanted(config)]


def stages_from(config: Config, stage: Stage) -> list[Stage]:
    """`stage` and, for a build stage, the build stages after it that the config wants: a stage
    command checks what its run will need later too."""
    if stage.name not in STAGE_NAMES:
        return [stage]
    return [
        stage,
        *(later for later in build_stages(config) if STAGE_NAMES.index(later.name) > STAGE_NAMES.index(stage.name)),
    ]

"""The optional extras (pyproject.toml) a command needs, and the one line it says when one is missing.

`make demo` installs the pipeline with `demo` and `review`; the Google Cloud libraries (Beam's GCS
file system and Dataflow runner, gcsfs for img2dataset's writes) come only with `gcp`. A command
that reaches a missing module says which extra brings it; a `gs://` path or the Dataflow runner is
checked before the command writes anything, since Beam's own error comes only once a pipeline runs.
"""

from __future__ import annotations

import importlib.util

from imagenot.errors import ImagenotError

# Top-level modules of each extra, by the extra that installs them.
EXTRA_OF_MODULE = {
    "skimage": "demo",
    "faiss": "audit",
    "cleanlab": "audit",
    "flask": "review",
    "waitress": "review",
    "crowdkit": "review",
    "google": "gcp",
    "apitools": "gcp",
    "gcsfs": "gcp",
}
# What a gs:// path or the Dataflow runner needs: Beam's GCS client and Dataflow API, and gcsfs.
GCP_MODULES = ("google.cloud.storage", "google.auth", "apitools", "gcsfs")
BUCKET_SCHEME = "gs://"


class MissingExtraError(ImagenotError):
    """A command needs an extra that is not installed: the message names it and how to install it."""


def install_line(extra: str, what: str) -> str:
    """The one line: what needs the extra, and the command that installs it."""
    return f"{what} needs imagenot[{extra}], which is not installed: pip install 'imagenot[{extra}]'"


def extra_for_missing(module: str | None) -> str | None:
    """The extra that installs `module` (a ModuleNotFoundError's name), or None for no extra's."""
    return EXTRA_OF_MODULE.get((module or "").split(".")[0])


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def require_gcp(what: str) -> None:
    """Raise MissingExtraError unless the `gcp` extra's modules are installed."""
    if not all(_installed(module) for module in GCP_MODULES):
        raise MissingExtraError(install_line("gcp", what))


def require_gcp_for_paths(paths) -> None:
    """The `gcp` extra when any of `paths` (None allowed; "--out=gs://..." too) names a bucket."""
    in_bucket = next((p for p in paths if isinstance(p, str) and BUCKET_SCHEME in p), None)
    if in_bucket is not None:
        require_gcp(in_bucket[in_bucket.index(BUCKET_SCHEME) :])

"""Google Cloud Storage credentials: anonymous at once where there are none to find.

The first time a process touches gs://, Beam asks google-auth for Application Default
Credentials; without any, google-auth probes the GCE metadata server and Beam retries the
failure with exponential backoff, about 25 s in every process (the driver and each worker)
before it connects anonymously. gcsfs, through which img2dataset writes its tars, probes too.

With a GCS emulator (`STORAGE_EMULATOR_HOST`) or `IMAGENOT_GCS_ANONYMOUS=1` (public buckets)
there is nothing to find, so `configure` records "no credentials" in Beam's per-process cache of
that lookup (as soon as Beam's auth module loads: `--help` never imports Beam) and sets gcsfs's
token to "anon" (through the environment, which img2dataset's spawned workers inherit). An
emulator also serves no Storage Control API, which gcsfs's experimental bucket-type probe asks
before every operation (60 s timeouts, never cached when it fails), so with an emulator that probe
is switched off. Otherwise it changes nothing: Beam and gcsfs take Application Default Credentials
(`GOOGLE_APPLICATION_CREDENTIALS`, `gcloud auth application-default login`, or a Dataflow
worker's service account).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

ANONYMOUS_FLAG = "IMAGENOT_GCS_ANONYMOUS"
EMULATOR_HOST = "STORAGE_EMULATOR_HOST"
FSSPEC_GS_TOKEN = "FSSPEC_GS_TOKEN"  # fsspec's configuration for protocol "gs", option "token"
GCSFS_BUCKET_TYPE_PROBE = "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"  # read when gcsfs is imported
BEAM_AUTH = "apache_beam.internal.gcp.auth"


def anonymous() -> bool:
    """Whether gs:// is reached without credentials: an emulator, or the user asked for it."""
    return bool(os.environ.get(EMULATOR_HOST)) or os.environ.get(ANONYMOUS_FLAG) == "1"


def configure() -> None:
    """Skip the credential lookup when `anonymous()`; otherwise leave the normal path alone."""
    if not anonymous():
        return
    os.environ.setdefault(FSSPEC_GS_TOKEN, "anon")
    if os.environ.get(EMULATOR_HOST):
        os.environ.setdefault(GCSFS_BUCKET_TYPE_PROBE, "false")
    import fsspec.config

    fsspec.config.conf.setdefault("gs", {}).setdefault("token", os.environ[FSSPEC_GS_TOKEN])
    # Importing Beam here would make `imagenot --help` 50x slower; its cache is filled when it loads.
    if BEAM_AUTH in sys.modules:
        _cache_no_credentials(sys.modules[BEAM_AUTH])
    elif not any(isinstance(finder, _AfterBeamAuthImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterBeamAuthImport())


def _cache_no_credentials(auth) -> None:
    # Beam looks credentials up once per process and caches the answer in these two fields
    # (apache_beam/internal/gcp/auth.py); None is what it caches when it finds none.
    cache = auth._Credentials
    with cache._credentials_lock:
        cache._credentials, cache._credentials_init = None, True


class _AfterBeamAuthImport(importlib.abc.MetaPathFinder):
    """Fills Beam's credential cache as soon as its auth module has been executed, then retires."""

    def find_spec(self, fullname, path, target=None):
        if fullname != BEAM_AUTH:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        execute = spec.loader.exec_module

        def execute_then_cache(module):
            execute(module)
            _cache_no_credentials(module)

        spec.loader.exec_module = execute_then_cache
        return spec

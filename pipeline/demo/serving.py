"""Serving the demo config's images while a command fetches them: `download.demo_server_port`
starts the loopback image server (`image_server.py`) on 127.0.0.1 for the block's duration. The
download stage itself never starts a server; the commands that run it do, through here. The server
draws each image from its caption (the sample stage's rows, dataset and reserve), so the report,
the gallery and the review pages show each class's words, and nothing looks like a photo of
another thing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Download
from imagenot.pipeline.run.files import read_table, stage_shards
from imagenot.pipeline.run.layout import DATASET_DIR, RESERVE_DIR, SAMPLE, stage_path

PORT_WAIT_S = 300.0  # another demo build serving on the port: wait for its download to end


def sample_captions(run_dir: str) -> dict[str, str]:
    """Per URL path of the run's sample (dataset and reserve rows), its caption."""
    captions = {}
    for folder in (DATASET_DIR, RESERVE_DIR):
        for shard in stage_shards(stage_path(run_dir, SAMPLE), folder):
            table = read_table(shard, ["url", "caption"])
            for url, caption in zip(table.column("url").to_pylist(), table.column("caption").to_pylist()):
                if url:
                    captions[urlsplit(url).path] = caption or ""
    return captions


def placeholder_images(settings: Download) -> bool:
    """Whether the run's images are this server's pictures of their captions (placeholders, not photos):
    the review pages and the card say so."""
    return settings.demo_server_port is not None


@contextlib.contextmanager
def serving_demo_images(settings: Download, run_dir: str) -> Iterator[None]:
    """The demo's image server on `settings.demo_server_port` while the block runs, its images drawn
    from the captions of `run_dir`'s sample; nothing without one."""
    if settings.demo_server_port is None:
        yield
        return
    from imagenot.pipeline.demo.image_server import LoopbackImageServer  # skimage: the demo extra

    server = LoopbackImageServer(
        port=settings.demo_server_port, port_wait_s=PORT_WAIT_S, captions=sample_captions(run_dir)
    )
    try:
        server.start()
    except OSError as err:
        raise ImagenotError(
            f"download.demo_server_port: cannot serve on 127.0.0.1:{settings.demo_server_port} ({err.strerror}, "
            f"waited {PORT_WAIT_S:.0f} s); another demo build may be using it: rerun when it is done "
            "(finished stages are kept)"
        ) from err
    try:
        yield
    finally:
        server.stop()

"""Serving the demo config's images while a command fetches them: `download.demo_server_port`
starts the loopback image server (`image_server.py`) on 127.0.0.1 for the block's duration. The
download stage itself never starts a server; the commands that run it do, through here."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from imagenot.errors import ImagenotError
from imagenot.pipeline.config.schema import Download

PORT_WAIT_S = 300.0  # another demo build serving on the port: wait for its download to end


@contextlib.contextmanager
def serving_demo_images(settings: Download) -> Iterator[None]:
    """The demo's image server on `settings.demo_server_port` while the block runs; nothing
    without one."""
    if settings.demo_server_port is None:
        yield
        return
    from imagenot.pipeline.demo.image_server import LoopbackImageServer  # skimage: the demo extra

    server = LoopbackImageServer(port=settings.demo_server_port, port_wait_s=PORT_WAIT_S)
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

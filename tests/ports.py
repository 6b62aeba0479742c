import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_KEPT_PORT = 20_000


def _free(port: int) -> int | None:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return None
        return s.getsockname()[1]


def free_loopback_port() -> int:
    """A port free on 127.0.0.1 now (the OS's pick); a server started on it soon is very likely alone."""
    return _free(0)


def kept_loopback_port() -> int:
    """A port free on 127.0.0.1 now and below the OS's ephemeral range, which its own picks
    (`free_loopback_port`, any client socket) never take: for a server started minutes after the
    port was written down (the shared small run's image URLs)."""
    lowest_ephemeral = int(EPHEMERAL_RANGE.read_text().split()[0]) if EPHEMERAL_RANGE.exists() else 32768
    rng = random.Random()  # another pick per session, so two sessions on one machine rarely meet
    if lowest_ephemeral > LOWEST_KEPT_PORT:
        for _ in range(100):
            if port := _free(rng.randrange(LOWEST_KEPT_PORT, lowest_ephemeral)):
                return port
    return free_loopback_port()

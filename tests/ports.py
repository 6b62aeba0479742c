import socket


def free_loopback_port() -> int:
    """A port free on 127.0.0.1 now (the OS's pick); a server started on it soon is very likely alone."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

"""Where the crawler may connect: public addresses only, unless a network is explicitly allowed.

A URL from a corpus can name any host, and a host name can resolve to anything: the cloud
metadata service (169.254.169.254), the worker's own loopback services, a private network behind
the worker. The crawler therefore resolves every host itself, refuses each address that is not
a public unicast one (private, loopback, link-local, multicast, reserved, unspecified, shared,
documentation), and connects to an address it checked, never to the name again (so a second
DNS answer cannot swap the address in between). Redirects open new connections and pass the
same check. `download.allowed_networks` (CIDR strings; default none) lists the networks that
are allowed anyway: the demo and the tests allow their own loopback servers this way.
"""

from __future__ import annotations

import ipaddress
import socket

from imagenot.pipeline.config.networks import parse_networks

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# Checked in order; the first that fits names the refusal.
_KINDS = ("loopback", "link_local", "multicast", "unspecified", "reserved", "private")


class AddressRefused(OSError):
    """A host resolved only to refused addresses; the message starts with `address refused`."""


def refusal(address: Address) -> str | None:
    """Why a connection to `address` is refused by default (None: a public unicast address)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    for kind in _KINDS:
        if getattr(address, f"is_{kind}"):
            return kind
    return None if address.is_global else "not_global"


class AddressGuard:
    """Resolves hosts and keeps the addresses the crawler may connect to."""

    def __init__(self, allowed_networks: list[str]):
        self._allowed = parse_networks(allowed_networks)

    def allows(self, address: Address) -> bool:
        return refusal(address) is None or any(address in network for network in self._allowed)

    def resolve(self, host: str, port: int) -> list[tuple]:
        """`getaddrinfo` entries of `host` whose address may be connected to; raises
        `AddressRefused` when there are none."""
        allowed, refused = [], []
        for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            address = ipaddress.ip_address(info[4][0].split("%", 1)[0])  # an IPv6 scope is no part of it
            if self.allows(address):
                allowed.append(info)
            else:
                refused.append(address)
        if not allowed:
            first = refused[0]
            raise AddressRefused(
                f"address refused: {host} resolves to {first} ({refusal(first)}), not in download.allowed_networks"
            )
        return allowed

    def connect(self, address: tuple[str, int], timeout: float, source_address=None) -> socket.socket:
        """`socket.create_connection` to an allowed address of the host (the first that answers)."""
        host, port = address
        error: OSError | None = None
        for family, kind, proto, _, sockaddr in self.resolve(host, port):
            sock = socket.socket(family, kind, proto)
            try:
                sock.settimeout(timeout)
                if source_address:
                    sock.bind(source_address)
                sock.connect(sockaddr)
                return sock
            except OSError as err:
                sock.close()
                error = err
        raise error

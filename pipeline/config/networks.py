"""CIDR network lists of the config (`download.allowed_networks`), parsed where both the config's
check and the crawler's address guard can use them."""

from __future__ import annotations

import ipaddress


def parse_networks(networks: list[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The CIDR strings as networks; a bad one is a ValueError naming it (the config's check)."""
    parsed = []
    for text in networks:
        try:
            parsed.append(ipaddress.ip_network(text.strip(), strict=False))
        except ValueError as err:
            raise ValueError(f"download.allowed_networks: {text!r} is not a CIDR network ({err})") from err
    return parsed

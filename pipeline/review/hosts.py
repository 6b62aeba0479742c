"""Host names as the review servers take and print them."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """A host name or address (an IPv6 one with or without brackets) that only this machine reaches."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """The host as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host

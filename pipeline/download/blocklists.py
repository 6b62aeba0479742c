"""Blocklists: URLs, domains and image hashes that never enter a dataset.

`download.blocklists` names files (local or gs://) of plain text, one entry a line as
`KIND VALUE`, KIND one of `url`, `domain`, `sha256`, `md5` (hex digests of the original image
bytes, the forms published hash lists use); `#` starts a comment, blank lines are skipped. A
url entry matches that URL (scheme and host in any case); a domain entry matches its host and
every subdomain, and one that can match no host (a port, a wildcard, a URL, an address cut short)
is refused, naming the file and line. URL and domain entries drop rows before any fetch
(`blocklist_url`, `blocklist_domain`); a hash match drops an image after its fetch and before anything of it is
written (`blocklist_sha256`, `blocklist_md5`, see `image_guard.GuardedResizer`).
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.pipeline.download.hosts import host_of
from imagenot.pipeline.run.files import read_bytes, read_json
from imagenot.pipeline.run.paths import folder_exists

KINDS = ("url", "domain", "sha256", "md5")
HEX_DIGITS = {"sha256": 64, "md5": 32}
HASH_MESSAGE = "blocklisted image: {kind} match"  # the resizer's error message, a counted reason
APPLIED_FILE = "blocklists_applied.json"  # in the download stage: lists applied after the fact
_FOLDER = "is a folder: name a list file"


class BlocklistError(ImagenotError, ValueError):
    """A blocklist file that does not parse; names the file and line."""


def normal_url(url: str) -> str:
    """The URL with its scheme and host in lower case (the rest is case-sensitive)."""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()))


@dataclass
class Blocklist:
    entries: dict[str, set[str]] = field(default_factory=lambda: {kind: set() for kind in KINDS})
    sources: list[dict] = field(default_factory=list)  # per file: path, bytes, sha256, entries by kind

    def add(self, name: str, data: bytes) -> None:
        """Parse one file's bytes into the list."""
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise BlocklistError(f"{name}: not UTF-8 text ({err})") from err
        counts = dict.fromkeys(KINDS, 0)
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            kind, _, value = line.partition(" ")
            kind, value = kind.lower(), value.strip()
            if kind not in KINDS or not value or " " in value or "\t" in value:
                raise BlocklistError(
                    f"{name}:{number}: expected `KIND VALUE` with KIND one of {', '.join(KINDS)}, got {line[:80]!r}"
                )
            if kind in HEX_DIGITS:
                value = value.lower()
                if len(value) != HEX_DIGITS[kind] or any(c not in "0123456789abcdef" for c in value):
                    raise BlocklistError(
                        f"{name}:{number}: a {kind} is {HEX_DIGITS[kind]} hex digits, got {value[:80]!r}"
                    )
            elif kind == "domain":
                value = value.lower().rstrip(".").removeprefix("[").removesuffix("]")  # [::1] as in a URL
                if problem := _domain_problem(value):
                    raise BlocklistError(f"{name}:{number}: domain {value[:80]!r} can match no host: {problem}")
            else:
                value = normal_url(value)
            self.entries[kind].add(value)
            counts[kind] += 1
        self.sources.append(
            {"path": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "entries": counts}
        )

    def row_reason(self, url: str | None) -> str | None:
        """`blocklist_url` or `blocklist_domain` when the row's URL is listed, else None."""
        if not url:
            return None
        if normal_url(url) in self.entries["url"]:
            return "blocklist_url"
        host = host_of(url).rstrip(".")
        labels = host.split(".")
        if any(".".join(labels[i:]) in self.entries["domain"] for i in range(len(labels))):
            return "blocklist_domain"
        return None

    def hashes(self) -> dict[str, frozenset[str]]:
        """The hash entries by kind, for the resizer of every download worker."""
        return {kind: frozenset(self.entries[kind]) for kind in HEX_DIGITS}


def hash_problem(data: bytes, hashes: dict[str, frozenset[str]]) -> str | None:
    """The resizer's error message when the original bytes' sha256 or md5 is listed."""
    for kind, listed in hashes.items():
        if listed and hashlib.new(kind, data).hexdigest() in listed:
            return HASH_MESSAGE.format(kind=kind)
    return None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _domain_problem(value: str) -> str | None:
    """Why a domain entry (lower case, no trailing dot) matches no URL's host, or None."""
    if "/" in value:
        return "it is a URL or a path, not a host; list the host alone (`domain example.com`) or use a `url` entry"
    if "*" in value:
        if _address(value.lstrip("*.")) is not None:
            return "a wildcard over an IP address, which has no subdomains; list the address alone"
        return "wildcards are not read; a domain entry matches its host and every subdomain already"
    if ":" in value and _address(value) is None:
        return "a port; a domain entry is a host, matched on any port: list the host alone"
    if "" in value.split("."):
        return "an empty label (a dot at its start or two dots in a row)"
    if value.rsplit(".", 1)[-1].isdigit() and _address(value) is None:
        return "it ends in a number, as no host name does, and it is not a whole IP address"
    return None


def load_blocklists(paths: list[str], option: str = "download.blocklists") -> Blocklist:
    """The blocklists' entries; a missing or malformed file is an error naming it and `option`,
    where the user named it."""
    blocklist = Blocklist()
    for path in paths:
        if not FileSystems.exists(path):  # a bucket's "folder" is no object
            raise BlocklistError(f"{option}: {path} " + (_FOLDER if folder_exists(path) else "does not exist"))
        try:
            data = read_bytes(path)
        except IsADirectoryError as err:
            raise BlocklistError(f"{option}: {path} {_FOLDER}") from err
        except OSError as err:
            raise BlocklistError(f"{option}: {path}: cannot read it: {type(err).__name__}: {err}") from err
        blocklist.add(path, data)
    return blocklist


def read_applied(stage_dir: str) -> list[dict]:
    """The lists `imagenot blocklist apply` applied to the run, in order, with what each removed."""
    path = FileSystems.join(stage_dir, APPLIED_FILE)
    return read_json(path) if FileSystems.exists(path) else []

"""Machine-readable "not for AI" signals: what a site says, parsed tolerantly.

Three signals beside robots.txt's own rules and X-Robots-Tag (which img2dataset reads):

- TDMRep (W3C Community Group final report): `/.well-known/tdmrep.json`, a JSON array of rules
  `{"location": PATH_PATTERN, "tdm-reservation": 0|1, "tdm-policy": URL}`, the first rule whose
  location matches a path applying to it; and the `tdm-reservation` (with `tdm-policy`) response
  headers. A reservation (1) reserves text-and-data-mining rights (DSM Directive, Art. 4(3)):
  the image is not used, whatever policy it names (the crawler cannot sign a licence).
- IETF AI Preferences (draft-ietf-aipref-vocab-08, draft-ietf-aipref-attach-05): a
  `Content-Usage` line in a robots.txt group (`Content-Usage: [PATH] train-ai=n`) and the
  `Content-Usage` response header, each an RFC 9651 dictionary of `y`/`n` tokens per usage
  category. The categories checked (`download.ai_preferences_categories`) go from the most
  specific to its parents, and the first one the site states decides.
- Content-Signal (contentsignals.org) lines in robots.txt (`Content-Signal: [PATH] ai-train=no`).

Path patterns are robots.txt's (`*` any characters, `$` the end); for robots.txt lines the
longest pattern that matches wins. A file or field that does not parse raises `Malformed`: the
caller counts it and reads it as no signal. Unknown keys and values are ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import NamedTuple

TDMREP_PATH = "/.well-known/tdmrep.json"
CONTENT_USAGE = "content-usage"
CONTENT_SIGNAL = "content-signal"
SIGNAL_KEY = "ai-train"  # Content-Signal's key for training AI models, which building this dataset serves

_KEY = r"[a-z*][a-z0-9_\-.*]*"
_VALUE = r'"(?:[^"\\]|\\.)*"|[^;,\s]*'  # a quoted string, or a bare item up to the next separator
_MEMBER = re.compile(rf"\s*({_KEY})(?:=({_VALUE}))?((?:\s*;\s*{_KEY}(?:=(?:{_VALUE}))?)*)\s*")


class Malformed(ValueError):
    """A signal that does not parse: counted, and read as no signal."""


class OptedOut(OSError):
    """A site declines this use of the URL; the message starts with `opted out by <signal>`."""


def path_pattern(pattern: str) -> re.Pattern:
    """robots.txt's path matching: `*` any run of characters, a final `$` the path's end."""
    anchored = pattern.endswith("$")
    body = re.escape(pattern.removesuffix("$")).replace(r"\*", ".*")
    return re.compile(body + ("$" if anchored else ""))


class PathRule(NamedTuple):
    pattern: str
    value: object


def longest_match(rules: Iterable[PathRule], path: str) -> PathRule | None:
    """The rule of the longest pattern matching the start of `path` (the first on a tie)."""
    best = None
    for rule in rules:
        if path_pattern(rule.pattern).match(path) and (best is None or len(rule.pattern) > len(best.pattern)):
            best = rule
    return best


def parse_dictionary(value: str) -> dict[str, str]:
    """An RFC 9651 dictionary as key -> bare value ("?1" for a key alone); parameters dropped,
    the last of a repeated key kept. Raises `Malformed` on a syntax error."""
    members: dict[str, str] = {}
    text = value.strip()
    if not text:
        return members
    for part in _split_members(text):
        match = _MEMBER.fullmatch(part)
        if match is None or (match.group(2) is not None and match.group(2) == ""):
            raise Malformed(f"not a structured-field dictionary member: {part.strip()!r}")
        members[match.group(1)] = match.group(2) if match.group(2) is not None else "?1"
    return members


def _split_members(text: str) -> list[str]:
    """Split at commas outside quoted strings."""
    parts, start, quoted, escaped = [], 0, False, False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            parts.append(text[start:i])
            start = i + 1
    if quoted:
        raise Malformed(f"unterminated string in {text!r}")
    return [*parts, text[start:]]


def usage_declined(preferences: dict[str, str], categories: Iterable[str]) -> str | None:
    """The category that decides (the first one stated), when its preference is `n`; else None."""
    for category in categories:
        stated = preferences.get(category)
        if stated in ("y", "n"):
            return category if stated == "n" else None
    return None


def signal_declined(line: str) -> bool:
    """A Content-Signal line's `ai-train=no` (comma-separated `key=yes|no`)."""
    values = {}
    for member in line.split(","):
        key, equals, value = member.partition("=")
        if not equals or not key.strip():
            raise Malformed(f"not a Content-Signal member: {member.strip()!r}")
        values[key.strip().lower()] = value.strip().lower()
    return values.get(SIGNAL_KEY) == "no"


def robots_lines(body: str, token: str, field: str) -> list[PathRule]:
    """The `field` lines (lower case name) of the robots.txt group for User-Agent `token`, else
    of the `*` group, as (path pattern, the rest of the line); a line without a path applies to `/`."""
    groups: dict[str, list[PathRule]] = {}
    agents: list[str] = []
    in_agents = False
    for raw in body.splitlines():
        name, colon, value = raw.split("#", 1)[0].partition(":")
        name, value = name.strip().lower(), value.strip()
        if not colon:
            continue
        if name == "user-agent":
            agents = agents if in_agents else []
            agents.append(value.lower())
            in_agents = True
            continue
        in_agents = False
        if name == field:
            path, _, rest = value.partition(" ") if value.startswith("/") else ("/", "", value)
            for agent in agents:
                groups.setdefault(agent, []).append(PathRule(path, rest.strip()))
    return groups.get(token.lower(), groups.get("*", []))


def tdmrep_rules(body: str) -> list[PathRule]:
    """tdmrep.json's rules as (location, reserved); raises `Malformed` unless a JSON array of
    objects (a rule without a location or with an unknown reservation value is skipped)."""
    try:
        data = json.loads(body)
    except ValueError as err:
        raise Malformed(f"tdmrep.json is not JSON ({err})") from err
    if not isinstance(data, list) or not all(isinstance(rule, dict) for rule in data):
        raise Malformed("tdmrep.json is not an array of objects")
    rules = []
    for rule in data:
        location, reservation = rule.get("location"), rule.get("tdm-reservation")
        if isinstance(location, str) and reservation in (0, 1, "0", "1"):
            rules.append(PathRule(location if location.startswith("/") else "/" + location, str(reservation) == "1"))
    return rules


def tdmrep_reserved(rules: list[PathRule], path: str) -> bool:
    """The first rule whose location matches the path reserves it."""
    for rule in rules:
        if path_pattern(rule.pattern).match(path):
            return bool(rule.value)
    return False


def header_reserved(value: str | None) -> bool:
    """A `tdm-reservation` header: 1 reserves, 0 does not; anything else raises `Malformed`."""
    if value is None:
        return False
    if value.strip() not in ("0", "1"):
        raise Malformed(f"tdm-reservation header is not 0 or 1: {value!r}")
    return value.strip() == "1"

"""The caption rules a config turns on (`imagenot.labels.pair_checker` builds them; the rules are
`imagenot.labels.caption_rules`): its word lists, the given names read from wherever they lie."""

from __future__ import annotations

from apache_beam.io.filesystems import FileSystems

from imagenot.errors import ImagenotError
from imagenot.labels.caption_rules import CaptionRules
from imagenot.labels.pair_checker import NAME_RULES
from imagenot.labels.pair_checker import caption_rules as build_rules
from imagenot.pipeline.config.schema import CaptionRules as CaptionRulesConfig


def caption_rules(config: CaptionRulesConfig) -> CaptionRules:
    """The rules `config` turns on; the given names are read only when a rule needs them."""
    names = read_given_names(config.given_names) if NAME_RULES & set(config.rules) else []
    return build_rules(config.rules, config.foreign_words, names, config.none_of_these_threshold)


def read_given_names(path: str) -> list[str]:
    """One name a line; a gzip file (by its .gz ending) is unpacked."""
    try:
        with FileSystems.open(path) as file:
            text = file.read().decode("utf-8")
    except Exception as err:  # FileSystems raises its own error types per scheme
        raise ImagenotError(
            f"selection.caption_rules.given_names: cannot read {path!r} ({err}); install Debian's miscfiles, "
            "give another list, or take 'name' and 'title' out of selection.caption_rules.rules"
        ) from None
    names = [line.strip() for line in text.splitlines() if line.strip()]
    if not names:
        raise ImagenotError(f"selection.caption_rules.given_names: {path!r} holds no names")
    return names

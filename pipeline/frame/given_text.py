"""`GIVEN_TEXT`, the click type of a text argument (a caption, a word): read as its bytes came. The
command line hands Python bytes, which it decodes with the locale's encoding and keeps what does
not decode as lone surrogates, which no UTF-8 encoder (the tokenizer's, the terminal's) takes; here
they become U+FFFD, as any other undecodable input does. Apart from the commands so that their
`--help` loads nothing more than click."""

from __future__ import annotations

import os

import click


class GivenText(click.ParamType):
    name = "text"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if not isinstance(value, str):
            return str(value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # bytes the locale could not decode: read them as UTF-8, as far as they are
            return os.fsencode(value).decode("utf-8", "replace")
        return value


GIVEN_TEXT = GivenText()

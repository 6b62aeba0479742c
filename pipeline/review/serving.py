"""How both review servers start: their options, their token, the address they print, waitress."""

from __future__ import annotations

import secrets

import click

from imagenot.pipeline.review.hosts import is_loopback, url_host


def server_options(port: int):
    """--host, --port (default `port`), --token and --threads, as both review servers take them."""

    def add(command):
        for option in reversed(
            (
                click.option(
                    "--host",
                    default="127.0.0.1",
                    show_default=True,
                    help="address to listen on; another than loopback needs --token",
                ),
                click.option("--port", default=port, show_default=True, type=click.IntRange(1, 65535)),
                click.option(
                    "--token",
                    default=None,
                    help="a secret every request must carry (generated and printed for a non-loopback --host)",
                ),
                click.option(
                    "--threads",
                    default=16,
                    show_default=True,
                    type=click.IntRange(1, 256),
                    help="requests served at once",
                ),
            )
        ):
            command = option(command)
        return command

    return add


def server_token(host: str, token: str | None) -> str | None:
    """The token a server needs: the one given, or a fresh one for a non-loopback host."""
    return secrets.token_urlsafe(24) if token is None and not is_loopback(host) else token


def serve_app(app, host: str, port: int, token: str | None, threads: int) -> None:
    """Print the address raters open, then serve `app` under waitress until Ctrl-C."""
    import waitress

    click.echo(f"open {address(host, port, token)}   (Ctrl-C stops; answers are kept)")
    waitress.serve(app, host=host, port=port, threads=threads, ident="imagenot-review", _quiet=True)


def address(host: str, port: int, token: str | None) -> str:
    """The address a rater opens: a listen-everywhere host as 127.0.0.1, IPv6 in brackets."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://{url_host(shown)}:{port}/{f'?token={token}' if token else ''}"

"""What every review server shares (the image review's and the class review's): a Flask app with
its guards, the rater's name form and signed cookie, and the page layout.

Guards, in order, on every request: with a token set (a non-loopback host), the request carries
it, as `?token=` (the first one; it is then kept in a cookie), the cookie, or an
`Authorization: Bearer` header; without one, the `Host` header must name a loopback address, so
a page of another site cannot reach the server through a name that resolves to 127.0.0.1 (DNS
rebinding). A POST whose `Origin` (or, absent that, `Referer`) is not the server's own is refused
(403) whatever cookie it carries: a rater's browser sends it on a form another site made. Errors
are short plain pages with their 4xx status, never a traceback. While another command holds the
run's lock, and until the server has read what it wrote, every page and image is 503 with
`Retry-After` (`_run_settled`).
"""

from __future__ import annotations

import functools
import hmac
import logging
import re
import urllib.parse
from collections.abc import Callable
from typing import Protocol

from flask import Flask, Response, abort, make_response, redirect, request
from itsdangerous import BadSignature, URLSafeSerializer
from werkzeug.exceptions import HTTPException

from imagenot.pipeline.review import pages
from imagenot.pipeline.review.hosts import is_loopback
from imagenot.pipeline.review.images import ImageSource
from imagenot.pipeline.review.run_state import run_is_locked

log = logging.getLogger(__name__)
MAX_NAME = 60
IMAGE_ID = re.compile(r"[0-9a-f]{24}")
RATER_COOKIE, TOKEN_COOKIE = "imagenot_rater", "imagenot_review_token"


class Raters(Protocol):
    """What the shared routes need of a review: its raters, by name and by id, and their progress."""

    def rater(self, name: str) -> int: ...

    def rater_name(self, rater: int) -> str | None: ...

    def progress(self, rater: int) -> dict: ...

    run_dir: str  # the run served
    changing: bool  # set while another command changes the run, until the server read it again

    def refresh(self, tars: bool = False) -> None: ...


def _origin(value: str) -> str | None:
    """`scheme://host[:port]` of an Origin or Referer header; None if it has none. The scheme counts:
    a page served over another scheme on the same host is another origin."""
    parts = urllib.parse.urlsplit(value)
    return f"{parts.scheme}://{parts.netloc.lower()}" if parts.scheme in ("http", "https") and parts.netloc else None


def _local_path(value: str) -> str:
    """A deep link to come back to after sign-in: a path of this server (`/class/x`), else `/next`."""
    parts = urllib.parse.urlsplit(value)
    local = value.startswith("/") and not value.startswith("//") and not parts.scheme and not parts.netloc
    return value if local and "\\" not in value else "/next"


class ReviewApp:
    """A Flask app with the review's guards and sign-in; a review adds its own routes to `.app`."""

    def __init__(
        self, raters: Raters, secret: str, token: str | None, max_body: int, unit: str, placeholders: bool = False
    ):
        """`placeholders`: the run's images are the demo's pictures of their captions, which every page says."""
        self.raters, self.token, self.unit = raters, token, unit
        self.placeholders = pages.PLACEHOLDERS if placeholders else None
        app = self.app = Flask("imagenot.review")
        app.config.update(MAX_CONTENT_LENGTH=max_body, MAX_FORM_PARTS=2 * 200 + 10)
        self.signer = URLSafeSerializer(secret, salt="rater")
        self.layout = app.jinja_env.from_string(pages.LAYOUT)
        self.name_form = app.jinja_env.from_string(pages.NAME_FORM)
        self.signed_rater = functools.lru_cache(maxsize=4096)(self._signed_rater)  # checked once per cookie
        app.before_request(self._guard)
        app.after_request(self._headers)
        app.register_error_handler(HTTPException, _http_error)
        app.register_error_handler(Exception, _server_error)
        app.add_url_rule("/", "home", self._home, methods=["GET"])
        app.add_url_rule("/rater", "sign_in", self._sign_in, methods=["POST"])

    def template(self, source: str):
        return self.app.jinja_env.from_string(source)

    def _signed_rater(self, cookie: str) -> int | None:
        try:
            rater = self.signer.loads(cookie)
        except BadSignature:
            return None
        return rater if isinstance(rater, int) else None

    def current_rater(self) -> int | None:
        rater = self.signed_rater(request.cookies.get(RATER_COOKIE, ""))
        return rater if rater is not None and self.raters.rater_name(rater) is not None else None

    def page(self, title: str, body: str, rater: int | None = None, status: int = 200) -> Response:
        name = self.raters.rater_name(rater) if rater is not None else None
        progress = self.raters.progress(rater) if rater is not None else None
        html = self.layout.render(
            title=title,
            style=pages.STYLE,
            body=body,
            rater=name,
            progress=progress,
            unit=self.unit,
            placeholders=self.placeholders,
        )
        return make_response(html, status)

    def serve_images(self, images: Callable[[], ImageSource]) -> None:
        """`GET /image/<id>`: an image of the review (`images()`: the source now), 404 for any other."""

        def image(image: str) -> Response:
            found = images().read(image) if IMAGE_ID.fullmatch(image) else None
            if found is None:
                abort(404, "no such image in this review")
            data, media_type = found
            return Response(data, mimetype=media_type)

        self.app.add_url_rule("/image/<image>", "image", image, methods=["GET"])

    def answers(self, shown: set[str], allowed: tuple[str, ...], item: str) -> list[tuple[str, str]]:
        """The (item, answer) pairs a page sent, as `a-<item>` fields: 400 for any field that is
        not an item of the page (`item`: what an item is, for the message) or an answer not allowed."""
        answers = []
        for field, value in request.form.items(multi=True):
            name = field[2:] if field.startswith("a-") else None
            if name not in shown:
                abort(400, f"field {field[:40]!r} is not {item} of this page (or no longer in the review)")
            if value not in allowed:
                abort(400, f"answer {value[:20]!r} is not one of {', '.join(allowed)}")
            answers.append((name, value))
        return answers

    @staticmethod
    def known(tasks: dict, key: str, what: str):
        """The review's task `key`, or 404 naming `what` it would have been."""
        task = tasks.get(key)
        if task is None:
            abort(404, f"no such {what} in this review")
        return task

    def next_route(self, session, path: str, done: str) -> None:
        """`GET /next`: on to the rater's next page of `session` (a `tracker.Tracker`), at `path` and
        its id, or the `done` page when none is left."""

        def next_page():
            rater = self.current_rater()
            if rater is None:
                return redirect("/", 303)
            task = session.next_task(rater)
            if task is None:
                return self.page("done", done, rater)
            return redirect(f"{path}{task.id}", 303)

        self.app.add_url_rule("/next", "next", next_page, methods=["GET"])

    def record(self, session, task, shown: set[str], item: str) -> Response:
        """A POSTed page's answers stored for the signed-in rater (401 without one; `answers`' 400s;
        503 while another command changes the run), then on to the next page."""
        rater = self.current_rater()
        if rater is None:
            abort(401, "give your name first (open /)")
        answers = self.answers(shown, task.answers, item)
        if session.changing:
            return self.busy()
        session.record(rater, task, answers)
        return redirect("/next", 303)

    def busy(self) -> Response:
        """503: another command is changing the run; the rater's page keeps its answers to send again."""
        response = Response(
            "503 Service Unavailable: another command is changing this run; reload, or send the page again, "
            "in a moment\n",
            503,
            mimetype="text/plain",
        )
        response.headers["Retry-After"] = "5"
        return response

    def _guard(self) -> None:
        if self.token is None:
            if not is_loopback(urllib.parse.urlsplit(f"//{request.host}").hostname or ""):
                abort(403, "this review answers on its loopback address only")
        else:
            given = request.args.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
            bearer = request.headers.get("Authorization", "")
            if bearer.startswith("Bearer "):
                given = given or bearer[len("Bearer ") :]
            if not given:
                abort(401, "this review needs its token: open the address the server printed")
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                abort(403, "wrong token")
        if request.method == "POST":
            sender = request.headers.get("Origin") or request.headers.get("Referer")
            if sender is not None and _origin(sender) != f"{request.scheme}://{request.host.lower()}":
                abort(403, "a form sent from another site")
        if request.endpoint not in ("home", "sign_in") and not self._run_settled():
            return self.busy()

    def _run_settled(self) -> bool:
        """Whether the run can be served now: not while another command holds its lock (it may be
        rewriting the tars at the keys the server knows), and not before the server read what that
        command wrote (read here, at once, when the lock is gone). So no page or image shows bytes
        of a run being rewritten; a rater gets 503 with `Retry-After` instead."""
        run = self.raters
        if run_is_locked(run.run_dir):
            run.changing = True
            return False
        if run.changing:
            run.refresh(tars=True)
        return not run.changing

    def _headers(self, response: Response) -> Response:
        if self.token is not None and request.args.get("token") == self.token:
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="Strict")
        response.headers["Cache-Control"] = (
            "private, max-age=3600" if request.path.startswith("/image/") else "no-store"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    def sign_in_first(self) -> Response:
        """A page asked for before sign-in: the name form, coming back to that page after it."""
        return redirect("/?" + urllib.parse.urlencode({"then": request.full_path.rstrip("?")}), 303)

    def _home(self):
        then = _local_path(request.args.get("then", "/next"))
        if self.current_rater() is not None:
            return redirect(then, 303)
        return self.page("who is rating", self.name_form.render(max_name=MAX_NAME, unit=self.unit, then=then))

    def _sign_in(self):
        name = " ".join(request.form.get("name", "").split())
        if not name or len(name) > MAX_NAME or not name.isprintable():
            abort(400, f"a rater's name is 1 to {MAX_NAME} printable characters")
        response = redirect(_local_path(request.form.get("then", "/next")), 303)
        response.set_cookie(RATER_COOKIE, self.signer.dumps(self.raters.rater(name)), httponly=True, samesite="Strict")
        return response


def _http_error(error: HTTPException) -> Response:
    return Response(f"{error.code} {error.name}: {error.description}\n", error.code, mimetype="text/plain")


def _server_error(error: Exception) -> Response:
    log.exception("review server error")
    return Response("500 Internal Server Error: the error is in the server's log\n", 500, mimetype="text/plain")

"""The review web app (Flask, served by waitress): class pages, flagged pages, images by id.

Routes: `/` (name form, or on to the next page), `POST /rater`, `/next`, `GET|POST /task/<id>`,
`/image/<id>`. With a token set (a non-loopback host), every request carries it, as `?token=`
(the first one; it is then kept in a cookie), the cookie, or an `Authorization: Bearer` header.
Errors are short plain pages with their 4xx status, never a traceback.
"""

from __future__ import annotations

import functools
import hmac
import logging
import re

from flask import Flask, Response, abort, make_response, redirect, request
from itsdangerous import BadSignature, URLSafeSerializer
from werkzeug.exceptions import HTTPException

from imagenot.pipeline.review import pages
from imagenot.pipeline.review.plan import CLASS
from imagenot.pipeline.review.session import ReviewSession, Task

log = logging.getLogger(__name__)
IMAGE_ID = re.compile(r"[0-9a-f]{24}")
MAX_NAME = 60
RATER_COOKIE, TOKEN_COOKIE = "imagenot_rater", "imagenot_review_token"
TEMPLATES = ("LAYOUT", "NAME_FORM", "CLASS_PAGE", "FLAGGED_PAGE")


def create_app(session: ReviewSession, secret: str, token: str | None = None) -> Flask:
    app = Flask("imagenot.review")
    app.config.update(MAX_CONTENT_LENGTH=session.settings.max_body_bytes, MAX_FORM_PARTS=2 * 200 + 10)
    signer = URLSafeSerializer(secret, salt="rater")

    templates = {name: app.jinja_env.from_string(getattr(pages, name)) for name in TEMPLATES}  # compiled once

    @functools.lru_cache(maxsize=4096)
    def signed_rater(cookie: str) -> int | None:  # a rater's cookie is checked once, not on each request
        try:
            rater = signer.loads(cookie)
        except BadSignature:
            return None
        return rater if isinstance(rater, int) else None

    @functools.lru_cache(maxsize=1024)
    def task_body(task_id: str, shown: tuple[str, ...]) -> str:  # a page's grid is the same for every rater
        task = session.tasks[task_id]
        return _task_body(session, templates, task, [q for q in task.questions if q.image in shown])

    def page(title: str, body: str, rater: int | None = None, status: int = 200) -> Response:
        name = session.rater_name(rater) if rater is not None else None
        progress = session.progress(rater) if rater is not None else None
        html = templates["LAYOUT"].render(title=title, style=pages.STYLE, body=body, rater=name, progress=progress)
        return make_response(html, status)

    def current_rater() -> int | None:
        rater = signed_rater(request.cookies.get(RATER_COOKIE, ""))
        return rater if rater is not None and session.rater_name(rater) is not None else None

    def known_task(task_id: str) -> Task:
        task = session.tasks.get(task_id)
        if task is None:
            abort(404, "no such page in this review")
        return task

    @app.before_request
    def check_token():
        if token is None:
            return None
        given = request.args.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        bearer = request.headers.get("Authorization", "")
        if bearer.startswith("Bearer "):
            given = given or bearer[len("Bearer ") :]
        if not given:
            abort(401, "this review needs its token: open the address the server printed")
        if not hmac.compare_digest(given.encode(), token.encode()):
            abort(403, "wrong token")
        return None

    @app.after_request
    def keep_token(response: Response) -> Response:
        if token is not None and request.args.get("token") == token:
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
        response.headers["Cache-Control"] = (
            "private, max-age=3600" if request.path.startswith("/image/") else "no-store"
        )
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> Response:
        return Response(f"{error.code} {error.name}: {error.description}\n", error.code, mimetype="text/plain")

    @app.errorhandler(Exception)
    def server_error(error: Exception) -> Response:
        log.exception("review server error")
        return Response("500 Internal Server Error: the error is in the server's log\n", 500, mimetype="text/plain")

    @app.get("/")
    def home():
        rater = current_rater()
        if rater is not None:
            return redirect("/next", 303)
        return page("who is rating", templates["NAME_FORM"].render(max_name=MAX_NAME))

    @app.post("/rater")
    def sign_in():
        name = " ".join(request.form.get("name", "").split())
        if not name or len(name) > MAX_NAME:
            abort(400, f"a rater's name is 1 to {MAX_NAME} characters")
        response = redirect("/next", 303)
        response.set_cookie(RATER_COOKIE, signer.dumps(session.rater(name)), httponly=True, samesite="Strict")
        return response

    @app.get("/next")
    def next_page():
        rater = current_rater()
        if rater is None:
            return redirect("/", 303)
        task = session.next_task(rater)
        if task is None:
            return page("done", pages.DONE, rater)
        return redirect(f"/task/{task.id}", 303)

    @app.get("/task/<task_id>")
    def show_task(task_id: str):
        task = known_task(task_id)
        rater = current_rater()
        if rater is None:
            return redirect("/", 303)
        questions = session.open_questions(task, rater)
        if not questions:
            return redirect("/next", 303)
        body = task_body(task.id, tuple(q.image for q in questions))
        return page(session.classes[task.class_index]["name"], body, rater)

    @app.post("/task/<task_id>")
    def answer_task(task_id: str):
        task = known_task(task_id)
        rater = current_rater()
        if rater is None:
            abort(401, "give your name first (open /)")
        shown = {q.image for q in task.questions}
        answers = []
        for field, value in request.form.items(multi=True):
            image = field[2:] if field.startswith("a-") else None
            if image not in shown:
                abort(400, f"field {field[:40]!r} is not an image of this page")
            if value not in task.answers:
                abort(400, f"answer {value[:20]!r} is not one of {', '.join(task.answers)}")
            answers.append((image, value))
        session.record(rater, task, answers)
        return redirect("/next", 303)

    @app.get("/image/<image>")
    def image(image: str):
        found = session.images.read(image) if IMAGE_ID.fullmatch(image) else None
        if found is None:
            abort(404, "no such image in this review")
        data, media_type = found
        return Response(data, mimetype=media_type)

    return app


def _task_body(session: ReviewSession, templates: dict, task: Task, questions: list) -> str:
    settings, c = session.settings, session.classes[task.class_index]
    if task.kind == CLASS:
        return templates["CLASS_PAGE"].render(
            c=c,
            task=task,
            questions=questions,
            show_captions=settings.show_captions,
            instructions=pages.CLASS_INSTRUCTIONS,
            keys_help=pages.KEYS,
            script=pages.SCRIPT,
        )
    none = {"name": "(no suggestion)", "gloss": ""}
    suggested = session.classes.get(task.suggested_class, none) if task.suggested_class is not None else none
    return templates["FLAGGED_PAGE"].render(
        given=c,
        suggested=suggested,
        task=task,
        questions=questions,
        given_examples=session.examples.get(task.class_index, []),
        suggested_examples=session.examples.get(task.suggested_class, []),
        show_captions=settings.show_captions,
        instructions=pages.FLAGGED_INSTRUCTIONS,
        keys_help=pages.FLAGGED_KEYS,
        script=pages.SCRIPT,
    )

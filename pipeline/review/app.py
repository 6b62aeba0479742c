"""The image review's web app (Flask, served by waitress): class pages, flagged pages, images by id.

Routes: `/` (name form, or on to the next page), `POST /rater`, `/next`, `GET|POST /task/<id>`,
`/image/<id>`; the guards, sign-in and layout are `web.ReviewApp`'s. Before a request the session
looks whether the run's dataset or plan changed (`ReviewSession.refresh`) before a POST, and a
watcher looks at them and the tars every second, so what it serves is the run as it is; while another command holds
the run's lock a page's answers are refused (503: the rater sends it again) rather than stored
for images that may be on their way out.
"""

from __future__ import annotations

import functools

from flask import Flask, redirect, request

from imagenot.pipeline.review import pages
from imagenot.pipeline.review.plan import CLASS
from imagenot.pipeline.review.session import ReviewSession
from imagenot.pipeline.review.tracker import Task
from imagenot.pipeline.review.web import ReviewApp

TEMPLATES = ("CLASS_PAGE", "FLAGGED_PAGE")


def create_app(session: ReviewSession, secret: str, token: str | None = None, placeholders: bool = False) -> Flask:
    review = ReviewApp(session, secret, token, session.settings.max_body_bytes, "images", placeholders)
    app = review.app
    templates = {name: review.template(getattr(pages, name)) for name in TEMPLATES}  # compiled once

    @functools.lru_cache(maxsize=1024)
    def task_body(generation: int, task: Task, shown: tuple[str, ...]) -> str:  # the same for every rater
        return _task_body(session, templates, task, [q for q in task.questions if q.image in shown])

    @app.before_request
    def see_the_run_as_it_is():
        if request.method == "POST":  # an answer is checked against the dataset as it is now
            session.refresh()

    review.next_route(session, "/task/", pages.DONE)

    @app.get("/task/<task_id>")
    def show_task(task_id: str):
        task = review.known(session.tasks, task_id, "page")
        rater = review.current_rater()
        if rater is None:
            return review.sign_in_first()
        questions = session.open_questions(task, rater)
        if not questions:
            return redirect("/next", 303)
        body = task_body(session.generation, task, tuple(q.image for q in questions))
        return review.page(session.classes[task.class_index]["name"], body, rater)

    @app.post("/task/<task_id>")
    def answer_task(task_id: str):
        task = review.known(session.tasks, task_id, "page")
        return review.record(session, task, {q.image for q in task.questions}, "an image")

    review.serve_images(lambda: session.images)
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
            key_of=pages.KEY_OF,
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
        key_of=pages.KEY_OF,
        script=pages.SCRIPT,
    )

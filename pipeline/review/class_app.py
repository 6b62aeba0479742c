"""The class review's web app (Flask, served by waitress): one candidate class a page.

Routes: `/` (name form, or on to the next class), `POST /rater`, `/next`, `GET|POST /class/<wnid>`,
`/image/<id>` (a class's thumbnails); the guards, sign-in and layout are `web.ReviewApp`'s, the
same as the image review's. A wnid the review does not hold is 404, an answer other than keep,
drop or unsure 400; answers are refused (503) while another command holds the run's lock. A class
the rater answered opens with their answer chosen, and a new answer replaces it.
"""

from __future__ import annotations

import functools

from flask import Flask, redirect

from imagenot.pipeline.review import pages
from imagenot.pipeline.review.class_session import ClassSession
from imagenot.pipeline.review.web import ReviewApp


def create_class_app(
    session: ClassSession, secret: str, token: str | None, max_body: int, placeholders: bool = False
) -> Flask:
    review = ReviewApp(session, secret, token, max_body, "classes", placeholders)
    app = review.app
    template = review.template(pages.CANDIDATE_PAGE)

    @functools.lru_cache(maxsize=4096)
    def body(generation: int, wnid: str, chosen: str | None, previous: str | None) -> str:
        return template.render(
            c=session.candidates[wnid],
            answers=session.tasks[wnid].answers,
            chosen=chosen,
            previous=previous if previous in session.tasks else None,
            instructions=pages.CANDIDATE_INSTRUCTIONS,
            keys_help=pages.CANDIDATE_KEYS,
            key_of=pages.KEY_OF,
            script=pages.SCRIPT,
        )

    review.next_route(session, "/class/", pages.CLASSES_DONE)

    @app.get("/class/<wnid>")
    def show_class(wnid: str):
        task = review.known(session.tasks, wnid, "class")
        rater = review.current_rater()
        if rater is None:
            return review.sign_in_first()
        chosen = session.store.answer_of(rater, wnid)  # the rater's own answer: shown, and a new one replaces it
        if chosen is None and not session.open_questions(task, rater):
            return redirect("/next", 303)  # its answers are in
        previous = session.store.last_answered(rater, wnid)
        return review.page(session.candidates[wnid]["name"], body(session.generation, wnid, chosen, previous), rater)

    @app.post("/class/<wnid>")
    def answer_class(wnid: str):
        session.refresh()
        task = review.known(session.tasks, wnid, "class")
        return review.record(session, task, {wnid}, "the class")

    review.serve_images(lambda: session.images)
    return app

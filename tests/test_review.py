"""Human review without a browser: the sample size, the plan, the aggregation on a case worked out
by hand, the server's answers to bad requests, and 8 raters answering at once.

The run is the session's small downloaded run (a copy per module): 8 classes of up to 5 images,
some short after failed downloads."""

from __future__ import annotations

import http.cookiejar
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from ports import free_loopback_port
from scipy import stats
from shared_runs import copy_run

from imagenot.pipeline.config.schema import Review, load_run_config
from imagenot.pipeline.review import aggregate
from imagenot.pipeline.review import plan as review_plan
from imagenot.pipeline.review.app import create_app
from imagenot.pipeline.review.session import ReviewSession
from imagenot.pipeline.review.sizing import clopper_pearson, sample_size, worst_half_width
from imagenot.pipeline.review.store import Store
from imagenot.wordnet.index import load_index


def test_the_sample_size_is_the_smallest_within_the_margin():
    n = sample_size(0.05, 0.95)
    assert worst_half_width(n, 0.95) <= 0.05 < worst_half_width(n - 1, 0.95)
    for trials in (5, n - 1, n):
        for k in (0, 1, trials // 2, trials // 2 + 1, trials):  # scipy's own exact interval agrees
            ci = stats.binomtest(k, trials).proportion_ci(0.95, method="exact")
            assert clopper_pearson(k, trials, 0.95) == pytest.approx((ci.low, ci.high))
    # the widest interval is at k = n/2: the normal approximation's 385 is a little short of it
    assert 385 < n == 402 and sample_size(0.2, 0.95) < sample_size(0.1, 0.95) < n


def _plan(rows: list[tuple[str, int, str, bool]]) -> pa.Table:
    """A plan of (image, class, kind, sampled) rows."""
    return pa.Table.from_pylist(
        [
            {
                "task": f"t{c}",
                "kind": kind,
                "class_index": c,
                "wnid": f"n{c}",
                "row_id": f"r-{image}",
                "image": image,
                "tar": "x",
                "key": image,
                "caption": "",
                "split": "train",
                "sampled": sampled,
                "flagged_by": None,
                "suggested_class": None,
                "added_by": "plan",
            }
            for image, c, kind, sampled in rows
        ],
        review_plan.SCHEMA,
    )


def test_aggregation_on_a_case_worked_out_by_hand():
    """Class 0: a (yes yes yes), b (yes no unsure), c (no no no), d (unsure unsure unsure).
    Class 1: e (yes yes no), and f, a flagged extra (given, suggested, neither).
    Raters A and B agree on every decided answer; C says the opposite of them on a and c."""
    plan = _plan(
        [
            ("a", 0, "class", True),
            ("b", 0, "class", True),
            ("c", 0, "class", True),
            ("d", 0, "class", True),
            ("e", 1, "class", True),
            ("f", 1, "flagged", False),
        ]
    )
    answers = [
        ("A", "a", "yes"),
        ("B", "a", "yes"),
        ("C", "a", "no"),
        ("A", "b", "yes"),
        ("B", "b", "unsure"),
        ("C", "b", "no"),
        ("A", "c", "no"),
        ("B", "c", "no"),
        ("C", "c", "yes"),
        ("A", "d", "unsure"),
        ("B", "d", "unsure"),
        ("C", "d", "unsure"),
        ("A", "e", "yes"),
        ("B", "e", "yes"),
        ("C", "e", "no"),
        ("A", "f", "given"),
        ("B", "f", "both"),
        ("C", "f", "neither"),
    ]
    images, accuracy = aggregate.image_figures(plan, answers, Review(min_selection=0.5))
    by_image = {r["image"]: r for r in images.to_pylist()}
    assert [(by_image[i]["yes"], by_image[i]["no"], by_image[i]["unsure"]) for i in "abcdef"] == [
        (2, 1, 0),
        (1, 1, 1),
        (1, 2, 0),
        (0, 0, 3),
        (2, 1, 0),
        (2, 1, 0),
    ]
    assert [by_image[i]["selection_frequency"] for i in "abcd"] == [
        pytest.approx(2 / 3),
        0.5,
        pytest.approx(1 / 3),
        None,
    ]
    assert [by_image[i]["majority"] for i in "abcd"] == ["yes", "tie", "no", None]
    assert [by_image[i]["accepted"] for i in "abcdef"] == [True, True, False, None, True, True]
    # Dawid-Skene: A and B always agree, C always disagrees with them: C is the unreliable one
    assert accuracy["A"] > 0.9 and accuracy["B"] > 0.9 and accuracy["C"] < 0.1
    assert by_image["a"]["dawid_skene_yes"] > 0.9 and by_image["c"]["dawid_skene_yes"] < 0.1
    classes = [{"index": 0, "wnid": "n0", "name": "zero"}, {"index": 1, "wnid": "n1", "name": "one"}]
    per_class = aggregate.class_precision(images, classes, Review(), stated=True)
    # class 0: a, b kept, c rejected, d only unsure (left out): 2 of 3; class 1: e kept, f is not sampled
    assert [(r["accepted"], r["decided"], r["unsure_only"]) for r in per_class] == [(2, 3, 1), (1, 1, 0)]
    ci = stats.binomtest(2, 3).proportion_ci(0.95, method="exact")
    assert (per_class[0]["low"], per_class[0]["high"]) == pytest.approx((ci.low, ci.high))
    # agreement with the others' majority, images where the others tie left out: A is compared on b only
    # (the others: C's no; B was unsure) and disagrees; B is never compared; C disagrees on all five
    assert aggregate.rater_agreement(answers) == {"A": 0.0, "B": None, "C": 0.0}


@pytest.fixture(scope="module")
def run(downloaded_run, tmp_path_factory):
    run_dir = copy_run(downloaded_run, tmp_path_factory.mktemp("review") / "run")
    config = load_run_config(str(run_dir))
    review_plan.write_plan(str(run_dir), review_plan.make_plan(config, str(run_dir)))
    return run_dir


def test_the_plan_samples_each_class_deterministically(run, tmp_path):
    config = load_run_config(str(run))
    plan = review_plan.read_plan(str(run))
    dataset = review_plan.read_dataset(str(run))
    sizes = Counter(dataset.column("class_index").to_pylist())
    assert plan.num_rows == dataset.num_rows  # 402 wanted per class: every class is smaller, so all of it
    assert set(plan.column("task").to_pylist()) == {f"c{c}-0" for c in sizes}
    small = config.model_copy(update={"review": Review(margin=0.45)})  # a sample of 3 per class
    assert sample_size(0.45, 0.95) == 3
    first, second = (review_plan.make_plan(small, str(run)) for _ in range(2))
    assert first.equals(second) and first.num_rows == sum(min(3, m) for m in sizes.values())
    assert Counter(first.column("class_index").to_pylist()) == {c: min(3, m) for c, m in sizes.items()}
    other_seed = review_plan.make_plan(small.model_copy(update={"review": Review(margin=0.45, seed=1)}), str(run))
    assert set(other_seed.column("row_id").to_pylist()) != set(first.column("row_id").to_pylist())
    table = review_plan.plan_table(first, [{"index": c, "name": f"c{c}"} for c in range(8)], small.review)
    c, m = table[0]["class_index"], min(3, sizes[table[0]["class_index"]])
    assert table[0] == {
        "class_index": c,
        "name": f"c{c}",
        "images": m,
        "flagged": 0,
        "tasks": 3 * m,
        "rater_minutes": 3 * m * 2.5 / 60,
    }


@pytest.fixture(scope="module")
def app(run):
    config = load_run_config(str(run))
    session = ReviewSession(str(run), config.review, load_index(), Store(str(run)))
    return session, create_app(session, "test-secret"), create_app(session, "test-secret", token="s3cret")


def _no_traceback(response) -> None:
    body = response.get_data(as_text=True)
    assert "Traceback" not in body and 'File "' not in body and len(body) < 300, body


def test_bad_requests_get_a_4xx_and_no_traceback(app, downloaded_run, tmp_path):
    session, plain, _ = app
    client = plain.test_client()
    assert client.post("/rater", data={"name": "<script>alert(1)</script>"}).status_code == 303
    page = client.get("/next", follow_redirects=True).get_data(as_text=True)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    task = next(iter(session.tasks.values()))
    image = task.questions[0].image
    assert client.get(f"/image/{image}").status_code == 200
    other = review_plan.image_id("part-00000:0", "0" * 64)  # an id of an image this run does not have
    bad = {
        "/task/nope": 404,
        "/task/c0-99": 404,
        f"/image/{other}": 404,
        "/image/../../config.yaml": 404,
        "/image/..%2F..%2Fconfig.yaml": 404,
        "/image/%2e%2e%2fconfig.yaml": 404,
        "/image/" + "a" * 24: 404,
        "/static/../config.yaml": 404,
    }
    for path, status in bad.items():
        response = client.get(path)
        assert response.status_code == status, path
        _no_traceback(response)
    for response, status in (
        (client.post(f"/image/{image}"), 405),
        (client.delete(f"/task/{task.id}"), 405),
        (client.put("/rater"), 405),
        (client.post(f"/task/{task.id}", data={f"a-{image}": "maybe"}), 400),
        (client.post(f"/task/{task.id}", data={f"a-{other}": "yes"}), 400),
        (client.post(f"/task/{task.id}", data={"x": "y" * 100_000}), 413),
        (client.post("/rater", data={"name": "x" * 61}), 400),
        (plain.test_client().post(f"/task/{task.id}", data={f"a-{image}": "yes"}), 401),  # no rater
    ):
        assert response.status_code == status
        _no_traceback(response)
    assert session.store.answered_by(session.store.rater("<script>alert(1)</script>")) == set()


def test_a_token_guards_every_request(app):
    session, _, guarded = app
    image = next(iter(session.tasks.values())).questions[0].image
    client = guarded.test_client()
    assert client.get("/").status_code == 401
    assert client.get(f"/image/{image}").status_code == 401
    assert client.get("/?token=wrong").status_code == 403
    assert client.get(f"/image/{image}", headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.get("/?token=s3cret").status_code == 200  # and the cookie keeps it
    assert client.get(f"/image/{image}").status_code == 200
    _no_traceback(guarded.test_client().get("/next"))


def _serve(run_dir, monkeypatch, *args: str) -> tuple[str, dict]:
    """`imagenot review serve --run RUN ARGS` up to the point it would listen: waitress.serve is
    replaced, so nothing binds any address; the command's output, and what it gave waitress."""
    import waitress
    from cli_runner import invoke

    from imagenot.pipeline.review.command import serve_command

    served = {}
    monkeypatch.setattr(waitress, "serve", lambda app, **kwargs: served.update(app=app, **kwargs))
    result = invoke(serve_command, ["--run", str(run_dir), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output, served


def test_a_non_loopback_host_gets_a_generated_token_that_every_request_needs(run, monkeypatch):
    """`--host 0.0.0.0` (or `::`) without `--token`: the command makes a token, prints the address
    that carries it, and the app it serves refuses every request without it. A loopback host
    (any 127/8 address, ::1, localhost) needs none; a given token is used as given."""
    plan = review_plan.read_plan(str(run))
    task, image = plan.column("task")[0].as_py(), plan.column("image")[0].as_py()
    tokens = []
    for host in ("0.0.0.0", "::", "0.0.0.0"):
        output, served = _serve(run, monkeypatch, "--host", host, "--port", "8781")
        assert served["host"] == host and served["port"] == 8781  # what waitress would have bound
        token = re.search(r"open http://127\.0\.0\.1:8781/\?token=([A-Za-z0-9_-]+) ", output).group(1)
        assert len(token) >= 32
        tokens.append(token)
        app = served["app"]
        for path in ("/", "/next", f"/task/{task}", f"/image/{image}"):
            assert app.test_client().get(path).status_code == 401, path
            assert app.test_client().get(f"{path}?token=x{token}").status_code == 403, path
        client = app.test_client()
        assert "Who is rating?" in client.get(f"/?token={token}").get_data(as_text=True)
        assert client.get(f"/image/{image}").status_code == 200  # the cookie the printed address set carries it
    assert len(set(tokens)) == 3  # a fresh one each start
    output, served = _serve(run, monkeypatch, "--host", "0.0.0.0", "--token", "given-secret")
    assert "?token=given-secret " in output
    assert served["app"].test_client().get("/").status_code == 401
    assert served["app"].test_client().get("/?token=given-secret").status_code == 200
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        output, served = _serve(run, monkeypatch, "--host", host)
        assert "token" not in output and served["host"] == host
        assert served["app"].test_client().get("/").status_code == 200, host


def _next_task_by_brute_force(session: ReviewSession, rater: int):
    """The page `next_task` must choose, worked out over every page and image: pages the rater sent
    before (with images skipped) after the others."""
    since, wanted = time.time() - 15 * 60, session.settings.raters
    best, best_key = None, None
    for order, task in enumerate(session.tasks.values()):
        mine = session.answered[rater]
        counts = [
            session.counts[q.image] for q in task.questions if q.image not in mine and session.counts[q.image] < wanted
        ]
        busy = sum(1 for r, at in session.leases[task.id].items() if r != rater and at >= since)
        key = (any(q.image in mine for q in task.questions), min(counts, default=0) + busy, order)
        if counts and (best_key is None or key < best_key):
            best, best_key = task, key
    return best


def _progress_by_brute_force(session: ReviewSession, rater: int) -> tuple[int, int]:
    wanted, counts = session.settings.raters, session.counts
    left = sum(1 for i in session.task_of_image if i not in session.answered[rater] and counts[i] < wanted)
    return left, sum(max(0, wanted - counts[i]) for i in session.task_of_image)


def test_the_next_page_and_the_progress_kept_as_answers_come_match_a_full_count(run, tmp_path):
    """The server keeps answers still wanted, images left per rater and each page's fewest answers
    as answers come, and passes over pages that cannot be the next; after every page answered
    (5 raters in a seeded order, some answers left out, pages left open) both agree with a count
    over every image, and so does a server started again on the stored answers."""
    import random

    run_dir = copy_run(run, tmp_path / "run")
    config = load_run_config(str(run_dir)).model_copy(update={"review": Review(raters=3, page_size=2)})
    review_plan.write_plan(str(run_dir), review_plan.make_plan(config, str(run_dir)))
    store = Store(str(run_dir))
    session = ReviewSession(str(run_dir), config.review, load_index(), store)
    raters = [session.rater(f"r{i}") for i in range(5)]
    pick = random.Random(7)
    for step in range(400):
        rater = pick.choice(raters)
        task = session.next_task(rater)
        assert task == _next_task_by_brute_force(session, rater), step
        if task is None:
            continue
        questions = session.open_questions(task, rater)
        if pick.random() < 0.2:
            continue  # opened and left open: a lease others see
        answers = [(q.image, pick.choice(task.answers)) for q in questions if pick.random() < 0.8]
        session.record(rater, task, answers)
        for r in raters:
            shown = session.progress(r)
            assert (shown["left_for_you"], shown["answers_wanted"]) == _progress_by_brute_force(session, r), step
    assert all(session.next_task(r) is None for r in raters)  # the review got its answers
    again = ReviewSession(str(run_dir), config.review, load_index(), store)
    assert again.counts == session.counts and again.least == session.least
    for r in raters:
        assert again.progress(r)["left_for_you"] == session.progress(r)["left_for_you"]


MINUTE = 60.0
RESENT_WHEN_DONE = 50  # pages a client sends again once no name has anything left


class Rater:
    """A browser-less client on the live server: a cookie jar and a bounded request loop. It takes
    a new rater name (`client i.k`) whenever the server has nothing left for its current one, and
    sends a page it already sent again (answered no this time) after every fourth page, and all
    the time once no name has anything left: the second copy must store nothing. It is done once
    no name has anything left and it has sent RESENT_WHEN_DONE pages again since."""

    def __init__(self, base: str, client: int):
        self.base, self.client = base, client
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.sent: list[tuple[str, str]] = []  # (rater name, image) of each answer in a page the server confirmed
        self.resent = 0  # pages sent again
        self.resent_when_out = None  # `resent` when it found no name with anything left
        self.last = 0.0  # when its last request ended
        self.errors: list[Exception] = []

    def open(self, path: str, form: dict | None = None) -> tuple[str, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        with self.opener.open(self.base + path, data=data, timeout=60) as response:
            answer = response.geturl(), response.read().decode()
        self.last = time.monotonic()
        return answer

    def done(self) -> bool:
        return self.resent_when_out is not None and self.resent >= self.resent_when_out + RESENT_WHEN_DONE

    def sign_in(self, name: str) -> str:
        self.open("/rater", {"name": name})
        return name

    def answer_pages(self, until: float, clients: list[Rater]) -> None:
        """Answer pages until every one of `clients` is done, or `until` at the latest."""
        try:
            name, pages, fresh = self.sign_in(f"client {self.client}.0"), [], 0  # fresh: pages it answered
            previous, names = (name, pages), 1
            while time.monotonic() < until and not all(c.done() for c in clients):
                url, page = self.open("/next")
                images = list(dict.fromkeys(re.findall(r'name="a-([0-9a-f]{24})"', page)))
                if images:
                    path = urllib.parse.urlsplit(url).path
                    self.open(path, {f"a-{image}": "yes" for image in images})
                    self.sent += [(name, image) for image in images]
                    pages.append((path, images))
                    fresh += 1
                elif fresh:  # nothing left for this name: on under another
                    previous, fresh = (name, pages), 0
                    name, pages, names = self.sign_in(f"client {self.client}.{names}"), [], names + 1
                    continue
                elif self.resent_when_out is None:  # a new name found nothing: every image has its answers
                    (name, pages), self.resent_when_out = previous, self.resent
                    self.sign_in(name)  # the same rater again, to send its pages again
                if pages and (not images or len(pages) % 4 == 0):  # a double click, a second tab
                    path, again = pages[len(pages) // 2]
                    self.open(path, {f"a-{image}": "no" for image in again})
                    self.resent += 1
        except Exception as err:  # noqa: BLE001  (reported by the test)
            self.errors.append(err)


def test_eight_raters_at_once_lose_and_double_nothing(downloaded_run, tmp_path):
    """8 clients answer at once, each on its own connection and cookie, on a server of 8 threads,
    until every image has all its answers and each client has sent RESENT_WHEN_DONE pages again
    since (a few seconds; a minute at most). The run has few images (up to 40), so each image
    wants 50 answers (review.raters' most), the clients go on under new rater names when a name
    has nothing left, and they send pages again. Every answer a confirmed page carried is stored
    once, as first given, unless its image had its 50 answers by then; nothing else is."""
    import waitress.server

    run_dir = copy_run(downloaded_run, tmp_path / "run")
    config = load_run_config(str(run_dir))
    config = config.model_copy(update={"review": Review(raters=50, page_size=2)})
    review_plan.write_plan(str(run_dir), review_plan.make_plan(config, str(run_dir)))
    store = Store(str(run_dir))
    session = ReviewSession(str(run_dir), config.review, load_index(), store)
    port = free_loopback_port()
    server = waitress.server.create_server(create_app(session, store.secret()), host="127.0.0.1", port=port, threads=8)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        raters = [Rater(f"http://127.0.0.1:{port}", i) for i in range(8)]
        until = time.monotonic() + MINUTE
        workers = [threading.Thread(target=r.answer_pages, args=(until, raters)) for r in raters]
        for w in workers:
            w.start()
        for w in workers:
            w.join(MINUTE + 60)
        stopped = time.monotonic()
    finally:
        server.close()
    assert [r.errors for r in raters] == [[]] * 8
    assert all(r.done() for r in raters)  # every client ran out of images, then sent pages again
    assert all(r.last >= stopped - 5 for r in raters)  # every client was at it to the end
    stored = store.all_answers()
    sent = [answer for r in raters for answer in r.sent]
    assert len(sent) == len(set(sent)) > 0  # no rater was shown an image twice
    pairs = {(name, image) for name, image, *_ in stored}
    assert len(stored) == len(pairs) and pairs <= set(sent)
    # every answer sent is stored, but for those sent once an image had its 50 (two raters on one page at once)
    per_image, sent_per_image = Counter(image for _, image in pairs), Counter(image for _, image in sent)
    assert per_image == {image: min(n, 50) for image, n in sent_per_image.items()}
    assert {answer for _, _, _, answer, _ in stored} == {"yes"}  # the pages sent again stored nothing
    assert all(r.resent for r in raters)
    # a page sent again after the minute stores nothing more either
    name, image = raters[0].sent[0]
    assert store.save(store.rater(name), session.task_of_image[image], [(image, "no")]) == []
    assert len(store.all_answers()) == len(stored)


def test_an_image_the_label_noise_audit_flags_gets_a_flagged_page(run, tmp_path):
    """The real audit (cleanlab) over probabilities that put two images of the largest class in
    another class: the plan asks about them on flagged pages, beside examples of both classes."""
    from cli_runner import invoke

    from imagenot.pipeline.audit.label_noise_command import label_noise_command

    run_dir = copy_run(run, tmp_path / "run")
    dataset = review_plan.read_dataset(str(run_dir)).to_pylist()
    sizes = Counter(r["class_index"] for r in dataset)
    given, suggested = (c for c, _ in sizes.most_common(2))
    doubted = [r["row_id"] for r in dataset if r["class_index"] == given][-2:]
    probs = []
    for r in dataset:
        peak = suggested if r["row_id"] in doubted else r["class_index"]
        probs.append([0.93 if c == peak else 0.01 for c in range(8)])
    pq.write_table(pa.table({"row_id": [r["row_id"] for r in dataset], "probs": probs}), tmp_path / "probs.parquet")
    result = invoke(label_noise_command, ["--run", str(run_dir), "--probs", str(tmp_path / "probs.parquet")])
    assert result.exit_code == 0, result.output
    config = load_run_config(str(run_dir))
    plan = review_plan.make_plan(config, str(run_dir))
    flagged = [r for r in plan.to_pylist() if r["kind"] == "flagged"]
    assert sorted(r["row_id"] for r in flagged) == sorted(doubted)
    assert {(r["flagged_by"], r["class_index"], r["suggested_class"]) for r in flagged} == {
        ("label_noise", given, suggested)
    }
    assert not {r["row_id"] for r in plan.to_pylist() if r["kind"] == "class"} & set(doubted)  # asked once, there
    review_plan.write_plan(str(run_dir), plan)
    session = ReviewSession(str(run_dir), config.review, load_index(), Store(str(run_dir)))
    client = create_app(session, "secret").test_client()
    client.post("/rater", data={"name": "flag checker"})
    task = session.tasks[session.task_of_image[flagged[0]["image"]]]
    page = client.get(f"/task/{task.id}").get_data(as_text=True)
    names = {c: session.classes[c]["name"] for c in (given, suggested)}
    assert (
        f'<span id="given">{names[given]}</span>' in page and f'<span id="suggested">{names[suggested]}</span>' in page
    )
    shown = {c: min(4, sizes[c] - (2 if c == given else 0)) for c in (given, suggested)}
    assert page.count('alt="example of the given class"') == shown[given]
    assert page.count('alt="example of the suggested class"') == shown[suggested]
    for example in session.examples[given] + session.examples[suggested]:
        assert client.get(f"/image/{example}").status_code == 200
    assert client.post(f"/task/{task.id}", data={f"a-{flagged[0]['image']}": "suggested"}).status_code == 303
    assert [a[3] for a in session.store.all_answers()] == ["suggested"]
    images, _ = aggregate.image_figures(plan, [("flag checker", flagged[0]["image"], "suggested")], config.review)
    assert [r["accepted"] for r in images.to_pylist() if r["image"] == flagged[0]["image"]] == [False]


def test_images_the_agreement_audit_fails_get_flagged_pages_with_the_nearest_other_class(run, tmp_path):
    """The real embeddings and agreement audits (a tiny random-weight open_clip ViT) with a class
    threshold between the second and third lowest image-class cosine: the plan asks about those two
    images on flagged pages, each suggesting the other class whose query is nearest the image
    (worked out here from the stored embeddings); an audit made before the dataset changed flags nothing."""
    import json

    import numpy as np
    from test_image_embeddings import TINY_VIT

    from imagenot.pipeline.audit.agreement import measure_agreement
    from imagenot.pipeline.audit.embeddings import ImageAudit, column_vectors, embed_images, embedding_table
    from imagenot.pipeline.config.schema import Runner

    run_dir = copy_run(run, tmp_path / "run")
    (tmp_path / "tiny-vit.json").write_text(json.dumps(TINY_VIT))
    settings = ImageAudit(clip_model="tiny-vit", clip_model_config=str(tmp_path / "tiny-vit.json"), batch_size=8)
    embed_images(str(run_dir), settings, Runner(workers=1))
    images = embedding_table(str(run_dir), ["row_id", "class_index", "image_embedding"])
    queries = pq.read_table(run_dir / "audit/embeddings/class_queries.parquet")
    unit = column_vectors(images.column("image_embedding"))
    unit = unit / np.linalg.norm(unit, axis=1, keepdims=True)
    query = column_vectors(queries.column("embedding"))
    query = query / np.linalg.norm(query, axis=1, keepdims=True)
    query_classes = queries.column("class_index").to_pylist()
    cosines = unit @ query.T  # image x class query
    given = images.column("class_index").to_pylist()
    own = np.array([cosines[i, query_classes.index(c)] for i, c in enumerate(given)])
    lowest = np.argsort(own)
    threshold = float((own[lowest[1]] + own[lowest[2]]) / 2)
    measure_agreement(str(run_dir), settings.model_copy(update={"min_image_class_similarity": threshold}))
    row_ids = images.column("row_id").to_pylist()
    expected = {}
    for i in lowest[:2]:
        others = [(cosines[i, j], c) for j, c in enumerate(query_classes) if c != given[i]]
        expected[row_ids[i]] = (given[i], max(others)[1])

    config = load_run_config(str(run_dir))
    plan = review_plan.make_plan(config, str(run_dir)).to_pylist()
    flagged = {r["row_id"]: r for r in plan if r["kind"] == "flagged"}
    assert {r: (f["class_index"], f["suggested_class"]) for r, f in flagged.items()} == expected
    assert {f["flagged_by"] for f in flagged.values()} == {"agreement"}
    assert sorted(r["row_id"] for r in plan) == sorted(row_ids)  # asked once each: flagged ones on their page
    # the audit no longer describes the dataset once the download stage changed: no flags from it
    fingerprint = run_dir / "audit/embeddings/fingerprint.json"
    recorded = json.loads(fingerprint.read_text())
    fingerprint.write_text(json.dumps({**recorded, "upstream": "another download"}))
    assert review_plan.audit_flags(str(run_dir)) == {}


def test_a_form_from_another_scheme_or_a_rater_name_of_control_characters_is_refused(app):
    """Issue 42's remarks: the form check compares the scheme too; a rater's name is printable text."""
    session, plain, _ = app
    client = plain.test_client()
    for sender in ("https://localhost", "ftp://localhost", "http://localhost.evil"):
        response = client.post("/rater", data={"name": "Ann"}, headers={"Origin": sender})
        assert response.status_code == 403, sender
    assert client.post("/rater", data={"name": "Ann"}, headers={"Origin": "http://localhost"}).status_code == 303
    for name in ("\x01\x02\x03", "Bo\x00b", "A\u200b\x7f"):
        response = client.post("/rater", data={"name": name})
        assert response.status_code == 400 and "printable" in response.get_data(as_text=True), repr(name)


def test_a_link_to_a_page_leads_there_after_sign_in(app):
    session, plain, _ = app
    task = list(session.tasks.values())[-1]
    client = plain.test_client()
    asked = client.get(f"/task/{task.id}")
    assert asked.status_code == 303 and asked.headers["Location"] == f"/?then=%2Ftask%2F{task.id}"
    form = client.get(asked.headers["Location"]).get_data(as_text=True)
    assert f'name="then" value="/task/{task.id}"' in form
    signed = client.post("/rater", data={"name": "Deep Link", "then": f"/task/{task.id}"})
    assert signed.headers["Location"] == f"/task/{task.id}"
    for elsewhere in ("//evil.example/x", "https://evil.example/", "/\\evil.example"):
        other = plain.test_client().post("/rater", data={"name": "Other", "then": elsewhere})
        assert other.headers["Location"] == "/next", elsewhere


def test_images_skipped_on_a_page_sent_come_back_after_the_other_pages(app):
    """As the page's notice says: a page sent half answered is not served again at once; its
    skipped images come back once the rater answered every other page."""
    session, plain, _ = app
    client = plain.test_client()
    client.post("/rater", data={"name": "Half Way"})
    first = client.get("/next").headers["Location"].rsplit("/", 1)[1]
    images = [q.image for q in session.tasks[first].questions]
    assert len(images) > 1, "the test wants a page of several images"
    sent = client.post(f"/task/{first}", data={f"a-{images[0]}": "yes"})
    assert sent.status_code == 303
    served = []
    while (page := client.get("/next").headers["Location"]).startswith("/task/") and page != f"/task/{first}":
        task = session.tasks[page.rsplit("/", 1)[1]]
        served.append(task.id)
        client.post(page, data={f"a-{q.image}": "yes" for q in task.questions})
        assert len(served) <= len(session.tasks), "a page came back"
    assert page == f"/task/{first}" and served and first not in served  # the other pages first
    shown = client.get(page).get_data(as_text=True)
    assert images[0] not in shown and all(f'name="a-{image}"' in shown for image in images[1:])


def _card_section(per_class: list[dict], overall: dict) -> str:
    """The card's Human review section over these figures (2 classes, 52 images, a demo run's)."""
    from imagenot.pipeline.report.human_review import review_lines

    results = {
        **dict.fromkeys(("answers", "unsure_answers", "images_unsure_only"), 0),
        **{"raters": [], "answers_by_kind": {}, "dropped": [], "instructions": {"class": "", "flagged": ""}},
        **{"confidence": 0.95, "min_selection": 0.5, "raters_wanted": 3, "show_captions": False},
        **{"images_answered": 52, "planned_images": 52, "classes_in_dataset": 2, "placeholder_images": True},
        **{"per_class": per_class, "overall": overall},
    }
    return "\n".join(review_lines(results))


def test_the_headline_precision_is_withheld_until_enough_images_have_every_answer():
    """52 images with 1 of 3 answers each (the issue's case): withheld, with the reason, and so is
    each class's figure, the images counted as partly answered; with every answer in both are
    stated, with what they rest on, and agree. Dawid-Skene only for raters who share images."""
    plan = _plan([(f"i{n}", n % 2, "class", True) for n in range(52)])
    classes = [{"index": c, "wnid": f"n{c}", "name": f"c{c}"} for c in range(2)]
    one_each = [(f"R{n % 2}", f"i{n}", "no" if n < 4 else "yes") for n in range(52)]
    settings = Review(raters=3, min_decided_images=30)
    images, _ = aggregate.image_figures(plan, one_each, settings)
    overall = aggregate.overall_precision(images, settings)
    assert overall["precision"] is None and overall["decided"] == 0 and overall["partly_answered"] == 52
    assert overall["withheld"].startswith("0 sampled images have all 3 answers wanted")
    per_class = aggregate.class_precision(images, classes, settings, stated=False)
    assert [(r["decided"], r["partly_answered"], r["precision"], r["low"]) for r in per_class] == [
        (0, 26, None, None)
    ] * 2
    assert "| c0 | 26 | 0 | 0 | 26 | 0 | withheld, as the headline is |" in _card_section(per_class, overall)
    assert aggregate.raters_sharing(one_each) == set()
    assert not any(aggregate.droppable(r, 3) for r in images.to_pylist())  # one no of three wanted
    # class 0's images get their other two answers: the headline rests on it alone, and says so
    complete_in_one = one_each + [(rater, f"i{n}", "yes") for n in range(0, 52, 2) for rater in ("X", "Y")]
    settings_20 = Review(raters=3, min_decided_images=20)
    images, _ = aggregate.image_figures(plan, complete_in_one, settings_20)
    overall = aggregate.overall_precision(images, settings_20)
    per_class = aggregate.class_precision(images, classes, settings_20, stated=True)
    assert overall["classes"] == 1 and per_class[0]["precision"] == overall["precision"]  # one account
    assert (per_class[1]["decided"], per_class[1]["partly_answered"], per_class[1]["precision"]) == (0, 26, None)
    card = _card_section(per_class, overall)
    assert f"**Label precision in 1 of 2 classes**: {overall['precision']:.3f} [" in card and "Overall" not in card
    assert "| c1 | 26 | 0 | 0 | 26 | 0 | no image with all 3 answers and a yes or no yet |" in card
    assert "captions hidden, but each of this demo run's placeholder images prints its caption" in card
    complete = [(rater, f"i{n}", "no" if n < 4 else "yes") for n in range(52) for rater in ("A", "B", "C")]
    images, _ = aggregate.image_figures(plan, complete, settings)
    overall = aggregate.overall_precision(images, settings)
    assert (overall["accepted"], overall["decided"], overall["classes"], overall["answers"]) == (48, 52, 2, 156)
    assert overall["withheld"] is None and overall["precision"] == pytest.approx(48 / 52)
    assert aggregate.raters_sharing(complete) == {"A", "B", "C"}
    assert sum(aggregate.droppable(r, 3) for r in images.to_pylist()) == 4
    two_no = [("A", "i0", "no"), ("B", "i0", "no")]  # a majority of the 3 wanted: a third answer cannot save it
    images, _ = aggregate.image_figures(plan, two_no, settings)
    assert [aggregate.droppable(r, 3) for r in images.to_pylist()][:2] == [True, False]


STATUS_LOADS = """
import json, sys
from imagenot.pipeline.cli import main
for args in {commands!r}:
    main(args, standalone_mode=False)
print(json.dumps(sorted(m for m in ("apache_beam", "scipy", "matplotlib", "crowdkit", "torch") if m in sys.modules)))
"""


def test_the_status_commands_print_their_table_without_beam_or_scipy(run):
    """Issue 50: they took 15 s, importing Beam and scipy to print a table (benchmarks/bench_cli_start.py
    times them)."""
    import subprocess
    import sys

    commands = [["review", "status", "--run", str(run)], ["review", "classes", "status", "--run", str(run)]]
    code = STATUS_LOADS.format(commands=commands)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *printed, loaded = done.stdout.splitlines()
    assert "images need more" in "\n".join(printed) and "classes need more" in "\n".join(printed)
    assert loaded == "[]"


def test_review_commands_write_nothing_where_there_is_no_run(tmp_path):
    """Issue 42, item 3: each review command checks the run first; a mistyped --run is one line."""
    from cli_runner import invoke

    from imagenot.pipeline.review.command import review_command

    config_only = tmp_path / "config-only"
    config_only.mkdir()
    (config_only / "config.yaml").write_text("corpus:\n  synth: {rows: 100}\n")
    for run_dir in (tmp_path / "NOPE", config_only):
        for args in (
            ["status"],
            ["export"],
            ["apply"],
            ["plan"],
            ["classes", "status"],
            ["classes", "export"],
            ["classes", "apply"],
        ):
            result = invoke(review_command, [*args, "--run", str(run_dir)])
            assert result.exit_code == 1, (args, result.output)
            assert "not a run with a finished" in result.output and "Traceback" not in result.output
            assert len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "NOPE").exists() and sorted(p.name for p in config_only.iterdir()) == ["config.yaml"]


def test_every_page_and_image_is_503_while_another_command_holds_the_run(app, run):
    """Issue 42, item 2: while the run's lock is held (a command may be rewriting the tars at the
    keys the server knows) pages and images answer 503 with Retry-After; after it, the run is read
    again before anything is served."""
    from imagenot.pipeline.run.lock import run_lock

    session, plain, _ = app
    client = plain.test_client()
    client.post("/rater", data={"name": "waiting"})
    task = next(iter(session.tasks.values()))
    paths = ["/next", f"/task/{task.id}", f"/image/{task.questions[0].image}"]
    with run_lock(str(run), 3600, create_dir=False):
        during = [client.get(p) for p in paths] + [client.post(f"/task/{task.id}", data={})]
    assert [(r.status_code, r.headers.get("Retry-After")) for r in during] == [(503, "5")] * 4
    after = [client.get(p) for p in paths]
    assert [r.status_code for r in after] == [303, 200, 200] and session.changing is False
    assert client.get("/").status_code in (200, 303)  # the name form is never refused

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
    per_class = aggregate.class_precision(images, classes, 0.95)
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


class Rater:
    """A browser-less rater on the live server: a cookie jar and a bounded request loop."""

    def __init__(self, base: str, name: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.open("/rater", {"name": name})
        self.sent: list[tuple[str, str]] = []  # (page, image) of each page the server confirmed
        self.attempted: list[tuple[str, str]] = []
        self.errors: list[Exception] = []

    def open(self, path: str, form: dict | None = None) -> tuple[str, str]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        with self.opener.open(self.base + path, data=data, timeout=60) as response:
            return response.geturl(), response.read().decode()

    def answer_pages(self, until: float) -> None:
        try:
            while time.monotonic() < until:
                url, page = self.open("/next")
                images = re.findall(r'name="a-([0-9a-f]{24})"', page)
                if not images:
                    return
                path = urllib.parse.urlsplit(url).path
                form = {f"a-{image}": "yes" for image in dict.fromkeys(images)}
                self.attempted += [(path, image[2:]) for image in form]
                self.open(path, form)
                self.sent += [(path, image[2:]) for image in form]
        except Exception as err:  # noqa: BLE001  (reported by the test)
            self.errors.append(err)


def test_eight_raters_at_once_lose_and_double_nothing(downloaded_run, tmp_path):
    import waitress.server

    run_dir = copy_run(downloaded_run, tmp_path / "run")
    config = load_run_config(str(run_dir))
    config = config.model_copy(update={"review": Review(raters=8, page_size=2)})
    review_plan.write_plan(str(run_dir), review_plan.make_plan(config, str(run_dir)))
    store = Store(str(run_dir))
    session = ReviewSession(str(run_dir), config.review, load_index(), store)
    port = free_loopback_port()
    server = waitress.server.create_server(create_app(session, store.secret()), host="127.0.0.1", port=port, threads=8)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        raters = [Rater(f"http://127.0.0.1:{port}", f"rater {i}") for i in range(8)]
        until = time.monotonic() + 15
        workers = [threading.Thread(target=r.answer_pages, args=(until,)) for r in raters]
        for w in workers:
            w.start()
        for w in workers:
            w.join(30)
    finally:
        server.close()
    assert [r.errors for r in raters] == [[]] * 8
    stored = store.all_answers()
    sent = {(f"rater {i}", image) for i, r in enumerate(raters) for _, image in r.sent}
    assert len(stored) == len({(name, image) for name, image, *_ in stored}) == len(sent) > 0
    assert {(name, image) for name, image, *_ in stored} == sent
    # every rater got through (the run's images, 8 answers each, last 15 s or run out)
    assert all(r.sent for r in raters)
    # a page sent again (a double click, a second tab) stores nothing more
    path, image = raters[0].sent[0]
    assert store.save(store.rater("rater 0"), path.rsplit("/", 1)[1], [(image, "no")]) == 0
    assert len(store.all_answers()) == len(stored)


def test_an_image_the_label_noise_audit_flags_gets_a_flagged_page(run, tmp_path):
    """The real audit (cleanlab) over probabilities that put two images of the largest class in
    another class: the plan asks about them on flagged pages, beside examples of both classes."""
    from cli_runner import invoke

    from imagenot.pipeline.audit.label_noise import label_noise_command

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

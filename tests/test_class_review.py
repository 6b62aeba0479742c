"""The class review as people use it: `imagenot review classes serve` in its own process, raters
over HTTP, `status`, `export` and `apply` through the command line, on the session's small
downloaded run (8 classes).

Two raters read every class: both drop the best-ranked one and keep the rest. `apply` vetoes it
(`ranking.vetoed` in RUN/config.yaml, fate `vetoed` in rank/ranking.tsv), builds the run again,
the next candidate in rank order takes its place and comes up for review on the running server,
and the card lists the dropped class with both answers and the class-level figure (7 of 8 kept,
with scipy's exact interval). Hostile requests get a 4xx and store nothing; 8 raters at once lose
and double nothing."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import threading
import time
from collections import Counter

import pytest
import yaml
from cli_runner import cli_command, invoke
from ports import free_loopback_port
from review_server import Client, Server
from scipy import stats
from shared_runs import copy_run

from imagenot.pipeline.review.command import review_command
from imagenot.wordnet.index import load_index

CLASS_PAGE = re.compile(r"/class/(n\d{8})$")


def _classes(*args: str) -> str:
    result = invoke(review_command, ["classes", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _ranked(run_dir) -> list[dict]:
    return list(csv.DictReader((run_dir / "rank/ranking.tsv").read_text().splitlines(), delimiter="\t"))


def _stored(run_dir) -> list[tuple[str, str, str]]:
    with sqlite3.connect(run_dir / "review/classes.sqlite") as db:
        return db.execute(
            "SELECT raters.name, image, answer FROM answers JOIN raters ON raters.id = rater ORDER BY 1, 2"
        ).fetchall()


def _answer_all(client: Client, answer) -> list[str]:
    """Answer class after class (`answer(wnid)`); the classes in the order given."""
    seen = []
    status, url, body = client.open("/next")
    while (page := CLASS_PAGE.search(url)) is not None:
        wnid = page.group(1)
        seen.append(wnid)
        status, url, body = client.open(f"/class/{wnid}", {f"a-{wnid}": answer(wnid)})
        assert status == 200, body
    assert b"Nothing left for you" in body, body[:300]
    return seen


@pytest.fixture(scope="module")
def served(downloaded_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("class-review")
    run_dir = copy_run(downloaded_run, folder / "run")
    server = Server(run_dir, free_loopback_port(), folder / "server.log", classes=True)
    server.start()
    yield run_dir, server
    server.kill()


def test_a_class_page_shows_the_class_its_captions_share_and_images(served):
    run_dir, server = served
    ranked = [r for r in _ranked(run_dir) if r["fate"] == "class"]
    first = ranked[0]["wnid"]
    index = load_index()
    pages = []
    for name in ("first reader", "second reader"):
        client = Client(server.base)
        client.sign_in(name)
        status, url, body = client.open(f"/class/{first}")
        assert status == 200 and url.endswith(f"/class/{first}")
        pages.append(body.decode())
    page = pages[0]
    synset = index[first]
    assert f'<span id="class">{synset.name}</span>' in page and synset.gloss in page
    assert "entity.n.01 › physical_entity.n.01" in page
    assert "rank 0 of the candidates (0 = best, as the report counts) · score " in page  # every number says what
    share = float(ranked[0]["pass_share"])
    assert f'<span id="share">{100 * share:.0f}%</span>' in page
    captions = re.findall(r'<li class="(kept|dropped)">', page)
    assert 0 < len(captions) <= 12
    shown = lambda p: p[p.index("<ol") : p.index("</ol>")]  # noqa: E731
    assert shown(pages[0]) == shown(pages[1])  # seeded: every rater reads the same captions
    images = re.findall(r'src="/image/([0-9a-f]{24})"', page)
    assert images, "the downloaded run's class has images: they are shown"
    status, _, data = client.open(f"/image/{images[0]}")
    assert status == 200 and data[:2] == b"\xff\xd8"


def test_hostile_requests_get_a_4xx_and_store_nothing(served):
    run_dir, server = served
    before = _stored(run_dir)
    client = Client(server.base)
    client.sign_in("careful")
    wnid = [r for r in _ranked(run_dir) if r["fate"] == "class"][0]["wnid"]
    other = "n02084071"  # dog.n.01: a real synset, not a class of this run
    for path in (
        f"/class/{other}",
        "/class/nope",
        "/class/../config.yaml",
        "/class/..%2F..%2Fconfig.yaml",
        "/image/..%2Fconfig.yaml",
        "/image/" + "a" * 24,
        "/static/../review/classes.sqlite",
    ):
        status, _, body = client.open(path)
        assert status == 404, path
        assert b"Traceback" not in body
    for form, headers, expected in (
        ({f"a-{wnid}": "maybe"}, {}, 400),
        ({f"a-{other}": "keep"}, {}, 400),
        ({"x": "y" * 100_000}, {}, 413),
        ({f"a-{wnid}": "keep"}, {"Origin": "http://evil.example"}, 403),
        ({f"a-{wnid}": "keep"}, {"Cookie": "imagenot_rater=forged.value"}, 401),
    ):
        status, _, body = (Client(server.base) if "Cookie" in headers else client).open(f"/class/{wnid}", form, headers)
        assert status == expected, (form.keys(), headers, body[:200])
    assert client.open(f"/class/{other}", {f"a-{other}": "keep"})[0] == 404
    assert _stored(run_dir) == before


def test_a_rater_reopens_a_class_sees_the_answer_and_changes_it(served):
    """Issue 43: an answer can be changed; the old one stays on record in the database."""
    run_dir, server = served
    client = Client(server.base)
    client.sign_in("second thoughts")
    status, url, _ = client.open("/next")
    first = CLASS_PAGE.search(url).group(1)
    status, url, _ = client.open(f"/class/{first}", {f"a-{first}": "keep"})
    second = CLASS_PAGE.search(url).group(1)
    page = client.open(f"/class/{second}")[2].decode()
    assert f'href="/class/{first}" id="previous"' in page  # a way back to the last answer
    page = client.open(f"/class/{first}")[2].decode()
    assert "Your answer: <b>keep</b>" in page and re.search(r'value="keep" checked', page)
    assert client.open(f"/class/{first}", {f"a-{first}": "drop"})[0] == 200
    mine = [(w, a) for n, w, a in _stored(run_dir) if n == "second thoughts"]
    assert mine == [(first, "drop")]
    with sqlite3.connect(run_dir / "review/classes.sqlite") as db:
        kept = db.execute("SELECT image, answer FROM replaced").fetchall()
    assert (first, "keep") in kept


def test_eight_raters_at_once_lose_and_double_nothing(served):
    """8 raters answer every class at once, each sending every page twice (a double click): every
    answer is stored once, and no class holds more than it wants (2)."""
    run_dir, server = served
    sent: dict[str, list[str]] = {}

    def rate(i: int) -> None:
        client = Client(server.base)
        client.sign_in(f"crowd {i}")
        status, url, body = client.open("/next")
        mine = []
        while (page := CLASS_PAGE.search(url)) is not None:
            wnid = page.group(1)
            status, url, body = client.open(f"/class/{wnid}", {f"a-{wnid}": "keep"})
            client.open(f"/class/{wnid}", {f"a-{wnid}": "keep"})  # a double click's second copy: nothing more
            mine.append(wnid)
        sent[f"crowd {i}"] = mine

    threads = [threading.Thread(target=rate, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    crowd = [(name, wnid, answer) for name, wnid, answer in _stored(run_dir) if name.startswith("crowd")]
    assert len(crowd) == len({(n, w) for n, w, _ in crowd})
    assert {a for _, _, a in crowd} <= {"keep"}
    assert {(n, w) for n, w, _ in crowd} <= {(n, w) for n, classes in sent.items() for w in classes}
    assert max(Counter(wnid for _, wnid, _ in _stored(run_dir)).values()) <= 2


def test_apply_vetoes_the_dropped_class_and_the_next_candidate_takes_its_place(served, tmp_path):
    run_dir, server = served
    work = copy_run(run_dir, tmp_path / "run")  # the crowd above answered the served run: start clean
    (work / "review/classes.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        (work / f"review/classes.sqlite{suffix}").unlink(missing_ok=True)
    server = Server(work, free_loopback_port(), tmp_path / "server.log", classes=True)
    server.start()
    try:
        ranked = [r["wnid"] for r in _ranked(work) if r["fate"] == "class"]
        vetoed = ranked[0]
        for name in ("Ann", "Bo"):
            client = Client(server.base)
            client.sign_in(name)
            seen = _answer_all(client, lambda wnid: "drop" if wnid == vetoed else "keep")
            assert sorted(seen) == sorted(ranked)
        status = _classes("status", "--run", str(work))
        assert f"1 dropped and not applied yet ({vetoed})" in status and f"0 of {len(ranked)} classes" in status
        applied = _classes("apply", "--run", str(work))
        assert f"vetoed {vetoed}" in applied
        config = yaml.safe_load((work / "config.yaml").read_text())
        assert config["ranking"]["vetoed"] == [vetoed]
        fates = {r["wnid"]: r["fate"] for r in _ranked(work)}
        assert fates[vetoed] == "vetoed"
        now = [r["wnid"] for r in _ranked(work) if r["fate"] == "class"]
        promoted = sorted(set(now) - set(ranked))
        assert len(now) == len(ranked) and len(promoted) == 1 and f"promoted {promoted[0]}" in applied
        classes = {c["wnid"] for c in json.loads((work / "rank/classes.json").read_text())}
        assert vetoed not in classes and promoted[0] in classes
        status = _classes("status", "--run", str(work))  # the vetoed class is still there, last
        assert re.search(rf"   - {vetoed} \S+ +0 +2 +0  drop, vetoed \(applied\)", status), status
        assert "1 class vetoed by an earlier apply (listed last)" in status
        # the running server puts the new class up and no longer shows the vetoed one
        client = Client(server.base)
        client.sign_in("Ann")
        deadline = time.monotonic() + 15
        while not CLASS_PAGE.search(client.open("/next")[1] or ""):
            assert time.monotonic() < deadline, "the running server did not put the promoted class up"
            time.sleep(0.3)
        assert client.open("/next")[1].endswith(f"/class/{promoted[0]}")
        page = client.open(f"/class/{promoted[0]}")[2].decode()  # it says whom it replaced
        assert f"promoted by imagenot review classes apply in place of {load_index()[vetoed].name} ({vetoed})" in page
        assert client.open(f"/class/{vetoed}")[0] == 404
    finally:
        server.kill()
    card = (work / "report/card.md").read_text()
    section = card[card.index("## Class review") : card.index("## Human review")]
    ci = stats.binomtest(len(ranked) - 1, len(ranked)).proportion_ci(0.95, method="exact")
    share = (len(ranked) - 1) / len(ranked)
    assert (
        f"{len(ranked) - 1} of the {len(ranked)} classes decided were kept, {share:.3f} [{ci.low:.3f}, {ci.high:.3f}]"
        in section
    )
    name = load_index()[vetoed].name
    assert f"| `{vetoed}` {name} | 0 | 2 | 0 | Ann: drop; Bo: drop |" in section
    # the vetoes are a recorded setting: the rank stage run again from the run's config keeps them
    result = invoke(cli_command("rank"), ["--run", str(work)])
    assert result.exit_code == 0, result.output
    assert {r["wnid"]: r["fate"] for r in _ranked(work)}[vetoed] == "vetoed"


def test_extra_candidates_are_offered_after_the_classes(served, tmp_path):
    """`review.extra_candidates`: the next candidates rank would promote come up too, so a veto's
    replacement can be reviewed before `apply` makes it a class."""
    from imagenot.pipeline.config.schema import load_run_config
    from imagenot.pipeline.review.class_plan import candidates

    run_dir, _ = served
    work = copy_run(run_dir, tmp_path / "run")
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["review"] = {**config.get("review", {}), "extra_candidates": 2}
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    classes = [r["wnid"] for r in _ranked(work) if r["fate"] == "class"]
    beyond = [r["wnid"] for r in _ranked(work) if r["fate"] == "beyond_top_k"][:2]
    assert beyond, "the shared run has no candidate beyond its classes"
    rows, _ = candidates(str(work), load_run_config(str(work)), load_index())
    assert [r["wnid"] for r in rows] == classes + beyond
    assert all("next in line, not a class yet" in r["standing"] for r in rows[len(classes) :])
    status = _classes("status", "--run", str(work))
    assert all(wnid in status for wnid in beyond) and f"of {len(classes) + len(beyond)} classes need more" in status


def test_any_class_list_can_be_reviewed_with_captions_from_a_corpus_sample(served, tmp_path):
    """`--list FILE` with the run's (synthetic) corpus: the list's classes in file order, each with
    captions that name one of its lemmas; the answers export as the run's review's do."""
    run_dir, _ = served
    classes = json.loads((run_dir / "rank/classes.json").read_text())
    listed = [c["wnid"] for c in classes[:3]] + ["n02084071"]  # and dog.n.01, which no caption names
    (tmp_path / "list.txt").write_text("\n".join(listed) + "\n")
    review = tmp_path / "list-review"
    args = ("--config", str(run_dir / "config.yaml"), "--list", str(tmp_path / "list.txt"))
    server = Server(review, free_loopback_port(), tmp_path / "server.log", *args, classes=True)
    server.start()
    try:
        client = Client(server.base)
        client.sign_in("list reader")
        status, url, body = client.open("/next")
        assert url.endswith(f"/class/{listed[0]}")
        page = body.decode()
        assert "line 1 of the list · " in page and "no estimate of the share" in page
        lemmas = [lemma.lower().split() for lemma in classes[0]["lemmas"].split(", ")]
        captions = [re.sub(r"[^a-z0-9]+", " ", c.lower()) for c in re.findall(r'<li class="kept">([^<]*)', page)]
        # each names a lemma, perhaps inflected or hyphenated ("nitric-bacteriums" for nitric bacterium)
        assert captions and all(any(all(w[:-1] in c for w in lemma) for lemma in lemmas) for c in captions)
        seen = _answer_all(client, lambda wnid: "drop" if wnid == "n02084071" else "keep")
        assert seen == listed
    finally:
        server.kill()
    exported = _classes("export", "--run", str(review), "--config", str(run_dir / "config.yaml"))
    assert "3 of 4 decided classes kept (0.750)" in exported
    results = json.loads((review / "review/class_results.json").read_text())
    assert [(c["wnid"], c["verdict"]) for c in results["classes"]] == sorted(
        (w, "drop" if w == "n02084071" else "keep") for w in listed
    )
    status = _classes("status", "--run", str(review), "--list", str(tmp_path / "list.txt"))
    assert "4 answers by 1 rater; 4 of 4 classes need more" in status


def test_a_class_answered_only_unsure_is_offered_again_until_a_rater_decides_it(tmp_path):
    """Two raters answer a class unsure and another keep (2 answers wanted each): the unsure one is
    offered to a third rater and a fourth until one keeps it, and after a restart the same; a
    rater who changes their keep to unsure opens it again. With `review.unsure_classes_again`
    false its 2 answers close it, and the store refuses a third."""
    from imagenot.pipeline.review.class_session import ClassSession
    from imagenot.pipeline.review.store import Store

    rows = [{"wnid": w, "position": i} for i, w in enumerate(("n00000001", "n00000002"))]
    unsure, kept = (r["wnid"] for r in rows)

    def session(folder, again: bool = True) -> ClassSession:
        return ClassSession(str(folder), 2, Store(str(folder), "classes.sqlite"), lambda: (rows, {}), [], again)

    def answer(review: ClassSession, rater: int, wnid: str, given: str) -> None:
        review.record(rater, review.tasks[wnid], [(wnid, given)])

    review = session(tmp_path / "again")
    a, b, c, d, e = (review.rater(name) for name in "abcde")
    for rater in (a, b):
        answer(review, rater, unsure, "unsure")
        answer(review, rater, kept, "keep")
    assert review.next_task(a) is None and review.next_task(c).id == unsure
    assert review.progress(c) == {**review.progress(c), "left_for_you": 1, "answers_wanted": 1}
    answer(review, c, unsure, "unsure")
    assert review.next_task(c) is None and review.next_task(d).id == unsure  # still undecided
    assert session(tmp_path / "again").next_task(d).id == unsure  # a restarted server says the same
    answer(review, d, unsure, "keep")
    assert review.next_task(e) is None and review.progress(e)["answers_wanted"] == 0
    answer(review, d, unsure, "unsure")  # d thinks again: undecided once more
    assert review.next_task(e).id == unsure and review.progress(e)["answers_wanted"] == 1
    closed = session(tmp_path / "closed", again=False)
    a, b, c = (closed.rater(name) for name in "abc")
    for rater in (a, b):
        answer(closed, rater, unsure, "unsure")
    assert closed.next_task(c).id == kept
    assert closed.store.save(c, unsure, [(unsure, "keep")], 2, None) == []

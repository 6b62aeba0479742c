"""Human review end to end in a real browser: `imagenot review serve` in its own process, two raters
in two headless chromium sessions (selenium, Debian's chromium-driver) answering by keyboard, the
server killed mid-review and restarted, then export, the card's section and `review apply`, each
checked against figures worked out by hand.

The run is the session's small downloaded run: K classes with images (up to 5 each, some short
after failed downloads), all reviewed (a class is smaller than the 402 images its interval asks
for), one page each. On a page of m images rater A answers y (m-1 times) then n, rater B the
last three (or fewer) u n n after y's. So per class the last image is rejected (no, no), the one
before it, when there is one, tied (selection frequency 0.5, kept at `min_selection` 0.5), the
one before that kept on one yes and one unsure, the rest kept on two yeses: precision (m-1)/m
per class, (N-K)/N overall for N images, and K images dropped by `apply`, replaced from the
reserve where a class has candidates left there. Before A answers its first page, arrows, h j k l
and a mouse click are tried on it (and undone).
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from browser import open_page
from cli_runner import cli_command, invoke
from ports import free_loopback_port
from review_server import Server, in_view, review_browser, viewport
from scipy import stats
from shared_runs import copy_run

from imagenot.pipeline.commands.why import why
from imagenot.pipeline.review.command import review_command

report_command = cli_command("report")

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

KEYS = {"A": lambda m: "y" * (m - 1) + "n", "B": lambda m: "y" * max(m - 3, 0) + "unn"[-min(m, 3) :]}


def _review(*args: str) -> str:
    result = invoke(review_command, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _sign_in(driver, base: str, name: str) -> None:
    driver.get(base + "/")
    box = driver.find_element(By.NAME, "name")
    box.send_keys(name)
    box.submit()


def _answer_page(driver, rater: str) -> tuple[str, int] | None:
    """Answer the open page by keyboard alone; the page's class name and images (None: nothing was left)."""
    if not driver.find_elements(By.ID, "answers"):
        return None
    name = driver.find_element(By.ID, "class").text
    task = driver.current_url
    images = len(driver.find_elements(By.CSS_SELECTOR, ".item"))
    keys = KEYS[rater](images)
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(*keys)
    checked = driver.execute_script("return [...document.querySelectorAll('input:checked')].map(i => i.value)")
    assert "".join(v[0] for v in checked) == keys  # every key marked the image it was on, then moved on
    body.send_keys("\n")  # Enter sends the page
    deadline = time.monotonic() + 20
    while driver.current_url == task and time.monotonic() < deadline:
        time.sleep(0.05)
    return name, images


MOVES = ("ArrowRight", "ArrowLeft", "l", "h", "j", "k", "ArrowDown", "ArrowUp")
ARROWS = {
    "ArrowRight": Keys.ARROW_RIGHT,
    "ArrowLeft": Keys.ARROW_LEFT,
    "ArrowDown": Keys.ARROW_DOWN,
    "ArrowUp": Keys.ARROW_UP,
}


def _current(driver) -> int:
    return driver.execute_script("return [...document.querySelectorAll('.item')].findIndex(e => e.matches('.current'))")


def _moves_and_mouse(driver) -> dict:
    """On the open page, before it is answered: where arrows and h j k l move the focus (in a
    window two images wide, so j and k have a row to move by), and what a mouse click on an
    answer marks; then the page as it was (focus on the first image, nothing answered)."""
    size = driver.get_window_size()
    driver.set_window_size(560, size["height"])
    body = driver.find_element(By.TAG_NAME, "body")
    columns = driver.execute_script(
        "const items = [...document.querySelectorAll('.item')];"
        "return items.filter(e => e.offsetTop === items[0].offsetTop).length"
    )
    seen = {"columns": columns, "items": len(driver.find_elements(By.CSS_SELECTOR, ".item")), "first": _current(driver)}
    seen["moves"] = []
    for key in MOVES:
        body.send_keys(ARROWS.get(key, key))
        seen["moves"].append(_current(driver))
    item = driver.find_elements(By.CSS_SELECTOR, ".item")[seen["items"] - 1]
    item.find_element(By.CSS_SELECTOR, "input[value='no']").find_element(By.XPATH, "..").click()  # its label
    seen["clicked"] = driver.execute_script(
        "const item = [...document.querySelectorAll('.item')].at(-1);"
        "return [item.querySelector('input:checked')?.value, item.className, "
        "[...document.querySelectorAll('input:checked')].length]"
    )
    seen["current_after_click"] = _current(driver)
    driver.execute_script("document.querySelectorAll('input:checked').forEach(i => { i.checked = false; });")
    driver.execute_script("document.querySelectorAll('.item').forEach(e => e.classList.remove('yes', 'no', 'unsure'));")
    driver.execute_script("document.activeElement.blur();")
    body.send_keys(*["h"] * seen["items"])  # back to the first image
    driver.set_window_size(size["width"], size["height"])
    return seen


def _sent_with_enter(driver, url: str) -> tuple[bool, str, bool]:
    """Enter pressed where the rater is, at the top of the page: whether the page stayed, what the
    notice says, and whether it is on screen."""
    driver.execute_script("window.scrollTo(0, 0)")
    driver.find_element(By.TAG_NAME, "body").send_keys("\n")
    time.sleep(0.2)
    notice = driver.find_element(By.ID, "notice")
    return driver.current_url == url, notice.text, in_view(driver, notice)


def _image_page_checks(driver, shots) -> dict:
    """On A's first page, before it is answered: each button shows its key and its accessible name
    (chromium's computed name) its image and answer, the demo's placeholders are said, the page
    counts its answers; at 1280x800 and 390x844, Enter with nothing chosen says so on screen and
    sends nothing, Enter with the second image answered says the rest come back later, on screen,
    and moves back to the first image, and the class and its gloss stay on screen scrolled
    to the end (screenshots of each kept). The page is left as it was."""
    size, url = driver.get_window_size(), driver.current_url
    items = driver.find_elements(By.CSS_SELECTOR, ".item")
    seen = {
        "buttons": [e.text for e in items[0].find_elements(By.TAG_NAME, "label")],
        "names": [
            [e.accessible_name for e in item.find_elements(By.TAG_NAME, "input")] for item in (items[0], items[-1])
        ],
        "items": len(items),
        "placeholders": driver.find_element(By.ID, "placeholders").text,
        "count": driver.find_element(By.CSS_SELECTOR, ".count").text,
    }
    for width, height in ((1280, 800), (390, 844)):
        viewport(driver, width, height)
        seen[f"empty {width}"] = _sent_with_enter(driver, url)
        driver.find_element(By.TAG_NAME, "body").send_keys("l", "y")  # the second image answered, on to the third
        seen[f"half {width}"] = (*_sent_with_enter(driver, url), _current(driver))
        driver.save_screenshot(str(shots / f"image-page-half-{width}x{height}.png"))
        driver.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        driver.save_screenshot(str(shots / f"image-page-{width}x{height}.png"))
        seen[width] = [
            in_view(driver, driver.find_element(By.CSS_SELECTOR, f".classbar #{part}, .classbar .{part}"))
            for part in ("class", "gloss")
        ]
        driver.execute_script(
            "document.querySelectorAll('input:checked').forEach(i => { i.checked = false; mark(i.closest('.item')); });"
            "count(); warned = false; document.getElementById('notice').textContent = ''; show(0); scrollTo(0, 0);"
        )
    driver.set_window_size(size["width"], size["height"])
    return seen


@pytest.fixture(scope="module")
def reviewed(downloaded_run, tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser-review")
    run_dir = copy_run(downloaded_run, folder / "run")
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    config["review"] = {"raters": 2, "min_decided_images": 5}  # the run's few images: a headline is stated
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
    planned = _review("plan", "--run", str(run_dir))
    server = Server(run_dir, free_loopback_port(), folder / "server.log")
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    a, b = review_browser(folder / "a"), review_browser(folder / "b")
    pages = {"A": [], "B": []}
    try:
        _sign_in(a, base, "Ann <b>A</b>")
        _sign_in(b, base, "Bo")
        checks = _image_page_checks(a, folder)  # on A's first page, before it is answered
        moves = _moves_and_mouse(a)
        for _ in range(2):  # both at once, page after page
            pages["A"].append(_answer_page(a, "A"))
            pages["B"].append(_answer_page(b, "B"))
        left_before_kill = a.find_element(By.ID, "left").text
        server.kill()
        server.start()  # nothing answered is lost: the raters go on where they were
        a.get(base + "/")
        b.get(base + "/")
        assert a.find_element(By.ID, "rater").text == "Ann <b>A</b>"  # the cookie outlives the server; the name is text
        assert a.find_element(By.ID, "left").text == left_before_kill
        for driver, rater in ((a, "A"), (b, "B")):
            while (page := _answer_page(driver, rater)) is not None:
                pages[rater].append(page)
                assert len(pages[rater]) <= 8, "a page came back"
        done_page = a.page_source
    finally:
        a.quit()
        b.quit()
        server.kill()
    plan = pq.read_table(run_dir / "review/plan.parquet")
    images, classes = plan.num_rows, len(set(plan.column("class_index").to_pylist()))
    sizes = [m for _, m in pages["A"]]
    return {
        "run": run_dir,
        "planned": planned,
        "pages": pages,
        "moves": moves,
        "checks": checks,
        "shots": folder,
        "done": done_page,
        "images": images,
        "K": classes,
        "k2": sum(m >= 2 for m in sizes),
        "k3": sum(m >= 3 for m in sizes),
        "exported": _review("export", "--run", str(run_dir)),
        "status": _review("status", "--run", str(run_dir)),
    }


def test_two_raters_answer_every_page_by_keyboard_and_a_kill_loses_nothing(reviewed):
    n, k, k2, k3 = (reviewed[key] for key in ("images", "K", "k2", "k3"))
    assert f"{n} images, {2 * n} answers wanted (2 raters each)" in reviewed["planned"]
    assert [len({name for name, _ in p}) for p in reviewed["pages"].values()] == [k, k]  # each class page once each
    assert sum(m for _, m in reviewed["pages"]["A"]) == n
    assert "Nothing left for you" in reviewed["done"]
    with sqlite3.connect(reviewed["run"] / "review/answers.sqlite") as db:
        stored = db.execute(
            "SELECT raters.name, answer, COUNT(*) FROM answers JOIN raters ON raters.id = rater GROUP BY 1, 2"
        ).fetchall()
    assert sorted(stored) == [
        ("Ann <b>A</b>", "no", k),
        ("Ann <b>A</b>", "yes", n - k),
        ("Bo", "no", k + k2),
        ("Bo", "unsure", k3),
        ("Bo", "yes", n - k - k2 - k3),
    ]
    answers = pq.read_table(reviewed["run"] / "review/answers.parquet")
    assert answers.num_rows == 2 * n


def test_arrows_and_hjkl_move_the_focus_and_a_click_marks_the_answer(reviewed):
    """On A's first page (class 0's 3 images, two to a row in the narrowed window): right and l
    move one image on, left and h one back, down and j one row down, up and k one row up; a click
    on an image's `no` marks that image no (and moves the focus to it), and nothing else."""
    moves = reviewed["moves"]
    c, m = moves["columns"], moves["items"]
    assert m > c >= 2, "the test wants a page with more images than a row holds"
    assert moves["first"] == 0
    assert moves["moves"] == [1, 0, 1, 0, c, 0, c, 0]
    value, classes, checked = moves["clicked"]
    assert value == "no" and "no" in classes.split() and checked == 1
    assert moves["current_after_click"] == m - 1


def test_the_image_page_keeps_its_class_and_its_notices_in_view_and_names_each_answer(reviewed):
    checks = reviewed["checks"]
    m = checks["items"]
    assert checks["buttons"] == ["yes [y]", "no [n]", "unsure [u]"]
    assert checks["names"] == [[f"{a}, image {i} of {m}" for a in ("yes", "no", "unsure")] for i in (1, m)]
    assert "its images are placeholders, not photos" in checks["placeholders"]  # the demo server's pictures
    assert re.fullmatch(rf"0 of {m} answered", checks["count"])
    for width in (1280, 390):
        assert checks[f"empty {width}"] == (True, "No image has an answer yet: choose one per image first.", True)
        stayed, notice, on_screen, current = checks[f"half {width}"]
        assert stayed and on_screen and current == 0, checks[f"half {width}"]  # back on the first without an answer
        assert notice.startswith(f"{m - 1} of {m} images have no answer yet: they come back to you after your other")
        assert checks[width] == [True, True]
    for shot in ("image-page-1280x800.png", "image-page-390x844.png", "image-page-half-390x844.png"):
        assert (reviewed["shots"] / shot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_figures_and_the_card_section_match_the_hand_count(reviewed, tmp_path):
    run_dir = reviewed["run"]
    n, k, k2, k3 = (reviewed[key] for key in ("images", "K", "k2", "k3"))
    results = json.loads((run_dir / "review/results.json").read_text())
    sizes = {name: m for name, m in reviewed["pages"]["A"]}
    assert [(c["accepted"], c["decided"], c["unsure_only"]) for c in results["per_class"]] == [
        (sizes[c["name"]] - 1, sizes[c["name"]], 0) for c in results["per_class"]
    ]
    overall = results["overall"]
    ci = stats.binomtest(n - k, n).proportion_ci(0.95, method="exact")
    assert (overall["accepted"], overall["decided"]) == (n - k, n)
    assert (overall["low"], overall["high"]) == pytest.approx((ci.low, ci.high))
    kinds = {"no": 2 * k + k2, "unsure": k3, "yes": 2 * n - 2 * k - k2 - k3}
    assert results["unsure_answers"] == k3 and results["answers_by_kind"] == kinds
    images = pq.read_table(run_dir / "review/images.parquet").to_pylist()
    assert sorted(r["selection_frequency"] for r in images) == [0.0] * k + [0.5] * k2 + [1.0] * (n - k - k2)
    assert (
        "agrees with the others' majority" in reviewed["status"] and f"0 of {n} images need more" in reviewed["status"]
    )
    reported = invoke(report_command, ["--run", str(run_dir)])
    assert reported.exit_code == 0, reported.output
    card = (run_dir / "report/card.md").read_text()
    section = card[card.index("## Human review") :]
    precision = f"{(n - k) / n:.3f} [{ci.low:.3f}, {ci.high:.3f}] (95% Clopper-Pearson), {n - k} of {n}"
    assert n >= 5 and f"**Overall label precision**: {precision}" in section
    assert f"in {k} classes of {k}, on {2 * n} answers" in section and "None" not in section
    assert f"2 raters gave {2 * n} answers (no {kinds['no']}, unsure {k3}, yes {kinds['yes']})" in section
    assert f"| Ann &lt;b&gt;A&lt;/b&gt; | {n} |" in section and "<b>A</b>" not in section
    assert "**Dropped by review**: 0 images." in section
    html = (run_dir / "report/report.html").read_text()
    assert 'id="review"' in html and 'alt="per-class precision"' in html and "<b>A</b>" not in html
    seen = open_page(run_dir / "report/report.html", tmp_path)  # on a phone, 390x844, as a reader sees it
    assert not seen["wider_than_window"] and seen["cut"] == [] and seen["broken"] == []
    assert (seen["raw_marks"], seen["nulls"], seen["empty_cells"], seen["repeated_headings"]) == ([], [], 0, [])


def test_compare_rankings_can_keep_to_the_images_review_kept(reviewed, tmp_path):
    from imagenot.pipeline.audit.rankings_command import compare_rankings_command

    run_dir, n, k = reviewed["run"], reviewed["images"], reviewed["K"]
    images = pq.read_table(run_dir / "review/images.parquet").to_pylist()
    kept = [r["row_id"] for r in images if r["accepted"]]
    rows = []
    for m, model in enumerate(
        ("small", "medium", "large")
    ):  # right on the first m + 1 kept images, and on every rejected one
        rows += [
            {"model": model, "row_id": r["row_id"], "correct": not r["accepted"] or kept.index(r["row_id"]) <= m}
            for r in images
        ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "b.parquet")
    (tmp_path / "acc.csv").write_text(
        "model,accuracy_a,n_a,accuracy_b,n_b\nsmall,0.5,100,0.9,10\nmedium,0.6,100,0.9,10\nlarge,0.7,100,0.9,10\n"
    )
    result = invoke(
        compare_rankings_command,
        [
            "--input",
            str(tmp_path / "acc.csv"),
            "--out",
            str(tmp_path / "out"),
            "--reviewed-run",
            str(run_dir),
            "--predictions-b",
            str(tmp_path / "b.parquet"),
            "--resamples",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    models = json.loads((tmp_path / "out/rankings.json").read_text())["models"]
    assert [(models[m]["accuracy_b"], models[m]["n_b"]) for m in ("small", "medium", "large")] == [
        (1 / (n - k), n - k),
        (2 / (n - k), n - k),
        (3 / (n - k), n - k),
    ]


def test_apply_drops_the_rejected_backfills_and_puts_the_new_images_up(reviewed, tmp_path):
    run_dir = copy_run(reviewed["run"], tmp_path / "run")
    rejected = {
        r["row_id"]
        for r in pq.read_table(run_dir / "review/images.parquet").to_pylist()
        if r["selection_frequency"] == 0
    }
    # the shared run keeps reserve candidates for some classes: those its download did not use up
    sampled = {
        r["class_index"]: r
        for r in csv.DictReader((run_dir / "sample/class_sampling.tsv").read_text().splitlines(), delimiter="\t")
    }
    fetched = csv.DictReader((run_dir / "download/class_downloads.tsv").read_text().splitlines(), delimiter="\t")
    with_reserve = sorted(
        int(r["class_index"]) for r in fetched if int(sampled[r["class_index"]]["reserve"]) > int(r["reserve_used"])
    )
    assert with_reserve, "the shared run has no class with reserve left: nothing to backfill from"
    reserve = {r["row_id"]: r["class_index"] for r in pq.read_table(run_dir / "sample/reserve").to_pylist()}
    before = {r["row_id"] for r in pq.read_table(run_dir / "download/dataset").to_pylist()}
    output = _review("apply", "--run", str(run_dir), "--min-selection", "0.5")
    said = re.search(
        r"review apply: dropped (\d+) images? the raters rejected; (\d+) images? came from the reserve in 1 pass "
        r"\(in the dropped images' places, and in any class still short\), (\d+) of them put up for review$",
        output,
        re.MULTILINE,
    )
    assert said is not None, output
    for step in ("reading the answers", "drop pass 1: ", "download round 0: ", "report: running", "export: running"):
        assert f"  {step}" in output, step  # not silent while it works (issue 50)
    done = dict(zip(("dropped", "backfilled", "put_up_for_review"), map(int, said.groups())))
    assert done["dropped"] == reviewed["K"]
    dataset = {r["row_id"] for r in pq.read_table(run_dir / "download/dataset").to_pylist()}
    assert not rejected & dataset
    # each class with candidates left in its reserve replaces its rejected image by the next of them
    new = dataset - before
    assert sorted(reserve[r] for r in new) == with_reserve
    assert done["backfilled"] == done["put_up_for_review"] == len(with_reserve) > 0
    plan = pq.read_table(run_dir / "review/plan.parquet").to_pylist()
    added = [r for r in plan if r["added_by"] == "review_apply"]
    assert {r["row_id"] for r in added} == new and len(added) == len(new)
    figures = json.loads((run_dir / "download/figures.json").read_text())
    k = reviewed["K"]
    assert figures["dropped_by_review"] == k and "review_rejected" not in figures["dropped_by_audits"]
    assert figures["fetches"][-1]["command"] == "review apply"  # its backfill's rounds, named in the card
    assert f"{figures['fetches'][-1]['rounds']} by `imagenot review apply`" in (run_dir / "report/card.md").read_text()
    card = (run_dir / "report/card.md").read_text()
    assert f"**Dropped by review**: {k} images (`imagenot review apply`, reason `review_rejected`)" in card
    assert f"Human review dropped {k} images its raters rejected" in card
    exported = {
        r
        for split in ("train", "test")
        for r in pq.read_table(run_dir / f"dataset/{split}.parquet").column("row_id").to_pylist()
    }
    assert exported == dataset  # the export was written again
    wnid = plan[0]["wnid"]
    said = invoke(why, [wnid, "--run", str(run_dir)])
    assert (
        "review: dropped 1 images the raters rejected (review_rejected)" in said.output
        and "(0 yes, 2 no)" in said.output
    )

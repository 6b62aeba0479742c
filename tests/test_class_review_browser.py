"""The class review in a real browser: `imagenot review classes serve` in its own process, two
raters in two headless chromium sessions (selenium, Debian's chromium-driver). Rater A answers by
keyboard alone: y keep, n drop, u unsure, each followed by Enter, in turn over the classes; rater
B by mouse: a click on the answer's label, then a click on the send button, always keep. Every
answer each browser gave is the one stored, and `status` counts them."""

from __future__ import annotations

import sqlite3
import time

import pytest
from cli_runner import invoke
from ports import free_loopback_port
from review_server import Server, in_view, review_browser, viewport
from shared_runs import copy_run

from imagenot.pipeline.review.command import review_command

pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402

KEYS = "ynu"
ANSWER = {"y": "keep", "n": "drop", "u": "unsure"}


def _sign_in(driver, base: str, name: str) -> None:
    driver.get(base + "/")
    box = driver.find_element(By.NAME, "name")
    box.send_keys(name)
    box.submit()


def _wait_for_another_page(driver, url: str) -> None:
    deadline = time.monotonic() + 20
    while driver.current_url == url and time.monotonic() < deadline:
        time.sleep(0.05)


def _by_keyboard(driver) -> tuple[dict[str, str], str | None]:
    """Every class answered by keys alone; and where Enter on the second page's link back led."""
    given, followed = {}, None
    while driver.find_elements(By.ID, "answers"):
        url, wnid = driver.current_url, driver.current_url.rsplit("/", 1)[1]
        if len(given) == 1 and followed is None:  # Enter on a link follows it, it does not send the page
            driver.find_element(By.ID, "previous").send_keys("\n")
            _wait_for_another_page(driver, url)
            followed = driver.current_url
            driver.get(url)
        key = KEYS[len(given) % 3]
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys(key)
        checked = driver.execute_script("return document.querySelector('input:checked').value")
        assert checked == ANSWER[key]
        assert ANSWER[key] in driver.find_element(By.CSS_SELECTOR, ".item").get_attribute("class").split()
        body.send_keys("\n")
        _wait_for_another_page(driver, url)
        given[wnid] = ANSWER[key]
    return given, followed


def _by_mouse(driver) -> dict[str, str]:
    given = {}
    while driver.find_elements(By.ID, "answers"):
        url, wnid = driver.current_url, driver.current_url.rsplit("/", 1)[1]
        driver.find_element(By.CSS_SELECTOR, "input[value='keep']").find_element(By.XPATH, "..").click()
        driver.find_element(By.CSS_SELECTOR, "button[type='submit']").click()
        _wait_for_another_page(driver, url)
        given[wnid] = "keep"
    return given


# Every control a rater uses has a name a screen reader reads (what axe's "label" and "button-name"
# rules check): an input inside a label, or with aria-label; a button with text or aria-label; an
# image with alt text. The names of those without one.
UNLABELLED = """
const named = e => (e.getAttribute('aria-label') || '').trim() || (e.closest('label')?.textContent || '').trim()
  || (e.labels && [...e.labels].map(l => l.textContent).join('').trim())
  || (e.tagName === 'BUTTON' && e.textContent.trim()) || (e.tagName === 'IMG' && (e.alt || '').trim());
return [...document.querySelectorAll('input:not([type=hidden]), button, select, textarea, img, a')]
  .filter(e => !named(e) && !(e.tagName === 'A' && e.textContent.trim())).map(e => e.outerHTML.slice(0, 80));
"""


def _page_checks(driver, shots) -> dict:
    """On a class page before it is answered: the evidence first and the answer within one screen at
    1280x800 and 390x844 (screenshots kept), each button with its key, every control labelled, and
    Enter with nothing chosen said, not sent."""
    seen = {
        "unlabelled": driver.execute_script(UNLABELLED),
        "placeholders": driver.find_element(By.ID, "placeholders").text,
    }
    for width, height in ((1280, 800), (390, 844)):
        viewport(driver, width, height)
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(str(shots / f"class-page-{width}x{height}.png"))
        seen[width] = {"answer in view": in_view(driver, "answers"), "name in view": in_view(driver, "class")}
    driver.set_window_size(1280, 800)
    evidence, form = (driver.find_element(By.CSS_SELECTOR, c).rect for c in (".evidence", "#answers"))
    seen["answer beside the evidence"] = form["x"] >= evidence["x"] + evidence["width"] - 1
    seen["buttons"] = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#answers label")]
    url = driver.current_url
    driver.find_element(By.TAG_NAME, "body").send_keys("\n")
    time.sleep(0.3)
    seen["empty enter"] = (driver.current_url == url, driver.find_element(By.ID, "notice").text)
    return seen


def test_two_raters_answer_every_class_by_keyboard_and_by_mouse(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    server = Server(run_dir, free_loopback_port(), tmp_path / "server.log", classes=True)
    server.start()
    a, b = review_browser(tmp_path / "a"), review_browser(tmp_path / "b")
    try:
        _sign_in(a, server.base, "Keys")
        _sign_in(b, server.base, "Mouse")
        assert a.find_element(By.ID, "class").text and "rank 0 of the candidates" in a.page_source
        checks = _page_checks(a, tmp_path)
        (by_keys, followed), by_mouse = _by_keyboard(a), _by_mouse(b)
        done = a.page_source
    finally:
        a.quit()
        b.quit()
        server.kill()
    assert "Nothing left for you" in done
    assert checks["unlabelled"] == [] and "its images are placeholders, not photos" in checks["placeholders"]
    assert followed is not None and followed.endswith(f"/class/{next(iter(by_keys))}")  # back to the first class
    assert checks[1280] == checks[390] == {"answer in view": True, "name in view": True}
    assert checks["answer beside the evidence"]
    assert checks["buttons"] == ["keep [y]", "drop [n]", "unsure [u]"]
    assert checks["empty enter"] == (True, "Choose an answer first (the keys are on the buttons).")
    for shot in ("class-page-1280x800.png", "class-page-390x844.png"):
        assert (tmp_path / shot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with sqlite3.connect(run_dir / "review/classes.sqlite") as db:
        query = "SELECT raters.name, image, answer FROM answers JOIN raters ON raters.id = rater"
        stored = db.execute(query).fetchall()
    expected = {("Keys", w, v) for w, v in by_keys.items()} | {("Mouse", w, v) for w, v in by_mouse.items()}
    assert set(stored) == expected and len(stored) == len(expected)
    assert len(by_keys) == len(by_mouse) == 8  # every class once each
    status = invoke(review_command, ["classes", "status", "--run", str(run_dir)])
    assert status.exit_code == 0, status.output
    assert "16 answers by 2 raters; 0 of 8 classes need more" in status.output

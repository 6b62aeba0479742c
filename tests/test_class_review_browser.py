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
from review_server import Server, review_browser
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


def _by_keyboard(driver) -> dict[str, str]:
    given = {}
    while driver.find_elements(By.ID, "answers"):
        url, wnid = driver.current_url, driver.current_url.rsplit("/", 1)[1]
        key = KEYS[len(given) % 3]
        body = driver.find_element(By.TAG_NAME, "body")
        body.send_keys(key)
        checked = driver.execute_script("return document.querySelector('input:checked').value")
        assert checked == ANSWER[key]
        assert ANSWER[key] in driver.find_element(By.CSS_SELECTOR, ".item").get_attribute("class").split()
        body.send_keys("\n")
        _wait_for_another_page(driver, url)
        given[wnid] = ANSWER[key]
    return given


def _by_mouse(driver) -> dict[str, str]:
    given = {}
    while driver.find_elements(By.ID, "answers"):
        url, wnid = driver.current_url, driver.current_url.rsplit("/", 1)[1]
        driver.find_element(By.CSS_SELECTOR, "input[value='keep']").find_element(By.XPATH, "..").click()
        driver.find_element(By.CSS_SELECTOR, "button[type='submit']").click()
        _wait_for_another_page(driver, url)
        given[wnid] = "keep"
    return given


def test_two_raters_answer_every_class_by_keyboard_and_by_mouse(downloaded_run, tmp_path):
    run_dir = copy_run(downloaded_run, tmp_path / "run")
    server = Server(run_dir, free_loopback_port(), tmp_path / "server.log", classes=True)
    server.start()
    a, b = review_browser(tmp_path / "a"), review_browser(tmp_path / "b")
    try:
        _sign_in(a, server.base, "Keys")
        _sign_in(b, server.base, "Mouse")
        assert a.find_element(By.ID, "class").text and "Candidate" in a.page_source
        by_keys, by_mouse = _by_keyboard(a), _by_mouse(b)
        done = a.page_source
    finally:
        a.quit()
        b.quit()
        server.kill()
    assert "Nothing left for you" in done
    with sqlite3.connect(run_dir / "review/classes.sqlite") as db:
        query = "SELECT raters.name, image, answer FROM answers JOIN raters ON raters.id = rater"
        stored = db.execute(query).fetchall()
    expected = {("Keys", w, v) for w, v in by_keys.items()} | {("Mouse", w, v) for w, v in by_mouse.items()}
    assert set(stored) == expected and len(stored) == len(expected)
    assert len(by_keys) == len(by_mouse) == 8  # every class once each
    status = invoke(review_command, ["classes", "status", "--run", str(run_dir)])
    assert status.exit_code == 0, status.output
    assert "16 answers by 2 raters; 0 of 8 classes need more" in status.output

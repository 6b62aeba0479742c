"""A review server as a user starts it (`imagenot review serve` or `imagenot review classes serve`),
in its own process group, and a browser-less rater for it: a cookie jar over urllib."""

from __future__ import annotations

import http.cookiejar
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from browser import FLAGS


class Server:
    """`imagenot review [classes] serve --run RUN --port PORT [ARGS]` in its own process group."""

    def __init__(self, run_dir: Path, port: int, log: Path, *args: str, classes: bool = False):
        self.run_dir, self.port, self.log, self.args = run_dir, port, log, args
        self.command = ["review", *(["classes"] if classes else []), "serve"]
        self.process: subprocess.Popen | None = None
        self.base = f"http://127.0.0.1:{port}"

    def start(self) -> None:
        command = [
            str(Path(sys.executable).with_name("imagenot")),
            *self.command,
            "--run",
            str(self.run_dir),
            "--port",
            str(self.port),
            *self.args,
        ]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                with urllib.request.build_opener().open(f"{self.base}/", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        self.kill()  # a server that never answered is not left behind
        raise AssertionError(f"the review server did not answer within 120 s:\n{self.log.read_text()}")

    def kill(self) -> None:
        """As a crash would: SIGKILL, no chance to flush or close anything."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


class Client:
    """A rater without a browser: its own cookies; `open` returns (status, final URL, body)."""

    def __init__(self, base: str):
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def open(self, path: str, form: dict | None = None, headers: dict | None = None) -> tuple[int, str, bytes]:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        request = urllib.request.Request(self.base + path, data=data, headers=headers or {})
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, response.geturl(), response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.geturl(), error.read()

    def sign_in(self, name: str) -> None:
        status, _, body = self.open("/rater", {"name": name})
        assert status == 200, body


def review_browser(folder: Path):
    """Headless chromium driven by selenium (Debian's chromium-driver), its profile in `folder`;
    skips the test where either is missing."""
    webdriver = pytest.importorskip("selenium.webdriver")
    if not shutil.which("chromedriver"):
        pytest.skip("no chromedriver (scripts/setup.sh installs Debian's chromium-driver)")
    options = webdriver.ChromeOptions()
    for flag in (*FLAGS, "--window-size=1200,900", f"--user-data-dir={folder}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(
        options=options, service=webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    )
    driver.set_page_load_timeout(30)
    return driver


def viewport(driver, width: int, height: int) -> None:
    """The window sized so that the page itself is `width` x `height` (a phone's 390x844, say)."""
    driver.set_window_size(width, height)
    inner = driver.execute_script("return [innerWidth, innerHeight]")
    driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])


IN_VIEW = """const r = (typeof arguments[0] === 'string' ? document.getElementById(arguments[0]) : arguments[0])
  .getBoundingClientRect();
return r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= innerWidth && r.height > 0"""


def in_view(driver, element) -> bool:
    """Whether the element (or the one with that id) is wholly on screen, where a person looks."""
    return driver.execute_script(IN_VIEW, element)

"""Helpers of the browser tests: serving the app with `streamlit run` and driving Debian's headless chromium.

Without /usr/bin/chromium the tests are skipped, unless BIASLENS_REQUIRE_BROWSER=1 (CI), where
that is a failure. Screenshots go to test-artifacts/ (and, with BIASLENS_DOCS_IMAGES set, the docs' images to that folder:
scripts/docs_screenshots.sh).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from tests.support import REPO

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]
ARTIFACTS = REPO / "test-artifacts"
TIMEOUT_MS = 90_000


def require_browser() -> None:
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is missing (apt-get install chromium)"
    if os.environ.get("BIASLENS_REQUIRE_BROWSER") == "1":
        pytest.fail(message + "; BIASLENS_REQUIRE_BROWSER=1 makes this a failure")
    pytest.skip(message)


@contextlib.contextmanager
def launch_chromium(**options):
    """The headless Chromium at `CHROMIUM` (skips the test where it is missing), closed afterwards."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, **options)
        yield browser
        browser.close()


def wait_until_healthy(base: str, proc: subprocess.Popen, seconds: float) -> bool:
    """Whether the app at `base` answers its health check before its process `proc` exits and within `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(f"{base}/_stcore/health", timeout=2)
            return True
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.3)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_app(env: dict[str, str], logs: Path):
    """`streamlit run app.py` on a free local port with `env`; yields its base URL, stops it afterwards."""
    with start_app(env, logs) as (base, _proc):
        yield base


@contextlib.contextmanager
def start_app(env: dict[str, str], logs: Path):
    """`streamlit run app.py` on a free local port with `env`; yields (base URL, server process), stops it afterwards."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--browser.gatherUsageStats",
        "false",
        "--server.fileWatcherType",
        "none",
    ]
    with (logs / "server.log").open("w") as log:
        proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        if not wait_until_healthy(base, proc, 90):
            pytest.fail(f"the app did not start: {(logs / 'server.log').read_text()[-2000:]}")
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def open_app(page, server: str, path: str = "", **params) -> None:
    query = urlencode(params, doseq=True)
    page.goto(f"{server}/{path}" + (f"?{query}" if query else ""))
    # Until the new session's script has started, the page reports "not running": wait for the page's title first,
    # or `settle` can return before the page has drawn anything (a button checked then is not there yet).
    page.locator('[data-testid="stMain"] h1').first.wait_for()
    settle(page)


def settle(page) -> None:
    """Wait until the app has finished running its script."""
    page.wait_for_selector('[data-testid="stApp"]')
    page.wait_for_timeout(500)
    page.wait_for_function('() => !document.querySelector(\'[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]\')')
    page.wait_for_function("() => document.querySelector('[data-testid=\"stApp\"]').getAttribute('data-test-script-state') !== 'running'")


#: The page scrolled back to its top (Streamlit scrolls its main area, not the window), for the docs' screenshots.
SCROLL_TO_TOP = """() => { window.scrollTo(0, 0);
  for (const el of document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"]')) el.scrollTo(0, 0); }"""


def start_scoring(page, label: str, scope=None, done=None) -> None:
    """Press the page's start button: `label` ("Run", "Score them"), or Resume when an earlier run on this server left
    some of the pairs in the result cache (the cache is shared by pages, so which one shows depends on test order).
    With `done` (a locator of the finished results), first wait for the button or the results, and press nothing when
    the results are already there."""
    from playwright.sync_api import expect

    run = (scope or page).get_by_role("button", name=re.compile(rf"^({re.escape(label)}|Resume)$")).first
    if done is not None:
        expect(run.or_(done).first).to_be_visible()
        if not run.is_visible():
            return
    run.click()


def screenshot(page, name: str) -> None:
    """The whole page to test-artifacts/<name>.png; with BIASLENS_DOCS_IMAGES=<folder> (scripts/docs_screenshots.sh),
    also the browser window, not the whole page (small files), to <folder>/<name>.png: the docs' images."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if docs := os.environ.get("BIASLENS_DOCS_IMAGES"):
        folder = Path(docs)
        folder.mkdir(parents=True, exist_ok=True)
        page.evaluate(SCROLL_TO_TOP)
        page.screenshot(path=str(folder / f"{name}.png"), full_page=False, animations="disabled")


def query(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)

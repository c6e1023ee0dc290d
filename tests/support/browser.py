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


def server_env(logs: Path, *, inherit: bool = True, **settings: object) -> dict[str, str]:
    """An app server's environment: this process's (less its own `BIASLENS_*` settings unless `inherit`), the result
    cache in `logs`, and each of `settings` as `BIASLENS_<NAME>` (`model=...` is BIASLENS_MODEL), written as text."""
    env = dict(os.environ) if inherit else {k: v for k, v in os.environ.items() if not k.startswith("BIASLENS_")}
    env["BIASLENS_CACHE_DIR"] = str(logs / "cache")
    env.update({f"BIASLENS_{name.upper()}": str(value) for name, value in settings.items()})
    return env


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


#: Every chart in the main area: no text cut off (by the chart's edge or a box around it), no axis, legend or mark label
#: over another (their glyph boxes, rotated ones included), no label on a mark (a dot, a bar, an error bar's cap).
CHART_CHECK = """() => {
  const problems = [];
  // A text's glyph box as drawn (rotated labels included): its four corners on the screen.
  const quad = el => {
    const b = el.getBBox(), m = el.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  // Two convex quads overlap unless some edge's normal separates them (by more than a pixel of antialiasing).
  const overlap = (p, q) => {
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2, len = Math.hypot(nx, ny) || 1;
      const proj = s => s.map(([x, y]) => (x * nx + y * ny) / len);
      const a = proj(p), b = proj(q);
      if (Math.max(...a) <= Math.min(...b) + 1 || Math.max(...b) <= Math.min(...a) + 1) return false;
    }
    return true;
  };
  for (const chart of document.querySelectorAll('[data-testid="stMain"] [data-testid="stVegaLiteChart"]')) {
    const svg = chart.querySelector('svg');
    if (!svg || chart.offsetParent === null) continue;
    const title = (svg.querySelector('.role-title-text text') || {}).textContent || '?';
    let box = svg.getBoundingClientRect();
    for (let el = chart; el; el = el.parentElement) {  // what the page shows of it: an ancestor that clips (not one that scrolls)
      const style = getComputedStyle(el);
      if (/hidden|clip/.test(style.overflowX + style.overflowY)) {
        const r = el.getBoundingClientRect();
        box = {left: Math.max(box.left, r.left), right: Math.min(box.right, r.right),
               top: Math.max(box.top, r.top), bottom: Math.min(box.bottom, r.bottom)};
      }
      if (el.getAttribute('data-testid') === 'stMain') break;
    }
    const shown = t => t.textContent.trim() && t.getAttribute('opacity') !== '0' && getComputedStyle(t).opacity !== '0';
    const texts = [...svg.querySelectorAll('text')].filter(shown);
    for (const t of texts) {
      const q = quad(t), xs = q.map(c => c[0]), ys = q.map(c => c[1]);
      if (Math.min(...xs) < box.left - 1 || Math.max(...xs) > box.right + 1 || Math.min(...ys) < box.top - 1 || Math.max(...ys) > box.bottom + 1)
        problems.push(`${title}: "${t.textContent}" cut off`);
    }
    const labels = [...svg.querySelectorAll('g.role-axis-label text, g.role-mark text, g.role-legend-label text')].filter(shown);
    const quads = labels.map(quad);
    for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++)
      if (overlap(quads[i], quads[j])) problems.push(`${title}: "${labels[i].textContent}" overlaps "${labels[j].textContent}"`);
    const marks = [...svg.querySelectorAll('g.role-mark:not(.mark-text) path, g.role-mark:not(.mark-text) rect, g.role-mark:not(.mark-text) line')];
    svg.querySelectorAll('g.role-mark.mark-text text').forEach((t, i) => {
      if (!shown(t)) return;
      const q = quad(t);
      if (marks.some(m => overlap(q, quad(m)))) problems.push(`${title}: "${t.textContent}" lies on a mark`);
    });
  }
  return problems;
}"""

#: Tables in the main area: a static table never wider than its box unless it scrolls with its key column pinned, its
#: headers and key columns (a metric's, a model's name) never broken mid-word (between words and after a hyphen only:
#: "Undecidab|le" was); an interactive table headed by exactly `columns` (the argument) never scrolls sideways (every
#: column in sight).
TABLE_CHECK = """(columns) => {
  const problems = [];
  const main = document.querySelector('[data-testid="stMain"]');
  for (const el of main.querySelectorAll('.bl-table-wrap')) {  // a static table: whole in its box, no column scrolled away
    if (el.offsetParent === null) continue;
    const pinned = el.querySelector('tr > .bl-key:first-child') && getComputedStyle(el).overflowX === 'auto';
    if (el.scrollWidth > el.clientWidth + 2 && !pinned)
      problems.push(`table wider than its box (${el.scrollWidth}>${el.clientWidth}): ${el.innerText.slice(0, 80)}`);
    for (const cell of el.querySelectorAll('.bl-key, th')) {  // each word on one line
      const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode())
        for (const word of node.textContent.matchAll(/[^\\s-]+/g)) {
          const range = document.createRange();
          range.setStart(node, word.index);
          range.setEnd(node, word.index + word[0].length);
          const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
          if (lines.size > 1) problems.push(`"${word[0]}" broken mid-word in a ${cell.tagName === 'TH' ? 'header' : 'key column'}`);
        }
    }
  }
  for (const d of main.querySelectorAll('[data-testid="stDataFrame"]')) {  // an interactive table headed by `columns`: every column in sight
    if (d.offsetParent === null) continue;
    const heads = [...d.querySelectorAll('[role="columnheader"]')].map(h => h.innerText.trim());
    if (!columns.length || heads.join('|') !== columns.join('|')) continue;
    const scroller = d.querySelector('.dvn-scroller');
    if (scroller.scrollWidth > scroller.clientWidth + 2)
      problems.push(`table headed ${columns.join(', ')} scrolls sideways (${scroller.scrollWidth}>${scroller.clientWidth})`);
  }
  return problems;
}"""

#: `{placeholders}` left in the main area's text (code and formulas aside).
PLACEHOLDER_CHECK = r"""() => {
  // The main area's text as drawn, less code and typeset formulas (they show syntax: `{name}`, \frac{1}{n}).
  const main = document.querySelector('[data-testid="stMain"]').cloneNode(true);
  // The lab's templates box says its own syntax in its label ("each with {name} and {attribute}").
  main.querySelectorAll('code, pre, .katex, textarea, input, [data-testid="stTextArea"] label').forEach(el => el.remove());
  return (main.textContent.match(/\{[A-Za-z_]\w*\}|\{\d+\}/g) || []);
}"""

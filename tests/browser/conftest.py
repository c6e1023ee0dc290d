"""Fixtures of the browser tests: the app served on a free local port (the tiny BERT preselected, the fixture
datasets, a fresh result cache), one headless Chromium per module, a fresh tab per test.

Every test in this folder carries the `browser` marker (left out of the fast set; `scripts/test.sh --all` runs it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import FIXTURE_DATA
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, require_browser, serve_app, server_env

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def server(model_dirs, tmp_path_factory):
    """The app, served on a free local port; yields its base URL and the tiny models."""
    require_browser()
    logs = tmp_path_factory.mktemp("server")
    data = _data_with_a_longer_crows_pairs(logs / "data")
    # BIASLENS_MODEL_DIRS: the comparison page loads the other tiny models
    env = server_env(logs, model=model_dirs["bert-cased"], model_dirs=model_dirs["bert-cased"].parent, data_dir=data)
    with serve_app(env, logs) as base:
        yield base


#: Pairs the browser's CrowS-Pairs holds: enough that a dataset run lasts long enough to see its progress.
BROWSER_PAIRS = 200


def _data_with_a_longer_crows_pairs(folder: Path) -> Path:
    """The fixture data, its CrowS-Pairs file extended past its 16 hand-written pairs with variants of them."""
    import csv
    import io
    import shutil

    shutil.copytree(FIXTURE_DATA, folder)
    path = folder / "crows-pairs" / "crows_pairs_anonymized.csv"
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
    header, pairs = rows[0], rows[1:]
    for i in range(len(pairs), BROWSER_PAIRS):
        base = pairs[i % len(pairs)]
        row = [str(i), f"Person {i} said: {base[1]}", f"Person {i} said: {base[2]}", *base[3:]]
        rows.append(row)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows[1:]])
    path.write_text(out.getvalue(), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # Scroll bars as people see them: Playwright hides them by default, and a table that hides columns without one is a bug.
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, ignore_default_args=["--hide-scrollbars"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1500, "height": 1300}, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)  # a first model load on 2 busy cores takes more than 5 s
    yield tab
    context.close()

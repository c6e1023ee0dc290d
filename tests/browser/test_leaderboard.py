"""The leaderboard in headless Chromium: 500 stored models drawn, a score opening its stored run in the explorer, two
rows compared. Its own server: BIASLENS_ZOO_STORE names a synthetic store of 500 made-up models; beside it, a store the
zoo's jobs filled with the suite's tiny models."""

from __future__ import annotations

import re

import pytest

from tests.support import FIXTURE_DATA
from tests.support.browser import TIMEOUT_MS, open_app, require_browser, screenshot, serve_app, server_env, settle
from tests.support.zoo import filled_store

MODELS = 500
#: The grid of the page's interactive table is drawn with at least `rows` rows (its accessible row count).
TABLE_DRAWN = """(rows) => {
    const grid = document.querySelector('[data-testid="stMain"] [data-testid="stDataFrame"]');
    const count = grid?.querySelector('[aria-rowcount]')?.getAttribute('aria-rowcount');
    return !!grid && !!grid.querySelector('canvas') && grid.getBoundingClientRect().height > 100 && Number(count) >= rows;
}"""


@pytest.fixture(scope="module")
def zoo_server(model_dirs, tmp_path_factory):
    require_browser()
    from biaslens.data.datasets import load_dataset
    from biaslens.zoo.testing import synthetic_store

    root = tmp_path_factory.mktemp("zoo-stores")
    synthetic_store(root / "many", [load_dataset("crows-pairs", data_dir=FIXTURE_DATA)], models=MODELS, metrics=("aul", "cps"))
    models = [{"id": str(model_dirs["bert-cased"])}, {"id": str(model_dirs["roberta"])}]
    filled_store(root, models, store="tiny", datasets=["crows-pairs"], metrics=["aul", "cps"])
    env = server_env(
        root,
        model=model_dirs["bert-cased"],
        model_dirs=model_dirs["bert-cased"].parent,
        data_dir=FIXTURE_DATA,
        data_dirs=root,
        zoo_store=root / "many",
    )
    with serve_app(env, root) as base:
        yield base, root


def _grid(page):
    grid = page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    assert box is not None
    return box


def test_five_hundred_models(page, zoo_server):
    from playwright.sync_api import expect

    base, root = zoo_server
    open_app(page, base, "leaderboard")  # the server's store: BIASLENS_ZOO_STORE
    page.wait_for_function(TABLE_DRAWN, arg=MODELS, timeout=TIMEOUT_MS)
    settle(page)
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text(f"{MODELS} models · 2 columns · float32 · default")).to_be_visible()
    screenshot(page, "leaderboard")
    page.get_by_label("Family", exact=True).click()
    page.get_by_role("option", name="gpt2", exact=True).click()
    page.keyboard.press("Escape")
    settle(page)
    expect(main.get_by_text(re.compile(r"^83 models · 2 columns"))).to_be_visible()  # every sixth made-up model is a gpt2 (3, 9, …, 495)
    page.get_by_role("button", name="Compute rank intervals").click()
    settle(page)
    expect(main.get_by_text("how often it kept its own rank", exact=False)).to_be_visible()


def test_a_score_opens_its_stored_run_and_two_rows_compare(page, zoo_server):
    from playwright.sync_api import expect

    base, root = zoo_server
    open_app(page, base, "leaderboard", store=str(root / "tiny"), sort="Model name")
    page.wait_for_function(TABLE_DRAWN, arg=2, timeout=TIMEOUT_MS)
    settle(page)
    box = _grid(page)
    page.mouse.click(box["x"] + 12, box["y"] + 52)  # the row markers: tick both rows
    settle(page)
    page.mouse.click(box["x"] + 12, box["y"] + 52 + 35)
    settle(page)
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_role("heading", name="roberta − bert-cased, pair by pair")).to_be_visible()
    page.mouse.click(box["x"] + 80, box["y"] + 52)  # bert-cased's name, then to its first score (after family, kind, size)
    settle(page)
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    expect(page.get_by_role("heading", name="Dataset explorer")).to_be_visible()
    settle(page)
    expect(main.get_by_text("A stored run: bert-cased on crows-pairs", exact=False)).to_be_visible()
    expect(main.get_by_text("AUL bias score")).to_be_visible()
    assert "result=" in page.url and "store=" in page.url

"""BBQ in the real app (a tiny GPT-2, the fixture's BBQ files): the explorer scores the items under every convention,
shows the statistics with their intervals, and an item whose answer flips opens in the inspector with every convention
side by side and its choices token by token."""

from __future__ import annotations

import os

import pytest

from tests.support.browser import TIMEOUT_MS, open_app, require_browser, screenshot, serve_app, settle, start_scoring


@pytest.fixture(scope="module")
def choices_server(causal_dirs, tmp_path_factory):
    from tests.support import FIXTURE_DATA

    require_browser()
    logs = tmp_path_factory.mktemp("choices-server")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BIASLENS_")},
        "BIASLENS_MODEL": str(causal_dirs["gpt2"]),
        "BIASLENS_MODEL_DIRS": str(causal_dirs["gpt2"].parent),
        "BIASLENS_DATA_DIR": str(FIXTURE_DATA),
        "BIASLENS_CACHE_DIR": str(logs / "cache"),
    }
    with serve_app(env, logs) as base:
        yield base


def test_bbq_from_the_explorer_to_an_item_that_flips(page, choices_server):
    from playwright.sync_api import expect

    open_app(page, choices_server, "explorer", dataset="bbq")
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_text("Content warning", exact=False).first).to_be_visible(timeout=TIMEOUT_MS)
    done = main.get_by_text("disamb_bias_score").first
    start_scoring(page, "Run", done=done)
    expect(done).to_be_visible(timeout=180_000)
    settle(page)
    expect(main.locator('[data-testid="stAlertContentError"]')).to_have_count(0)
    expect(main.get_by_text("BBQ (Parrish et al.)", exact=False).first).to_be_visible()
    screenshot(page, "choices-explorer")
    page.get_by_role("tab", name="Items that flip").click()
    flips = main.get_by_text("items flip.", exact=False)
    if flips.count():  # a random model: some item's answer changes with the convention on the fixture's 26 items
        grid = main.locator('[data-testid="stDataFrame"]').last  # canvas-drawn: a click on the first row's marker
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        assert box is not None
        page.mouse.click(box["x"] + 12, box["y"] + 52)
    else:  # none flipped: open the first item by its link instead
        open_app(page, choices_server, "", dataset="bbq", pair="0")
    expect(page.get_by_role("heading", name="Pair inspector")).to_be_visible(timeout=TIMEOUT_MS)
    conventions = main.locator("table").filter(has_text="Margin (biased − other group)").first
    expect(conventions).to_be_visible(timeout=TIMEOUT_MS)
    for name in ("lm-eval", "lm-eval-norm", "original"):
        expect(conventions).to_contain_text(name)
    expect(main.locator('[role="figure"]').filter(has_text="").first).to_be_visible()  # the choices' token strips
    expect(main.locator('[data-testid="stAlertContentError"]')).to_have_count(0)
    screenshot(page, "choices-inspector")

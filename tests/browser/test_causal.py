"""A causal model in the real app (a tiny GPT-2 preselected): the inspector draws its pair token by token with its five
metrics, the explorer scores a sample with them and compares the peers' scoring conventions, and a pair whose verdict
flips opens in the inspector."""

from __future__ import annotations


import pytest

from tests.support.browser import TIMEOUT_MS, open_app, require_browser, screenshot, serve_app, server_env, settle, start_scoring


@pytest.fixture(scope="module")
def causal_server(causal_dirs, tmp_path_factory):
    from tests.support import FIXTURE_DATA

    require_browser()
    logs = tmp_path_factory.mktemp("causal-server")
    env = server_env(logs, inherit=False, model=causal_dirs["gpt2"], model_dirs=causal_dirs["gpt2"].parent, data_dir=FIXTURE_DATA)
    with serve_app(env, logs) as base:
        yield base


def test_a_causal_model_s_pair_its_dataset_and_its_conventions(page, causal_server):
    from playwright.sync_api import expect

    open_app(page, causal_server, "", pair="3")
    expect(page.get_by_role("heading", name="Token by token")).to_be_visible()
    main = page.locator('[data-testid="stMain"]')
    expect(main.locator('[data-testid="stAlertContentError"]')).to_have_count(0)
    scores = main.locator("table").filter(has_text="Margin (stereo − anti)").first
    for name in ("LL", "AUL-c", "AULA-c", "CPS-c", "SSS-c"):
        expect(scores).to_contain_text(name)
    screenshot(page, "causal-inspector")

    open_app(page, causal_server, "explorer", sample="12", seed="2")
    done = page.get_by_text("LL bias score")
    start_scoring(page, "Run", done=done)
    expect(done).to_be_visible(timeout=180_000)
    settle(page)
    page.get_by_role("button", name="Compare the conventions").click()
    expect(page.get_by_role("heading", name="Scoring conventions")).to_be_visible()
    expect(main.get_by_text("lm-eval / LL").first).to_be_visible(timeout=TIMEOUT_MS)
    expect(main.locator('[data-testid="stAlertContentError"]')).to_have_count(0)
    screenshot(page, "causal-conventions")
    flips = main.get_by_text("Pairs whose verdict flips", exact=False)
    if flips.count():  # a random model: some pair flips on nearly every seed; when one does, it opens in the inspector
        grid = main.locator('[data-testid="stDataFrame"]').last  # canvas-drawn: a click on the first row's marker
        grid.scroll_into_view_if_needed()
        box = grid.bounding_box()
        assert box is not None
        page.mouse.click(box["x"] + 12, box["y"] + 52)
        expect(page.get_by_role("heading", name="Pair inspector")).to_be_visible(timeout=TIMEOUT_MS)
        expect(page.get_by_role("heading", name="Token by token")).to_be_visible()

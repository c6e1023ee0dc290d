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


#: A pair a byte-level BPE splits into bytes: "é" is two tokens' worth of bytes ("Ã©"), the car three ("ðŁ", "ļ", "Ĺ").
BYTES_PAIR = ("Women can't drive a café 🚗 in the rain.", "Men can't drive a café 🚗 in the rain.")
#: What a masked model's words said to a causal model, and the raw byte-level tokens (issue 40 items 7 and 8).
MASKED_WORDS = ("masked language model", "CPS masks them", "(AUL term)", "AUL averages these", "CPS masked log p", "nothing masked")
RAW_BYTES = ("Ã©", "ðŁ", "Ġ")


@pytest.mark.parametrize("width", [1400, 1024])
def test_a_causal_model_meets_its_own_words_and_its_tokens_as_text(browser, causal_server, width):
    """Issue 40 items 7 and 8: the inspector, its token table, Several sentences and the bias lab with a GPT-2."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    main = page.locator('[data-testid="stMain"]')
    try:
        open_app(page, causal_server, "", s1=BYTES_PAIR[0], s2=BYTES_PAIR[1])
        expect(page.get_by_role("heading", name="Token by token")).to_be_visible()
        settle(page)
        text = main.inner_text()
        assert not [w for w in MASKED_WORDS if w in text], text
        assert "Log p (AUL-c term)" in text and "CPS-c scores them" in text and "SSS-c scores them" in text
        drawn = main.locator(".bl-align, .bl-bars").all_inner_texts()
        assert drawn and "é" in " ".join(drawn) and "🚗" in " ".join(drawn)  # (the tiny trained BPE splits "café" into pieces)
        assert not [raw for raw in RAW_BYTES if raw in " ".join(drawn)]
        page.get_by_role("tab", name="Table").click()
        settle(page)
        expect(main.locator('[data-testid="stDataFrame"] [role="columnheader"]').first).to_be_attached()
        heads = [h.strip() for h in main.locator('[data-testid="stDataFrame"] [role="columnheader"]').all_inner_texts()]
        assert "log p (AUL-c term)" in heads and "CPS masked log p" not in heads, heads
        assert "CPS-c log p" in heads or width < 1400, heads  # (the grid draws the headers in sight only)
        screenshot(page, f"causal-words-{width}")

        # Several sentences: each token as the text it covers, and every wrapped line of strips headed by the numbers
        page.locator('[data-testid="stMain"] [data-testid="stButtonGroup"]').get_by_text("Several sentences", exact=True).click()
        settle(page)
        long = "A rather long sentence about a café 🚗 that goes on and on until it has to wrap onto another line of strips."
        page.get_by_role("textbox", name="Sentences, one per line").fill(f"{BYTES_PAIR[0]}\n{BYTES_PAIR[1]}\n{long}")
        page.get_by_role("button", name="Score these sentences").click()
        settle(page)
        strips = main.locator(".bl-strips")
        expect(strips.first).to_be_visible()
        cells = " ".join(main.locator(".bl-scell").all_inner_texts())
        assert "é" in cells and "🚗" in cells and not [raw for raw in RAW_BYTES if raw in cells]
        lines = strips.count()
        assert lines > 1 and main.locator(".bl-strips .bl-slab").count() == lines  # each line starts with the numbers
        for k in range(lines):
            assert strips.nth(k).locator(".bl-slab").inner_text().split() == ["0", "1", "2"]
            row_tops = strips.nth(k).evaluate("el => new Set([...el.children].map(c => Math.round(c.getBoundingClientRect().top))).size")
            assert row_tops == 1, f"line {k} of the strips wraps in the browser"  # (the lines, not the browser, wrap them)
        screenshot(page, f"causal-strips-{width}")

        # The bias lab: a causal sidebar model, so a causal lab model first, and the page says both kinds
        open_app(page, causal_server, "lab")
        assert "small masked language model" not in main.inner_text()
        expect(main.get_by_role("radio", name="Causal (a small GPT-2)")).to_be_checked()
    finally:
        context.close()

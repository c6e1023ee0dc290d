"""End-to-end: the real app in headless Chromium (Debian's chromium, driven by playwright).

A `streamlit run app.py` server is started with the tiny random BERT preselected
(BIASLENS_MODEL), the hand-written fixture datasets as data folder and a fresh result cache. Without
/usr/bin/chromium the tests are skipped, unless BIASLENS_REQUIRE_BROWSER=1 (CI), where
that is a failure. A screenshot of each page goes to test-artifacts/.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from tests.support.browser import ARTIFACTS, TABLE_CHECK, TIMEOUT_MS, open_app, query, require_browser, screenshot, serve_app, settle
from tests.support.browser import server_env, start_scoring


def test_a_deep_link_as_the_server_s_first_visit_gets_the_whole_app(page, server):
    """The first session of a server opens a page by its URL: sidebar and page, not the page alone.

    (A `pages/` folder makes Streamlit start in its legacy mode; `ui.require_app` leaves it.)
    Keep this test first in the module: the server fixture is shared.
    """
    from playwright.sync_api import expect

    open_app(page, server, "explorer")
    expect(page.get_by_role("heading", name="Dataset explorer")).to_be_visible()
    expect(page.get_by_text("Sanity check", exact=False).first).to_be_visible()
    expect(page.locator('[data-testid="stSidebarNav"]')).to_contain_text("Pair inspector")


def test_picking_a_crows_pairs_pair_shows_its_tokens(page, server):
    from playwright.sync_api import expect

    open_app(page, server)
    expect(page.get_by_role("heading", name="Pair inspector")).to_be_visible()
    expect(page.get_by_text("Sanity check:")).to_be_visible()  # the sidebar's indicator
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Pair (").locator("input").click()
    page.keyboard.type("bad at building")
    page.get_by_role("option", name=re.compile(r"^#15 · gender")).click()
    expect(page.get_by_role("heading", name=re.compile(r"crows-pairs #15 · gender"))).to_be_visible()
    settle(page)
    expect(page.get_by_role("heading", name="Token by token")).to_be_visible()
    chart = page.locator(".bl-bars").first  # the aligned token chart (HTML)
    expect(chart).to_be_visible()
    expect(chart.locator(".bl-row.bl-data").first).to_be_visible()
    expect(page.get_by_role("table").filter(has_text="Margin (stereo − anti)")).to_be_visible()  # the sentence scores
    expect(page.locator(".bl-mod.bl-stereo", has_text="girls")).to_be_visible()
    assert query(page)["pair"] == ["15"]
    screenshot(page, "inspector")


def test_a_typed_pair_is_scored(page, server):
    from playwright.sync_api import expect

    open_app(page, server)
    page.get_by_role("radio", name="Your own sentences").click()
    settle(page)
    page.get_by_role("textbox", name="Stereotypical sentence", exact=True).fill("The engineer said she would fix it.")
    page.get_by_role("textbox", name="Anti-stereotypical sentence", exact=True).fill("The engineer said he would fix it.")
    page.get_by_role("button", name="Score this pair").click()
    expect(page.get_by_role("heading", name="Your pair")).to_be_visible()
    settle(page)
    expect(page.locator(".bl-mod.bl-stereo", has_text="she")).to_be_visible()
    expect(page.locator(".bl-mod.bl-anti", has_text="he")).to_be_visible()
    expect(page.get_by_text("prefers the", exact=False).first).to_be_visible()
    assert query(page)["s1"] == ["The engineer said she would fix it."]
    screenshot(page, "inspector-typed-pair")


EXPLORER_LINK = {"sample": "120", "metrics": ["aul", "cps"], "metric": "cps"}


def _finished_run(page, server):
    """The explorer on a 120-pair sample: runs it if it is not cached yet."""
    from playwright.sync_api import expect

    open_app(page, server, "explorer", **EXPLORER_LINK)
    done = page.get_by_text("CPS bias score")
    start_scoring(page, "Run", done=done)
    expect(done).to_be_visible(timeout=180_000)
    settle(page)


def test_a_dataset_run_shows_progress_then_the_breakdown(page, server):
    from playwright.sync_api import expect

    open_app(page, server, "explorer", **EXPLORER_LINK)
    expect(page.get_by_text("Content warning:")).to_be_visible()
    page.get_by_role("button", name="Run").click()
    expect(page.locator('[data-testid="stProgress"]')).to_be_visible()
    expect(page.get_by_text(re.compile(r"Scoring crows-pairs .*/ 120 pairs"))).to_be_visible()
    expect(page.get_by_text("AUL bias score")).to_be_visible(timeout=180_000)
    settle(page)
    expect(page.locator('[data-testid="stProgress"]')).to_have_count(0)
    page.get_by_role("tab", name="By bias type").click()
    expect(page.get_by_text("CPS bias score per bias type").first).to_be_attached()
    screenshot(page, "explorer")


def test_an_export_downloads_a_file(page, server):
    _finished_run(page, server)
    page.get_by_role("tab", name="Export").click()
    settle(page)  # a tab click reruns the page (the open tab goes into the link), renewing the download buttons
    with page.expect_download() as download:
        page.get_by_role("button", name="Pairs (CSV)").click()
    target = ARTIFACTS / "explorer-pairs.csv"
    ARTIFACTS.mkdir(exist_ok=True)
    download.value.save_as(target)
    rows = list(csv.DictReader(io.StringIO(target.read_text())))
    assert len(rows) == 120
    assert {"pair_id", "sent_stereo", "aul_stereo", "cps_anti", "cps_total"} <= set(rows[0])
    with page.expect_download() as svg:
        page.get_by_role("button", name="Bias scores").click()
    assert svg.value.suggested_filename.endswith(".svg")
    assert "<svg" in Path(svg.value.path()).read_text()


def test_a_shared_link_restores_the_view(page, server):
    from playwright.sync_api import expect

    open_app(page, server, "", pair="6", metric="cps")
    expect(page.get_by_role("heading", name=re.compile(r"crows-pairs #6 "))).to_be_visible()
    expect(page.get_by_text("CPS prefers", exact=False).first).to_be_visible()
    open_app(page, server, "", s1="Girls cannot code.", s2="Boys cannot code.")
    expect(page.get_by_role("heading", name="Your pair")).to_be_visible()
    expect(page.locator(".bl-mod.bl-stereo", has_text="Girls")).to_be_visible()
    _finished_run(page, server)  # a link to a finished run opens it from the cache
    assert query(page)["metric"] == ["cps"] and query(page)["sample"] == ["120"]
    expect(page.get_by_text("CPS bias score")).to_be_visible()


def test_model_comparison_page(page, server, model_dirs):
    from playwright.sync_api import expect

    models = [str(model_dirs["bert-cased"]), str(model_dirs["roberta"])]
    open_app(page, server, "compare", models=models, metric="aul", sample="12")
    start_scoring(page, "Score them")
    expect(page.get_by_role("heading", name=re.compile(r"^Pairs whose verdict flips"))).to_be_visible(timeout=180_000)
    settle(page)
    expect(page.locator('[data-testid="stVegaLiteChart"]')).to_have_count(3)
    screenshot(page, "compare")


def test_a_link_repeating_a_model_nine_hundred_times_draws_it_once(page, server, model_dirs):
    """Issue 41.10: each repeat was a chip of the comparison's list of models (10,000 never rendered)."""
    from playwright.sync_api import expect

    bert, roberta = str(model_dirs["bert-cased"]), str(model_dirs["roberta"])
    open_app(page, server, "compare", models=[bert] * 900 + [roberta], metric="aul", sample="12")
    expect(page.get_by_text("expected each value once (899 repeats left out)")).to_be_visible()
    chips = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Models").locator("[data-tag]")
    expect(chips).to_have_count(2)  # (901 before)
    assert query(page)["models"] == [bert, roberta]


# ---------------------------------------------------------------------------------------
# Readable at every width, honest about the model, calm offline (issue 12)
# ---------------------------------------------------------------------------------------

#: In the main area: elements whose content is wider than their box (cut off or scrolled out of sight),
#: error boxes, exceptions and a literal "None". Hidden elements (inactive tabs, closed expanders) are skipped.
LAYOUT_CHECK = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const boxes = ['[data-testid="stMetric"]', '[data-testid="stMarkdownContainer"]', '[data-testid="stCaptionContainer"]', '.katex-display',
    '[data-testid="stExpander"] summary', '[data-testid="stTab"]', 'h1', 'h2', 'h3', '[data-testid="stAlert"]', 'td', 'th', '.bl-align',
    '[data-testid="stVegaLiteChart"]', 'button', '[data-testid="stHtml"]', '.bl-bars', '.bl-lab',
    '[data-testid="stButtonGroup"] div', '[data-testid="stMultiSelect"] span'];  // a segmented control's options, a chip's name
  const overflow = [];
  for (const el of main.querySelectorAll(boxes.join(', '))) {
    if (el.offsetParent === null) continue;
    if (el.scrollWidth <= el.clientWidth + 2) continue;
    overflow.push(`${el.getAttribute('data-testid') || el.tagName} ${el.scrollWidth}>${el.clientWidth}: ${el.innerText.slice(0, 60)}`);
  }
  // Tables (ui.tables): one wider than its box must show a scroll bar the reader can see (Streamlit shows them only on
  // hover), so no column is hidden; the browser runs without Playwright's --hide-scrollbars (conftest), as people's do.
  for (const el of main.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller, .bl-table-wrap')) {
    if (el.offsetParent === null || el.scrollWidth <= el.clientWidth + 2) continue;
    const style = getComputedStyle(el);
    if (el.offsetHeight - el.clientHeight < 6 || /transparent/.test(style.scrollbarColor) || style.scrollbarWidth === 'none')
      overflow.push(`table wider than its box (${el.scrollWidth}>${el.clientWidth}) with no visible scroll bar: ${el.innerText.slice(0, 60)}`);
  }
  // Multiselect chips: all in sight (Streamlit's one row scrolled the last ones out of sight, "Word f…" faded at the edge)
  // and each with its whole name ("All Masked", "Adv / Dis groups (Table 3)").
  for (const row of main.querySelectorAll('[data-testid="stMultiSelectTagsContainer"]')) {
    if (row.offsetParent !== null && row.scrollWidth > row.clientWidth + 1) overflow.push(`multiselect chips out of sight: ${row.innerText}`);
  }
  for (const box of main.querySelectorAll('[data-testid="stMultiSelect"]')) {  // and inside their box, over nothing below it
    const outer = box.getBoundingClientRect();
    for (const chip of box.querySelectorAll('[data-tag]')) {
      const r = chip.getBoundingClientRect();
      if (chip.offsetParent !== null && (r.bottom > outer.bottom + 1 || r.right > outer.right + 1)) {
        overflow.push(`multiselect chip outside its box: ${chip.innerText}`);
      }
    }
  }
  for (const chip of main.querySelectorAll('[data-testid="stMultiSelect"] [data-tag]')) {
    if (chip.offsetParent === null) continue;
    const cut = [chip, ...chip.querySelectorAll('*')].some(el => el.scrollWidth > el.clientWidth + 1);
    if (cut) overflow.push(`multiselect chip cut: ${chip.innerText}`);
  }
  // HTML bar charts: each measure's column wide enough for its bars (three squeezed side by side drew nothing).
  for (const cell of main.querySelectorAll('.bl-cell')) {
    if (cell.offsetParent !== null && cell.clientWidth < 60) { overflow.push(`chart column squeezed to ${cell.clientWidth}px`); break; }
  }
  for (const axis of main.querySelectorAll('.bl-ticks')) {  // an HTML chart's tick labels: inside its column, apart
    if (axis.offsetParent === null) continue;
    const box = axis.getBoundingClientRect();
    const labels = [...axis.querySelectorAll('b')].filter(b => b.offsetParent !== null).map(b => b.getBoundingClientRect())
      .sort((a, b) => a.left - b.left);
    labels.forEach((r, i) => {
      if (r.left < box.left - 2 || r.right > box.right + 2) overflow.push(`tick label outside its column: ${axis.innerText}`);
      if (i && r.left < labels[i - 1].right - 1) overflow.push(`tick labels overlap: ${axis.innerText}`);
    });
  }
  return {
    overflow,
    errors: [...main.querySelectorAll('[data-testid="stAlertContentError"]')].map(e => e.innerText.slice(0, 160)),
    exceptions: main.querySelectorAll('[data-testid="stException"]').length,
    none: /(^|\\W)None(\\W|$)/.test(main.innerText),
  };
}"""


def settle_charts(page) -> None:
    """`settle`, then wait until every chart has replaced its loading skeleton."""
    settle(page)
    page.wait_for_function("() => !document.querySelector('[data-testid=stSkeleton]')", timeout=TIMEOUT_MS)
    page.wait_for_timeout(300)


def assert_readable(page, where: str) -> None:
    report = page.evaluate(LAYOUT_CHECK)
    assert not report["overflow"], f"{where}: content wider than its box: {report['overflow']}"
    assert not report["errors"], f"{where}: error boxes: {report['errors']}"
    assert not report["exceptions"], f"{where}: an exception is shown"
    assert not report["none"], f"{where}: a literal None is shown"
    assert page.evaluate(TABLE_CHECK, []) == [], where


@pytest.mark.parametrize("width", [1400, 1024])
def test_every_page_is_readable_at_projector_and_laptop_widths(browser, server, model_dirs, width):
    """Every page with its results, at a projector's and a laptop's width: nothing cut off, no error, no None."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    try:
        open_app(page, server, "", pair="15")
        expect(page.get_by_role("heading", name="Token by token")).to_be_visible()
        settle_charts(page)
        assert_readable(page, f"inspector at {width}px")
        open_app(page, server, "", pair="15", metric="cps")  # three "What drives the difference" charts
        expect(page.get_by_role("heading", name="What drives the difference")).to_be_visible()
        settle_charts(page)
        assert_readable(page, f"inspector with CPS in focus at {width}px")

        open_app(page, server, "explorer", metrics=["aul", "all_masked", "pll_word_l2r"])  # long names as multiselect chips
        assert_readable(page, f"explorer's metric chips at {width}px")

        _finished_run(page, server)  # the explorer with a finished run
        settle_charts(page)
        assert_readable(page, f"explorer at {width}px")
        page.get_by_role("tab", name="Pairs").click()  # the pairs table: its scores were all scrolled out of sight
        settle(page)
        assert_readable(page, f"explorer's pairs table at {width}px")

        models = [str(model_dirs["bert-cased"]), str(model_dirs["roberta"])]
        open_app(page, server, "compare", models=models, metric="aul", sample="12")
        flips = page.get_by_role("heading", name=re.compile(r"^Pairs whose verdict flips"))
        start_scoring(page, "Score them", done=flips)
        expect(flips).to_be_visible(timeout=180_000)
        settle_charts(page)
        assert_readable(page, f"compare at {width}px")

        open_app(page, server, "kurita")
        page.get_by_role("button", name="Score", exact=True).click()
        expect(page.get_by_text("More associated with he")).to_be_visible()
        settle_charts(page)
        assert_readable(page, f"kurita at {width}px")
        page.get_by_role("tab", name="WEAT tests (Table 3)").click()  # its controls: the test names and the Permute choice
        settle(page)
        assert_readable(page, f"kurita's WEAT tab at {width}px")

        open_app(page, server, "analyses", sample="6")
        start_scoring(page, "Run the analyses", done=page.get_by_text("Accuracy (%); SSS counted per StereoSet instance"))
        expect(page.get_by_role("tab", name="Token accuracy · T1")).to_be_visible()
        expect(page.get_by_text("Not run yet")).to_have_count(0, timeout=300_000)
        settle_charts(page)
        assert_readable(page, f"analyses at {width}px")
        tabs = [t.inner_text() for t in page.get_by_role("tab").all()]
        assert [t.split("·")[-1].strip() for t in tabs if "·" in t] == ["T1", "T2", "T3", "T4", "T5", "F1"]  # the paper's order

        open_app(page, server, "lab")
        settle_charts(page)
        assert_readable(page, f"lab at {width}px")
        screenshot(page, f"lab-{width}")
    finally:
        context.close()


def test_an_untrained_model_is_flagged_beside_its_results(page, server):
    """The random-weight model: a banner in the main area, next to the verdicts, not only in the sidebar."""
    from playwright.sync_api import expect

    open_app(page, server, "", pair="15")
    main = page.locator('[data-testid="stMain"]')
    banner = main.get_by_text("looks untrained: read these results as noise")
    expect(banner).to_be_visible()
    expect(main.get_by_text("prefers the", exact=False).first).to_be_visible()
    _finished_run(page, server)
    expect(main.get_by_text("looks untrained: read these results as noise")).to_be_visible()
    screenshot(page, "explorer-untrained-banner")


@pytest.fixture(scope="module")
def offline_server(tmp_path_factory):
    """A first run on a machine without network: a clean cache, no model and no data on disk, the hub out of reach."""
    require_browser()
    logs = tmp_path_factory.mktemp("offline")
    env = {**server_env(logs, inherit=False), "HF_HUB_OFFLINE": "1", "HF_HOME": str(logs / "hf")}
    with serve_app(env, logs) as base:
        yield base


OFFLINE_PAGES = ["", "explorer", "compare", "leaderboard", "kurita", "lab", "analyses"]


def test_a_first_run_offline_has_no_red_and_the_lab_model_fits_every_page(browser, offline_server):
    """Every page explains calmly what is missing; the offline lab model then works on every page, with its own words."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    try:
        for path in OFFLINE_PAGES:
            open_app(page, offline_server, path)
            report = page.evaluate(LAYOUT_CHECK.replace("'[data-testid=\"stMain\"]'", "'[data-testid=\"stApp\"]'"))
            assert not report["errors"] and not report["exceptions"], (path, report)
            text = page.locator('[data-testid="stApp"]').inner_text()
            assert "--model" not in text and "--data-dir" not in text and "Errno" not in text, path
        open_app(page, offline_server, "")
        expect(page.get_by_text("is not on this machine").first).to_be_visible()
        page.get_by_role("button", name="Use the offline lab model").first.click()  # trains it here once
        expect(page.get_by_text("Bias-lab model", exact=False)).to_be_visible(timeout=600_000)
        settle_charts(page)
        main = page.locator('[data-testid="stMain"]')
        expect(main.get_by_role("heading", name=re.compile(r"^lab pairs #"))).to_be_visible()  # its own held-out pairs
        expect(page.get_by_text("Predicts its training corpus well")).to_be_visible()
        expect(main.get_by_text("looks untrained")).to_have_count(0)  # trained: no banner
        expect(main.get_by_text("Mostly unknown words")).to_have_count(0)
        for path in OFFLINE_PAGES:
            page.locator('[data-testid="stSidebarNav"] a').nth(OFFLINE_PAGES.index(path)).click()
            settle_charts(page)
            report = page.evaluate(LAYOUT_CHECK)
            assert not report["errors"] and not report["exceptions"] and not report["none"], (path, report)
            text = page.locator('[data-testid="stApp"]').inner_text()
            assert "custom" not in text.lower().split() and "association-" not in text, path
        page.locator('[data-testid="stSidebarNav"] a').nth(OFFLINE_PAGES.index("kurita")).click()
        settle(page)
        assert "John/Mary" in page.get_by_role("textbox", name="Target pairs (first/second)").input_value()  # its own group words
        screenshot(page, "offline-lab-kurita")
    finally:
        context.close()

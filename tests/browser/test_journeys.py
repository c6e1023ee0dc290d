"""Issue 21's journeys between pages, walked in headless Chromium as a user would: what was chosen on one page is what
the next page, a shared link, a reload and the Back button show.

1. A row of the explorer's pairs opens the inspector with the same model (the offline lab model), dataset, data folder,
   scoring mode, device and precision.
2. The model comparison gets its second and third models from the page: a listed model folder, and a folder typed
   and entered.
3. A link keeps the seed: a finished run with seed 7, opened by its URL in a new session, comes from the cache.
4. Searching `#7` in the inspector shows pair 7 at once.
5. A stopped run says how many pairs it kept and resumes there; while it runs, only its progress and Stop show.
6. Back leaves a page in one press; classroom mode survives a reload and keeps the page links.
7. A pinned pair stays when the sidebar's model changes: the same pair under both models, side by side, and a third
   model added from the page.
"""

from __future__ import annotations

import re

import pytest

from tests.support.browser import TIMEOUT_MS, open_app, query, require_browser, screenshot, serve_app, server_env, settle, start_scoring

RUN_TIMEOUT_MS = 180_000


def _heading(page) -> str:
    return page.locator('[data-testid="stMain"] h1').first.inner_text()


def _sample(page, pairs: int, seed: int | None = None) -> None:
    """The explorer's 'Score a random sample' toggle, its size and (if given) its seed, as typed by a user."""
    page.get_by_text(re.compile(r"^Score a random sample")).click()
    settle(page)
    for name, value in (("Pairs", pairs), ("Seed", seed)):
        if value is not None:
            page.get_by_role("spinbutton", name=name).fill(str(value))
            page.keyboard.press("Enter")
            settle(page)


def _run(page) -> None:
    """Press Run (or Resume, when an earlier run on this server left some of its pairs in the cache; nothing when all
    are there) and wait for its scores."""
    from playwright.sync_api import expect

    done = page.get_by_text("AUL bias score")
    start_scoring(page, "Run", done=done)
    expect(done).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)


def _click_row(page, row: int) -> None:
    """Select a row of the (canvas-drawn) pairs table: a click on its row marker (a header and rows of 35 px)."""
    grid = page.locator('[data-testid="stDataFrame"]').last
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 12, box["y"] + 52 + 35 * row)


# ---------------------------------------------------------------------------------------
# 1. Explorer row → inspector, with the offline lab model
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def offline_lab_server(tmp_path_factory):
    """A server without network whose cache already holds the offline lab model (trained here once, as the app would)."""
    require_browser()
    from biaslens import lab

    logs = tmp_path_factory.mktemp("journeys-offline")
    lab.default_lab_model(cache_dir=logs / "cache" / "lab")
    (logs / "data").mkdir()
    # BIASLENS_DATA_DIRS: a data folder the operator allows, to choose in the sidebar
    env = {**server_env(logs, inherit=False, data_dirs=logs / "data"), "HF_HUB_OFFLINE": "1", "HF_HOME": str(logs / "hf")}
    with serve_app(env, logs) as base:
        yield base, logs / "data"


def test_an_explorer_row_opens_the_inspector_with_every_setting_kept(page, offline_lab_server):
    from playwright.sync_api import expect

    server, data_dir = offline_lab_server
    open_app(page, server)
    page.get_by_role("button", name="Use the offline lab model").first.click()
    sidebar = page.locator('[data-testid="stSidebar"]')
    expect(sidebar.get_by_text("Bias-lab model", exact=False)).to_be_visible()
    settle(page)
    # Every global setting away from its default: the scoring mode, then the advanced ones.
    sidebar.get_by_text("kaneko2022 (the released code, to the digit)").click()
    settle(page)
    sidebar.get_by_text("Advanced").click()
    settle(page)
    sidebar.get_by_role("textbox", name="Data folder").fill(str(data_dir))
    page.keyboard.press("Enter")
    settle(page)
    sidebar.locator('[data-testid="stSelectbox"]').filter(has_text="Device").locator("input").click()
    page.get_by_role("option", name="cpu", exact=True).click()
    settle(page)
    chosen = {"model": query(page)["model"], "dataset": query(page)["dataset"], "data_dir": [str(data_dir)], "compat": ["kaneko2022"]}
    chosen["device"] = ["cpu"]
    assert "/lab/" in chosen["model"][0] and chosen["dataset"][0].endswith("heldout_pairs.csv")

    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Dataset explorer").click()
    expect(page.get_by_role("heading", name="Dataset explorer")).to_be_visible()
    settle(page)
    _sample(page, 20)
    _run(page)
    page.get_by_role("tab", name="Pairs").click()
    settle(page)
    _click_row(page, 3)

    expect(page.get_by_role("heading", name="Pair inspector")).to_be_visible()
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_role("heading", name=re.compile(r"^lab pairs #\d+"))).to_be_visible()  # the lab model's own pairs
    settle(page)
    expect(sidebar.get_by_text("Bias-lab model", exact=False)).to_be_visible()  # loaded: not "not on this machine"
    expect(sidebar.get_by_role("radio", name="kaneko2022 (the released code, to the digit)")).to_be_checked()
    expect(main.get_by_text("is not on this machine")).to_have_count(0)
    kept = {k: query(page).get(k) for k in chosen}
    assert kept == chosen, "the inspector opened with other settings than the explorer's"
    pair = query(page)["pair"][0]
    assert pair != "0"  # the clicked row's pair, not the inspector's first
    expect(main.get_by_role("heading", name=re.compile(rf"^lab pairs #{pair} "))).to_be_visible()
    screenshot(page, "journey-explorer-row-to-inspector")


# ---------------------------------------------------------------------------------------
# 2. The comparison's models, from the page
# ---------------------------------------------------------------------------------------


def _pick(page, box, option: str, typed: str) -> None:
    """Open a multiselect (or a selectbox), type `typed` to narrow its list (a long list shows its first options only)
    and click one of the options listed."""
    box.locator("input").click()
    page.keyboard.type(typed)
    page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")
    settle(page)


def _type(page, box, text: str) -> None:
    """Type into a multiselect's (or a selectbox's) box and press Enter, as a user adds a model no list names."""
    box.locator("input").click()
    page.keyboard.type(text)
    page.get_by_role("option").filter(has_text=text).first.wait_for()  # Streamlit offers it ("Add: …") before Enter takes it
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    settle(page)


def test_the_comparison_gets_a_second_model_from_the_page(page, server, model_dirs):
    from playwright.sync_api import expect

    bert, roberta, albert = (str(model_dirs[f]) for f in ("bert-cased", "roberta", "albert"))
    open_app(page, server, "compare", metric="aul", sample="12")
    box = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Models")
    _pick(page, box, "roberta (folder)", "rob")  # a model folder of the server's, listed
    assert query(page)["models"] == [bert, roberta]
    _type(page, box, albert)  # a folder typed and entered
    assert query(page)["models"] == [bert, roberta, albert]
    main = page.locator('[data-testid="stMain"]')
    start_scoring(page, "Score them", main)
    expect(main.get_by_role("heading", name=re.compile(r"^Pairs whose verdict flips"))).to_be_visible(timeout=RUN_TIMEOUT_MS)
    settle(page)
    scores = main.get_by_role("table").filter(has_text="Bias score").first
    for name in ("bert-cased", "roberta", "albert"):
        expect(scores.get_by_role("row").filter(has_text=name)).to_have_count(1)  # each model's own bias score
    screenshot(page, "journey-compare-models-from-the-page")


# ---------------------------------------------------------------------------------------
# 3. A link keeps the seed
# ---------------------------------------------------------------------------------------


def test_a_link_to_a_finished_run_keeps_its_seed_and_reopens_from_the_cache(browser, page, server):
    from playwright.sync_api import expect

    open_app(page, server, "explorer", metrics="aul")
    _sample(page, 20, seed=7)
    _run(page)
    assert query(page).get("seed") == ["7"] and query(page).get("sample") == ["20"]
    link = page.url

    other = browser.new_context(viewport={"width": 1400, "height": 1000})  # a colleague's browser: a new session
    try:
        tab = other.new_page()
        tab.set_default_timeout(TIMEOUT_MS)
        tab.goto(link)
        expect(tab.get_by_text("AUL bias score")).to_be_visible()
        settle(tab)
        expect(tab.get_by_text("Not scored yet")).to_have_count(0)
        expect(tab.get_by_role("spinbutton", name="Seed")).to_have_value("7")
        expect(tab.get_by_text(re.compile(r"^20 of 200 pairs"))).to_be_visible()
    finally:
        other.close()


# ---------------------------------------------------------------------------------------
# 4. Search by number
# ---------------------------------------------------------------------------------------


def test_searching_a_pair_number_shows_that_pair_at_once(page, server):
    from playwright.sync_api import expect

    open_app(page, server, "", pair="3")
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_role("heading", name=re.compile(r"^crows-pairs #3 "))).to_be_visible()
    page.get_by_role("textbox", name="Search the sentences").fill("#7")
    page.keyboard.press("Enter")
    settle(page)
    expect(main.get_by_role("heading", name=re.compile(r"^crows-pairs #7 "))).to_be_visible()
    expect(page.get_by_role("combobox", name=re.compile(r"^Pair \("))).to_have_value(re.compile(r"^#7 · "))  # the box too
    assert query(page)["pair"] == ["7"]
    # A search that leaves the shown pair out shows its first match; one that keeps it, keeps it.
    page.get_by_role("textbox", name="Search the sentences").fill("Person 30 said")
    page.keyboard.press("Enter")
    settle(page)
    expect(main.get_by_role("heading", name=re.compile(r"^crows-pairs #30 "))).to_be_visible()


# ---------------------------------------------------------------------------------------
# 5. A stopped run
# ---------------------------------------------------------------------------------------

#: Every text the main area's progress bar shows, recorded by the page itself (a resumed run may end before a poll).
RECORD_PROGRESS = """() => {
  window.blProgress = [];
  new MutationObserver(() => {
    const bar = document.querySelector('[data-testid="stMain"] [data-testid="stProgress"]');
    const text = bar ? bar.innerText : null;
    if (text && text !== window.blProgress[window.blProgress.length - 1]) window.blProgress.push(text);
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
#: Records, at every change of the page, whether a run's progress bar shows together with a Run (or Resume) button or
#: the "Not scored yet" notice: `window.blBoth` lists what showed with it.
WATCH_RUN_AND_STOP = """() => {
  window.blBoth = [];
  new MutationObserver(() => {
    const main = document.querySelector('[data-testid="stMain"]');
    if (!main.querySelector('[data-testid="stProgress"]')) return;
    const run = [...main.querySelectorAll('button')].find(b => ['Run', 'Resume'].includes(b.innerText.trim()));
    if (run) window.blBoth.push('the ' + run.innerText.trim() + ' button');
    if (main.innerText.includes('Not scored yet')) window.blBoth.push('Not scored yet');
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
#: Whether the progress bar shows at least `pairs` pairs done.
PROGRESS_AT_LEAST = """(pairs) => {
  const bar = document.querySelector('[data-testid="stMain"] [data-testid="stProgress"]');
  const m = bar && bar.innerText.match(/([\\d,]+) \\/ 200 pairs/);
  return m !== null && parseInt(m[1].replace(/,/g, ''), 10) >= pairs;
}"""


def test_a_stopped_run_says_what_it_kept_and_resumes_there(page, server):
    from playwright.sync_api import expect

    # The whole dataset, every paper metric, in kaneko2022 mode: no other test here scores these (the cache starts empty).
    open_app(page, server, "explorer", compat="kaneko2022")
    main = page.locator('[data-testid="stMain"]')
    run, stop = main.get_by_role("button", name="Run", exact=True), main.get_by_role("button", name="Stop")
    expect(main.get_by_text(re.compile(r"^Not scored yet: 200 pairs × 5 metrics"))).to_be_visible()
    expect(stop).to_have_count(0)
    page.evaluate(WATCH_RUN_AND_STOP)
    run.click()
    expect(main.locator('[data-testid="stProgress"]')).to_be_visible()
    expect(stop).to_be_visible()  # while it runs: its progress and Stop
    page.wait_for_function(PROGRESS_AT_LEAST, arg=20, timeout=RUN_TIMEOUT_MS)  # past the first chunk
    assert page.evaluate("() => window.blBoth") == [], "the running job's progress showed beside Run or 'Not scored yet'"
    stop.click()
    settle(page)

    kept_line = main.get_by_text(re.compile(r"[\d,]+ of 200 pairs kept"))
    expect(kept_line).to_be_visible()
    kept = int(re.search(r"([\d,]+) of 200 pairs kept", kept_line.inner_text()).group(1).replace(",", ""))
    assert 0 < kept < 200, kept_line.inner_text()
    expect(stop).to_have_count(0)
    screenshot(page, "journey-stopped-run")
    page.evaluate(RECORD_PROGRESS)
    page.evaluate(WATCH_RUN_AND_STOP)
    main.get_by_role("button", name="Resume", exact=True).click()
    expect(main.get_by_text("AUL bias score")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert page.evaluate("() => window.blBoth") == []
    shown = page.evaluate("() => window.blProgress")  # "Scoring …: resuming after N pairs kept…", then "N / 200 pairs …"
    done = [int(m.replace(",", "")) for text in shown for m in re.findall(r"([\d,]+) / 200 pairs", text)]
    assert done and min(done) >= kept, f"the resumed run's progress went below the {kept} pairs kept: {shown[:5]}"


# ---------------------------------------------------------------------------------------
# 6. Back, and classroom mode
# ---------------------------------------------------------------------------------------


def _back(page) -> None:
    page.go_back()
    settle(page)


def test_back_leaves_a_page_in_one_press(page, server):
    from playwright.sync_api import expect

    open_app(page, server, "", pair="3")
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Dataset explorer").click()
    expect(page.get_by_role("heading", name="Dataset explorer")).to_be_visible()
    settle(page)
    _back(page)
    assert _heading(page) == "Pair inspector", f"still on {_heading(page)} after one press of Back"
    page.go_forward()
    settle(page)
    assert _heading(page) == "Dataset explorer"

    _sample(page, 20, seed=3)  # changes within a page add no entry
    _run(page)
    page.get_by_role("tab", name="Pairs").click()
    settle(page)
    _click_row(page, 1)  # a page switch made by the app: one entry
    expect(page.get_by_role("heading", name="Pair inspector")).to_be_visible()
    settle(page)
    page.get_by_role("button", name="Random").click()
    settle(page)
    _back(page)
    assert _heading(page) == "Dataset explorer", f"still on {_heading(page)} after one press of Back"
    expect(page.get_by_role("tab", name="Pairs")).to_have_attribute("aria-selected", "true")  # as it was left
    assert query(page).get("sample") == ["20"] and query(page).get("seed") == ["3"]
    _back(page)
    assert _heading(page) == "Pair inspector"


def test_classroom_mode_survives_a_reload_and_keeps_the_page_links(page, server):
    from playwright.sync_api import expect

    open_app(page, server, "", pair="3")
    page.locator('[data-testid="stSidebar"]').get_by_text("Classroom mode").click()
    settle(page)
    leave = page.get_by_role("button", name="Leave classroom mode")
    expect(leave).to_be_visible()
    expect(page.locator('[data-testid="stSidebar"]')).to_be_hidden()
    assert query(page).get("classroom") == ["on"]

    page.reload()
    page.locator('[data-testid="stMain"] h1').first.wait_for()
    settle(page)
    expect(leave).to_be_visible()  # still in classroom mode
    expect(page.locator('[data-testid="stSidebar"]')).to_be_hidden()
    links = page.locator('[data-testid="stTopNavLink"]')
    expect(links.filter(has_text="Dataset explorer")).to_be_visible()  # the way to the other pages, without the sidebar
    screenshot(page, "journey-classroom")
    links.filter(has_text="Dataset explorer").click()
    expect(page.get_by_role("heading", name="Dataset explorer")).to_be_visible()
    settle(page)
    expect(leave).to_be_visible()
    assert query(page).get("classroom") == ["on"]

    leave.click()
    settle(page)
    expect(page.locator('[data-testid="stSidebar"]')).to_be_visible()
    assert "classroom" not in query(page)


# ---------------------------------------------------------------------------------------
# 7. The same pair under two models
# ---------------------------------------------------------------------------------------


def test_a_pinned_pair_stays_when_the_model_changes(page, server, model_dirs):
    from playwright.sync_api import expect

    bert, roberta = str(model_dirs["bert-cased"]), str(model_dirs["roberta"])
    open_app(page, server, "", pair="3")
    main, sidebar = page.locator('[data-testid="stMain"]'), page.locator('[data-testid="stSidebar"]')
    expect(main.get_by_role("heading", name=re.compile(r"^crows-pairs #3 "))).to_be_visible()
    settle(page)
    main.get_by_role("button", name="Pin for comparison").click()
    settle(page)
    _type(page, sidebar.locator('[data-testid="stSelectbox"]').filter(has_text="Model").first, roberta)  # another model
    expect(sidebar.get_by_text(re.compile(r"^Loaded roberta"))).to_be_visible()

    expect(main.get_by_role("heading", name="The same pair side by side")).to_be_visible()
    expect(main.get_by_role("heading", name=re.compile(r"^crows-pairs #3 "))).to_be_visible()  # the same pair
    table = main.get_by_role("table").filter(has_text="AUL margin").filter(has_text="pinned")
    for model in ("bert-cased · pinned", "roberta"):  # each model's margins under every metric
        row = table.get_by_role("row").filter(has_text=model)
        expect(row).to_contain_text(re.compile(r"^\s*" + re.escape(model) + r"(\s*[+-]\d\.\d{4,}){5}\s*$"))
    assert (query(page)["model"], query(page)["pin.model"], query(page)["pin.pair"]) == ([roberta], [bert], ["3"])

    _pick(page, main.locator('[data-testid="stMultiSelect"]').filter(has_text="Compare under another model"), "albert (folder)", "alb")
    expect(table.get_by_role("row").filter(has_text="albert")).to_have_count(1)
    screenshot(page, "journey-pinned-pair-under-two-models")

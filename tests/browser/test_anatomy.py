"""The Anatomy view, walked in headless Chromium: a pair, the switch, the three views on screen, the link that reopens
them in a new tab, and the slide downloaded."""

from __future__ import annotations

import re

from tests.support.browser import open_app, query, screenshot, settle


def test_the_anatomy_of_a_pair_is_one_click_away_and_in_its_link(browser, page, server):
    from playwright.sync_api import expect

    open_app(page, server, "", pair="3")
    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_role("heading", name=re.compile(r"^crows-pairs #3 "))).to_be_visible()
    settle(page)
    main.get_by_text("Anatomy: where the bias lives").click()
    expect(main.locator(".bl-astrips")).to_be_visible()  # the attribution strips
    expect(main.get_by_text(re.compile(r"^Completeness \("))).to_be_visible()
    expect(main.get_by_text(re.compile(r"The margin keeps its final sign from layer \d of 2"))).to_be_visible()
    expect(main.locator('[data-testid="stVegaLiteChart"]')).to_have_count(4, timeout=60_000)  # margin, lens, ablation, AULA shares
    expect(main.get_by_role("table").filter(has_text="AULA share")).to_be_visible()
    assert query(page)["anatomy"] == ["on"] and query(page)["pair"] == ["3"]
    screenshot(page, "inspector-anatomy")

    with page.expect_download() as files:
        main.get_by_role("button", name=re.compile("Files \\(attribution")).click()
    assert files.value.suggested_filename.endswith(".zip")
    main.get_by_role("button", name="Make a slide of the anatomy").click()
    with page.expect_download(timeout=120_000) as slide:
        main.get_by_role("button", name="Slide (PNG)").last.click()
    assert slide.value.suggested_filename.endswith(".png")

    other = browser.new_context(viewport={"width": 1500, "height": 1300}).new_page()  # the link, in a new session
    other.goto(page.url)
    expect(other.locator(".bl-astrips")).to_be_visible(timeout=120_000)
    other.context.close()

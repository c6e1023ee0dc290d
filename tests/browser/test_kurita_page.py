"""The Kurita templates page in a real browser: uploaded lists and the WEAT table."""

from __future__ import annotations

import re

from tests.support import FIXTURE_DATA
from tests.support.browser import open_app, screenshot, settle


def test_in_a_browser_uploaded_lists_and_the_weat_table(page, server):
    """The real app: upload two lists in Kurita et al.'s format, score them; run a WEAT-style test."""
    from playwright.sync_api import expect

    open_app(page, server, "kurita")
    expect(page.get_by_role("heading", name="Kurita templates")).to_be_visible()
    page.get_by_role("button", name="Score").click()  # the template tab's defaults
    expect(page.get_by_text("Per attribute")).to_be_visible(timeout=120_000)
    settle(page)
    screenshot(page, "kurita-templates")

    page.get_by_role("tab", name="Attribute lists (Table 5)").click()
    lists = [FIXTURE_DATA / "kurita" / "in_demand_tech_skills", FIXTURE_DATA / "kurita" / "negative_traits"]
    uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text=re.compile(r"^Upload lists"))
    uploader.locator('input[type="file"]').set_input_files([str(p) for p in lists])
    settle(page)
    expect(page.get_by_role("textbox", name="Template for in_demand_tech_skills (12 items)")).to_have_value("[T] can do [A]")
    expect(page.get_by_role("textbox", name="Template for negative_traits (8 items)")).to_have_value("[T] is [A]")
    page.get_by_role("button", name="Score the lists").click()
    expect(page.get_by_text("Per attribute, for the list")).to_be_visible(timeout=120_000)
    settle(page)
    screenshot(page, "kurita-lists")

    page.get_by_role("tab", name="WEAT tests (Table 3)").click()
    page.get_by_role("button", name="Run the tests").click()
    expect(page.get_by_text(re.compile(r"Career/Family \(Male/Female\): d = "))).to_be_visible(timeout=180_000)
    settle(page)
    screenshot(page, "kurita-weat")

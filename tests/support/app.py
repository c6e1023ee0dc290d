"""Helpers for the app's tests: running pages with AppTest and reading what they show.

The `app_env` fixture (the app's conftest) points the app at the tiny random BERT
(BIASLENS_MODEL), the hand-written fixture datasets (BIASLENS_DATA_DIR) and a fresh result cache.
"""

from __future__ import annotations

from typing import Any

from tests.support import REPO

APP = REPO / "app.py"
#: AppTest's default timeout (3 s) is too short for a first model load on 2 cores.
TIMEOUT = 120

PAGES = {
    "inspector": "pages/inspector.py",
    "explorer": "pages/explorer.py",
    "compare": "pages/compare.py",
    "analyses": "pages/analyses.py",
    "lab": "pages/lab.py",
}


def as_a_running_server(monkeypatch) -> None:
    """Every AppTest run as on a server whose app.py has called st.navigation once.

    AppTest forgets before each run that app.py uses st.navigation and, because a `pages/`
    folder exists, starts in the legacy multipage mode, which runs the current page file
    alone. A server leaves that mode for good on its first run; `ui.require_app` covers
    that first run (tested in a real browser by tests/test_browser.py).
    """
    from streamlit.runtime.pages_manager import PagesManager

    original = PagesManager.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init)


def run_app(page: str = "inspector", params: dict[str, Any] | None = None, state: dict[str, Any] | None = None, timeout: float = TIMEOUT):
    """A fresh session of app.py opened on `page` (a key of PAGES) by a link with query `params`.

    `state` presets session state. AppTest reaches a st.navigation page only after a
    first run (on the home page); the session then forgets what it wrote into the URL,
    so `params` read as a shared link, as in a new browser tab.
    """
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=timeout)
    if page != "inspector":
        at.run()
        at.session_state["_url.out"] = {}
        at.query_params.clear()
        at.switch_page(PAGES[page])
    for key, value in (params or {}).items():
        at.query_params[key] = value
    for key, value in (state or {}).items():
        at.session_state[key] = value
    return at.run()


def no_exceptions(at) -> None:
    """No traceback anywhere in the page."""
    assert not at.exception, [e.value for e in at.exception]


def texts(elements) -> str:
    """The text of every element of a list, joined (for `in` checks)."""
    return "\n".join(str(e.value) for e in elements)


def html_of(at) -> str:
    return "\n".join(e.proto.body for e in at.get("html"))


__all__ = ["APP", "PAGES", "TIMEOUT", "as_a_running_server", "html_of", "no_exceptions", "run_app", "texts"]

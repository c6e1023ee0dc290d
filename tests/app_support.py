"""Helpers for the app's tests: the environment a server or AppTest gets, and running pages.

Import the fixtures into a test module (`from app_support import app_env  # noqa: F401`).
The tiny random BERT of conftest is the preselected model (BIASLENS_MODEL), datasets come
from ../shared/data (BIASLENS_DATA_DIR), results go to a fresh cache folder.
"""

from __future__ import annotations

from typing import Any

import pytest

from conftest import DATA, REPO

APP = REPO / "app.py"
#: AppTest's default timeout (3 s) is too short for a first model load on 2 cores.
TIMEOUT = 120

PAGES = {"inspector": "pages/inspector.py", "explorer": "pages/explorer.py", "compare": "pages/compare.py",
         "analyses": "pages/analyses.py", "lab": "pages/lab.py"}


@pytest.fixture
def app_env(monkeypatch, model_dirs, tmp_path) -> dict[str, str]:
    """Point the app at the tiny BERT, ../shared/data and a fresh result cache."""
    if not DATA.is_dir():
        pytest.skip("../shared/data is not available")
    import ui.resources

    env = {
        "BIASLENS_MODEL": str(model_dirs["bert-cased"]),
        "BIASLENS_DATA_DIR": str(DATA),
        "BIASLENS_CACHE_DIR": str(tmp_path / "cache"),
        "BIASLENS_MODEL_DIRS": str(model_dirs["bert-cased"].parent),  # every tiny model (the app refuses other folders)
    }
    for key in ("BIASLENS_MAX_TOKENS", "BIASLENS_MAX_UPLOAD_ROWS", "BIASLENS_MAX_MODELS"):
        monkeypatch.delenv(key, raising=False)  # the server's defaults, whatever the developer's shell says
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    ui.resources.result_cache.clear()  # the shared ResultCache follows BIASLENS_CACHE_DIR
    ui.resources._failures().entries.clear()
    _as_a_running_server(monkeypatch)
    yield env
    ui.resources.result_cache.clear()


def _as_a_running_server(monkeypatch) -> None:
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


__all__ = ["APP", "PAGES", "TIMEOUT", "app_env", "html_of", "no_exceptions", "run_app", "texts"]

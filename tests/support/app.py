"""Helpers for the app's tests: running pages with AppTest and reading what they show.

The `app_env` fixture (the app's conftest) points the app at the tiny random BERT
(BIASLENS_MODEL), the hand-written fixture datasets (BIASLENS_DATA_DIR) and a fresh result cache.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pandas as pd

from tests.support import REPO

APP = REPO / "app.py"
#: AppTest's default timeout (3 s) is too short for a first model load on 2 cores.
TIMEOUT = 120

PAGES = {
    "inspector": "pages/inspector.py",
    "explorer": "pages/explorer.py",
    "compare": "pages/compare.py",
    "leaderboard": "pages/leaderboard.py",
    "analyses": "pages/analyses.py",
    "lab": "pages/lab.py",
    "kurita": "pages/kurita.py",
    "docs": "pages/docs.py",
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


#: What Streamlit renders as markdown: element kinds whose `value` is markdown, and kinds whose `label` is.
MARKDOWN_VALUES = ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success", "toast")
MARKDOWN_LABELS = (
    "metric", "expander", "button", "download_button", "checkbox", "toggle", "radio", "selectbox", "multiselect",
    "text_input", "text_area", "number_input", "slider", "select_slider", "button_group", "tab",
)  # fmt: skip


def markdown_texts(at) -> list[str]:
    """Every text of a run that Streamlit renders as markdown (element bodies, labels, help), sidebar included."""
    out = []
    for kind in MARKDOWN_VALUES:
        out += [str(e.value) for e in at.get(kind)]
    for kind in MARKDOWN_LABELS:
        for element in at.get(kind):
            out += [str(getattr(element, "label", "") or ""), str(getattr(element, "help", "") or "")]
    return [t for t in out if t]


#: GitHub-flavoured markdown's literal autolinks as Streamlit's markdown finds them (remark-gfm: mdast-util-gfm-autolink-literal,
#: the same two patterns): in the text *after* backslash escapes are removed, so an escape cannot stop them. `\w` is ASCII, as in
#: JavaScript. (The check before a match, "at the start or after a space or punctuation", is left out: stricter.)
GFM_URL = re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.IGNORECASE | re.ASCII)
GFM_EMAIL = re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.ASCII)


def gfm_autolinks(text: str) -> list[str]:
    """The addresses Streamlit's markdown turns into links by itself in `text` (www.x, http(s)://x, x@y.z and with it
    mailto:/xmpp:), outside explicit links; CommonMark's own autolinks (`<http://x>`) are links of the rendered HTML."""
    from markdown_it import MarkdownIt

    found = []
    for block in MarkdownIt("commonmark").parse(text):
        inside_link = 0
        for token in block.children or []:
            if token.type == "link_open":
                inside_link += 1
            elif token.type == "link_close":
                inside_link -= 1
            elif token.type == "text" and not inside_link:
                found += [m.group(0) for pattern in (GFM_URL, GFM_EMAIL) for m in pattern.finditer(token.content)]
    return found


def live_markup(texts: list[str], host: str = "evil.example") -> list[str]:
    """The markdown texts that would render a link or an image to `host` (the test payloads' host): a markdown link or
    image, an angle autolink, or an address GitHub-flavoured markdown links by itself (`gfm_autolinks`); or one of
    Streamlit's colour directives (`:red[…]`)."""
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark")
    found = []
    for text in texts:
        rendered = renderer.render(text)
        link = re.search(rf'<(a|img) [^>]*(href|src)="[^"]*{re.escape(host)}', rendered, re.IGNORECASE)
        autolink = any(host in address.lower() for address in gfm_autolinks(text))
        if link or autolink or re.search(r":(red|blue|green|orange|violet|gray|grey|rainbow|primary)(-background)?\[", text):
            found.append(text)
    return found


def html_of(at) -> str:
    return "\n".join(e.proto.body for e in at.get("html"))


class _TableReader(HTMLParser):
    """The `bl-table`s (biaslens.figures.html.table_html) of some HTML: header and rows, numbers from `data-value`."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[list[str], list[list[Any]]]] = []
        self._cell: list[str] | None = None
        self._value: str | None = None
        self._row: list[Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "table" and "bl-table" in (named.get("class") or ""):
            self.tables.append(([], []))
        elif self.tables and tag == "tr":
            self._row = []
        elif self.tables and tag in ("td", "th"):
            self._cell, self._value = [], named.get("data-value")

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            text, full = "".join(self._cell), self._value
            if full is not None:
                self._row.append(int(full) if full.lstrip("-").isdigit() else float(full))
            else:
                self._row.append(text if text or tag == "th" else None)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            header, rows = self.tables[-1]
            if not header:
                header.extend(self._row)
            else:
                rows.append(self._row)
            self._row = None


def static_tables(at_or_element) -> list[pd.DataFrame]:
    """The static tables (`ui.tables.static_table`) an AppTest run (or one of its blocks) shows, as DataFrames.

    Numbers keep their full value (each cell's `data-value`); text cells are text; blank cells None.
    """
    reader = _TableReader()
    reader.feed(html_of(at_or_element))
    return [pd.DataFrame(rows, columns=header) for header, rows in reader.tables]


def shown_columns(element) -> tuple[list[str], set[str]]:
    """An interactive table's (`st.dataframe`) columns as shown: their headers in order, and the headers pinned."""
    import json

    config = json.loads(element.proto.columns or "{}")
    order = list(element.proto.column_order) or list(element.value.columns)
    labels = [config.get(c, {}).get("label") or c for c in order]
    pinned = {config[c].get("label") or c for c in order if config.get(c, {}).get("pinned")}
    return labels, pinned


def interactive_tables(at) -> list[pd.DataFrame]:
    """The interactive tables (`ui.tables.table` drawn as `st.dataframe`) of a run, as shown: headers, order, no hidden column."""
    out = []
    for element in at.dataframe:
        order = list(element.proto.column_order) or list(element.value.columns)
        out.append(element.value.loc[:, order].set_axis(shown_columns(element)[0], axis=1))
    return out


def tables(at) -> list[pd.DataFrame]:
    """Every table a run shows, under the headers it shows: the static ones, then the interactive ones."""
    return [*static_tables(at), *interactive_tables(at)]


__all__ = [
    "APP",
    "PAGES",
    "TIMEOUT",
    "as_a_running_server",
    "html_of",
    "interactive_tables",
    "live_markup",
    "markdown_texts",
    "no_exceptions",
    "run_app",
    "shown_columns",
    "static_tables",
    "tables",
    "texts",
]

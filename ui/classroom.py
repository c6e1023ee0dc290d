"""Classroom mode: the app as a lecture slide. Larger type, no sidebar, no developer chrome.

The toggle sits in the sidebar, and the way back at the top of every page, since the sidebar is
hidden while it is on; so are the page links (app.py places them at the top). It is part of every
page's view (`classroom=on` in the URL, `ui.views.GlobalView`): a reload or a shared link keeps it.
The model's caveats need nothing extra: `ui.honesty` already shows them in the main area, beside
the results.
"""

from __future__ import annotations

import streamlit as st

from . import state
from .views import GlobalView

KEY = "classroom.on"

#: Projector type: everything ~25% larger, the sidebar and Streamlit's tools (Deploy, menu, running man) hidden; the
#: toolbar stays: it holds the page links (app.py's `st.navigation(position="top")` in classroom mode).
CSS = """
<style>
html { font-size: 21px; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"] { display: none !important; }
[data-testid="stDecoration"], [data-testid="stStatusWidget"], [data-testid="stAppDeployButton"],
[data-testid="stMainMenu"] { display: none !important; }
.block-container { padding-top: 5rem; max-width: 1700px; }  /* below the page links */
[data-testid="stCaptionContainer"] { font-size: 0.95rem; }
</style>
"""


def adopt_url() -> None:
    """Classroom mode as a link (or a page switch) brings it (app.py, every run, before the page links are placed)."""
    link = state.link(GlobalView)
    if "classroom" in link:
        st.session_state[KEY] = link.view.classroom


def on() -> bool:
    return bool(st.session_state.get(KEY, False))


def sidebar_toggle() -> None:
    """The switch, in the sidebar."""
    st.sidebar.toggle(
        "Classroom mode",
        key=KEY,
        help="Larger type, sidebar and developer menus hidden: for a projector. Leave it with the button at the top of the page.",
    )


def _leave() -> None:
    st.session_state[KEY] = False


def apply() -> None:
    """In classroom mode: the larger, quieter style and the way back (call once per run, before the page)."""
    if not on():
        return
    st.html(CSS)
    with st.container(horizontal=True, horizontal_alignment="right"):
        st.button("Leave classroom mode", icon=":material/close_fullscreen:", on_click=_leave, key="classroom.leave", type="tertiary")


__all__ = ["adopt_url", "apply", "on", "sidebar_toggle"]

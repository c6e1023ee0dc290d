"""Classroom mode: the app as a lecture slide. Larger type, no sidebar, no developer chrome.

The toggle sits in the sidebar (and the way back at the top of every page, since the sidebar is
hidden while it is on). The model's caveats need nothing extra: `ui.honesty` already shows
them in the main area, beside the results.
"""

from __future__ import annotations

import streamlit as st

KEY = "classroom.on"

#: Projector type: everything ~25% larger, the sidebar and Streamlit's toolbar (Deploy, menu, running man) hidden.
CSS = """
<style>
html { font-size: 21px; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stExpandSidebarButton"] { display: none !important; }
[data-testid="stToolbar"], [data-testid="stDecoration"], [data-testid="stStatusWidget"], [data-testid="stAppDeployButton"],
[data-testid="stMainMenu"] { display: none !important; }
[data-testid="stHeader"] { background: transparent; height: 0; }
.block-container { padding-top: 1.2rem; max-width: 1700px; }
[data-testid="stCaptionContainer"] { font-size: 0.95rem; }
</style>
"""


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


__all__ = ["apply", "on", "sidebar_toggle"]

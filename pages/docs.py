"""Documentation: the docs site's pages in the app (each page's header links to its own)."""

from __future__ import annotations

import streamlit as st

import ui
import ui.docs
import ui.feedback
import ui.state
from ui.views import DOC_PAGES, DocsView

ui.require_app()

S = "docs."
#: The page's one-line description, under its title.
ABOUT = "The documentation of biaslens, the same pages as its docs site (the project's docs/ folder): pick another page below."


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    link = ui.state.link(DocsView)
    if "page" in link:
        st.session_state[S + "page"] = link.view.page
    st.session_state.setdefault(S + "page", DocsView.page)
    name = st.session_state[S + "page"] if st.session_state[S + "page"] in DOC_PAGES else DocsView.page
    ui.state.publish(DocsView(ui.state.global_view(), page=name))
    ui.feedback.header(ui.docs.doc_title(name), ABOUT)
    st.selectbox(
        "Documentation page",
        DOC_PAGES,
        key=S + "page",
        format_func=ui.docs.doc_title,
        help="The same pages as the docs site (docs/ in the project); the API reference is on the docs site only.",
    )
    ui.docs.draw(name)


main()

"""biaslens app: `streamlit run app.py` (or `bash scripts/app.sh`).

The entry draws the global sidebar (ui.sidebar) and hands over to the page. Adding a page
is one line in PAGES; see ui/__init__.py for the conventions pages follow.
"""

import os
from pathlib import Path

# libgomp's threads spin 300,000 times before they sleep: when another program (the user's own browser, on the same
# cores) takes one core, torch's two threads then wait on each other and an inspection takes 2-3x as long; 3,000
# costs nothing when the cores are free (benchmarks/results/browser.md). Read once, when torch loads: before ui.
os.environ.setdefault("GOMP_SPINCOUNT", "3000")

import streamlit as st  # noqa: E402

import ui.classroom  # noqa: E402
import ui.resources  # noqa: E402
import ui.runs  # noqa: E402
import ui.sidebar  # noqa: E402
import ui.state  # noqa: E402

ASSETS = Path(__file__).parent / "assets"

PAGES = [
    st.Page("pages/inspector.py", title="Pair inspector", icon=":material/compare_arrows:", url_path="inspector", default=True),
    st.Page("pages/explorer.py", title="Dataset explorer", icon=":material/table_chart:", url_path="explorer"),
    st.Page("pages/compare.py", title="Model comparison", icon=":material/leaderboard:", url_path="compare"),
    st.Page("pages/leaderboard.py", title="Leaderboard", icon=":material/format_list_numbered:", url_path="leaderboard"),
    st.Page("pages/kurita.py", title="Kurita templates", icon=":material/text_fields:", url_path="kurita"),
    st.Page("pages/lab.py", title="Bias lab", icon=":material/science:", url_path="lab"),
    st.Page("pages/analyses.py", title="Paper analyses", icon=":material/analytics:", url_path="analyses"),
    # Reached from each page's header (its docs page), not listed among the pages.
    st.Page("pages/docs.py", title="Documentation", icon=":material/menu_book:", url_path="docs", visibility="hidden"),
]

# .streamlit/config.toml hides the navigation Streamlit draws from the pages/ folder before app.py has run (a server's
# first visit would flash that raw list of file names while torch loads); app.py's own navigation is shown again here.
st.set_option("client.showSidebarNavigation", True)
st.set_page_config(page_title="biaslens", page_icon=str(ASSETS / "icon.svg"), layout="wide")
st.logo(str(ASSETS / "logo.svg"), size="large")
st.html(f"<style>{(ASSETS / 'app.css').read_text()}</style>")

ui.state.begin_run()
ui.state.one_entry_per_page()  # the browser's Back leaves a page in one press
ui.runs.watch_server_stop()  # SIGTERM stops running jobs at once
ui.classroom.adopt_url()  # before the page links are placed: at the top in classroom mode (the sidebar is hidden)
page = st.navigation(PAGES, position="top" if ui.classroom.on() else "sidebar")
with ui.resources.confined():  # every file opened for a user must resolve inside the server's allowed folders
    ui.sidebar.render_sidebar()
    ui.classroom.sidebar_toggle()
    ui.classroom.apply()
    page.run()
ui.state.flush()

"""biaslens app: `streamlit run app.py` (or `bash scripts/app.sh`).

The entry draws the global sidebar (ui.sidebar) and hands over to the page. Adding a page
is one line in PAGES; see ui/__init__.py for the conventions pages follow.
"""

from pathlib import Path

import streamlit as st

import ui.classroom
import ui.runs
import ui.sidebar
import ui.state

ASSETS = Path(__file__).parent / "assets"

PAGES = [
    st.Page("pages/inspector.py", title="Pair inspector", icon=":material/compare_arrows:", url_path="inspector", default=True),
    st.Page("pages/explorer.py", title="Dataset explorer", icon=":material/table_chart:", url_path="explorer"),
    st.Page("pages/compare.py", title="Model comparison", icon=":material/leaderboard:", url_path="compare"),
    st.Page("pages/kurita.py", title="Kurita templates", icon=":material/text_fields:", url_path="kurita"),
    st.Page("pages/lab.py", title="Bias lab", icon=":material/science:", url_path="lab"),
    st.Page("pages/analyses.py", title="Paper analyses", icon=":material/analytics:", url_path="analyses"),
]

st.set_page_config(page_title="biaslens", page_icon=str(ASSETS / "icon.svg"), layout="wide")
st.logo(str(ASSETS / "logo.svg"), size="large")
st.html(f"<style>{(ASSETS / 'app.css').read_text()}</style>")

ui.state.begin_run()
ui.runs.watch_server_stop()  # SIGTERM stops running jobs at once
page = st.navigation(PAGES)
ui.sidebar.render_sidebar()
ui.classroom.sidebar_toggle()
ui.classroom.apply()
page.run()
ui.state.flush()

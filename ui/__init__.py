"""Streamlit-only helpers shared by the app's pages (the engine, `biaslens`, never imports this).

Conventions for a page (see pages/inspector.py for a complete one):

* **Adding a page** is one line in app.py's `PAGES` list:
  `st.Page("pages/my_page.py", title="My page", icon=":material/science:", url_path="my-page")`.
  The page file is a script in `pages/`; it runs after app.py has drawn the
  sidebar, and its first line is `ui.require_app()` (see below). Its body is a
  `def main() -> None:` called at the bottom; module level holds only imports, constants
  and helper functions.
* **Global settings** (model, revision, device, dtype, compat mode, dataset, data folder)
  live in the sidebar (`ui.sidebar`), drawn once per run by app.py: read them in `main()` with
  `settings = ui.settings.current()`, a frozen `Settings` dataclass, and pass them to the page's
  helpers as a parameter. Never draw them again.
  `ui.sidebar.model_choices()` lists the models the app offers wherever a model is chosen (the
  hook for new defaults, e.g. a lab model); `ui.sidebar.pick_models` is the one list of several
  models (the comparison's, the analyses', the inspector's "Compare under another model").
* **Heavy resources** come from `ui.resources`: `model_or_stop(settings)` returns the cached
  `LanguageModel` (loaded once per (model, revision, device, dtype) for all sessions and never
  mutated) or shows why it failed in the page and stops it; `dataset_or_stop(settings)` /
  `dataset_or_none(settings)` likewise for datasets; `result_cache()` is the shared
  `ResultCache`; `inspection(settings, stereo, anti)` is a cached `inspect_pair`.
* **Errors**: wrap engine calls in `with ui.feedback.guard():` (a `BiaslensError` becomes
  its one-line message in the page, anything else a short "unexpected error" note; never a
  traceback), or call `ui.feedback.show_error(exc)` yourself.
* **Memos**: keep finished results in a `ui.memo.LRU(capacity)` (bounded, thread-safe): in
  `st.cache_resource` to share them between sessions, in `st.session_state` for one session.
* **Long work** gets a progress bar with time remaining: `bar = ui.progress.ProgressBar("Scoring")`,
  pass `bar` as the engine's `progress=` callback, `bar.clear()` at the end. A job the user starts
  follows one rule on every page: `if ui.runs.offer("Run", key=..., pending=ui.runs.is_pending(job),
  notice=...):` draws its notice and Run button (gone once it runs), then `with ui.runs.stoppable(job,
  help=...):` draws its Stop button around the work: Run and Stop are never both live.
* **Datasets on screen** get `ui.feedback.content_warning(dataset)` above them.
* **Shareable state**: each page has one typed view in `ui.views` (a frozen dataclass:
  `g`, the sidebar's settings and classroom mode, plus the page's own fields, one URL
  parameter each; `to_query` / `from_query`). At the top of `main()`, `link =
  ui.state.link(MyView)` is what a link or a page switch brought: adopt the fields it names
  (`if "pair" in link: ...link.view.pair`); a value that does not parse has already been
  reported in one line. Once the view is known, before heavy work, write the URL with
  `ui.state.publish(MyView(ui.state.global_view(), ...))`. Open another page with
  `ui.state.open_view(view)`, the view built by a navigation method of this page's view
  (`ExplorerView.inspect(pair)`), never from hand-picked parameters: it keeps every global
  setting. A new page's view needs its fields, its `read`, a strategy in
  tests/app/test_views.py and, for a link to it, a navigation method.
* Page-local session keys are prefixed with the page name (`inspector.pair`), so pages
  never step on each other's state.
* **Imports inside `ui/`** form no cycle (tests/engine/test_architecture.py): `ui.text` (escaping) and
  `ui.views` are at the bottom, then `ui.settings`, `ui.state`, `ui.progress`, `ui.feedback`, `ui.resources`,
  and `ui.sidebar` on top. A helper that a lower module needs moves down, never behind a lazy import.
"""


def require_app() -> None:
    """First line of every page: make sure the page runs inside app.py, never alone.

    A `pages/` folder beside app.py makes Streamlit start a server's first session (and
    every AppTest run) in its legacy multipage mode, which runs a deep-linked page file
    without app.py, so without the sidebar and its settings. `st.navigation` (called by
    app.py) switches that mode off; a page that finds it still on switches it off itself
    and reruns, so app.py draws the sidebar and then runs this page.
    """
    import streamlit as st
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()

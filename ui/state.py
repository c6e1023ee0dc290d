"""Shareable state: each page's view (`ui.views`) in the URL's query parameters, so a link reopens it.

Each run, app.py calls `begin_run()` first, which snapshots the URL's parameters. A value in the URL that differs from
what this session last wrote there came from outside (a shared link, the browser's Back button): `link(ViewClass)` reads
the URL into the page's view once per run (a value that does not parse is reported in one line with `reject`) and says
which fields came from outside; the page adopts those, the sidebar adopts the global part (`link(GlobalView)`). A page
switch made with `open_view(view)` hands the whole view to the next page: every field of it is adopted. `publish(view)`
writes the URL from the page's view, whose global part is this run's `global_view()` (the sidebar's, `set_global`).

One page visit is one entry of the browser's history (`one_entry_per_page`): Back leaves a page in one press.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import streamlit as st

from .text import md
from .views import GlobalView, View

_IN = "_url.in"  # the URL's parameters at the start of this run
_OUT = "_url.out"  # what this session last wrote into the URL (or read from it)
_GLOBAL = "_url.global"  # this run's global view (the sidebar's)
_PUBLISHED = "_url.published"  # whether this run already wrote the URL
_SWITCHING = "_url.switching"  # `open_view` is switching pages
_HANDOFF = "_url.handoff"  # the view `open_view` hands to the next page
_FORCED = "_url.forced"  # this run's handed-over view
_LINKS = "_url.links"  # this run's links, per view class

V = TypeVar("V")
V_co = TypeVar("V_co", covariant=True)


@dataclass(frozen=True)
class Link(Generic[V_co]):
    """What a link or a page switch brings to a page in this run: the view it describes and the fields the page adopts
    (`"pair" in link`). Fields the URL leaves out, or that only repeat what this session wrote there, are not among them."""

    view: V_co
    fields: frozenset[str]

    def __contains__(self, name: object) -> bool:
        return name in self.fields


def _values(value: Any) -> list[str]:
    """A parameter's values, as a list (empty ones left out)."""
    values = [] if value is None else [value] if isinstance(value, str) else list(value)
    return [str(v) for v in values if v is not None and str(v) != ""]


def _url() -> dict[str, list[str]]:
    return {key: st.query_params.get_all(key) for key in st.query_params.keys()}


def begin_run() -> None:
    """Snapshot the URL's parameters (call first thing in app.py, every run)."""
    incoming = st.session_state[_IN] = _url()
    st.session_state.setdefault(_OUT, {})
    st.session_state[_GLOBAL] = None
    st.session_state[_PUBLISHED] = False
    st.session_state[_SWITCHING] = False
    st.session_state[_LINKS] = {}
    st.session_state[_FORCED] = st.session_state.pop(_HANDOFF, None)
    if st.session_state[_FORCED] is not None:  # the URL holds the handed-over view: nothing in it is news
        st.session_state[_OUT] = {key: _values(value) for key, value in incoming.items()}


def link(cls: type[V]) -> Link[V]:
    """What a link (or `open_view`) brings to the view `cls` in this run; the same answer on every call of a run.

    A value the URL brings that does not parse is shown with `reject`, once, and is not among the fields to adopt.
    """
    links = st.session_state.setdefault(_LINKS, {})
    if cls not in links:
        links[cls] = _handed_over(cls) or _from_url(cls)
    return links[cls]


def _handed_over(cls: type) -> Link | None:
    forced = st.session_state.get(_FORCED)
    view = None if forced is None else forced.g if cls is GlobalView else forced if isinstance(forced, cls) else None
    return None if view is None else Link(view, frozenset(cls.own_fields()))


def _params_of(query: dict[str, Any], name: str) -> dict[str, list[str]]:
    """The parameters of a view's field `name` that carry a value: `name` itself, or those of a view within the view
    (`pin` -> `pin.model`, `pin.pair`, ...)."""
    return {k: vs for k, v in query.items() if (k == name or k.startswith(name + ".")) and (vs := _values(v))}


def _from_url(cls: Any) -> Link:
    incoming, out = st.session_state.get(_IN, {}), st.session_state.setdefault(_OUT, {})
    view, rejected = cls.from_query(incoming)
    new = set()
    for name in cls.own_fields():
        values = _params_of(incoming, name)
        if values and values != _params_of(out, name):
            for old in _params_of(out, name):
                del out[old]
            out.update(values)
            new.add(name)
    for r in rejected:
        if r.name.split(".")[0] in new:
            reject(r.name, r.value, r.expected, kept=r.kept)
    unusable = {r.name for r in rejected if not r.partly}
    return Link(view, frozenset(new - unusable))


def reject(name: str, value: Any, expected: str, kept: bool = False) -> None:
    """Say in the page, in one line, that the link's value for `name` was not used, and what was expected (`kept`: it
    was used, read as `expected` says: `models=gpt2,bert` is one name).

    A bad value in a link (`pair=-1`, `sample=abc`, `metrics=rm -rf`) is never replaced silently.
    The value is shown as text (escaped), never as markdown.
    """
    shown = value if isinstance(value, str) else ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    if len(shown) > 80:
        shown = shown[:80] + "…"
    if kept:
        st.warning(f"The link's {md(name)}={md(repr(shown))} is read as {md(expected)}.", icon=":material/link:")
        return
    st.warning(f"The link's {md(name)}={md(repr(shown))} was not used: expected {md(expected)}.", icon=":material/link_off:")


def set_global(view: GlobalView) -> None:
    """This run's global part of every view (the sidebar's settings and classroom mode), published with every page's."""
    st.session_state[_GLOBAL] = view


def global_view() -> GlobalView:
    """This run's global part of every view: build a page's view with `g=ui.state.global_view()`."""
    return st.session_state.get(_GLOBAL) or GlobalView()


def publish(view: View) -> None:
    """Write the URL from the page's view (call it once the view is known, before heavy work)."""
    query = view.to_query()
    st.session_state[_PUBLISHED] = True
    st.session_state[_OUT] = {key: _values(value) for key, value in query.items()}
    if _url() != st.session_state[_OUT]:
        st.query_params.from_dict(query)


def flush() -> None:
    """End of run (app.py): publish the global view if the page published nothing itself."""
    if not st.session_state.get(_PUBLISHED) and not st.session_state.get(_SWITCHING):
        publish(global_view())


#: Marks the URL of a page switch made by `open_view` (the browser never shows it).
SWITCH = "page_switch"


def open_view(view: View) -> None:
    """Switch to `view`'s page and hand it the whole view (it adopts every field: the global part too).

    The switch carries the view's URL, marked (`SWITCH`): the browser's history then gets one entry for the new page,
    and the page left keeps its own (see `one_entry_per_page`).
    """
    st.session_state[_HANDOFF] = view
    st.session_state[_SWITCHING] = True
    st.switch_page(view.PAGE, query_params={**view.to_query(), SWITCH: "1"})  # type: ignore[attr-defined]  # views name their page


#: Streamlit pushes a browser history entry for every change of the query string, so Back went through every value a
#: page had published before it left it (three presses from the inspector). Here a change that keeps the page's path
#: replaces the current entry; a new page pushes one. A switch by `open_view` first sends its URL, marked, while the
#: browser still shows the page it leaves, and Streamlit moves to the new path later, sometimes after the new page's
#: first URL: so from the marked URL to the new path, nothing is written to the page left, and the new path's entry
#: gets the newest of those URLs. (The element hides itself: it only carries the script.)
_ONE_ENTRY_PER_PAGE = """<style>.stElementContainer:has(#bl-history) { display: none; }</style><span id="bl-history"></span><script>
if (!window.biaslensHistory) {
  window.biaslensHistory = true;
  const push = window.history.pushState.bind(window.history), replace = window.history.replaceState.bind(window.history);
  let pending = null;  // {since, url}: a switch is under way; url is the newest URL meant for the next page
  const change = (state, unused, url) => {
    const next = new URL(url == null ? window.location.href : url, window.location.href);
    const marked = next.searchParams.has("SWITCH");
    next.searchParams.delete("SWITCH");
    if (pending && Date.now() - pending.since > 15000) pending = null;  // a switch that never arrived
    if (next.pathname === window.location.pathname) {
      if (marked) { pending = {since: Date.now(), url: next}; return; }  // the page left keeps its entry
      if (pending) { pending.url = next; return; }  // the new page's URL, before its path: kept for its entry
      return replace(state, unused, next.href);
    }
    if (pending) { next.search = pending.url.search; pending = null; }
    return push(state, unused, next.href);
  };
  window.history.pushState = change;
  window.history.replaceState = change;
}
</script>""".replace("SWITCH", SWITCH)


def one_entry_per_page() -> None:
    """One page visit = one entry of the browser's history, so Back leaves a page in one press (app.py, every run)."""
    st.html(_ONE_ENTRY_PER_PAGE, unsafe_allow_javascript=True)

"""Shareable state: the view's settings in the URL's query parameters, so a link reopens it.

Each run, app.py calls `begin_run()` first, which snapshots the URL's parameters. A value
in the URL that differs from what this session last wrote there came from outside (a
shared link, a page opened with parameters): `take(name)` returns it once, and the page
adopts it. At the end of a run the URL is rewritten from the session's state: the global
settings (`set_global`) plus the current page's own parameters (`publish`). Values are
strings; lists (e.g. several models) are repeated parameters.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

_IN = "_url.in"  # the URL's parameters at the start of this run
_OUT = "_url.out"  # what this session last wrote into the URL
_GLOBAL = "_url.global"  # global settings to publish this run
_PUBLISHED = "_url.published"  # whether this run already wrote the URL
_SWITCHING = "_url.switching"  # a page switch with its own parameters is under way
_HANDOFF = "_url.handoff"  # parameters `open_page` hands to the next page
_FORCED = "_url.forced"  # this run's handed-over parameters

Value = str | list[str]


def _normalise(value: Any) -> Value | None:
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, (list, tuple)):
        items = [str(v) for v in value if v is not None and str(v) != ""]
        return items or None
    return str(value)


def begin_run() -> None:
    """Snapshot the URL's parameters (call first thing in app.py, every run)."""
    st.session_state[_IN] = {key: _one_or_list(st.query_params.get_all(key)) for key in st.query_params.keys()}
    st.session_state.setdefault(_OUT, {})
    st.session_state[_GLOBAL] = {}
    st.session_state[_PUBLISHED] = False
    st.session_state[_SWITCHING] = False
    st.session_state[_FORCED] = st.session_state.pop(_HANDOFF, {})


def _one_or_list(values: list[str]) -> Value:
    return values[0] if len(values) == 1 else list(values)


def take(name: str) -> Value | None:
    """The URL's value for `name` if it came from outside this session (a link), else None.

    Returns a value once: after it the session's own state is the truth again. Values
    handed over by `open_page` always count as new.
    """
    forced = st.session_state.get(_FORCED, {})
    if name in forced:
        value = forced.pop(name)
        st.session_state.setdefault(_OUT, {})[name] = _normalise(value)
        return value
    incoming = st.session_state.get(_IN, {}).get(name)
    out = st.session_state.setdefault(_OUT, {})
    if incoming is None or _normalise(incoming) == out.get(name):
        return None
    out[name] = _normalise(incoming)
    return incoming


def take_one(name: str) -> str | None:
    """`take` for a single value (the last one if the URL repeats the name)."""
    value = take(name)
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def take_list(name: str) -> list[str] | None:
    """`take` for a list: repeated parameters, or one comma-free value as a one-item list."""
    value = take(name)
    if value is None:
        return None
    return list(value) if isinstance(value, list) else [value]


def reject(name: str, value: Any, expected: str) -> None:
    """Say in the page, in one line, that the link's value for `name` was not used, and what was expected.

    A bad value in a link (`pair=-1`, `sample=abc`, `metrics=rm -rf`) is never replaced silently.
    The value is shown as text (escaped), never as markdown.
    """
    from .feedback import md

    shown = value if isinstance(value, str) else ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    if len(shown) > 80:
        shown = shown[:80] + "…"
    st.warning(f"The link's {md(name)}={md(repr(shown))} was not used: expected {expected}.", icon=":material/link_off:")


def set_global(**params: Any) -> None:
    """The global settings' parameters (app.py's sidebar), published with every page's."""
    st.session_state.setdefault(_GLOBAL, {}).update(params)


def publish(**params: Any) -> None:
    """Write the URL: the global settings plus this page's parameters (None leaves one out)."""
    merged: dict[str, Value] = {}
    for key, value in {**st.session_state.get(_GLOBAL, {}), **params}.items():
        norm = _normalise(value)
        if norm is not None:
            merged[key] = norm
    st.session_state[_PUBLISHED] = True
    st.session_state[_OUT] = dict(merged)
    current = {key: _one_or_list(st.query_params.get_all(key)) for key in st.query_params.keys()}
    if current != merged:
        st.query_params.from_dict(merged)


def flush() -> None:
    """End of run (app.py): publish the global settings if the page published nothing itself."""
    if not st.session_state.get(_PUBLISHED) and not st.session_state.get(_SWITCHING):
        publish()


def open_page(page: str, **params: Any) -> None:
    """Switch to another page (its file path, as in app.py), handing it `params` (also shown in its URL)."""
    merged = {**st.session_state.get(_GLOBAL, {}), **params}
    query = {k: v for k, v in ((k, _normalise(v)) for k, v in merged.items()) if v is not None}
    st.session_state[_SWITCHING] = True
    st.session_state[_HANDOFF] = {k: v for k, v in query.items() if k in params}
    st.switch_page(page, query_params=query)

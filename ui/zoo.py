"""Results stores of `biaslens zoo run` in the app: opened only inside the server's allowed folders, what they hold read
once and shared by every session (the leaderboard, the explorer's stored runs, rank intervals, paired comparisons).

The store's own index is memoised per content in the engine (`biaslens.zoo.store`): a page run costs one listing of
its cells. Stored runs and the slower computations from stored pairs are kept here, in bounded LRUs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, TypeVar

import streamlit as st

from biaslens.data.confine import confine_data_file
from biaslens.zoo.store import ResultsStore

from .memo import LRU

T = TypeVar("T")


@st.cache_resource(show_spinner=False)
def _memo() -> LRU[tuple, Any]:
    return LRU(16)


def default_store() -> str:
    """The results store the leaderboard opens first: the server's $BIASLENS_ZOO_STORE, else none."""
    from .resources import server_settings
    from biaslens.errors import ServerConfigError

    try:
        return server_settings().zoo_store or ""
    except ServerConfigError:
        return ""


def open_store(path: str) -> ResultsStore:
    """The store at `path`, refused (one line) where the server does not allow it (`BIASLENS_DATA_DIRS`)."""
    folder = Path(os.path.expanduser(path.strip()))
    confine_data_file(folder)
    return ResultsStore(folder)


def memoised(key: tuple, compute: Callable[[], T]) -> T:
    """`compute()`'s value, kept for every session under `key` (bounded: the least recently used goes first)."""
    found = _memo().get(key)
    if found is not None:
        return found
    return _memo().put(key, compute())


def remembered(key: tuple) -> bool:
    """Whether `memoised` keeps a value for `key`."""
    return key in _memo()


def stored_result(path: str, unit: str) -> Any:
    """A stored run (`ResultsStore.result`): the pairs and summary `evaluate` made, read from the store."""
    store = open_store(path)
    return memoised(("result", str(store.root), unit), lambda: store.result(unit))


__all__ = ["default_store", "memoised", "open_store", "remembered", "stored_result"]

"""The app's one memo: a bounded, thread-safe least-recently-used map (finished analyses, runs, StereoSet scores).

Keep one in `st.cache_resource` to share it between sessions, or in `st.session_state` for one session.
Models have their own pool (`biaslens.serving.server.ModelPool`): loading one must happen once even under concurrent requests.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most `capacity` entries; reading or writing one makes it the most recent; the least recent goes first."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._lock = threading.Lock()
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The value kept for `key` (now the most recent), or None."""
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        """Keep `value` for `key`, dropping the least recent entries beyond `capacity`; returns `value`."""
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
            return value

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def keys(self) -> list[K]:
        """The keys, least recent first."""
        with self._lock:
            return list(self._items)

"""The app's one memo: a bounded, thread-safe least-recently-used map (finished analyses, runs, StereoSet scores).

Keep one in `st.cache_resource` to share it between sessions, or in `st.session_state` for one session.
Models have their own pool (`biaslens.serving.server.ModelPool`): loading one must happen once even under concurrent requests.
"""

from __future__ import annotations

import threading
from typing import Hashable, TypeVar

from biaslens.serving.server import BoundedMap

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(BoundedMap[K, V]):
    """At most `capacity` entries; reading or writing one makes it the most recent; the least recent goes first."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, threading.Lock())

    def get(self, key: K) -> V | None:
        """The value kept for `key` (now the most recent), or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        """Keep `value` for `key`, dropping the least recent entries beyond `capacity`; returns `value`."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
            return value

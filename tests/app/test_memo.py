"""`ui.memo.LRU`: the app's one bounded, thread-safe memo."""

from __future__ import annotations

import threading

import pytest

from ui.memo import LRU


def test_the_least_recently_used_entry_goes_first():
    memo: LRU[str, int] = LRU(2)
    assert memo.put("a", 1) == 1
    memo.put("b", 2)
    assert memo.get("a") == 1  # "a" is now the most recent
    memo.put("c", 3)
    assert "b" not in memo and memo.keys() == ["a", "c"] and len(memo) == 2
    assert memo.get("b") is None


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        LRU(0)


def test_concurrent_writers_never_exceed_the_capacity():
    memo: LRU[int, int] = LRU(5)

    def write(start: int) -> None:
        for i in range(start, start + 500):
            memo.put(i, i)
            memo.get(i - 3)

    threads = [threading.Thread(target=write, args=(n * 1000,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(memo) == 5 and all(memo.get(k) == k for k in memo.keys())

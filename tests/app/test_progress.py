"""Progress arithmetic: the time left and its wording (ui.progress)."""

from __future__ import annotations

import pytest

from ui.progress import Eta, format_duration


def test_eta_uses_the_recent_rate():
    eta = Eta(window=10)
    assert eta.update(0.0, 0, 100) is None
    assert eta.update(1.0, 50, 100) is None  # cached chunks, fast: no rate from the first stretch
    assert eta.update(12.0, 60, 100) == pytest.approx(44.0)  # measured from the end of the first stretch on
    left = eta.update(22.0, 70, 100)  # 1 pair/s lately
    assert left == pytest.approx(30.0, rel=0.35)
    assert eta.update(23.0, 100, 100) == 0.0


def test_the_first_chunk_s_warm_up_is_not_taken_for_the_rate():
    """Issue 30, item 10: "about 2 min 05 s" from the first 3 pairs (the model warming up); the run took 45 s."""
    eta = Eta()
    assert eta.update(0.0, 0, 200) is None  # the run starts
    assert eta.update(10.0, 3, 200) is None  # the first chunk: 10 s, mostly warming up: "estimating time left…"
    left = eta.update(11.0, 8, 200)  # warm: 5 pairs a second
    assert left == pytest.approx(192 / 5)  # not 197 × 10 / 3 ≈ 11 min
    resumed = Eta()
    assert resumed.update(0.0, 120, 200) is None and resumed.update(0.5, 120, 200) is None  # 120 kept in the cache: nothing new yet
    assert resumed.update(5.0, 125, 200) is None and resumed.update(6.0, 130, 200) == pytest.approx(70 / 5)


def test_format_duration():
    assert [format_duration(s) for s in (0, 8.4, 65, 3725)] == ["0 s", "8 s", "1 min 05 s", "1 h 02 min"]

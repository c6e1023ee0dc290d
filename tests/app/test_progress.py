"""Progress arithmetic: the time left and its wording (ui.progress)."""

from __future__ import annotations

import pytest

from ui.progress import Eta, format_duration


def test_eta_uses_the_recent_rate():
    eta = Eta(window=10)
    assert eta.update(0.0, 0, 100) is None
    assert eta.update(1.0, 50, 100) == pytest.approx(1.0)  # cached chunks: fast
    eta.update(12.0, 60, 100)
    left = eta.update(22.0, 70, 100)  # 1 pair/s lately
    assert left == pytest.approx(30.0, rel=0.35)
    assert eta.update(23.0, 100, 100) == 0.0


def test_format_duration():
    assert [format_duration(s) for s in (0, 8.4, 65, 3725)] == ["0 s", "8 s", "1 min 05 s", "1 h 02 min"]

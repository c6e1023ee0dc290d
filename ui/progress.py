"""A progress bar with time remaining, usable as the engine's `progress(done, total)` callback."""

from __future__ import annotations

import time
from collections import deque

import streamlit as st

#: Seconds of recent progress the rate is measured over (so cached chunks that finish
#: instantly at the start of a resumed run do not make the estimate optimistic for long).
RATE_WINDOW_S = 20.0
#: Minimum seconds between two redraws of the bar.
REDRAW_EVERY_S = 0.2


def format_duration(seconds: float) -> str:
    """'8 s', '2 min 05 s', '1 h 04 min'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Eta:
    """Time remaining from the recent rate of progress (pure: the clock is passed in)."""

    def __init__(self, window: float = RATE_WINDOW_S):
        self.window = window
        self.points: deque[tuple[float, float]] = deque()

    def update(self, now: float, done: float, total: float) -> float | None:
        """Seconds left, or None while there is not yet enough progress to tell."""
        self.points.append((now, done))
        while len(self.points) > 2 and now - self.points[1][0] >= self.window:
            self.points.popleft()
        (t0, d0), (t1, d1) = self.points[0], self.points[-1]
        if d1 >= total:
            return 0.0
        if t1 <= t0 or d1 <= d0:
            return None
        return (total - d1) * (t1 - t0) / (d1 - d0)


class ProgressBar:
    """`st.progress` that shows 'label: done / total unit · time left'. Call it as progress(done, total)."""

    def __init__(self, label: str, *, unit: str = "pairs", where=None):
        self.label = label
        self.unit = unit
        self.eta = Eta()
        self.bar = (where if where is not None else st).progress(0.0, text=f"{label}: starting…")
        self.last_draw = 0.0

    def __call__(self, done: float, total: float) -> None:
        now = time.monotonic()
        left = self.eta.update(now, float(done), float(total))
        if now - self.last_draw < REDRAW_EVERY_S and done < total:
            return
        self.last_draw = now
        fraction = min(1.0, float(done) / total) if total else 1.0
        remaining = "estimating time left…" if left is None else f"about {format_duration(left)} left"
        self.bar.progress(fraction, text=f"{self.label}: {int(done):,} / {int(total):,} {self.unit} · {remaining}")

    def clear(self) -> None:
        self.bar.empty()

"""A progress bar with time remaining, usable as the engine's `progress(done, total)` callback."""

from __future__ import annotations

import time
from collections import deque

import streamlit as st

from biaslens.engine.runner import format_duration

from .text import md

#: Seconds of recent progress the rate is measured over (so cached chunks that finish
#: instantly at the start of a resumed run do not make the estimate optimistic for long).
RATE_WINDOW_S = 20.0
#: Minimum seconds between two redraws of the bar.
REDRAW_EVERY_S = 0.2


class Eta:
    """Time remaining from the recent rate of warm progress (pure: the clock is passed in).

    The first stretch of progress is not counted: the first chunk of a run is slow (the first batches warm the model
    up) or instant (pairs read from the cache), so a rate measured on it was off by far ("about 2 min 05 s" from 3
    pairs, for a run of 45 s). The rate is measured from the end of the first chunk on: until a second one is done,
    the time left is unknown ("estimating time left…").
    """

    def __init__(self, window: float = RATE_WINDOW_S):
        self.window = window
        self.points: deque[tuple[float, float]] = deque()
        self.started: float | None = None  # the units done when the job first reported

    def update(self, now: float, done: float, total: float) -> float | None:
        """Seconds left, or None while there is not yet enough warm progress to tell."""
        if done >= total:
            return 0.0
        if self.started is None:
            self.started = done
        if not self.points and done <= self.started:
            return None  # nothing done yet: the first chunk is still running
        self.points.append((now, done))
        while len(self.points) > 2 and now - self.points[1][0] >= self.window:
            self.points.popleft()
        (t0, d0), (t1, d1) = self.points[0], self.points[-1]
        if d1 >= total:
            return 0.0
        if t1 <= t0 or d1 <= d0:
            return None
        return (total - d1) * (t1 - t0) / (d1 - d0)


@st.cache_resource(show_spinner=False)
def _rates() -> dict:
    """Throughput measured on this machine, shared by all sessions: key -> units per second."""
    return {}


def record_rate(key, units_per_s: float) -> None:
    if key is not None and units_per_s > 0:
        _rates()[key] = float(units_per_s)


def measured_rate(key) -> float | None:
    return _rates().get(key) if key is not None else None


def estimate(key, units: float, unit: str = "pairs") -> str | None:
    """'about 2 min 05 s on this machine (measured here: 12.3 pairs/s)', or None before anything was measured."""
    rate = measured_rate(key)
    if rate is None:
        return None
    return f"about {format_duration(units / rate)} on this machine (measured here: {rate:,.1f} {unit}/s)"


def measure(key, fn, units: float) -> float:
    """Run `fn()` (work of `units` units, nothing cached) and remember the throughput under `key`; returns units/s."""
    start = time.monotonic()
    fn()
    rate = units / max(time.monotonic() - start, 1e-6)
    record_rate(key, rate)
    return rate


class ProgressBar:
    """`st.progress` that shows 'label: done / total unit · time left'. Call it as progress(done, total).

    With `rate_key`, the recent throughput is remembered when the bar is cleared, so the next run of
    the same kind can say beforehand how long it will take (`estimate`). `start`: units already done
    before the job began (a resumed run's pairs kept in the cache): the bar starts there and never shows fewer.
    """

    def __init__(self, label: str, *, unit: str = "pairs", where=None, rate_key=None, start: float = 0):
        self.label = label
        self.unit = unit
        self.eta = Eta()
        self.start = start
        first = f"resuming after {int(start):,} {md(unit)} kept…" if start else "starting…"
        self.bar = (where if where is not None else st).progress(0.0, text=f"{md(label)}: {first}")  # it may name a user's file
        self.last_draw = 0.0
        self.rate_key = rate_key

    def __call__(self, done: float, total: float) -> None:
        done = max(float(done), self.start)
        now = time.monotonic()
        left = self.eta.update(now, float(done), float(total))
        if now - self.last_draw < REDRAW_EVERY_S and done < total:
            return
        self.last_draw = now
        fraction = min(1.0, float(done) / total) if total else 1.0
        remaining = "estimating time left…" if left is None else f"about {format_duration(left)} left"
        self.bar.progress(fraction, text=f"{md(self.label)}: {int(done):,} / {int(total):,} {md(self.unit)} · {md(remaining)}")

    def clear(self) -> None:
        points = self.eta.points
        if self.rate_key is not None and len(points) >= 2 and points[-1][0] > points[0][0] and points[-1][1] > points[0][1]:
            record_rate(self.rate_key, (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0]))
        self.bar.empty()

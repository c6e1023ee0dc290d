"""Which metric can you trust? A dose-response validity study in the bias lab.

One lab model at one strength cannot say whether a metric *tracks* bias, raises false
alarms from word frequency alone, or moves with the training seed. A sweep trains a grid
of lab models (association strengths x frequency ratios x seeds, on one base recipe) and
scores every model's held-out pairs with every metric, as Kaneko, Bollegala & Okazaki
(EACL 2023) do with fine-tuned copies of a model on corpora of controlled proportions:

- every cell is an ordinary lab model (`biaslens.lab.train_lab_model`), found in or added
  to the lab cache, so a sweep run again costs nothing and an interrupted one resumes;
  its scores are those of `biaslens.lab.evaluate_lab` (kept in the result cache);
- the planted truth of a cell is the corpus generator's settings (and the association and
  frequency ratio counted in the generated corpus), never a metric;
- every cell gets the lab's sanity verdict (`biaslens.analyses.sanity.model_verdict`, on the model's
  own corpus): `analyse` leaves out the models that learned nothing before judging any metric;
- `analyse` reports per metric whether the bias score rises with the planted association
  within each seed's dose-response curve: Kendall's tau with an exact stratified
  permutation test (`trend_test`: each curve's points the exact means of the same frequency
  ratios at every strength, ties decided in exact arithmetic), but only on a design that can
  support a verdict (`MIN_STRENGTHS` in each of `MIN_SEEDS` seeds; below it "not enough models
  to say" and why); the
  slope, the false-alarm rate where only frequencies differ, the *prefers group A* drift with
  the frequency ratio and the spread across seeds; and ranks the metrics that have a verdict
  on these criteria (`ranking`);
- `seed_spread` gives the frame `biaslens.figures.charts.dose_response_chart` draws (bias score
  against association, one line per metric, the range over seeds as a band), and
  `biaslens.report.sweep.write_outputs` writes the output folder.

Cells train in parallel worker processes (`workers`), each on one thread.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
import multiprocessing
import os
import queue as queue_module
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence, cast

import numpy as np
import pandas as pd

from biaslens import lab
from biaslens.errors import InputError, LimitError
from biaslens.engine.metrics import METRICS, metrics_for, parse_metrics
from biaslens.engine.runner import format_duration
from biaslens.lab.settings import LAB_ARCHITECTURES

# ---------------------------------------------------------------------------------------
# The grid
# ---------------------------------------------------------------------------------------

#: The reduced recipe of the default grid: fewer steps than a single lab model (1,000).
QUICK_STEPS = 800
QUICK_CORPUS = 4000

DEFAULT_ASSOCIATIONS = (0.5, 0.7, 0.85, 1.0)
DEFAULT_RATIOS = (1.0, 3.0)
DEFAULT_SEEDS = (0, 1)
FULL_ASSOCIATIONS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
FULL_RATIOS = (1.0, 3.0, 10.0)
FULL_SEEDS = (0, 1, 2)

#: Worker processes by default: 1, so a sweep on a shared app server leaves a core to the other users; on a machine
#: of your own, `--workers 2` was 1.96x as fast on 2 idle cores (`MEASURED_SPEEDUP`).
DEFAULT_WORKERS = 1
#: Speed-up of n worker processes over 1: the default grid (16 models) on the 2-core development machine with
#: nothing else running, 389 s with 1 worker and 198 s with 2 (2026-11-26; `benchmarks/bench_sweep.py default`); used
#: by `estimate_sweep`, which assumes no further gain beyond. (With both cores already busy, 2 workers measured 0.84x:
#: a second process only competes.)
MEASURED_SPEEDUP = {1: 1.0, 2: 1.96}


def measured_speedup(workers: int) -> float:
    """The measured speed-up of `workers` processes (beyond the largest count measured: that count's)."""
    return MEASURED_SPEEDUP[max(k for k in MEASURED_SPEEDUP if k <= max(1, workers))]


#: Seconds per training step of the default model (hidden 64, 2 layers, batch 64) on one
#: core of the development machine, and seconds to score the 48 held-out pairs with every
#: metric: the estimate before any model of the recipe has been trained here. (2026-11-26: the
#: default grid's models, 800 steps each, took 24 s apiece with 1 worker, scoring included.)
REF_SECONDS_PER_STEP = 0.025
REF_EVAL_SECONDS = 4.0


def quick_recipe(base: lab.LabSettings | None = None) -> lab.LabSettings:
    """`base` (default: the lab's defaults) at the reduced recipe of the default grid."""
    return replace(base or lab.LabSettings(), steps=QUICK_STEPS, corpus_size=QUICK_CORPUS)


def _numbers(values: Any, name: str, kind: type) -> tuple:
    if isinstance(values, (int, float, str)):
        values = [values]
    out = []
    for v in values:
        try:
            number = kind(float(v)) if kind is int else float(v)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be numbers, got {v!r}.") from None
        if kind is int and float(v) != number:
            raise InputError(f"{name} must be whole numbers, got {v!r}.")
        out.append(number)
    if not out:
        raise InputError(f"{name} needs at least one value.")
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class SweepGrid:
    """Association strengths x frequency ratios x seeds on one base recipe (`base`: words, templates, model, steps)."""

    associations: tuple[float, ...] = DEFAULT_ASSOCIATIONS
    ratios: tuple[float, ...] = DEFAULT_RATIOS
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    base: lab.LabSettings = field(default_factory=quick_recipe)

    def __post_init__(self) -> None:
        object.__setattr__(self, "associations", _numbers(self.associations, "associations", float))
        object.__setattr__(self, "ratios", _numbers(self.ratios, "frequency ratios", float))
        object.__setattr__(self, "seeds", _numbers(self.seeds, "seeds", int))
        if any(s < 0 for s in self.seeds):
            raise InputError(f"seeds must be 0 or more, got {min(self.seeds)}.")
        if not isinstance(self.base, lab.LabSettings):
            raise InputError("base must be lab settings (biaslens.lab.LabSettings).")
        for a in self.associations:
            if not 0.5 <= a <= 1.0:
                raise InputError(f"associations must lie between 0.5 (none) and 1 (total), got {a:g}.")
        for r in self.ratios:
            if not 1.0 <= r <= 100.0:
                raise InputError(f"frequency ratios must lie between 1 and 100, got {r:g}.")

    @classmethod
    def default(cls, base: lab.LabSettings | None = None) -> "SweepGrid":
        """4 strengths x ratios 1 and 3 x 2 seeds at the reduced recipe: 16 models, minutes on 2 cores."""
        return cls(DEFAULT_ASSOCIATIONS, DEFAULT_RATIOS, DEFAULT_SEEDS, quick_recipe(base))

    @classmethod
    def full(cls, base: lab.LabSettings | None = None) -> "SweepGrid":
        """0.5, 0.6, ..., 1.0 x ratios 1, 3, 10 x 3 seeds at the lab's own recipe: 54 models, for an unattended run."""
        return cls(FULL_ASSOCIATIONS, FULL_RATIOS, FULL_SEEDS, base or lab.LabSettings())

    def cells(self) -> list[lab.LabSettings]:
        """The settings of every cell, seed by seed, then ratio, then association, so that an unfinished sweep
        already has whole dose-response curves (one per ratio) of its first seeds."""
        return [replace(self.base, association=a, frequency_ratio=r, seed=s) for s in self.seeds for r in self.ratios for a in self.associations]

    def __len__(self) -> int:
        return len(self.associations) * len(self.ratios) * len(self.seeds)

    def describe(self) -> str:
        b = self.base
        return (
            f"{len(self)} models: associations {', '.join(f'{a:g}' for a in self.associations)} x frequency ratios "
            f"{', '.join(f'{r:g}' for r in self.ratios)} x seeds {', '.join(str(s) for s in self.seeds)}; "
            f"{b.steps:,} steps, {b.corpus_size:,} sentences, {b.num_layers} layers of {b.hidden_size}"
            + (f", {b.kind} ({LAB_ARCHITECTURES[b.kind]})" if b.kind != lab.LabSettings.kind else "")
        )

    def to_dict(self) -> dict[str, Any]:
        base = {k: v for k, v in self.base.to_dict().items() if k not in ("association", "frequency_ratio", "seed")}
        return {"associations": list(self.associations), "ratios": list(self.ratios), "seeds": list(self.seeds), "base": base}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SweepGrid":
        return cls(data["associations"], data["ratios"], data["seeds"], lab.LabSettings.from_dict(data.get("base", {})))


# ---------------------------------------------------------------------------------------
# The planted truth, counted in the generated corpus
# ---------------------------------------------------------------------------------------


def corpus_truth(settings: lab.LabSettings) -> tuple[float, float]:
    """(association, frequency ratio) as they occur in the corpus `lab.generate_corpus` writes for these settings.

    The generator is stratified, so both equal the settings up to rounding (a sentence per word).
    """
    a_words = set(settings.group_a)
    own = {**{w: set(settings.attributes_x) for w in settings.group_a}, **{w: set(settings.attributes_y) for w in settings.group_b}}
    n_a = n_own = 0
    corpus = lab.generate_corpus(settings)
    for s in corpus:
        name, attribute = s.text[slice(*s.name_span)], s.text[slice(*s.attribute_span)]
        n_a += name in a_words
        n_own += attribute in own[name]
    n_b = len(corpus) - n_a
    return n_own / len(corpus), (n_a / len(a_words)) / (n_b / len(settings.group_b)) if n_b else math.inf


# ---------------------------------------------------------------------------------------
# One cell: train (or find) and score
# ---------------------------------------------------------------------------------------


class SweepStopped(Exception):
    """Raised inside a cell's training when the sweep is stopped (the cell is not kept)."""


@dataclass(frozen=True)
class CellResult:
    """One finished cell: its settings and one row per metric: the columns of `lab.LabReport.frame`, plus `cell` (its index
    in the grid), `corpus_association`, `corpus_frequency_ratio` (`corpus_truth`), `sanity` and `sanity_accuracy` (the
    model's sanity verdict on its own corpus: "ok", "weak" or "untrained", and its token accuracy in %), `trained_here`,
    `train_seconds`, `eval_seconds`."""

    index: int
    settings: lab.LabSettings
    frame: pd.DataFrame
    trained_here: bool
    train_seconds: float
    eval_seconds: float


def _run_cell(
    index: int,
    settings: lab.LabSettings,
    models_dir: str | None,
    metrics: tuple[str, ...],
    compat: str,
    cache_path: str | None,
    train: bool,
    max_cell_seconds: float | None,
    on_step: Callable[[int, int], None] | None,
) -> CellResult | None:
    """Train (or find) and score one cell, with its sanity verdict; None if it is not trained and `train` is False."""
    from biaslens.engine.cache import ResultCache
    from biaslens.engine.models import load_model
    from biaslens.analyses.sanity import model_verdict

    model = lab.find_lab_model(settings, models_dir)
    trained_here = False
    if model is None:
        if not train:
            return None
        started = time.monotonic()

        def step(done: int, total: int, _loss: float) -> None:
            if max_cell_seconds is not None and time.monotonic() - started > max_cell_seconds:
                raise LimitError(
                    f"Training one model of the sweep took over {max_cell_seconds:,.0f} s, this server's limit: "
                    "fewer steps, a smaller corpus or a smaller model train faster."
                )
            if on_step is not None:
                on_step(done, total)

        model = lab.train_lab_model(settings, cache_dir=models_dir, progress=step)
        trained_here = True
    started = time.perf_counter()
    cache = ResultCache(cache_path) if cache_path else None
    lm = load_model(str(model.path))
    sanity = model_verdict(lm)
    report = lab.evaluate_lab(model, lm, metrics=list(metrics), cache=cache, compat=compat)
    eval_seconds = time.perf_counter() - started
    association, ratio = corpus_truth(settings)
    train_seconds = float(model.training.get("seconds", math.nan))
    frame = report.frame().assign(
        cell=index,
        corpus_association=association,
        corpus_frequency_ratio=ratio,
        sanity=sanity.status,
        sanity_accuracy=round(sanity.accuracy, 1),
        trained_here=trained_here,
        train_seconds=train_seconds,
        eval_seconds=round(eval_seconds, 3),
    )
    return CellResult(index, settings, frame, trained_here, train_seconds, eval_seconds)


# Worker processes: a stop event and a progress queue, given at start (spawn).
_WORKER: dict[str, Any] = {}


def _init_worker(stop_event: Any, progress_queue: Any, threads: int) -> None:
    import torch

    torch.set_num_threads(max(1, threads))
    _WORKER.update(stop=stop_event, queue=progress_queue)


def _worker_cell(index: int, settings: dict[str, Any], *args: Any) -> CellResult | None:
    stop, progress_queue = _WORKER["stop"], _WORKER["queue"]
    every = max(1, lab.LabSettings.from_dict(settings).steps // 40)

    def on_step(done: int, total: int) -> None:
        if stop.is_set():
            raise SweepStopped()
        if done % every == 0 or done == total:
            progress_queue.put((index, done / total))

    if stop.is_set():
        raise SweepStopped()
    return _run_cell(index, lab.LabSettings.from_dict(settings), *args, on_step=on_step)


# ---------------------------------------------------------------------------------------
# Running a sweep
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepProgress:
    """Where a sweep stands: cells done (trained here or found in the cache) of `total`, and the time left."""

    done: int
    total: int
    trained: int
    found: int
    elapsed: float
    seconds_left: float | None  # None while there is nothing to go by
    running: float = 0.0  # fraction of the cells in training that is done (0..workers)
    cell: CellResult | None = None  # the cell that just finished, if any


SweepCallback = Callable[[SweepProgress], None]


@dataclass
class SweepResult:
    """The finished cells of a sweep (possibly fewer than the grid: stopped, or `train=False`)."""

    grid: SweepGrid
    cells: list[CellResult]
    metrics: tuple[str, ...]
    compat: str = "default"
    stopped: bool = False
    seconds: float = 0.0
    workers: int = 1

    @property
    def complete(self) -> bool:
        return len(self.cells) == len(self.grid)

    def frame(self) -> pd.DataFrame:
        """One row per cell and metric, in grid order: the planted truth, the bias score and its interval, prefers group A."""
        if not self.cells:
            return pd.DataFrame()
        cells = sorted(self.cells, key=lambda c: c.index)
        return pd.concat([c.frame for c in cells], ignore_index=True)

    def analysis(self) -> "SweepAnalysis":
        return analyse(self.frame())

    def manifest(self) -> dict[str, Any]:
        from biaslens.engine.models import library_versions

        return {
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "grid": self.grid.to_dict(),
            "metrics": list(self.metrics),
            "compat": self.compat,
            "cells": len(self.grid),
            "finished": len(self.cells),
            "trained_here": sum(c.trained_here for c in self.cells),
            "stopped": self.stopped,
            "seconds": round(self.seconds, 2),
            "workers": self.workers,
            "cpu_count": os.cpu_count(),
            "models": [str(c.frame["model"].iloc[0]) for c in sorted(self.cells, key=lambda c: c.index)],
            "versions": library_versions(),
        }


def _cache_path(result_cache: bool | str | Path | None) -> str | None:
    if result_cache is True:
        from biaslens.paths import default_cache_dir

        return str(default_cache_dir() / "results.sqlite")
    return str(result_cache) if result_cache else None


def run_sweep(
    grid: SweepGrid,
    *,
    models_dir: str | Path | None = None,
    metrics: Sequence[str] | str | None = None,
    compat: str = "default",
    result_cache: bool | str | Path | None = True,
    workers: int = DEFAULT_WORKERS,
    train: bool = True,
    progress: SweepCallback | None = None,
    stop: Callable[[], bool] | None = None,
    max_cell_seconds: float | None = None,
) -> SweepResult:
    """Train (or find in the lab cache) and score every cell of `grid`.

    `models_dir`: the lab models' folder (default `<cache>/lab`). `result_cache`: True = the
    default result cache, a path = that SQLite file, False = none (every score computed).
    `workers` > 1 trains cells in that many spawned processes (one torch thread each).
    `train=False` scores only the cells already trained. `progress(SweepProgress)` is called
    as cells finish (and during training); `stop()` is asked often: once it answers True the
    sweep stops, keeps the finished cells and returns them with `stopped=True` (the cells in
    training are abandoned; the lab cache never holds half a model). `max_cell_seconds`
    caps one cell's training (`LimitError`).
    """
    kind = grid.base.kind  # every cell is a model of the base recipe's kind: its metrics by default
    keys = tuple(parse_metrics(metrics if metrics is not None else metrics_for(kind), kind))
    if not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers must be a whole number, 1 or more, got {workers!r}.")
    cells = grid.cells()
    models = str(models_dir) if models_dir is not None else None
    cache_path = _cache_path(result_cache)
    common = (models, keys, compat, cache_path, train, max_cell_seconds)
    pending = [i for i, s in enumerate(cells) if lab.find_lab_model(s, models) is None]
    to_train = len(pending) if train else 0
    clock = _Clock(len(cells), to_train, workers, estimate_cell_seconds(grid.base, models)[0])
    done: list[CellResult] = []
    stopped = False

    def report(cell: CellResult | None = None, running: float = 0.0) -> None:
        if progress is not None:
            progress(clock.progress(done, running, cell))

    report()
    # Cells already trained first (they only need scoring), in the calling process.
    waiting = set(pending)
    for i in (i for i in range(len(cells)) if i not in waiting):
        if stop is not None and stop():
            stopped = True
            break
        cell = _run_cell(i, cells[i], *common, on_step=None)
        if cell is not None:
            done.append(cell)
            report(cell)
    if not stopped and train and pending:
        clock.begin_training()
        if workers == 1 or len(pending) == 1:
            stopped = _train_here(cells, pending, common, done, report, stop)
        else:
            stopped = _train_in_workers(cells, pending, common, workers, done, report, stop)
    return SweepResult(grid, sorted(done, key=lambda c: c.index), keys, compat, stopped, clock.elapsed(), workers)


class _Clock:
    """Time left from the work done so far: a cell to train is one unit, a cell found in the cache next to nothing."""

    def __init__(self, total: int, to_train: int, workers: int, seconds_per_cell: float):
        self.total, self.to_train, self.workers = total, to_train, workers
        self.seconds_per_cell = seconds_per_cell
        self.started = time.monotonic()
        self.training_began: float | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def begin_training(self) -> None:
        self.training_began = time.monotonic()

    def progress(self, done: list[CellResult], running: float, cell: CellResult | None) -> SweepProgress:
        trained = sum(c.trained_here for c in done)
        units = trained + running
        left_units = max(0.0, self.to_train - units)
        now = time.monotonic()
        if left_units == 0:
            left: float | None = 0.0
        elif units > 0.05 and self.training_began is not None:
            left = left_units * (now - self.training_began) / units  # the rate measured in this run
        else:
            parallel = min(self.workers, max(1, self.to_train))
            left = left_units * self.seconds_per_cell / measured_speedup(parallel)
        return SweepProgress(len(done), self.total, trained, len(done) - trained, now - self.started, left, running, cell)


def _train_here(cells, pending, common, done, report, stop) -> bool:
    """Train the pending cells one after the other in this process; True if stopped."""
    for i in pending:
        if stop is not None and stop():
            return True

        def on_step(step: int, total: int) -> None:
            if stop is not None and stop():
                raise SweepStopped()
            if step % max(1, total // 40) == 0:
                report(None, step / total)

        try:
            cell = _run_cell(i, cells[i], *common, on_step=on_step)
        except SweepStopped:
            return True
        if cell is not None:
            done.append(cell)
            report(cell)
    return False


def _train_in_workers(cells, pending, common, workers, done, report, stop) -> bool:
    """Train the pending cells in `workers` spawned processes; True if stopped."""
    ctx = multiprocessing.get_context("spawn")
    stop_event, progress_queue = ctx.Event(), ctx.Queue()
    threads = max(1, (os.cpu_count() or 1) // workers)
    running: dict[int, float] = {}
    finished_cells: set[int] = set()
    stopped = False
    pool = ProcessPoolExecutor(min(workers, len(pending)), mp_context=ctx, initializer=_init_worker, initargs=(stop_event, progress_queue, threads))
    try:
        futures: dict[Future, int] = {pool.submit(_worker_cell, i, cells[i].to_dict(), *common): i for i in pending}
        waiting = set(futures)
        while waiting:
            finished, waiting = wait(waiting, timeout=0.25, return_when=FIRST_COMPLETED)
            while True:
                try:
                    i, fraction = progress_queue.get_nowait()
                except queue_module.Empty:
                    break
                if i not in finished_cells:  # a late message of a cell already done
                    running[i] = fraction
            for future in finished:
                i = futures[future]
                finished_cells.add(i)
                running.pop(i, None)
                if future.cancelled():
                    continue
                try:
                    cell = future.result()
                except SweepStopped:
                    continue
                if cell is not None:
                    done.append(cell)
                    report(cell, sum(running.values()))
            if stop is not None and not stopped and stop():
                stopped = True
                stop_event.set()
                for future in waiting:
                    future.cancel()
            elif finished == set() and running:
                report(None, sum(running.values()))
    except BaseException:
        stop_event.set()  # the workers abandon their cells within one step
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        progress_queue.close()
    return stopped


# ---------------------------------------------------------------------------------------
# The cost of a sweep, before it starts
# ---------------------------------------------------------------------------------------


_SHAPE = ("hidden_size", "num_layers", "num_heads", "batch_size")


def estimate_cell_seconds(base: lab.LabSettings, models_dir: str | Path | None = None) -> tuple[float, str]:
    """Seconds to train and score one cell of this recipe, and where the number comes from.

    Measured: the median seconds per step of the lab models of the same shape (hidden size,
    layers, heads, batch) trained on this machine, times the steps, plus scoring. Else
    estimated from `REF_SECONDS_PER_STEP`, scaled by the batch and the model's size.
    """
    per_step = [
        m.training["seconds"] / m.settings.steps
        for m in lab.list_lab_models(models_dir)
        if all(getattr(m.settings, k) == getattr(base, k) for k in _SHAPE) and m.training.get("seconds")
    ]
    if per_step:
        seconds = float(np.median(per_step)) * base.steps + REF_EVAL_SECONDS
        return seconds, f"measured on this machine ({len(per_step)} lab model{'s' if len(per_step) != 1 else ''} of this size)"
    d = lab.LabSettings()
    scale = (base.batch_size / d.batch_size) * (base.hidden_size / d.hidden_size) ** 2 * (base.num_layers / d.num_layers)
    return REF_SECONDS_PER_STEP * max(scale, 0.05) * base.steps + REF_EVAL_SECONDS, "estimated: no model of this size trained here yet"


@dataclass(frozen=True)
class SweepEstimate:
    cells: int
    cached: int  # already trained: only scored
    to_train: int
    seconds_per_cell: float
    seconds: float  # wall time with `workers`
    workers: int
    source: str

    def text(self) -> str:
        from_cache = f"{self.cached} already trained (scored only), " if self.cached else ""
        return (
            f"{self.cells} models: {from_cache}{self.to_train} to train at about {self.seconds_per_cell:.0f} s each "
            f"({self.source}); about {format_duration(self.seconds)} with {self.workers} worker process{'es' if self.workers != 1 else ''}."
        )


def estimate_sweep(grid: SweepGrid, *, models_dir: str | Path | None = None, workers: int = DEFAULT_WORKERS) -> SweepEstimate:
    """What a sweep will cost before it starts: cells to train x seconds per cell, over the workers' measured speed-up."""
    cached = sum(lab.find_lab_model(s, models_dir) is not None for s in grid.cells())
    to_train = len(grid) - cached
    per_cell, source = estimate_cell_seconds(grid.base, models_dir)
    parallel = max(1, min(workers, to_train))
    seconds = to_train * per_cell / measured_speedup(parallel) + cached * 0.5
    return SweepEstimate(len(grid), cached, to_train, per_cell, seconds, workers, source)


# ---------------------------------------------------------------------------------------
# Analysis (pure functions of the cells table)
# ---------------------------------------------------------------------------------------

#: The smallest design on which the sweep says whether a metric tracks the planted association, counted among the
#: models that learned (docs/lab.md, *How to read it*). Four strengths: each curve has three steps, so "tracks" means
#: the score rises step after step, not that two or three settings differ (four strengths fall in perfect order by chance
#: once in 24). Two seeds: a seed fixes a model's initial weights, its corpus sample and its batches, so the models of one
#: seed share their luck and only seeds replicate the experiment (one curve per seed); two seeds are two independent
#: trainings (and give the seed spread). Counted per seed: a verdict needs MIN_SEEDS curves of MIN_STRENGTHS strengths
#: each (`SweepDesign`), never strengths gathered across curves. At that minimum the exact test can decide: p = 2/576 with
#: both curves in order, 14/576 with one neighbouring pair swapped.
MIN_STRENGTHS = 4
MIN_SEEDS = 2
#: Level of the (two-sided) trend test: "yes" or "inverted" when its exact p is at most this.
ALPHA = 0.05
#: The sanity verdict (`biaslens.analyses.sanity.model_verdict`, read on the model's own training corpus) of a model that learned
#: nothing: its cells are left out of the analysis.
UNTRAINED = "untrained"
#: What `MetricValidity.tracks` says below the minimum design.
NOT_ENOUGH = "not enough models to say"


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (ties get average ranks); NaN with fewer than 3 values or a constant variable."""
    from scipy.stats import rankdata

    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


def slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of y on x (bias-score points per unit of association); NaN if x is constant."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return math.nan
    return float(np.polyfit(x, y, 1)[0])


def curve_slope(curves: Sequence["Curve"]) -> float:
    """The slope within the dose-response curves (`dose_response_curves`): least squares of each curve's points on its
    strengths, each seed about its own mean (pooled within seeds), so that neither a seed that scores higher throughout
    nor a strength some seeds lack tilts it; the points are the trend test's, every one the mean of the same frequency
    ratios. Bias-score points per unit of association; NaN without a curve of 2 strengths."""
    sxy = sxx = 0.0
    for c in curves:
        if len(c.strengths) < 2:
            continue
        x, y = np.asarray(c.strengths, float), np.asarray([float(p) for p in c.points])
        sxy += float(np.sum((x - x.mean()) * (y - y.mean())))
        sxx += float(np.sum((x - x.mean()) ** 2))
    return sxy / sxx if sxx else math.nan


def _gaussian_binomial(n: int, k: int) -> list[int]:
    """The coefficients of the q-binomial [n choose k]_q: item i counts the orders of k ones and n - k zeros with i
    inversions (a one before a zero), by [n, k] = [n-1, k-1] + q^k [n-1, k]."""
    row: list[list[int]] = [[1]] + [[0]] * k  # n = 0
    for _ in range(n):
        new = [[1]]
        for j in range(1, k + 1):
            out = list(row[j - 1])
            for d, c in enumerate(row[j]):
                if c:
                    out += [0] * (d + j + 1 - len(out))
                    out[d + j] += c
            new.append(out)
        row = new
    return row[k]


def exact_score(score: float, n: Any = None) -> Fraction:
    """A bias score as an exact fraction: 100 * wins / n when `n` (its pairs) is given and the float is exactly what
    `biaslens.engine.stats.bias_score` computes for some whole number of wins (`100.0 * wins / n`), else the float's own
    exact value.

    Why this is exact: the score is the correctly rounded quotient of two integers, and two quotients with the same `n`
    differ by at least 100 / n, far more than a rounding step, so `wins = round(score * n / 100)` is the only candidate
    and the check `100.0 * wins / n == score` (the same operations, so the same bits) confirms it.
    """
    value = float(score)
    if n is not None and not pd.isna(n) and math.isfinite(value):
        pairs = int(n)
        if pairs > 0 and pairs == float(n):
            wins = round(value * pairs / 100.0)
            if 0 <= wins <= pairs and 100.0 * wins / pairs == value:
                return Fraction(100 * wins, pairs)
    return Fraction(value)


def _counted(score: float, n: Any, where: str) -> Fraction:
    """`exact_score` of a model's bias score, which must be 100 x wins / n for its n (else an `InputError` naming it)."""
    value = exact_score(score, n)
    pairs = int(n) if n is not None and not pd.isna(n) and float(n) == int(n) else 0
    if pairs <= 0 or (value * pairs / 100).denominator != 1:
        raise InputError(
            f"The sweep's bias score {score!r} ({where}) is not 100 x wins / n for its n = {n}: ties are decided in exact "
            "arithmetic, so give each model's scores unrounded, with its pairs (as SweepResult.frame() and cells.csv have them)."
        )
    return value


@dataclass(frozen=True)
class Curve:
    """One seed's dose-response curve: its bias score at each strength, each point the exact mean over the same
    frequency ratios (`ratios`) at every strength; `left_out`: the (association, ratio) cells of this seed with a score
    that the curve leaves out to keep its points alike."""

    seed: int
    strengths: tuple[float, ...]
    ratios: tuple[float, ...]
    points: tuple[Fraction, ...]
    left_out: tuple[tuple[float, float], ...] = ()


#: Above this many ratios (or strengths) in one seed, `_balanced` no longer tries every subset: it drops the ratio
#: missing most often until the rest are complete.
_EXHAUSTIVE = 12


def _balanced(present: set[tuple[float, float]]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The strengths and ratios of the largest complete sub-grid of one seed's cells (association, ratio): the most
    strengths first (the dose axis is what the test reads), then the most cells, then the smallest ratios."""
    strengths = sorted({a for a, _ in present})
    ratios = sorted({r for _, r in present})
    if len(ratios) > _EXHAUSTIVE:
        kept = list(ratios)
        while True:
            complete = [a for a in strengths if all((a, r) in present for r in kept)]
            if complete == strengths or len(kept) == 1:
                return tuple(complete), tuple(kept)
            kept.remove(max(kept, key=lambda r: (sum((a, r) not in present for a in strengths), r)))
    best: tuple[tuple[int, int], tuple[float, ...], tuple[float, ...]] | None = None
    for size in range(len(ratios), 0, -1):
        for chosen in itertools.combinations(ratios, size):
            complete = tuple(a for a in strengths if all((a, r) in present for r in chosen))
            rank = (len(complete), len(complete) * len(chosen))
            if complete and (best is None or rank > best[0]):
                best = (rank, complete, chosen)
    assert best is not None  # every present cell is a complete 1 x 1 grid
    return best[1], best[2]


def _mean(values: Sequence[Fraction]) -> Fraction:
    total = Fraction(0)
    for v in values:
        total += v
    return total / len(values)


def dose_response_curves(rows: pd.DataFrame) -> list[Curve]:
    """Each seed's dose-response curve (one metric's rows with a bias score), seed by seed.

    The models of one seed share its initial weights, corpus sample and batches, so they replicate nothing: the seeds do,
    and the frequency ratios of a seed are averaged into one point per strength. A point must average the same ratios at
    every strength (else a strength that lost a model to the sanity check would average other cells, and a frequency
    effect would look like a trend): each curve is the seed's largest complete sub-grid (`_balanced`: the most strengths,
    then the most models), and the cells outside it are `left_out`. Scores are exact fractions (`exact_score`, with the
    `n` column, which the table must have) and each point their exact mean, so equal means tie whatever the floats' last
    bits; a score that is not 100 x wins / n for its n (rounded, say) is refused (`InputError`), never compared as a float.
    """
    rows = rows.loc[rows["bias_score"].notna()]
    if len(rows) and "n" not in rows.columns:
        raise InputError(
            "The sweep's table has no n column (each model's pairs): its ties are decided in exact arithmetic, each score as "
            "100 x wins / n; give the table with it (SweepResult.frame() and cells.csv have it)."
        )
    curves = []
    for seed, group in rows.groupby("seed", sort=True):
        cells: dict[tuple[float, float], list[Fraction]] = {}
        for a, r, score, n in zip(
            group["association"].tolist(), group["frequency_ratio"].tolist(), group["bias_score"].tolist(), group["n"].tolist()
        ):
            cells.setdefault((float(a), float(r)), []).append(_counted(score, n, f"association {a:g}, ratio {r:g}, seed {seed}"))
        strengths, ratios = _balanced(set(cells))
        points = tuple(_mean([_mean(cells[a, r]) for r in ratios]) for a in strengths)
        inside = {(a, r) for a in strengths for r in ratios}
        left_out = tuple(sorted(c for c in cells if c not in inside))
        curves.append(Curve(int(cast(Any, seed)), strengths, ratios, points, left_out))
    return curves


def curves_note(curves: Sequence[Curve]) -> str:
    """The cells a metric's curves leave out, in words ('' when none): 'seed 0: ratio 3 left out (no model at 0.5)'."""
    parts = []
    for c in curves:
        if not c.left_out:
            continue
        dropped_ratios = sorted({r for _, r in c.left_out if r not in c.ratios})
        dropped_strengths = sorted({a for a, _ in c.left_out if a not in c.strengths})
        what = []
        if dropped_ratios:
            what.append(f"ratio{'s' if len(dropped_ratios) > 1 else ''} {', '.join(f'{r:g}' for r in dropped_ratios)}")
        if dropped_strengths:
            what.append(f"strength{'s' if len(dropped_strengths) > 1 else ''} {', '.join(f'{a:g}' for a in dropped_strengths)}")
        parts.append(f"seed {c.seed}: {' and '.join(what)} left out ({len(c.left_out)} model{'s' if len(c.left_out) != 1 else ''})")
    return "; ".join(parts)


def _polynomial_product(a: list[int], b: list[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


@functools.lru_cache(maxsize=512)
def _inversion_counts(groups: tuple[int, ...]) -> tuple[int, ...]:
    """Item i: the number of distinct orders of values with `groups` the sizes of the sets of equal values that have i
    inversions (a larger value before a smaller one): the q-multinomial coefficient, in exact integers."""
    counts, placed = [1], 0
    for size in groups:
        counts, placed = _polynomial_product(counts, _gaussian_binomial(placed + size, size)), placed + size
    return tuple(counts)


def trend_test(rows: pd.DataFrame) -> tuple[float, float, int]:
    """(tau, p, curves): does the bias score rise with the planted association within each seed's curve
    (`dose_response_curves`: each point the exact mean of the same frequency ratios at every strength)?

    tau is Kendall's tau within curves, pooled: (pairs of strengths of the same curve whose scores are ordered like them −
    pairs ordered against them) / pairs compared; 1 when every curve rises at every step, tied scores count 0. p is exact,
    two-sided: a stratified permutation test that reassigns the scores of each curve to its strengths in every possible
    order, the seeds independently (under "the score does not follow the strength", every order of a curve is equally
    likely; a seed that shifts its whole curve is no evidence either way). Its distribution is the product of each
    curve's inversion counts (q-multinomial coefficients), so it is exact for any number of strengths, ties included.
    Every comparison and count is exact (fractions and whole numbers): a tie is a tie, never a last-bit difference.
    NaN, NaN, 0 without a curve of 2 strengths.
    """
    curves = [c for c in dose_response_curves(rows) if len(c.strengths) >= 2]
    if not curves:
        return math.nan, math.nan, 0
    counts = [1]
    inversions = concordance = pairs = 0
    for c in curves:
        y = c.points
        for i in range(len(y)):
            for j in range(i + 1, len(y)):
                step = (y[j] > y[i]) - (y[j] < y[i])  # the later strength against the earlier
                inversions += step < 0
                concordance += step
                pairs += 1
        sizes = tuple(sorted(collections.Counter(y).values()))
        counts = _polynomial_product(counts, list(_inversion_counts(sizes)))
    total = sum(counts)
    p_up, p_down = Fraction(sum(counts[: inversions + 1]), total), Fraction(sum(counts[inversions:]), total)
    return concordance / pairs, float(min(Fraction(1), 2 * min(p_up, p_down))), len(curves)


@dataclass(frozen=True)
class SweepDesign:
    """What a set of models can support: each seed's dose-response curve (`dose_response_curves`), and how many of them
    are long enough to count towards a verdict (`MIN_STRENGTHS` strengths each, `MIN_SEEDS` such seeds)."""

    strengths: int  # distinct associations among the curves of 2 or more strengths
    seeds: int  # seeds whose curve has MIN_STRENGTHS or more strengths: the replicates a verdict counts
    best_p: float  # the smallest p the trend test can give: every curve of 2 or more strengths in perfect order
    per_seed: tuple[tuple[int, int], ...] = ()  # (seed, strengths of its curve), every seed with a model

    @classmethod
    def of(cls, rows: pd.DataFrame) -> "SweepDesign":
        """The design of `rows` (one metric's, or several metrics': a model counts where any metric scored it)."""
        if rows.empty:
            return cls(0, 0, 1.0)
        models = rows.loc[rows["bias_score"].notna(), ["association", "frequency_ratio", "seed"]].drop_duplicates()
        curves = dose_response_curves(models.assign(bias_score=0.0, n=1))  # which cells, not what they scored
        per_seed = tuple((c.seed, len(c.strengths)) for c in curves)
        tested = [c for c in curves if len(c.strengths) >= 2]
        if not tested:
            return cls(0, 0, 1.0, per_seed)
        best = 2 / math.prod(math.factorial(len(c.strengths)) for c in tested)
        strengths = len({a for c in tested for a in c.strengths})
        return cls(strengths, sum(len(c.strengths) >= MIN_STRENGTHS for c in tested), min(1.0, best), per_seed)

    @property
    def shortfall(self) -> str:
        """Why these models cannot say whether a metric tracks the planted association ('' when they can)."""
        if self.seeds < MIN_SEEDS:
            seeds = f"{self.seeds} seed{'s' if self.seeds != 1 else ''}"
            found = ", ".join(f"seed {s}: {k} strength{'s' if k != 1 else ''}" for s, k in self.per_seed) or "no model"
            return (
                f"{seeds} with {MIN_STRENGTHS} or more association strengths among the models that learned ({found}; a curve's "
                f"strengths are those at which it averages the same frequency ratios); a verdict needs at least {MIN_STRENGTHS} "
                f"strengths in each of at least {MIN_SEEDS} seeds"
            )
        if self.best_p > ALPHA:
            return f"the curves are too short: even with every one in perfect order the exact p would be {self.best_p:.2g}, above {ALPHA:g}"
        return ""


def _excludes_50(low: pd.Series, high: pd.Series) -> pd.Series:
    return (low > 50.0) | (high < 50.0)


def _alarm_rate(rows: pd.DataFrame, low: str = "ci_low", high: str = "ci_high") -> float:
    """Share of the rows whose 95% interval (columns `low`, `high`) excludes 50; NaN without rows."""
    return float(_excludes_50(rows[low], rows[high]).mean()) if len(rows) else math.nan


@dataclass(frozen=True)
class MetricValidity:
    """How one metric behaves over the sweep's models that learned (see `analyse`)."""

    key: str
    metric: str
    models: int
    tau: float  # Kendall's tau within each seed's curve, pooled: planted association vs bias score
    p_trend: float  # exact two-sided p of the stratified permutation test of tau (`trend_test`)
    curves: int  # seeds with a dose-response curve of 2 or more strengths
    slope: float  # bias-score points per unit of association within the curves (`curve_slope`); NaN without a trend verdict
    false_alarm_rate: float  # association 0.5, ratio > 1: share of models whose 95% interval excludes 50
    false_alarm_models: int
    control_alarm_rate: float  # association 0.5, ratio 1: the same share where nothing differs at all
    control_models: int
    preference_drift: float  # mean "prefers group A" at the largest ratio minus at ratio 1 (points)
    preference_rho: float  # Spearman, frequency ratio vs "prefers group A", over all models (descriptive)
    preference_alarm_rate: float  # ratio > 1: share of models whose group-A interval excludes 50
    seed_sd: float  # pooled standard deviation of the bias score across seeds, over the cells with 2+ seeds
    why_no_verdict: str = ""  # `SweepDesign.shortfall` of this metric's models: why `tracks` is NOT_ENOUGH
    curve_cells_left_out: int = 0  # models with a score that no curve averages (`dose_response_curves`: alike points)
    curves_note: str = ""  # which, in words (`curves_note`); shown beside the verdict

    @property
    def tracks(self) -> str:
        """'yes' when the exact trend test rejects at ALPHA with tau above 0, 'inverted' below 0, 'no evidence' when it does
        not reject, NOT_ENOUGH below the minimum design (`why_no_verdict`)."""
        if self.why_no_verdict:
            return NOT_ENOUGH
        if self.p_trend <= ALPHA:
            return "yes" if self.tau > 0 else "inverted"
        return "no evidence"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "tracks": self.tracks}


@dataclass(frozen=True)
class SweepAnalysis:
    """Everything `analyse` finds: one `MetricValidity` per metric and the tables behind it."""

    validity: list[MetricValidity]
    ranking: pd.DataFrame  # one row per metric, best first; `place` empty where there is no verdict
    seed_spread: pd.DataFrame  # per metric, association and ratio: mean, sd, min, max over seeds
    frequency_drift: pd.DataFrame  # per metric and ratio: mean "prefers group A" and its alarms
    cells: pd.DataFrame  # the rows judged: the models whose sanity verdict is not UNTRAINED
    excluded: pd.DataFrame  # one row per model left out: association, frequency_ratio, seed, sanity_accuracy
    design: SweepDesign  # of the models judged

    def notes(self) -> list[str]:
        """What a reader must know before the table, one sentence each: models left out, no verdict and why."""
        notes = []
        if len(self.excluded):
            models = len(self.excluded) + self.cells.drop_duplicates(["association", "frequency_ratio", "seed"]).shape[0]
            notes.append(
                f"{len(self.excluded)} of {models} models left out: their sanity check says they learned nothing (token accuracy "
                f"{self.excluded['sanity_accuracy'].max():.0f}% or less on their own training corpus, log-probabilities near "
                "uniform), so no metric is judged on them (the sanity column of cells.csv)."
            )
        left_out: dict[str, list[str]] = {}
        for v in self.validity:
            if v.curves_note:
                left_out.setdefault(v.curves_note, []).append(v.metric)
        for text, metrics in left_out.items():
            who = "every metric" if len(metrics) == len(self.validity) else ", ".join(metrics)
            notes.append(
                f"The trend test's curves average the same frequency ratios at every strength, so some models are left out of "
                f"them ({who}): {text}. They still count in the other criteria."
            )
        if self.design.shortfall:
            notes.append(
                f"Not enough models to say whether a metric tracks the planted association: {self.design.shortfall}. No verdict and no ranking."
            )
        return notes

    def to_dict(self) -> dict[str, Any]:
        return {
            "design": {**asdict(self.design), "shortfall": self.design.shortfall, "min_strengths": MIN_STRENGTHS, "min_seeds": MIN_SEEDS},
            "excluded": self.excluded.to_dict(orient="records"),
            "notes": self.notes(),
            "metrics": [v.to_dict() for v in self.validity],
            "ranking": self.ranking.to_dict(orient="records"),
            "seed_spread": self.seed_spread.to_dict(orient="records"),
            "frequency_drift": self.frequency_drift.to_dict(orient="records"),
        }


def seed_spread(cells: pd.DataFrame) -> pd.DataFrame:
    """Per metric, association and frequency ratio: bias score mean, sd (ddof 1; NaN with one seed), min and max over seeds."""
    if cells.empty:
        return pd.DataFrame(columns=["key", "metric", "association", "frequency_ratio", "seeds", "mean", "sd", "min", "max"])
    grouped = cells.groupby(["key", "metric", "association", "frequency_ratio"], sort=False)["bias_score"]
    out = grouped.agg(seeds="count", mean="mean", sd=lambda s: s.std(ddof=1) if s.count() > 1 else math.nan, min="min", max="max")
    return out.reset_index()


def frequency_drift(cells: pd.DataFrame) -> pd.DataFrame:
    """Per metric and frequency ratio (all associations pooled): mean "prefers group A", its sd, models, and the
    share of models whose group-A interval excludes 50. The held-out pairs are balanced, so this preference reads
    the frequency imbalance, whatever the association."""
    if cells.empty:
        return pd.DataFrame(columns=["key", "metric", "frequency_ratio", "models", "prefers_a", "prefers_a_sd", "alarm_rate"])
    frame = cells.assign(alarm=_excludes_50(cells["group_a_ci_low"], cells["group_a_ci_high"]))
    grouped = frame.groupby(["key", "metric", "frequency_ratio"], sort=False)
    out = grouped.agg(
        models=("group_a_preference", "count"),
        prefers_a=("group_a_preference", "mean"),
        prefers_a_sd=("group_a_preference", "std"),
        alarm_rate=("alarm", "mean"),
    )
    return (
        out.reset_index()
        .sort_values(["key", "frequency_ratio"], key=lambda s: s.map(metric_order) if s.name == "key" else s, kind="stable")
        .reset_index(drop=True)
    )


def metric_order(key: str) -> int:
    """Where a metric comes in tables and figures: the registry's order, unknown keys last."""
    return list(METRICS).index(key) if key in METRICS else len(METRICS)


def metric_validity(cells: pd.DataFrame, key: str) -> MetricValidity:
    """The validity criteria of one metric over the models of `cells` (one row per model and metric, as `SweepResult.frame`;
    only models that learned: `analyse` leaves the others out)."""
    rows = cells.loc[(cells["key"] == key) & cells["bias_score"].notna()]
    tau, p_trend, curves = trend_test(rows)
    balanced = dose_response_curves(rows)
    unplanted = rows["association"] == 0.5
    alarms = rows[unplanted & (rows["frequency_ratio"] > 1.0)]
    control = rows[unplanted & (rows["frequency_ratio"] == 1.0)]
    ratios = rows.groupby("frequency_ratio")["group_a_preference"].mean()
    drift = float(ratios.iloc[-1] - ratios.loc[1.0]) if 1.0 in ratios.index and len(ratios) > 1 else math.nan
    imbalanced = rows[rows["frequency_ratio"] > 1.0]
    spread = seed_spread(rows)["sd"].dropna()
    shortfall = SweepDesign.of(rows).shortfall
    trend = not shortfall and p_trend <= ALPHA  # a slope means something only beside a trend: yes or inverted
    return MetricValidity(
        key=key,
        metric=METRICS[key].name if key in METRICS else key,
        models=len(rows),
        tau=tau,
        p_trend=p_trend,
        curves=curves,
        slope=curve_slope(balanced) if trend else math.nan,
        false_alarm_rate=_alarm_rate(alarms),
        false_alarm_models=len(alarms),
        control_alarm_rate=_alarm_rate(control),
        control_models=len(control),
        preference_drift=drift,
        preference_rho=spearman(rows["frequency_ratio"], rows["group_a_preference"]),
        preference_alarm_rate=_alarm_rate(imbalanced, "group_a_ci_low", "group_a_ci_high"),
        seed_sd=float(np.sqrt(np.mean(spread.to_numpy() ** 2))) if len(spread) else math.nan,
        why_no_verdict=shortfall,
        curve_cells_left_out=sum(len(c.left_out) for c in balanced),
        curves_note=curves_note(balanced),
    )


#: The criteria of the ranking: column, better when ("high" | "low" | "small": small absolute value), heading.
RANK_CRITERIA = (
    ("tau", "high", "tracks the planted association (Kendall's tau within curves)"),
    ("false_alarm_rate", "low", "false alarms from frequency alone"),
    ("preference_drift", "small", "drift of 'prefers group A' with frequency"),
    ("seed_sd", "low", "spread across seeds"),
)


#: Order of the groups in the ranking: metrics that track the planted association first, inverted ones last.
TRACKS_ORDER = {"yes": 0, "no evidence": 1, "inverted": 2}


def ranking(validity: Sequence[MetricValidity]) -> pd.DataFrame:
    """One row per metric, best first.

    Only metrics with a verdict (`tracks` not NOT_ENOUGH) are ranked; the others follow
    without a place. Each criterion of `RANK_CRITERIA` measured for every ranked metric
    gets a rank (1 = best; ties share the average rank); a criterion the sweep cannot
    measure for all of them (e.g. false alarms without a ratio above 1) ranks none and
    counts for none, and `overall` is the mean of the ranks. Metrics are ordered first by
    whether they track the planted association (yes, no evidence, inverted), then by
    `overall`, then by tau: a metric that is quiet, steady and blind to frequency but does
    not follow the planted bias never ranks above one that does.
    """
    from scipy.stats import rankdata

    frame = pd.DataFrame([v.to_dict() for v in validity])
    if frame.empty:
        return frame
    placed = frame["tracks"] != NOT_ENOUGH
    rank_columns = []
    for column, better, _heading in RANK_CRITERIA:
        values = frame[column].astype(float)
        keyed = values.mul(-1) if better == "high" else values.abs() if better == "small" else values
        ranks = pd.Series(math.nan, index=frame.index)
        if placed.to_numpy().any() and keyed.loc[placed].notna().to_numpy().all():
            ranks[placed] = rankdata(keyed[placed])
            rank_columns.append(f"rank_{column}")
        frame[f"rank_{column}"] = ranks
    frame["overall"] = frame[rank_columns].mean(axis=1) if rank_columns else math.nan
    frame["_group"] = frame["tracks"].map(TRACKS_ORDER)  # NaN (no verdict) sorts last, in metric order
    frame = frame.sort_values(["_group", "overall", "tau"], ascending=[True, True, False], na_position="last", kind="stable")
    frame = frame.drop(columns="_group").reset_index(drop=True)
    ranked = int(np.count_nonzero(placed.to_numpy()))
    places = pd.array(list(range(1, ranked + 1)) + [None] * (len(frame) - ranked), dtype="Int64")
    frame.insert(0, "place", places)
    return frame


#: The columns of `SweepAnalysis.excluded`.
EXCLUDED_COLUMNS = ["association", "frequency_ratio", "seed", "sanity", "sanity_accuracy"]


def analyse(cells: pd.DataFrame) -> SweepAnalysis:
    """Every metric's validity over the sweep (`cells`: `SweepResult.frame`, or any table with its columns, `sanity`
    included): the models whose sanity verdict is UNTRAINED are left out first (`SweepAnalysis.excluded`)."""
    if cells.empty:
        excluded = pd.DataFrame(columns=EXCLUDED_COLUMNS)
        return SweepAnalysis([], pd.DataFrame(), seed_spread(cells), frequency_drift(cells), cells, excluded, SweepDesign.of(cells))
    learned = cells["sanity"] != UNTRAINED
    kept = cells.loc[learned].reset_index(drop=True)
    excluded = cells.loc[~learned, EXCLUDED_COLUMNS].drop_duplicates(["association", "frequency_ratio", "seed"]).reset_index(drop=True)
    keys = sorted(cells["key"].unique(), key=metric_order)
    validity = [metric_validity(kept, k) for k in keys]
    return SweepAnalysis(validity, ranking(validity), seed_spread(kept), frequency_drift(kept), kept, excluded, SweepDesign.of(kept))


# ---------------------------------------------------------------------------------------
# Files: cells.csv, metrics.csv, sweep.json, dose_response.svg, summary.md
# ---------------------------------------------------------------------------------------

#: The columns of metrics.csv (the ranking), in order.
RANKING_COLUMNS = (
    "place", "metric", "key", "models", "tracks", "tau", "p_trend", "curves", "slope",
    "false_alarm_rate", "false_alarm_models", "control_alarm_rate", "control_models", "preference_drift", "preference_rho",
    "preference_alarm_rate", "seed_sd", "rank_tau", "rank_false_alarm_rate", "rank_preference_drift", "rank_seed_sd", "overall",
    "why_no_verdict", "curve_cells_left_out", "curves_note",
)  # fmt: skip


def _f(value: float, digits: int = 2, pct: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * value:.0f}%" if pct else f"{value:.{digits}f}"


def format_p(p: float) -> str:
    """An exact p-value for people: 3 significant digits ("n/a" when not computed)."""
    return "n/a" if math.isnan(p) else f"{p:.3g}"


def tracks_text(row: Any) -> str:
    """A metric's verdict with what its curves leave out beside it: 'no evidence (3 models left out of its curves)'."""
    get = row.get if isinstance(row, dict) else lambda name, default=None: getattr(row, name, default)
    out, tracks = int(get("curve_cells_left_out", 0) or 0), get("tracks")
    return f"{tracks} ({out} model{'s' if out != 1 else ''} left out of its curves)" if out else str(tracks)


def format_place(place: Any) -> str:
    """A place in the ranking, or an em dash for a metric without a verdict (never ranked)."""
    return "—" if pd.isna(place) else str(int(place))


def summary_markdown(result: SweepResult, analysis: SweepAnalysis) -> str:
    """A short report: the grid, what was left out and whether there is a verdict, the ranking, how to read it, what it cannot show."""
    g = result.grid
    lines = [
        "# Bias-lab sweep: which metric tracks a planted bias?",
        "",
        f"{g.describe()}. {len(result.cells)} of {len(g)} models scored"
        + (" (stopped: run the same command again to resume)" if not result.complete else "")
        + f"; {sum(c.trained_here for c in result.cells)} trained in this run, {result.seconds:.0f} s with {result.workers} "
        f"worker process{'es' if result.workers != 1 else ''}. Every model's {_pairs(result)} held-out pairs, scored by every metric.",
        "",
        *[f"**{note}**\n" for note in analysis.notes()],
        "| place | metric | tracks | tau (within curves) | p (exact) | slope | false alarms (a=0.5, ratio>1) | control alarms "
        "| prefers-A drift | seed sd |",
        "| ---: | --- | --- | ---: | ---: | ---: | --- | --- | ---: | ---: |",
    ]
    for r in analysis.ranking.to_dict(orient="records"):
        lines.append(
            f"| {format_place(r['place'])} | {r['metric']} | {tracks_text(r)} | {_f(r['tau'])} | {format_p(r['p_trend'])} | "
            f"{_f(r['slope'], 1)} | {_f(r['false_alarm_rate'], pct=True)} of {r['false_alarm_models']} | "
            f"{_f(r['control_alarm_rate'], pct=True)} of {r['control_models']} | {_f(r['preference_drift'], 1)} | {_f(r['seed_sd'], 1)} |"
        )
    lines += ["", READING, "", limits(result.grid.base.kind), ""]
    return "\n".join(lines)


def _pairs(result: SweepResult) -> int:
    return len(lab.heldout_pairs(result.grid.base))


READING = (
    "**How to read it.** Only models that learned are judged: a model whose sanity check on its own training corpus says "
    "*untrained* is left out. *tracks*: does the bias score rise with the planted association within each seed's "
    "dose-response curve (its scores at each strength, each point the exact mean over the same frequency ratios at every "
    "strength: models outside that balanced grid, e.g. beside one that learned nothing, are left out of the curve and said "
    "so beside the verdict)? Ties are decided in exact arithmetic (a score is wins / pairs). *tau*: Kendall's rank correlation "
    "between strength and bias score within curves, pooled ((pairs of strengths ordered like their scores − pairs ordered "
    "against them) / pairs; 1 = every curve rises at every step). *p*: exact two-sided p of a permutation test that reorders "
    f"the scores within each curve, the seeds independently; *tracks: yes* when p ≤ {ALPHA:g} and tau > 0, *inverted* when "
    f"tau < 0, *no evidence* otherwise. A verdict needs at least {MIN_STRENGTHS} association strengths in each of at least "
    f"{MIN_SEEDS} seeds' curves, among the models that learned; below that the sweep says *not enough models to say* and ranks nothing. *slope*: "
    "bias-score points per unit of association within the curves (0.5 to 1.0 is half a unit: a metric that goes from 50 to 100 "
    "has slope 100), given only beside a trend (*yes* or *inverted*; n/a otherwise, where a fitted line would describe noise). "
    "*false alarms*: models with nothing planted (association 0.5) but a frequency imbalance (ratio > 1) whose 95% interval "
    "excludes 50; *control alarms*: the same where nothing differs (ratio 1), the chance rate (about 5% per model). "
    "*prefers-A drift*: how much more often the metric prefers the sentence naming the frequent group at the largest ratio "
    "than at ratio 1 (points; the pairs are balanced, so this does not move the bias score). *seed sd*: the standard deviation "
    "of the bias score across training seeds at a fixed setting (pooled over settings): the same held-out pairs, only "
    "training differs. *place*: metrics that track come first, inverted ones last; within each group, the mean of their "
    "ranks on tau, false alarms, |drift| and seed sd (a criterion the sweep cannot measure for every metric ranks none)."
)
LIMITS = (
    "**What it cannot show.** These are small BERTs trained for seconds on template sentences over a vocabulary of under a "
    "hundred words, not BERT: a metric that tracks a planted bias here may still fail on a real model and a real benchmark "
    "(whose pairs are not balanced, so frequency moves the bias score itself), and the other way round. The truth is the "
    "corpus statistic, which the model may learn only in part: a flat curve can mean the metric or the model misses it. "
    "With a few seeds per setting, the seed spread is rough."
)


def limits(kind: str) -> str:
    """`LIMITS`, of the sweep's kind of model (small BERTs, or small GPT-2s)."""
    return LIMITS.replace("BERT", LAB_ARCHITECTURES[kind])


__all__ = [
    "ALPHA",
    "CellResult",
    "DEFAULT_WORKERS",
    "MIN_SEEDS",
    "MIN_STRENGTHS",
    "MetricValidity",
    "NOT_ENOUGH",
    "SweepAnalysis",
    "SweepDesign",
    "SweepEstimate",
    "SweepGrid",
    "SweepProgress",
    "SweepResult",
    "SweepStopped",
    "analyse",
    "corpus_truth",
    "Curve",
    "curves_note",
    "dose_response_curves",
    "estimate_cell_seconds",
    "exact_score",
    "estimate_sweep",
    "format_p",
    "format_place",
    "metric_order",
    "frequency_drift",
    "metric_validity",
    "quick_recipe",
    "ranking",
    "run_sweep",
    "seed_spread",
    "slope",
    "spearman",
    "summary_markdown",
    "tracks_text",
    "trend_test",
]

"""The Sweep section of the Bias lab page: a grid of lab models, and which metric tracks the planted bias.

The engine is `biaslens.lab.sweep`. The sweep runs in the page's script (one heavy-job slot,
within the server's lab limits); every finished model is in the lab cache, so a sweep
stopped by **Stop**, a click elsewhere or a closed tab resumes where it stopped, and one
run again costs nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd
import streamlit as st

from biaslens import lab
from biaslens.figures import charts as figures
from biaslens.lab import sweep
from biaslens.data.export import safe_csv, to_json
from biaslens.engine.metrics import MASKED_METRICS, METRICS

from . import charts, feedback, resources, runs, tables
from .progress import format_duration

P = "lab.sweep."
ASSOCIATION_CHOICES = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
RATIO_CHOICES = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0)
#: Session state: grid key -> SweepResult (finished or partial), and the grid being run (until done or stopped).
_RESULTS = P + "results"
_RUNNING = P + "running"
_START = "start"


def _defaults() -> None:
    d = sweep.SweepGrid.default()
    for key, value in {
        "associations": list(d.associations),
        "ratios": list(d.ratios),
        "seeds": len(d.seeds),
        "steps": d.base.steps,
        "corpus": d.base.corpus_size,
        "workers": sweep.DEFAULT_WORKERS,
    }.items():
        st.session_state.setdefault(P + key, value)


def _use_full_grid() -> None:
    full = sweep.SweepGrid.full()
    st.session_state[P + "associations"] = list(full.associations)
    st.session_state[P + "ratios"] = list(full.ratios)
    st.session_state[P + "seeds"] = len(full.seeds)
    st.session_state[P + "steps"] = full.base.steps
    st.session_state[P + "corpus"] = full.base.corpus_size


def _use_default_grid() -> None:
    for key in ("associations", "ratios", "seeds", "steps", "corpus"):
        st.session_state.pop(P + key, None)
    _defaults()


def _key(grid: sweep.SweepGrid, compat: str) -> str:
    return json.dumps({"grid": grid.to_dict(), "compat": compat}, sort_keys=True)


def _start() -> None:
    # The grid is read when the script runs next: a click that interrupts the redraw after a change of the knobs
    # runs the grid the knobs now describe.
    st.session_state[_RUNNING] = _START


def _stop() -> None:
    st.session_state[_RUNNING] = None


def grid_controls(base: lab.LabSettings) -> sweep.SweepGrid | None:
    """The grid: strengths, ratios, seeds and the training recipe (words, templates and model size from the knobs above)."""
    _defaults()
    grid_axes = (
        ("Association strengths", ASSOCIATION_CHOICES, "associations", "Planted P(attributes X | group A): 0.5 = nothing planted, 1 = always."),
        (
            "Frequency ratios",
            RATIO_CHOICES,
            "ratios",
            "Group A k times as frequent as group B. A ratio above 1 at association 0.5 tests false alarms from frequency alone.",
        ),
    )
    for column, (label, choices, key, why) in zip(st.columns(len(grid_axes)), grid_axes):
        column.multiselect(label, choices, key=P + key, format_func=lambda x: f"{x:g}", help=why)
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input("Seeds per setting", 1, 10, key=P + "seeds", help="Seeds 0, 1, …: the spread across seeds is training noise alone.")
    c2.number_input(
        "Training steps per model",
        1,
        100_000,
        step=100,
        key=P + "steps",
        help=f"The default grid trains {sweep.QUICK_STEPS} steps (the single lab model {lab.LabSettings().steps:,}).",
    )
    c3.number_input("Corpus size per model", 100, 1_000_000, step=1000, key=P + "corpus")
    c4.number_input(
        "Worker processes",
        1,
        max(1, os.cpu_count() or 1),
        key=P + "workers",
        help=f"Models trained at once, each in its own process. Default {sweep.DEFAULT_WORKERS}: see docs/lab.md for the "
        "speed-up measured on 2 cores.",
    )
    b1, b2, _ = st.columns([1, 1, 3])
    b1.button("Default grid", key=P + "default", on_click=_use_default_grid, type="tertiary", icon=":material/restart_alt:")
    b2.button(
        "Full grid",
        key=P + "full",
        on_click=_use_full_grid,
        type="tertiary",
        icon=":material/grid_on:",
        help="0.5 to 1 by 0.1 × ratios 1, 3, 10 × 3 seeds at the lab's recipe: 54 models, for an unattended run (or the CLI).",
    )
    values = st.session_state
    try:
        recipe = replace(base, steps=values[P + "steps"], corpus_size=values[P + "corpus"], association=0.5, frequency_ratio=1.0, seed=0)
        return sweep.SweepGrid(values[P + "associations"], values[P + "ratios"], range(int(values[P + "seeds"])), recipe)
    except Exception as exc:  # an InputError the user can fix, in one line
        feedback.show_error(exc)
        return None


def _results() -> dict:
    return st.session_state.setdefault(_RESULTS, {})


def _number_table(frame: pd.DataFrame, pin: Sequence[str] | None = None) -> None:
    """The app's table (`ui.tables.table`): `pin` (default: the first column) first and in sight, two decimals, whole places."""
    pinned = list(frame.columns[:1]) if pin is None else [c for c in pin if c in frame]  # an empty ranking has no Place
    tables.table(frame, pin=pinned, formats={"Place": "{:.0f}"})


def ranking_table(analysis: sweep.SweepAnalysis) -> pd.DataFrame:
    """The ranking as the page shows it: one row per metric, best first (no place where there is no verdict)."""
    r = analysis.ranking
    if r.empty:
        return r

    def pct(value: float, n: int) -> str:
        return "n/a" if pd.isna(value) else f"{value:.0%} of {n}"

    return pd.DataFrame(
        {
            "Place": r["place"],
            "Metric": r["metric"],
            "Tracks the bias": [sweep.tracks_text(row) for row in r.to_dict(orient="records")],
            "Kendall's tau (within curves)": r["tau"],
            "p (exact)": [sweep.format_p(p) for p in r["p_trend"]],
            "Slope (points per unit)": r["slope"],
            "False alarms (0.5, ratio > 1)": [pct(v, n) for v, n in zip(r["false_alarm_rate"], r["false_alarm_models"])],
            "Control alarms (0.5, ratio 1)": [pct(v, n) for v, n in zip(r["control_alarm_rate"], r["control_models"])],
            "Prefers-A drift (points)": r["preference_drift"],
            "Seed sd (points)": r["seed_sd"],
        }
    )


def show_results(result: sweep.SweepResult, *, live: bool = False) -> None:
    """The dose-response figure, the ranking, every model's scores and the downloads (`live`: while the sweep runs)."""
    frame = result.frame()
    if frame.empty:
        return
    analysis = result.analysis()
    done, total = len(result.cells), len(result.grid)
    state = "so far" if live else "(stopped: run again to resume)" if done < total else ""
    st.markdown(f"**{done} of {total} models** {state}".strip())
    for note in analysis.notes():
        st.warning(feedback.md(note), icon=":material/block:")
    if not analysis.cells.empty:
        chart = figures.dose_response_chart(analysis.cells, width=560, columns=2)  # fits the main column at 1024 px with the sidebar
        if live:
            st.altair_chart(chart, width="stretch", theme=None)
        else:
            charts.show(chart, P + "chart")
    st.markdown(
        "**Which metric can you trust?** Metrics whose bias score rises with the planted association within each seed's "
        f"curve (exact trend test, p ≤ {sweep.ALPHA:g}) first, inverted ones last; within each group, by "
        "the mean of their ranks on tau, false alarms, drift and seed spread. A verdict needs at least "
        f"{sweep.MIN_STRENGTHS} association strengths in each of {sweep.MIN_SEEDS} seeds of models that learned; each curve averages "
        "the same frequency ratios at every strength, and the models it leaves out are counted beside the verdict."
    )
    _number_table(ranking_table(analysis), pin=["Place", "Metric", "Tracks the bias"])
    if live:
        return
    st.caption(sweep.READING)
    st.caption(sweep.LIMITS)
    with st.expander(f"Every model's scores ({done:,} models × {frame['key'].nunique():,} metrics)", icon=":material/table_rows:"):
        cells = frame[
            [
                "association",
                "frequency_ratio",
                "seed",
                "metric",
                "bias_score",
                "ci_low",
                "ci_high",
                "verdict",
                "group_a_preference",
                "corpus_association",
                "corpus_frequency_ratio",
                "sanity",
                "trained_here",
            ]
        ]
        _number_table(cells.assign(verdict=[lab.VERDICT_TEXT.get(v, v) for v in cells["verdict"]]), pin=["metric", "bias_score", "verdict"])
    with st.expander("Seed spread and the frequency drift", icon=":material/stacked_line_chart:"):
        st.caption("Bias score over seeds at each setting (mean, sd, lowest, highest):")
        _number_table(analysis.seed_spread.drop(columns=["key"]))
        st.caption(
            "'Prefers group A' per frequency ratio, every association pooled; alarm rate = share of models whose group-A interval excludes 50:"
        )
        _number_table(analysis.frequency_drift.drop(columns=["key"]))
    c1, c2, c3, c4 = st.columns(4)
    c1.download_button("cells.csv", safe_csv(frame), "cells.csv", "text/csv", key=P + "dl_cells", icon=":material/download:")
    c2.download_button("metrics.csv", safe_csv(analysis.ranking), "metrics.csv", "text/csv", key=P + "dl_metrics", icon=":material/download:")
    c3.download_button(
        "sweep.json",
        to_json({"manifest": result.manifest(), **analysis.to_dict()}),
        "sweep.json",
        "application/json",
        key=P + "dl_json",
        icon=":material/download:",
    )
    c4.download_button(
        "summary.md", sweep.summary_markdown(result, analysis), "summary.md", "text/markdown", key=P + "dl_md", icon=":material/download:"
    )


def _run(grid: sweep.SweepGrid, compat: str, workers: int) -> sweep.SweepResult | None:
    """The sweep with live progress and partial results, within the server's limits; None if it failed (shown)."""
    server = resources.server_settings()
    bar = st.progress(0.0, text="Sweep: starting…")
    live = st.empty()
    finished: list[sweep.CellResult] = []
    gone = runs.session_gone()

    def update(p: sweep.SweepProgress) -> None:
        left = "estimating time left…" if p.seconds_left is None else f"about {format_duration(p.seconds_left)} left"
        bar.progress(
            min(1.0, (p.done + p.running) / p.total),
            text=f"Sweep: {p.done:,} / {p.total:,} models ({p.trained:,} trained, {p.found:,} found in the cache) · {feedback.md(left)}",
        )
        if p.cell is not None:
            finished.append(p.cell)
            with live.container():
                show_results(sweep.SweepResult(grid, list(finished), tuple(METRICS), compat), live=True)

    def job() -> sweep.SweepResult:
        with runs.heavy_job("The sweep"):
            return sweep.run_sweep(
                grid,
                metrics=list(MASKED_METRICS),
                compat=compat,
                result_cache=resources.result_cache().path,
                workers=workers,
                progress=update,
                stop=gone,
                max_cell_seconds=server.lab_max_seconds,
            )

    result = None
    with feedback.guard():
        result = job()
    bar.empty()
    live.empty()
    return result


def _finished_cells(grid: sweep.SweepGrid, compat: str) -> sweep.SweepResult | None:
    """The cells of the grid already in the lab cache, scored (nothing trained)."""
    with feedback.guard():
        return sweep.run_sweep(grid, metrics=list(MASKED_METRICS), compat=compat, result_cache=resources.result_cache().path, train=False)
    return None


def section(base: lab.LabSettings | None, compat: str) -> None:
    """The Sweep section: choose the grid, see its cost, run it with live progress, read which metric tracks the bias."""
    st.header("Sweep: which metric can you trust?")
    st.caption(
        "One model at one strength cannot say whether a metric *tracks* bias. A sweep trains a grid of lab models (association "
        "strengths × frequency ratios × seeds; words, templates and model size from the knobs above) and scores every model's "
        "held-out pairs with every metric: does the bias score rise with the planted association (Spearman's rho, slope), does "
        "frequency alone raise false alarms, how much does it move with the seed? After Kaneko, Bollegala & Okazaki (EACL 2023)."
    )
    if base is None:
        st.info("Fix the knobs above first: the sweep uses their words, templates and model size.", icon=":material/tune:")
        return
    grid = grid_controls(base)
    if grid is None:
        return
    server = resources.server_settings()
    workers = int(st.session_state[P + "workers"])
    estimate = sweep.estimate_sweep(grid, workers=workers)
    key = _key(grid, compat)
    results = _results()
    if st.session_state.get(_RUNNING) == _START:
        st.session_state[_RUNNING] = key
        results.pop(key, None)  # drawn afresh from the caches once the run stops or ends
    running = st.session_state.get(_RUNNING) == key
    refused = None
    if estimate.to_train:
        try:
            server.check_lab(grid.base)
        except Exception as exc:  # a LimitError: training switched off, or a knob above a cap
            refused = exc
    if refused is not None:
        st.session_state[_RUNNING] = None  # e.g. training switched off while a sweep was on its way: it stops here
        running = False
    if not running:
        st.info(f"**Cost:** {feedback.md(estimate.text())}", icon=":material/timer:")
        if refused is not None:
            feedback.show_error(refused)
        elif estimate.to_train:
            st.button(
                "Run the sweep",
                type="primary",
                icon=":material/play_arrow:",
                key=P + "run",
                on_click=_start,
                help="Trains the models not in the cache yet, scores every model. Stop keeps the finished models.",
            )
    if running:
        st.button(
            "Stop",
            icon=":material/stop_circle:",
            key=P + "stop",
            on_click=_stop,
            help="Stop the sweep. Finished models stay in the cache: running again resumes from there.",
        )
        result = _run(grid, compat, workers)
        st.session_state[_RUNNING] = None
        if result is not None:
            results[key] = result
            st.rerun()
    if key not in results and estimate.cached:
        found = _finished_cells(grid, compat)
        if found is not None:
            results[key] = found
    if key in results:
        show_results(results[key])

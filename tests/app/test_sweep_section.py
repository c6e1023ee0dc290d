"""The Bias lab page's Sweep section: cost before the run, progress, ranking equal to the engine, Stop keeps finished models."""

from __future__ import annotations

import pytest

from biaslens import lab
from biaslens.lab import sweep
from tests.support.app import no_exceptions, run_app, tables, texts

TINY = lab.LabSettings(corpus_size=600, steps=12, batch_size=32)

# ---------------------------------------------------------------------------------------
# The Sweep section of the Bias lab page
# ---------------------------------------------------------------------------------------

S = "lab."
P = "lab.sweep."
#: The page's tiny recipe (the lab page's own tests use the same) and a 2-model grid.
PAGE = {
    S + "batch": 32,
    S + "corpus": 600,
    S + "steps": 12,
    P + "associations": [0.5, 1.0],
    P + "ratios": [1.0],
    P + "seeds": 1,
    P + "steps": 12,
    P + "corpus": 600,
}
PAGE_GRID = sweep.SweepGrid((0.5, 1.0), (1.0,), (0,), TINY)
TAU = "Kendall's tau (within curves)"


def _ranking(at):
    return next(t for t in tables(at) if TAU in t.columns)


def test_the_sweep_section_estimates_runs_and_ranks_the_metrics(app_env, monkeypatch):
    at = run_app("lab", {"scenario": "neither"}, PAGE)
    no_exceptions(at)
    assert "Sweep: which metric can you trust?" in [h.value for h in at.header]
    assert "**Cost:** 2 models: 2 to train" in texts(at.info)
    assert not any(TAU in t.columns for t in tables(at))

    at.button(key=P + "run").click().run()
    no_exceptions(at)
    assert not at.get("progress")  # the bar is gone once the sweep is done
    assert "**2 of 2 models**" in texts(at.markdown)
    found = sweep.run_sweep(PAGE_GRID, result_cache=False, train=False)  # the page's models, in the app's lab cache
    assert found.complete
    want = found.analysis().ranking
    shown = _ranking(at)
    assert list(shown["Metric"]) == list(want["metric"])
    assert shown[TAU].tolist() == pytest.approx(want["tau"].tolist(), nan_ok=True)
    # Two strengths and one seed: no verdict, no place, and the page says why.
    assert set(shown["Tracks the bias"]) == {sweep.NOT_ENOUGH} and shown["Place"].isna().all()
    why = (
        "Not enough models to say whether a metric tracks the planted association: 0 seeds with 4 or more association strengths "
        "among the models that learned (seed 0: 2 strengths;"
    )
    assert why in texts(at.warning)
    assert shown["Slope (points per unit)"].isna().all() and want["slope"].isna().all()  # no verdict: no slope
    assert not [b for b in at.button if b.key == P + "run"]  # nothing left to train

    # Another session: the finished sweep is drawn from the caches, nothing is trained.
    def fail(*args, **kwargs):
        raise AssertionError("a cell of the sweep was trained again")

    monkeypatch.setattr(lab.store, "_train", fail)  # where train_lab_model looks it up
    again = run_app("lab", {"scenario": "neither"}, PAGE)
    no_exceptions(again)
    assert "2 already trained (scored only), 0 to train" in texts(again.info)
    assert _ranking(again)[TAU].tolist() == pytest.approx(want["tau"].tolist(), nan_ok=True)


def test_a_stopped_sweep_shows_its_finished_models_and_the_server_limits_hold(app_env, monkeypatch):
    lab.train_lab_model(PAGE_GRID.cells()[0])  # the first model finished before a Stop
    at = run_app("lab", {"scenario": "neither"}, PAGE)
    no_exceptions(at)
    assert "2 models: 1 already trained (scored only), 1 to train" in texts(at.info)
    assert "**1 of 2 models** (stopped: run again to resume)" in texts(at.markdown)
    assert at.button(key=P + "run")

    monkeypatch.setenv("BIASLENS_LAB", "off")
    off = run_app("lab", {"scenario": "neither"}, PAGE)
    no_exceptions(off)
    assert "Training is switched off on this server" in texts(off.error)
    assert not [b for b in off.button if b.key == P + "run"]
    assert "**1 of 2 models**" in texts(off.markdown)  # finished models are still shown

    monkeypatch.setenv("BIASLENS_LAB", "on")
    monkeypatch.setenv("BIASLENS_LAB_MAX_STEPS", "10")
    capped = run_app("lab", {"scenario": "neither"}, PAGE)
    assert "Training steps 12 is above this server's limit of 10" in texts(capped.error)
    assert not [b for b in capped.button if b.key == P + "run"]

"""The bias lab page with AppTest: presets, training, the cache, links into the inspector, the offline default.

Every model here is tiny (600 sentences, 12 steps of 32): it trains in a second or two and
exercises every code path; whether the metrics detect a planted bias is tested on the
default recipe in tests/test_lab.py and tests/test_bias_detection.py.
"""

from __future__ import annotations

import huggingface_hub.constants
import pytest

import biaslens.engine.models
from tests.support.app import no_exceptions, run_app, static_tables, tables, texts
from biaslens import lab
from biaslens.engine.metrics import MASKED_METRICS, METRICS


S = "lab."
#: The tiny recipe, as the page's knobs (the link's parameters and one advanced setting).
LINK = {"corpus": "600", "steps": "12"}
STATE = {S + "batch": 32}
TINY = lab.LabSettings(corpus_size=600, steps=12, batch_size=32)


def _results_table(at):
    return next(t for t in tables(at) if "Against the truth" in t.columns)


def _never_train(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("a cached lab model was trained again")

    monkeypatch.setattr(lab.store, "_train", fail)  # where train_lab_model looks it up


def test_presets_train_score_every_metric_against_the_truth_and_compare(app_env):
    at = run_app("lab", LINK, STATE)
    no_exceptions(at)
    assert at.title[0].value == "Bias lab"
    at.button_group(key=S + "scenario").set_value("frequency").run()
    assert at.slider(key=S + "association").value == 0.5 and at.number_input(key=S + "ratio").value == 4.0
    assert "Not trained yet: frequency imbalance only" in texts(at.info)
    assert not any("Against the truth" in t.columns for t in tables(at))

    at.button(key=S + "train").click().run()
    no_exceptions(at)
    settings = lab.scenario_settings("frequency", TINY)
    model = lab.find_lab_model(settings)
    assert model is not None and model.path.name.startswith("frequency-")
    assert not at.get("progress")  # the bars are gone once training and scoring are done
    assert "Planted truth:** bias score **50**" in texts(at.markdown)
    table = _results_table(at)
    want = lab.evaluate_lab(model).frame()
    assert list(table["Metric"]) == [METRICS[k].name for k in MASKED_METRICS]  # AUL, AULA, CPS, SSS, All Masked (and PLL)
    assert table["Bias score"].tolist() == pytest.approx(want["bias_score"].tolist())
    assert table["95% CI low"].tolist() == pytest.approx(want["ci_low"].tolist())
    assert table["95% CI high"].tolist() == pytest.approx(want["ci_high"].tolist())
    for shown, verdict in zip(table["Against the truth"], want["verdict"]):
        assert shown.endswith(lab.VERDICT_TEXT[verdict])
    assert at.query_params["scenario"] == "frequency" and at.query_params["ratio"] == "4"

    # A second scenario in the same session: both side by side.
    at.button_group(key=S + "scenario").set_value("neither").run()
    at.button(key=S + "train").click().run()
    no_exceptions(at)
    # One row per metric, one column per run: whole at 1024 px (issue 30: one column per metric was cut off); the runs below.
    compare = next(t for t in static_tables(at) if "1 · frequency imbalance only" in t.columns)
    assert list(compare.columns) == ["Metric", "1 · frequency imbalance only", "2 · neither (control)"]
    assert list(compare["Metric"]) == [METRICS[k].name for k in MASKED_METRICS]
    runs = next(t for t in static_tables(at) if "Run" in t.columns)
    assert list(runs["Run"]) == ["1 · frequency imbalance only", "2 · neither (control)"] and list(runs["Scenario"]) == ["frequency", "neither"]
    assert list(runs["Planted truth"]) == ["bias score 50", "bias score 50"]
    assert "Scenarios side by side" in [h.value for h in at.subheader]


def test_a_second_visit_finds_the_model_in_the_cache(app_env, monkeypatch):
    first = run_app("lab", {**LINK, "scenario": "association"}, STATE)
    first.button(key=S + "train").click().run()
    scores = _results_table(first)["Bias score"].tolist()

    _never_train(monkeypatch)
    again = run_app("lab", {**LINK, "scenario": "association"}, STATE)  # a new session, e.g. a shared link
    no_exceptions(again)
    assert "Found in the cache, not retrained" in texts(again.success)
    assert not [b for b in again.button if b.key == S + "train"]
    assert _results_table(again)["Bias score"].tolist() == pytest.approx(scores)
    assert "Planted truth:** bias score **above 50**" in texts(again.markdown)
    # The trained model is now one of the sidebar's models of the session that trained it; of every session only
    # when the operator shares lab models (BIASLENS_SHARE_LAB_MODELS=on).
    assert lab.find_lab_model(lab.scenario_settings("association", TINY)) is not None  # trained and stored
    label = "lab model: planted association"
    assert label not in again.sidebar.selectbox(key="settings.model").options
    assert label in first.run().sidebar.selectbox(key="settings.model").options
    monkeypatch.setenv("BIASLENS_SHARE_LAB_MODELS", "on")
    assert label in again.run().sidebar.selectbox(key="settings.model").options


def test_invalid_knobs_are_explained_in_one_line(app_env):
    at = run_app("lab", LINK, {**STATE, S + "group_b": "Mary, Anna"})
    no_exceptions(at)
    assert "same number of words" in texts(at.error)
    assert not [b for b in at.button if b.key == S + "train"]


def test_a_metric_result_opens_its_pair_in_the_inspector_with_the_lab_model(app_env):
    model = lab.train_lab_model(lab.scenario_settings("association", TINY))  # in the app's cache: found, not trained
    at = run_app("lab", {**LINK, "scenario": "association"}, STATE)
    no_exceptions(at)
    pair = lab.evaluate_lab(model).telling_pair("cps").pair
    at.button(key=S + "inspect_cps").click().run()
    no_exceptions(at)
    assert at.title[0].value == "Pair inspector"
    assert at.session_state["settings.model"] == str(model.path)
    assert at.session_state["inspector.custom"] == (pair.sent_stereo, pair.sent_anti)
    assert at.session_state["inspector.metric"] == "cps"
    assert "Your pair" in [h.value for h in at.subheader]
    assert at.query_params["model"] == str(model.path)
    assert "Bias-lab model, planted association" in texts(at.sidebar.caption)
    # Its sanity check reads its own corpus, not plain English (which it never saw).
    assert "Token prediction on 8 sentences of its training corpus" in texts(at.sidebar.caption)


def test_a_result_opens_under_its_own_model_with_its_own_held_out_pairs(app_env):
    """Issue 30, item 6: "Inspect CPS" on a frequency result opened the association model's held-out pairs (another truth)."""
    association = lab.train_lab_model(lab.scenario_settings("association", TINY))
    frequency = lab.train_lab_model(lab.scenario_settings("frequency", TINY))
    at = run_app("lab", {**LINK, "scenario": "frequency", "dataset": str(association.path / lab.PAIRS_FILE)}, STATE)
    assert at.session_state["settings.dataset"] == str(association.path / lab.PAIRS_FILE)
    no_exceptions(at)
    at.button(key=S + "inspect_cps").click().run()
    no_exceptions(at)
    assert at.title[0].value == "Pair inspector"
    assert at.session_state["settings.model"] == str(frequency.path)
    assert at.session_state["settings.dataset"] == str(frequency.path / lab.PAIRS_FILE)
    assert at.query_params["dataset"] == str(frequency.path / lab.PAIRS_FILE)


def test_a_held_out_pair_opens_in_the_inspector(app_env):
    model = lab.train_lab_model(lab.scenario_settings("neither", TINY))
    at = run_app("lab", {**LINK, "scenario": "neither"}, STATE)
    table = next(d for d in at.dataframe if "sent_stereo" in d.value.columns)
    row = table.value.iloc[5]
    at.session_state[table.key] = {"selection": {"rows": [5], "columns": [], "cells": []}}
    at.run()
    no_exceptions(at)
    assert at.title[0].value == "Pair inspector"
    assert at.session_state["settings.model"] == str(model.path)
    assert at.session_state["inspector.custom"] == (row["sent_stereo"], row["sent_anti"])


@pytest.fixture
def offline(app_env, monkeypatch):
    """No network: the hub model named by BIASLENS_MODEL cannot be fetched; the lab's default model is tiny."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(biaslens.engine.models, "_cached_revision", lambda name, revision: None)  # not in the local HF cache
    monkeypatch.setenv("BIASLENS_MODEL", "bert-base-cased")
    monkeypatch.setattr(lab.store, "default_lab_settings", lambda: lab.scenario_settings(lab.DEFAULT_LAB_SCENARIO, TINY))


def test_offline_the_app_offers_the_lab_model_and_selecting_it_works(offline, monkeypatch):
    at = run_app()
    no_exceptions(at)
    assert not at.error  # a first run without network: no red anywhere
    assert "bert-base-cased is not on this machine" in texts(at.sidebar.info)
    assert "trains here once" in texts(at.sidebar.info)
    assert "Use the offline lab model" in texts(at.main.info)  # the page's own message points to it too

    at.sidebar.button(key="settings.offline_lab").click().run()
    no_exceptions(at)
    model = lab.find_lab_model(lab.store.default_lab_settings())
    assert model is not None and lab.cached_lab_model_path() == model.path
    assert at.session_state["settings.model"] == str(model.path)
    assert at.session_state["settings.dataset"] == str(model.path / lab.PAIRS_FILE)  # pairs in its own vocabulary
    assert (
        at.sidebar.selectbox(key="settings.dataset").format_func(str(model.path / lab.PAIRS_FILE))
        == "held-out pairs of the lab model: planted association"
    )
    # Loaded (a 12-step model fails its sanity check, as it should: only the hub's error must be gone).
    assert "HF_HUB_OFFLINE" not in texts(at.sidebar.error) and "Loaded" in texts(at.sidebar.caption)
    assert "**Loaded** lab model: planted association:" in texts(at.sidebar.caption)  # in full (the box cuts a long name off)
    assert not at.main.error  # the page works with it: the first held-out pair is scored
    assert any("Margin (stereo − anti)" in t.columns for t in tables(at))  # its sentence scores
    first = lab.heldout_pairs(model.settings)[0].pair
    picker = next(sb for sb in at.main.selectbox if sb.label.startswith("Pair ("))
    assert first.sent_stereo in picker.options[0]
    shown = " ".join([picker.label, *(h.value for h in at.main.subheader), *(o for o in at.sidebar.selectbox(key="settings.model").options)])
    assert "lab pairs #" in shown and "custom" not in shown and "association-" not in shown  # named after the model, never internal names
    assert "Synthetic pairs of the bias lab" in texts(at.main.info) and "Content warning" not in texts(at.main.warning)

    # Another session later: the lab model is already trained, so it is selected without training.
    _never_train(monkeypatch)
    later = run_app()
    assert "already trained on this machine" in texts(later.sidebar.info)
    later.sidebar.button(key="settings.offline_lab").click().run()
    no_exceptions(later)
    assert later.session_state["settings.model"] == str(model.path)
    assert "HF_HUB_OFFLINE" not in texts(later.sidebar.error) and "Loaded" in texts(later.sidebar.caption)

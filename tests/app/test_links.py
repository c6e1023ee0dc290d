"""Links into every page with AppTest: a bad value is reported in one line and never raises (issue 22, item 2), and a
page switch made by a click keeps every global setting (issue 21, journey 1)."""

from __future__ import annotations

import pytest

from tests.support.app import no_exceptions, run_app, texts
from biaslens import lab

NINES = "9" * 5000  # int() refuses more than 4,300 digits


def _rejected(at, name: str, value: str, expected: str) -> None:
    shown = value if len(value) <= 80 else value[:80] + "…"
    assert f"The link's {name}='{shown}' was not used: expected {expected}" in texts(at.warning), texts(at.warning)


@pytest.mark.parametrize("value", ["²", NINES, "٣", "-1"])
def test_the_inspector_reports_a_bad_pair(app_env, value):
    at = run_app("inspector", {"pair": value})
    no_exceptions(at)
    _rejected(at, "pair", value, "a pair id (a whole number, 0 or more)")
    assert at.subheader[0].value.startswith("crows-pairs #0 ")  # the first pair, as without the link


def test_bad_global_settings_are_reported_on_any_page(app_env):
    bad = {"compat": "kaneko", "dtype": "float8", "device": "tpu", "classroom": "maybe"}
    at = run_app("inspector", {**bad, "pair": "3"})
    no_exceptions(at)
    _rejected(at, "compat", "kaneko", "one of default, kaneko2022")
    _rejected(at, "dtype", "float8", "one of float32, bfloat16, float16")
    _rejected(at, "device", "tpu", "one of auto, cpu, cuda, mps")
    _rejected(at, "classroom", "maybe", "on or off")
    assert at.session_state["settings.compat"] == "default" and not at.session_state["classroom.on"]
    assert at.subheader[0].value.startswith("crows-pairs #3 ")  # the rest of the link is used


def test_a_device_this_machine_lacks_is_reported(app_env, monkeypatch):
    import ui.sidebar

    monkeypatch.setattr(ui.sidebar, "device_choices", lambda: ["auto", "cpu"])
    at = run_app("inspector", {"device": "cuda"})
    no_exceptions(at)
    _rejected(at, "device", "cuda", "one of auto, cpu (on this machine)")
    assert at.session_state["settings.device"] == "auto"


def test_the_explorer_reports_bad_sample_seed_and_tab(app_env):
    at = run_app("explorer", {"metrics": ["aul", "rm -rf"], "sample": "²", "seed": NINES, "tab": "secrets"})
    no_exceptions(at)
    _rejected(at, "sample", "²", "a number of pairs (a whole number, 1 or more)")
    _rejected(at, "seed", NINES, "a seed (a whole number, 0 or more)")
    _rejected(at, "tab", "secrets", "one of scores, types, groups, pairs, export")
    _rejected(at, "metrics", "rm -rf", "metric names from")
    assert at.session_state["explorer.metrics"] == ["aul"]  # the good one is used


def test_the_comparison_reports_bad_sample_seed_and_metric(app_env):
    at = run_app("compare", {"sample": NINES, "seed": "abc", "metric": "²"})
    no_exceptions(at)
    _rejected(at, "sample", NINES, "a number of pairs (a whole number, 1 or more)")
    _rejected(at, "seed", "abc", "a seed (a whole number, 0 or more)")
    _rejected(at, "metric", "²", "one of aul, aula")


def test_a_comma_list_of_models_is_one_name_said_in_one_line_and_of_metrics_is_read(app_env, model_dirs):
    """`models=a,b` was one model named "a,b", silently (a local folder's name may hold a comma, so it stays one name,
    and the page says how several are written); `metrics=aul,cps` is two metrics (no metric name holds a comma)."""
    bert, roberta = str(model_dirs["bert-cased"]), str(model_dirs["roberta"])
    at = run_app("compare", {"models": "gpt2,bert-base-uncased"})
    no_exceptions(at)
    said = [w.value for w in at.warning if "is read as" in w.value]
    assert said == [  # markdown: `\&` shows as `&`
        "The link's models='gpt2,bert-base-uncased' is read as one name, commas included (a folder's name may hold one): "
        "several are written models=a\\&models=b."
    ]
    assert at.session_state["compare.models"] == ["gpt2,bert-base-uncased"]
    again = run_app("compare", {"models": [bert, roberta]})  # the repeated form: both models, nothing said
    no_exceptions(again)
    assert again.session_state["compare.models"] == [bert, roberta] and not [w for w in again.warning if "link" in w.value]
    explorer = run_app("explorer", {"metrics": "aul,cps"})
    no_exceptions(explorer)
    assert explorer.session_state["explorer.metrics"] == ["aul", "cps"] and "link" not in texts(explorer.warning)


def test_the_analyses_report_a_bad_sample_and_seed(app_env):
    at = run_app("analyses", {"sample": "²", "seed": "-3"})
    no_exceptions(at)
    _rejected(at, "sample", "²", "a number of pairs (a whole number, 1 or more)")
    _rejected(at, "seed", "-3", "a seed (a whole number, 0 or more)")


def test_the_lab_reports_bad_knobs_and_keeps_its_widgets_in_range(app_env):
    link = {"scenario": "all", "association": "nan", "ratio": "1e999", "corpus": "5", "steps": NINES, "seed": "²"}
    at = run_app("lab", link)
    no_exceptions(at)
    _rejected(at, "scenario", "all", "one of association, frequency, both, neither")
    _rejected(at, "association", "nan", "a number from 0 to 1")
    _rejected(at, "ratio", "1e999", "a number from 1 to 100")
    _rejected(at, "corpus", "5", "a whole number from 100 to 1,000,000")
    _rejected(at, "steps", NINES, "a whole number from 1 to 100,000")
    _rejected(at, "seed", "²", "a whole number from 0 to 2,147,483,647")
    defaults = lab.LabSettings()
    assert at.number_input(key="lab.corpus").value == defaults.corpus_size and at.slider(key="lab.association").value == 0.9


# ---------------------------------------------------------------------------------------
# Page switches keep the global settings
# ---------------------------------------------------------------------------------------

#: Every global setting away from its default (the sidebar's model is the tiny BERT, the data folder the fixtures').
GLOBAL = {"compat": "kaneko2022", "device": "cpu", "classroom": "on"}


def _kept(at, model: str | None = None) -> None:
    assert at.title[0].value == "Pair inspector"
    assert at.session_state["settings.compat"] == "kaneko2022" and at.session_state["settings.device"] == "cpu"
    assert at.session_state["classroom.on"]
    for name, value in GLOBAL.items():
        assert at.query_params[name] == value
    if model is not None:
        assert at.session_state["settings.model"] == model and at.query_params["model"] == model


def _select(at, column: str, row: int) -> int:
    table = next(d for d in at.dataframe if column in d.value.columns)
    at.session_state[table.key] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    return int(table.value.iloc[row]["pair_id"])


def test_an_explorer_row_keeps_every_global_setting(app_env):
    at = run_app("explorer", {**GLOBAL, "metrics": "aul", "sample": "6"})
    at.button(key="explorer.run").click().run()
    model, data_dir = at.session_state["settings.model"], at.query_params["data_dir"]
    pair = _select(at, "sent_stereo", 2)
    at.run()
    no_exceptions(at)
    _kept(at, model)
    assert at.query_params["data_dir"] == data_dir and at.query_params["pair"] == str(pair)
    assert at.subheader[0].value.startswith(f"crows-pairs #{pair} ")


def test_a_flipped_pair_keeps_every_global_setting(app_env, model_dirs):
    models = [str(model_dirs["bert-cased"]), str(model_dirs["roberta"])]
    at = run_app("compare", {**GLOBAL, "models": models, "metric": "aul", "sample": "8"})
    at.button(key="compare.run").click().run()
    no_exceptions(at)
    pair = _select(at, "sent_stereo", 0)
    at.run()
    no_exceptions(at)
    _kept(at, str(model_dirs["bert-cased"]))
    assert at.query_params["pair"] == str(pair)


def test_a_lab_result_keeps_every_global_setting_but_the_model(app_env):
    tiny = lab.LabSettings(corpus_size=600, steps=12, batch_size=32)
    model = lab.train_lab_model(lab.scenario_settings("association", tiny))
    at = run_app("lab", {**GLOBAL, "corpus": "600", "steps": "12", "scenario": "association"}, {"lab.batch": 32})
    at.button(key="lab.inspect_aul").click().run()
    no_exceptions(at)
    _kept(at, str(model.path))
    assert at.session_state["inspector.custom"] is not None

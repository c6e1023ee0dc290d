"""Every page with a causal model (a tiny GPT-2): its own metrics where a page scores, and one line where a page's
analysis needs a masked model."""

from __future__ import annotations

import os

import pytest

from tests.support.app import markdown_texts, no_exceptions, run_app, static_tables, tables, texts


@pytest.fixture
def causal_env(app_env, causal_dirs, model_dirs, monkeypatch):
    folder = causal_dirs["gpt2"]
    monkeypatch.setenv("BIASLENS_MODEL", str(folder))
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", os.pathsep.join([str(model_dirs["bert-cased"].parent), str(folder.parent)]))
    return folder


def test_the_inspector_shows_a_causal_model_s_metrics(causal_env):
    at = run_app()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    table = next(t for t in tables(at) if "Margin (stereo − anti)" in t.columns)
    assert list(table["Metric"]) == ["LL", "AUL-c", "AULA-c", "CPS-c", "SSS-c"]


def test_the_explorer_scores_a_causal_model_with_its_metrics(causal_env):
    at = run_app("explorer", {"sample": "5"})
    no_exceptions(at)
    at.button(key="explorer.run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    assert [m.label for m in at.metric][:2] == ["LL bias score", "AUL-c bias score"]


@pytest.mark.parametrize("page", ["compare", "lab", "leaderboard", "docs"])
def test_every_other_page_runs_with_a_causal_model(causal_env, page):
    at = run_app(page)
    no_exceptions(at)
    assert not at.error, texts(at.error)


def test_the_lab_trains_a_causal_model_and_opens_it_in_the_inspector(app_env):
    """The lab's Model choice: a small GPT-2 trained on the planted corpus, scored with the causal metrics, its telling
    pair opened in the inspector under it."""
    at = run_app("lab", {"scenario": "association", "kind": "causal", "corpus": "600", "steps": "12"})
    no_exceptions(at)
    at.button(key="lab.train").click().run(timeout=300)
    no_exceptions(at)
    assert not at.error, texts(at.error)
    table = next(t for t in static_tables(at) if "Metric" in t.columns)
    assert list(table["Metric"])[:2] == ["LL", "AUL-c"]
    at.button(key="lab.inspect_aul_c").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)


def test_the_kurita_and_analyses_pages_say_in_one_line_why_not(causal_env):
    for page, words in (("kurita", "its P(target) never sees the attribute"), ("analyses", "tables for masked language models")):
        at = run_app(page)
        no_exceptions(at)
        assert words in texts(at.info) and not at.error
        assert at.query_params["model"] == str(causal_env)  # the link keeps the model (it stopped before its view was published)


def test_two_causal_models_compared_and_a_masked_one_beside_them_says_why(causal_env, causal_dirs, model_dirs):
    two = {"models": [str(causal_dirs["gpt2"]), str(causal_dirs["pythia"])], "metric": "ll", "sample": "5"}
    at = run_app("compare", two)
    no_exceptions(at)
    at.button(key="compare.run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    scores = next(t for t in tables(at) if "Model" in t.columns and "Bias score" in t.columns)
    assert scores["Model"].tolist() == ["gpt2", "pythia"]
    mixed = {"models": [str(causal_dirs["gpt2"]), str(model_dirs["bert-cased"])], "metric": "ll", "sample": "5"}
    at = run_app("compare", mixed)  # said once, before anything is offered to run: no Score button, no error after it
    no_exceptions(at)
    assert texts(at.warning).count("bert-cased is left out of this comparison: LL is a causal-LM metric and this is a masked model") == 1
    assert "Fewer than two of the chosen models could be loaded and give LL" in texts(at.info) and not at.error
    assert not [b for b in at.button if b.key == "compare.run"]


def test_the_explorer_compares_a_causal_model_s_conventions(causal_env):
    """The explorer's Scoring conventions: the run's pairs under the default, lm-eval, bias-bench and oba2024, with each
    causal metric, equal to `convention_sensitivity`, and the pairs whose verdict flips listed."""
    from biaslens.analyses.conventions import convention_sensitivity
    from biaslens.data.datasets import load_dataset
    from biaslens.data.export import escape_markdown
    from biaslens.engine.evaluation import evaluate
    from biaslens.engine.models import load_model
    from tests.support import FIXTURE_DATA

    at = run_app("explorer", {"sample": "8", "seed": "1"})
    at.button(key="explorer.run").click().run()
    at.button(key="trust.conv_run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)

    lm, dataset = load_model(str(causal_env)), load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    by_id = {p.pair_id: p for p in dataset.pairs}
    run = evaluate(lm, dataset, ["ll"], sample=8, seed=1)
    want = convention_sensitivity(lm, [by_id[i] for i in run.pairs["pair_id"]])
    scores = next(t for t in tables(at) if "Scoring" in t.columns)
    assert scores["Scoring"].tolist() == want.table["scoring"].tolist()
    assert scores["Bias score"].tolist() == want.table["bias_score"].tolist()
    assert not [s for s in scores["Scoring"] if s.startswith("lm-eval /") and s != "lm-eval / LL"]  # the default's, once
    # The headline: per metric, the pairs whose verdict changes between conventions; the tools apart from it.
    assert f"**Convention sensitivity.** {escape_markdown(want.headline())}" in markdown_texts(at)
    sensitivity = next(t for t in tables(at) if "Pairs that change verdict" in t.columns)
    assert sensitivity["Metric"].tolist() == want.sensitivity["name"].tolist()
    assert sensitivity["Pairs that change verdict"].tolist() == [f"{c} of 8" for c in want.sensitivity["changed"]]
    tools = next(t for t in tables(at) if "Against" in t.columns)
    assert tools["Pairs whose verdict differs"].tolist() == [f"{f} of 8" for f in want.tools["flips"]]
    listed = [t for t in tables(at) if "Scorings against their metric's majority" in t.columns]
    contested = want.verdicts.loc[want.verdicts["flips"] > 0, "pair_id"].tolist()  # most contested first
    assert (listed[0]["Pair"].tolist() if listed else []) == contested


def test_a_masked_and_a_causal_model_side_by_side_on_the_same_pair(app_env, causal_dirs, model_dirs, monkeypatch):
    """The inspector's "Compare under another model" with a causal model beside the sidebar's masked one: each model's
    own metrics, each its own tokens."""
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", os.pathsep.join([str(model_dirs["bert-cased"].parent), str(causal_dirs["gpt2"].parent)]))
    at = run_app("inspector", {"pair": "2", "models": [str(causal_dirs["gpt2"])]})
    no_exceptions(at)
    assert not at.error, texts(at.error)
    shown = " ".join(" ".join(map(str, t.columns)) + " " + " ".join(map(str, t.iloc[:, 0])) for t in tables(at))
    for name in ("AUL", "LL", "AUL-c"):
        assert name in shown, shown
    assert "AUL / AUL-c margin" in shown, shown  # a metric and its counterpart in one column: each model's under its own

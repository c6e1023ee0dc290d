"""The pages with a multiple-choice dataset (BBQ, Winogender) in the sidebar: the inspector's item under every convention,
the explorer's statistics, intervals and flips, and one line on the pages that read sentence pairs only."""

from __future__ import annotations


import pytest

from tests.app.test_causal_pages import causal_env  # noqa: F401 (the fixture: the tiny GPT-2 as the sidebar's model)
from tests.support.app import markdown_texts, no_exceptions, run_app, tables, texts


def _conventions_table(at):
    return next(t for t in tables(at) if "Margin (biased − other group)" in t.columns)


def test_the_inspector_shows_a_bbq_item_under_every_convention(causal_env):
    at = run_app("inspector", {"dataset": "bbq", "pair": "7"})
    no_exceptions(at)
    assert not at.error, texts(at.error)
    assert at.selectbox(key="choices.item").value == 7
    table = _conventions_table(at)
    assert list(table["Convention"]) == ["lm-eval", "lm-eval-norm", "original"]
    choices = next(t for t in tables(at) if "Log-likelihood" in t.columns)
    assert len(choices) == 12 and "Offered by lm-eval" in choices.columns
    assert "Content warning" in texts(at.warning) and at.query_params.get("pair") == "7"
    assert any("Context:" in m for m in markdown_texts(at))


def test_a_typed_item_and_a_masked_model(app_env):
    at = run_app("inspector", {"dataset": "bbq"})
    at.segmented_control(key="choices.source").set_value("typed").run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    table = _conventions_table(at)  # the tiny BERT: PLL of each answer
    assert list(table["Convention"]) == ["lm-eval", "lm-eval-norm", "original"]
    at.text_input(key="choices.answer2").set_value("").run()  # no unknown phrasing left: lm-eval cannot put it, and says so
    no_exceptions(at)
    table = _conventions_table(at)
    assert "no answer is one of lm-eval's ten unknown phrasings" in set(table["Not put because"].dropna())


def test_the_explorer_scores_winogender_with_intervals_and_flips(causal_env):
    at = run_app("explorer", {"dataset": "winogender"})
    no_exceptions(at)
    assert not at.error, texts(at.error)
    at.button(key="choices.run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    assert [m.label for m in at.metric][:5] == ["acc", "acc_male", "acc_female", "acc_neutral", "acc_gotcha"]
    breakdown = next(t for t in tables(at) if "Pronoun gender" in t.columns)
    assert {"Accuracy", "Biased share"} <= set(breakdown.columns) and "(all)" in set(breakdown["Pronoun gender"])
    again = run_app("explorer", {"dataset": "winogender"})  # a new session: read back from the result cache, nothing to run
    no_exceptions(again)
    assert not [b for b in again.button if b.key == "choices.run"] and again.metric


def test_the_explorer_on_bbq_names_every_bias_score(causal_env):
    at = run_app("explorer", {"dataset": "bbq"})
    at.button(key="choices.run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    labels = [m.label for m in at.metric]
    assert labels[:5] == ["acc", "accuracy_amb", "accuracy_disamb", "amb_bias_score", "disamb_bias_score"] and len(labels) == 15
    breakdown = next(t for t in tables(at) if "Question polarity" in t.columns)
    assert {"Disamb. bias score", "Amb. bias score", "Accuracy 95% low"} <= set(breakdown.columns)


@pytest.mark.parametrize("page", ["analyses", "kurita", "lab", "leaderboard"])
def test_pages_that_read_pairs_say_so_in_one_line(causal_env, page):
    at = run_app(page, {"dataset": "bbq"})
    no_exceptions(at)
    shown = texts(at.error) + texts(at.info) + texts(at.warning)
    assert "Traceback" not in shown
    if "multiple-choice" in shown:
        assert "holds multiple-choice items, not sentence pairs" in shown


def test_the_comparison_of_two_models_on_bbq(causal_env, causal_dirs):
    """The models come from the page's own list (a link's `models`, or those picked for pairs): the multiple-choice view
    kept a list of its own, so a link's or the pairs' models were lost when the dataset was BBQ."""
    pythia = str(causal_dirs["pythia"])
    at = run_app("compare", {"dataset": "bbq", "models": [str(causal_env), pythia]})
    no_exceptions(at)
    at.button(key="choices.compare_run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    models = next(t for t in tables(at) if "Model" in t.columns and "Accuracy" in t.columns)
    assert len(models) == 2
    paired = next(t for t in tables(at) if "McNemar p" in t.columns)
    assert len(paired) == 1 and {"Accuracy difference", "Accuracy difference 95% low", "Disamb. bias score difference"} <= set(paired.columns)


@pytest.mark.parametrize("dataset", ["bbq", "winogender"])
def test_the_comparison_header_follows_the_dataset_kind(causal_env, dataset):
    """On a multiple-choice dataset the page's description speaks of items and statistics: it described pairs and a
    metric (the same pairs and metric), which BBQ and Winogender do not have."""
    at = run_app("compare", {"dataset": dataset})
    no_exceptions(at)
    about = at.caption[0].value
    assert "items" in about and "statistics" in about and "pairs" not in about
    assert "the same pairs and metric" in run_app("compare", {"dataset": "crows"}).caption[0].value


@pytest.mark.parametrize("dataset", ["bbq", "winogender"])
def test_the_inspector_header_follows_the_dataset_kind(causal_env, dataset):
    """The inspector's description spoke of a stereotypical sentence and its twin above a BBQ or Winogender item."""
    at = run_app("inspector", {"dataset": dataset})
    no_exceptions(at)
    assert "multiple-choice item" in at.caption[0].value and "twin" not in at.caption[0].value
    at.segmented_control(key="inspector.source").set_value("custom").run()  # your own sentences: a pair again
    assert "anti-stereotypical twin" in at.caption[0].value
    assert "anti-stereotypical twin" in run_app("inspector", {"dataset": "crows"}).caption[0].value


@pytest.mark.parametrize("dataset", ["bbq", "winogender"])
def test_the_explorer_header_follows_the_dataset_kind(causal_env, dataset):
    """The explorer's description spoke of "every pair behind them" above BBQ's and Winogender's items."""
    about = run_app("explorer", {"dataset": dataset}).caption[0].value
    assert "items" in about and "pair" not in about
    assert "every pair behind them" in run_app("explorer", {"dataset": "crows"}).caption[0].value

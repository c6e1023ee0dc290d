"""Issue 33 in the app (AppTest): the control pairs' score beside every bias score and mlm-bias's measures in the
explorer; rank stability and mlm-bias's relative bias in the comparison; each against the library run directly."""

from __future__ import annotations

import pytest

from tests.support.app import markdown_texts, no_exceptions, run_app, static_tables, tables, texts
from biaslens.analyses import controls, mlm_bias, stability
from biaslens.data.datasets import load_dataset
from biaslens.engine.evaluation import evaluate
from tests.support import FIXTURE_DATA

N = 12
LINK = {"sample": str(N), "metrics": ["aul", "cps"], "metric": "cps"}


def _sampled(tiny_bert):
    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    result = evaluate(tiny_bert, dataset, ["aul", "cps"], sample=N)
    by_id = {p.pair_id: p for p in dataset.pairs}
    return [by_id[i] for i in result.pairs["pair_id"]]


def test_the_explorer_shows_the_control_score_beside_each_bias_score(app_env, tiny_bert):
    at = run_app("explorer", LINK)
    at.button(key="explorer.run").click().run()
    no_exceptions(at)
    assert "Control pairs" in texts(at.subheader) and "control 5" not in texts(at.caption)
    at.button(key="trust.controls_run").click().run()
    no_exceptions(at)
    pairs = _sampled(tiny_bert)
    found = controls.control_pairs(pairs, seed=0)
    result = evaluate(tiny_bert, list(found.pairs), ["aul", "cps"])
    want = controls.control_scores(result, ["aul", "cps"]).set_index("metric")
    shown = next(t for t in static_tables(at) if "Control score" in t.columns).set_index("Metric")
    for key, name in (("aul", "AUL"), ("cps", "CPS")):
        assert float(shown.loc[name, "Control score"]) == pytest.approx(want.loc[key, "bias_score"], abs=0.006)
        # Beside the bias score on the metric's card, and in the scores table.
        assert f"control {want.loc[key, 'bias_score']:.1f} ({want.loc[key, 'ci_low']:.1f}–{want.loc[key, 'ci_high']:.1f})" in texts(at.caption)
    scores = next(t for t in static_tables(at) if "Metric" in t.columns and "Bias score" in t.columns and "Control bias score" in t.columns)
    assert list(scores["Metric"]) == ["AUL", "CPS"]


def test_the_explorer_computes_mlm_bias_measures_on_request(app_env, tiny_bert):
    at = run_app("explorer", LINK)
    at.button(key="explorer.run").click().run()
    at.button(key="trust.mlm_run").click().run()
    no_exceptions(at)
    want = mlm_bias.mlm_bias_scores(tiny_bert, _sampled(tiny_bert)).scores.set_index("name")
    shown = next(t for t in static_tables(at) if "Measure" in t.columns and "Bias type" not in t.columns).set_index("Measure")
    for name in ("CRR", "CRRA", "ΔP", "ΔPA"):
        assert float(shown.loc[name, "Bias score"]) == pytest.approx(want.loc[name, "bias_score"], abs=0.006)


def test_the_explorer_compares_a_masked_model_s_likelihood_metrics(app_env, tiny_bert):
    """A masked model's Scoring conventions: its likelihood metrics against each other (no tools), the headline between
    them, the pairs most contested first."""
    from biaslens.analyses.conventions import convention_sensitivity
    from biaslens.data.export import escape_markdown

    at = run_app("explorer", LINK)
    at.button(key="explorer.run").click().run()
    at.button(key="trust.conv_run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    want = convention_sensitivity(tiny_bert, _sampled(tiny_bert))
    assert f"**Convention sensitivity.** {escape_markdown(want.headline())}" in markdown_texts(at)
    assert "between AUL, CPS, PLL and PLL-word-l2r" in want.headline()
    assert not [t for t in tables(at) if "Against" in t.columns or "Pairs that change verdict" in t.columns]
    scores = next(t for t in tables(at) if "Scoring" in t.columns)
    assert scores["Scoring"].tolist() == ["AUL", "CPS", "PLL", "PLL-word-l2r"]
    listed = [t for t in tables(at) if "Scorings against its majority" in t.columns]
    assert (listed[0]["Pair"].tolist() if listed else []) == want.verdicts.loc[want.verdicts["flips"] > 0, "pair_id"].tolist()


def test_the_comparison_shows_rank_stability_and_relative_bias(app_env, model_dirs, tiny_models):
    link = {"models": [str(model_dirs["bert-cased"]), str(model_dirs["roberta"])], "metric": "aul", "sample": "10"}
    at = run_app("compare", link)
    at.button(key="compare.run").click().run()
    no_exceptions(at)
    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    results = {n: evaluate(tiny_models[n], dataset, ["aul"], sample=10) for n in ("bert-cased", "roberta")}
    want = stability.rank_stability_of(results, "aul", seed=0)
    ranks = next(t for t in static_tables(at) if "Rank (95% interval)" in t.columns).set_index("Model")
    for r in want.scores.to_dict(orient="records"):
        assert ranks.loc[r["model"], "Rank (95% interval)"] == stability.format_rank(r)
    above = next(t for t in static_tables(at) if "above roberta" in t.columns).set_index("Model")
    assert float(above.loc["bert-cased", "above roberta"]) == pytest.approx(want.probability("bert-cased", "roberta"), abs=6e-4)
    assert "resamples of the pairs" in texts(at.caption)
    at.button(key="trust.relative_run").click().run()
    no_exceptions(at)
    by_id = {p.pair_id: p for p in dataset.pairs}
    pairs = [by_id[i] for i in results["bert-cased"].pairs["pair_id"]]
    relative = mlm_bias.relative_bias(
        mlm_bias.mlm_bias_scores(tiny_models["bert-cased"], pairs), mlm_bias.mlm_bias_scores(tiny_models["roberta"], pairs)
    )
    published = relative[(relative["formula"] == "published") & (relative["bias_type"] == "")].set_index("name")["relative_bias"]
    shown = next(t for t in static_tables(at) if "Published" in t.columns).set_index("Measure")
    for name, value in published.items():
        assert float(shown.loc[name, "Published"]) == pytest.approx(value, abs=0.006)

"""The pair inspector's Anatomy view and the explorer's head ranking (ui/anatomy.py), with AppTest: the numbers the page
shows are `biaslens.anatomy`'s, the view is in the link, a causal model gets its own metric, and a head ranking stopped
half way resumes from the cache."""

from __future__ import annotations

import os

import pytest

from biaslens.anatomy.heads import rank_heads
from biaslens.anatomy.pair import anatomize
from biaslens.data.datasets import load_dataset
from tests.support import FIXTURE_DATA
from tests.support.app import html_of, no_exceptions, run_app, tables, texts

S = "inspector."


def _anatomy_tables(at):
    return [t for t in tables(at) if "Margin change" in t.columns]


def test_anatomy_view_shows_the_pairs_anatomy_and_is_in_the_link(app_env, tiny_bert):
    at = run_app(params={"pair": "0", "anatomy": "on"})
    no_exceptions(at)
    assert at.session_state[S + "anatomy"] is True
    assert at.query_params["anatomy"] == "on"
    pair = load_dataset("crows-pairs", data_dir=FIXTURE_DATA).pairs[0]
    want = anatomize(tiny_bert, pair.sent_stereo, pair.sent_anti, n_steps=64)
    page = html_of(at)
    assert 'class="bl-astrips"' in page  # the attribution strips
    assert "Completeness" in texts(at.caption) + texts(at.warning)
    assert f"{want.attribution.stereo.completeness_error:+.1e}" in texts(at.caption) + texts(at.warning)
    (heads,) = _anatomy_tables(at)
    first = want.heads.frame().iloc[0]
    assert (heads.iloc[0]["Layer"], heads.iloc[0]["Head"]) == (first["layer"], first["head"])
    assert heads.iloc[0]["Margin change"] == pytest.approx(first["margin_change"], abs=1e-5)
    assert len(at.get("vega_lite_chart")) >= 3  # the margin per layer, the lens, the heads
    assert "takes apart **AUL**" in texts(at.caption)


def test_anatomy_view_is_off_until_asked(app_env):
    at = run_app(params={"pair": "0"})
    no_exceptions(at)
    assert "anatomy" not in at.query_params and 'class="bl-astrips"' not in html_of(at)
    at.toggle(key=S + "anatomy").set_value(True).run()
    no_exceptions(at)
    assert at.query_params["anatomy"] == "on" and 'class="bl-astrips"' in html_of(at)


def test_anatomy_view_of_a_causal_model(app_env, causal_dirs, model_dirs, monkeypatch):
    monkeypatch.setenv("BIASLENS_MODEL", str(causal_dirs["gpt2"]))
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", os.pathsep.join([str(model_dirs["bert-cased"].parent), str(causal_dirs["gpt2"].parent)]))
    at = run_app(params={"pair": "0", "anatomy": "on", "metric": "ll"})
    no_exceptions(at)
    assert "takes apart **LL** (the metric in focus)" in texts(at.caption)
    assert _anatomy_tables(at)
    at.segmented_control(key=S + "metric").set_value("aul_c").run()  # the view follows the metric in focus
    no_exceptions(at)
    assert "takes apart **AUL-c** (the metric in focus)" in texts(at.caption)


def test_explorer_ranks_heads_and_a_second_ranking_reads_the_cache(app_env, tiny_bert):
    at = run_app("explorer", {"sample": "3"})
    at.button(key="explorer.run").click().run()
    no_exceptions(at)
    at.button(key="anatomy.rank").click().run()
    no_exceptions(at)
    (ranking,) = [t for t in tables(at) if "Bias score change" in t.columns]
    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    by_id = {p.pair_id: p for p in dataset.pairs}
    run = at.session_state["anatomy.rankings"]
    (job,) = run.keys()
    want = rank_heads(tiny_bert, [by_id[i] for i in job[-1]]).frame()
    assert len(ranking) == len(want) == tiny_bert.num_layers * tiny_bert.num_heads
    assert ranking.iloc[0]["Mean margin change"] == pytest.approx(want.iloc[0]["mean_margin_change"], abs=1e-5)
    assert "(0 read from the cache)" in texts(at.caption)
    again = run_app("explorer", {"sample": "3"})  # a new session (its run is the server's, shared): every pair from the cache
    again.button(key="anatomy.rank").click().run()
    no_exceptions(again)
    assert "(3 read from the cache)" in texts(again.caption)

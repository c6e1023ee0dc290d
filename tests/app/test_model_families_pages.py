"""The pages with a model that cannot give AULA (a tiny FNet: no attention weights): they say why and score the rest."""

import pytest

from tests.support.app import no_exceptions, run_app, static_tables, tables, texts
from tests.support.fnet import build_fnet


@pytest.fixture(scope="module")
def fnet(tmp_path_factory):
    return build_fnet(tmp_path_factory.mktemp("fnet") / "fnet"), None


def test_the_app_shows_why_aula_is_off_and_scores_the_rest(fnet, app_env, monkeypatch):
    folder, _ = fnet
    monkeypatch.setenv("BIASLENS_MODEL", str(folder))
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", str(folder.parent))
    at = run_app()  # the inspector on CrowS-Pairs pair 0
    no_exceptions(at)
    notes = texts(at.info)
    assert "AULA left out" in notes and "no attention weights" in notes
    table = next(t for t in tables(at) if "Margin (stereo − anti)" in t.columns)
    assert list(table["Metric"]) == ["AUL", "CPS", "SSS", "All Masked"]
    at = run_app("explorer", {"sample": "5", "metrics": ["aul", "aula"]})  # a link that asks for AULA
    no_exceptions(at)
    assert "AULA left out" in texts(at.info)
    at.button(key="explorer.run").click().run()
    no_exceptions(at)
    assert not at.error, texts(at.error)
    assert [m.label for m in at.metric] == ["AUL bias score"]  # the run scored AUL; AULA was left out
    scored = [set(t["Metric"]) for t in static_tables(at) if "Metric" in t.columns]
    assert scored and all(metrics == {"AUL"} for metrics in scored)


def test_comparing_aula_with_a_model_without_attention_weights_says_why(fnet, app_env, model_dirs, monkeypatch):
    import os

    folder, _ = fnet
    monkeypatch.setenv("BIASLENS_MODEL_DIRS", os.pathsep.join([str(model_dirs["bert-cased"].parent), str(folder.parent)]))
    at = run_app("compare", {"models": [str(model_dirs["bert-cased"]), str(folder)], "metric": "aula", "sample": "5"})
    no_exceptions(at)
    at.button(key="compare.run").click().run()
    no_exceptions(at)
    shown = texts(at.error) + texts(at.warning) + texts(at.info)
    assert "AULA cannot be computed for this model" in shown and "no attention weights" in shown

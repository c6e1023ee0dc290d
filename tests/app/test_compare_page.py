"""Model comparison with AppTest: two tiny models on the same pairs and metric."""

from __future__ import annotations

from tests.support.app import no_exceptions, run_app, texts
from biaslens import explore
from biaslens.datasets import load_dataset
from biaslens.evaluation import evaluate
from tests.support import FIXTURE_DATA


S = "compare."


def link(model_dirs, *extra):
    return {"models": [str(model_dirs["bert-cased"]), str(model_dirs["roberta"]), *extra], "metric": "aul", "sample": "10"}


def test_two_models_side_by_side(app_env, model_dirs, tiny_models):
    at = run_app("compare", link(model_dirs))
    no_exceptions(at)
    assert "Not scored yet with AUL on 10 pairs" in texts(at.info)
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    assert "Not scored yet" not in texts(at.info)  # the notice goes once the runs are done

    dataset = load_dataset("crows-pairs", data_dir=FIXTURE_DATA)
    results = {
        name: evaluate(tiny_models[family], dataset, ["aul"], sample=10) for name, family in (("bert-cased", "bert-cased"), ("roberta", "roberta"))
    }
    want = explore.compare_models(results, "aul")
    scores = next(d.value for d in at.dataframe if "model" in d.value.columns)
    assert scores["model"].tolist() == ["bert-cased", "roberta"]  # folders shown by their names
    assert scores["bias_score"].tolist() == want.scores["bias_score"].tolist()
    assert f"Pairs whose verdict flips ({len(want.flips)} of 10)" in texts(at.subheader)
    if len(want.flips):
        flips = next(d.value for d in at.dataframe if "verdict (roberta)" in d.value.columns)
        assert flips["pair_id"].tolist() == want.flips["pair_id"].tolist()
    by_type = next(d.value for d in at.dataframe if "bias_type" in d.value.columns and "roberta − bert-cased" in d.value.columns)
    assert (by_type["roberta − bert-cased"] == by_type["roberta"] - by_type["bert-cased"]).all()
    assert len(at.get("vega_lite_chart")) == 3  # scores, per type, margins scatter
    assert at.query_params["models"] == link(model_dirs)["models"]


def test_fewer_than_two_models(app_env):
    at = run_app("compare")
    no_exceptions(at)
    assert "Choose at least two models" in texts(at.info)


def test_a_model_that_fails_to_load_is_reported(app_env, model_dirs):
    missing = model_dirs["bert-cased"].parent / "no-such-model"  # inside the folders the app may load from
    at = run_app("compare", {"models": [str(model_dirs["bert-cased"]), str(missing)], "metric": "aul", "sample": "10"})
    no_exceptions(at)
    assert f"Model folder {missing} does not exist" in texts(at.error)
    at.button(key=S + "run").click().run()  # scores the model that did load
    no_exceptions(at)
    assert "Fewer than two of the chosen models could be loaded" in texts(at.warning)

"""The app with the newer pieces: the paired test on the Model comparison page, new datasets in the sidebar."""

from __future__ import annotations

from app_support import app_env, no_exceptions, run_app, texts  # noqa: F401
from biaslens import paired
from biaslens.datasets import DATASETS, load_dataset
from biaslens.evaluation import evaluate

S = "compare."


def test_compare_page_shows_the_paired_test(app_env, model_dirs, tiny_models):
    link = {"models": [str(model_dirs["bert-cased"]), str(model_dirs["roberta"])], "metric": "aul", "sample": "20"}
    at = run_app("compare", link)
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    assert "Paired test" in texts(at.subheader)
    dataset = load_dataset("crows-pairs", data_dir=app_env["BIASLENS_DATA_DIR"])
    first = evaluate(tiny_models["bert-cased"], dataset, ["aul"], sample=20)
    second = evaluate(tiny_models["roberta"], dataset, ["aul"], sample=20)
    want = paired.paired_comparison(first, second, ["aul"])
    shown = next(d.value for d in at.dataframe if "mcnemar_b" in d.value.columns)
    assert shown["models"].tolist() == ["roberta − bert-cased"]
    assert shown["difference"].tolist() == want["difference"].tolist()
    assert shown["p_value"].tolist() == want["p_value"].tolist()
    assert (shown["ci_low"].iloc[0], shown["ci_high"].iloc[0]) == (want["ci_low"].iloc[0], want["ci_high"].iloc[0])


def test_sidebar_offers_the_new_datasets(app_env):
    at = run_app("explorer")
    no_exceptions(at)
    options = at.selectbox(key="settings.dataset").options
    for key in ("crows-pairs-revised", "crows-pairs-revised-210", "crows-pairs-fr", "crows-pairs-ja", "crows-pairs-ru", "winoqueer"):
        assert DATASETS[key].title in options

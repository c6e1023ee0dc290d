"""Model comparison with AppTest: two tiny models on the same pairs and metric."""

from __future__ import annotations

import json

import pytest

from tests.support.app import interactive_tables, no_exceptions, run_app, tables, texts
from biaslens.analyses import explore
from biaslens.data.datasets import load_dataset
from biaslens.engine.evaluation import evaluate
from biaslens.engine.stats import MCNEMAR_TEST
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
    scores = next(t for t in tables(at) if "Model" in t.columns and "Bias score" in t.columns)
    assert scores["Model"].tolist() == ["bert-cased", "roberta"]  # folders shown by their names
    assert scores["Bias score"].tolist() == want.scores["bias_score"].tolist()
    assert f"Pairs whose verdict flips ({len(want.flips)} of 10)" in texts(at.subheader)
    # The paired test's caption names the interval and the test that ran.
    assert "95% percentile bootstrap, paired" in texts(at.caption) and "2,000 resamples, seed " in texts(at.caption)
    assert f"p: {MCNEMAR_TEST}, on the verdicts" in texts(at.caption)
    # Each model's bias score under the model's name, never "Other model" (issue 30, item 8).
    test = next(t for t in tables(at) if "McNemar p" in t.columns)
    assert {"bert-cased", "roberta", "Only roberta prefers stereo"} <= set(test.columns) and "Other model" not in test.columns
    assert test["roberta"].tolist() == pytest.approx([want.scores["bias_score"].iloc[1]])
    if len(want.flips):
        flips = next(t for t in interactive_tables(at) if "Prefers (roberta)" in t.columns)
        assert flips["Pair"].tolist() == want.flips["pair_id"].tolist()
        assert list(flips.columns[:3]) == ["Pair", "Margin (bert-cased)", "Margin (roberta)"]  # the results first, pinned
        # Both models' margins with one number of decimals (issue 30, item 7: 5 beside 6).
        element = next(d for d in at.dataframe if any(str(c).startswith("margin (") for c in d.value.columns))
        config = json.loads(element.proto.columns)
        formats = {config[c]["type_config"]["format"] for c in element.value.columns if str(c).startswith("margin (")}
        assert len(formats) == 1, formats
    by_type = next(t for t in tables(at) if "Bias type" in t.columns and "roberta − bert-cased" in t.columns)
    assert (by_type["roberta − bert-cased"] == by_type["roberta"] - by_type["bert-cased"]).all()
    assert len(at.get("vega_lite_chart")) == 3  # scores, per type, margins scatter
    assert at.query_params["models"] == link(model_dirs)["models"]


def test_a_second_model_comes_from_the_page(app_env, model_dirs):
    """Issue 21, journey 2: the list offers the server's model folders; a model added on the page stays (the URL's one
    model, written by the page itself, was read back as a link's on every rerun and replaced the choice). A typed folder
    is walked in Chromium (tests/browser/test_journeys.py): AppTest sends a new option's label, not what was typed."""
    bert, roberta = str(model_dirs["bert-cased"]), str(model_dirs["roberta"])
    at = run_app("compare", {"metric": "aul", "sample": "10"})
    box = at.multiselect(key=S + "models")
    assert box.value == [bert] and {"roberta (folder)", "albert (folder)"} <= set(box.options)
    box.set_value([bert, roberta]).run()
    at.run()  # any rerun: the choice stays
    no_exceptions(at)
    assert at.multiselect(key=S + "models").value == [bert, roberta] and at.query_params["models"] == [bert, roberta]
    assert "Not scored yet with AUL on 10 pairs: bert-cased, roberta." in texts(at.info)
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    scores = next(t for t in tables(at) if "Model" in t.columns and "Bias score" in t.columns)
    assert scores["Model"].tolist() == ["bert-cased", "roberta"]


def test_fewer_than_two_models(app_env):
    at = run_app("compare")
    no_exceptions(at)
    assert "Choose at least two models" in texts(at.info)


def test_a_model_that_fails_to_load_is_reported(app_env, model_dirs):
    missing = model_dirs["bert-cased"].parent / "no-such-model"  # inside the folders the app may load from
    at = run_app("compare", {"models": [str(model_dirs["bert-cased"]), str(missing)], "metric": "aul", "sample": "10"})
    no_exceptions(at)
    assert f"Model folder {missing} does not exist" in texts(at.error)
    assert "Fewer than two of the chosen models could be loaded" in texts(at.info)  # the one that loaded is not scored alone
    assert not [b for b in at.button if b.key == S + "run"]


# ---------------------------------------------------------------------------------------
# One model, many spellings; a comparison within the server's caps (issue 36, items 2-4)
# ---------------------------------------------------------------------------------------


def _spellings(folder, n: int) -> list[str]:
    """`n` names of one folder: `M/./bert-cased`, `M/././bert-cased`, …, a trailing slash, a `..` detour."""
    parent, name = str(folder.parent), folder.name
    out = [str(folder), f"{folder}/", f"{parent}/../{folder.parent.name}/{name}"]
    out += [parent + "/." * k + "/" + name for k in range(1, n)]
    return out[:n]


def test_twenty_spellings_of_one_folder_load_one_model(app_env, model_dirs, monkeypatch):
    import ui.resources

    monkeypatch.setenv("BIASLENS_MAX_MODELS", "2")
    ui.resources.MODELS.clear()
    ui.resources.MODELS.peak = 0
    names = [*_spellings(model_dirs["bert-cased"], 20), str(model_dirs["roberta"])]
    at = run_app("compare", {"models": names, "metric": "aul", "sample": "4"})
    no_exceptions(at)
    assert "The same model named twice, compared once" in texts(at.caption)
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    scores = next(t for t in tables(at) if "Model" in t.columns and "Bias score" in t.columns)
    assert scores["Model"].tolist() == ["bert-cased", "roberta"]
    assert ui.resources.MODELS.peak <= 2  # never more than BIASLENS_MAX_MODELS held by the pool at once
    loaded = {key[0] for key in ui.resources.MODELS.keys()}
    assert len(loaded) == len(ui.resources.MODELS.keys()) <= 2
    assert all(identity.name == str(model_dirs["bert-cased"].resolve()) or "roberta" in identity.name for identity in loaded)


def test_more_models_than_the_pool_keeps_are_compared_one_at_a_time(app_env, model_dirs, monkeypatch):
    import ui.resources

    monkeypatch.setenv("BIASLENS_MAX_MODELS", "1")
    ui.resources.MODELS.clear()
    ui.resources.MODELS.peak = 0
    at = run_app("compare", link(model_dirs, str(model_dirs["albert"])) | {"sample": "3"})
    at.button(key=S + "run").click().run()
    no_exceptions(at)
    scores = next(t for t in tables(at) if "Model" in t.columns and "Bias score" in t.columns)
    assert scores["Model"].tolist() == ["bert-cased", "roberta", "albert"]
    assert ui.resources.MODELS.peak == 1


def test_a_comparison_may_name_at_most_the_server_s_number_of_models(app_env, model_dirs, monkeypatch):
    monkeypatch.setenv("BIASLENS_MAX_COMPARE_MODELS", "2")
    at = run_app("compare", link(model_dirs, str(model_dirs["albert"])))
    no_exceptions(at)
    assert "names 3 different models; this server compares at most 2 at once (BIASLENS_MAX_COMPARE_MODELS)" in texts(at.error)
    assert not [b for b in at.button if b.key == S + "run"]


def test_a_link_repeating_a_model_a_thousand_times_draws_it_once_and_says_so(app_env, model_dirs):
    bert, roberta = str(model_dirs["bert-cased"]), str(model_dirs["roberta"])
    at = run_app("compare", {"models": [bert] * 990 + [roberta, roberta], "metric": "aul", "sample": "4"})  # (Streamlit reads 1,000 at most)
    no_exceptions(at)
    assert at.multiselect(key=S + "models").value == [bert, roberta]  # 992 chips before
    assert "expected each value once (990 repeats left out)" in texts(at.warning)
    assert at.query_params["models"] == [bert, roberta]


def test_the_same_model_twice_is_one_model(app_env, model_dirs):
    tiny = str(model_dirs["bert-cased"])
    at = run_app("compare", {"models": [tiny, tiny + "/"], "metric": "aul", "sample": "4"})
    no_exceptions(at)
    assert "These names are one model" in texts(at.info)
    at = run_app("compare", {"models": [tiny, tiny], "metric": "aul", "sample": "4"})  # the link's repeat: left out and said
    no_exceptions(at)
    assert "expected each value once (1 repeat left out)" in texts(at.warning) and "Choose at least two models" in texts(at.info)
    at = run_app("compare", {"models": [tiny, tiny + "/", str(model_dirs["roberta"])], "metric": "aul", "sample": "4"})
    at.button(key=S + "run").click().run()  # (a Stop button per spelling had the same key: StreamlitDuplicateElementKey)
    no_exceptions(at)
    scores = next(t for t in tables(at) if "Model" in t.columns and "Bias score" in t.columns)
    assert len(scores) == 2


def test_two_models_not_on_this_machine_offer_the_lab_model_once(app_env, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as on a machine without network
    at = run_app("compare", {"models": ["bert-base-cased", "roberta-base"]})
    no_exceptions(at)
    assert [b.label for b in at.main.button].count("Use the offline lab model") == 1
    assert texts(at.info).count("is not on this machine") == 2


def test_a_comparison_is_capped_as_a_whole(app_env, model_dirs, monkeypatch):
    monkeypatch.setenv("BIASLENS_MAX_RUN_SCORES", "12")  # one model's 10 pairs fit, two models' 20 do not
    at = run_app("compare", link(model_dirs))
    no_exceptions(at)
    assert "This comparison needs 2 models × 10 pairs × 1 metric = 20 scores" in texts(at.error)
    assert not [b for b in at.button if b.key == S + "run"]

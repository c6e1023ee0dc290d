"""The leaderboard with AppTest: a results store filled by the zoo's jobs (tiny models, run in this process) and a
synthetic one (many made-up models of every family and size); a cell opens the stored run in the explorer."""

from __future__ import annotations

import pytest

from biaslens.data.datasets import load_dataset
from biaslens.zoo.store import ResultsStore
from tests.support import FIXTURE_DATA
from tests.support.app import interactive_tables, no_exceptions, run_app, static_tables, texts
from tests.support.zoo import filled_store

S = "leaderboard."


@pytest.fixture(scope="module")
def stores(tmp_path_factory, model_dirs, causal_dirs):
    """A folder holding a real store (two tiny models × two datasets × AUL, CPS), a synthetic one (40 made-up models) and
    one of BBQ beside CrowS-Pairs (a causal and a masked model)."""
    from biaslens.zoo.testing import synthetic_store

    root = tmp_path_factory.mktemp("stores")
    models = [{"id": str(model_dirs["bert-cased"])}, {"id": str(model_dirs["roberta"])}]
    filled_store(root, models, store="real", datasets=["crows-pairs", "stereoset"], metrics=["aul", "cps"])
    synthetic_store(root / "synthetic", [load_dataset("crows-pairs", data_dir=FIXTURE_DATA)], models=40, metrics=("aul",))
    _mixed_store(root / "mixed")
    models = [{"id": str(causal_dirs["gpt2"]), "choice_conventions": ["lm-eval", "original"]}, {"id": str(model_dirs["bert-cased"])}]
    filled_store(root, models, store="choices", datasets=["bbq-age", "crows-pairs"], metrics=["aul"])
    return root


def _mixed_store(root):
    """Two datasets labelled "data", each scored by one model, and a third model's cell cut off."""
    from biaslens.zoo.testing import synthetic_about, synthetic_cell
    from tests.support.zoo import made_up

    crows, stereoset = (load_dataset(n, data_dir=FIXTURE_DATA) for n in ("crows-pairs", "stereoset"))
    store = ResultsStore(root, create=True)
    for i, dataset in enumerate((crows, stereoset, crows)):
        store.put_dataset(dataset)
        key = synthetic_cell(store, dataset, synthetic_about(i, "bert", 10**8), "aul", made_up(dataset, 2 + i), label="data")
    path = root / "cells" / key[:2] / f"{key}.json"
    path.write_bytes(path.read_bytes()[:100])


@pytest.fixture
def env(app_env, monkeypatch, stores):
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(stores))
    return app_env


def _param(at, name: str) -> list[str]:
    value = at.query_params[name]
    return value if isinstance(value, list) else [value]


def _board(at):
    return next(t for t in interactive_tables(at) if "Model" in t.columns and "Family" in t.columns)


def test_the_leaderboard_of_a_store(env, stores):
    store = ResultsStore(stores / "real")
    at = run_app("leaderboard", {"store": str(stores / "real")})
    no_exceptions(at)
    assert at.title[0].value == "Leaderboard"
    board = _board(at)
    assert sorted(board["Model"]) == ["bert-cased", "roberta"]
    assert list(board.columns[:5]) == ["Model", "Sanity check", "Family", "Kind", "Size"]
    assert list(board.columns[5:]) == ["crows-pairs · AUL", "crows-pairs · CPS", "stereoset · AUL", "stereoset · CPS"]
    # the suite's tiny models have random weights: said beside each name, and above the table
    assert list(board["Sanity check"]) == ["looks untrained", "looks untrained"]
    assert "2 models look untrained (" in texts(at.warning) and "bias scores mean nothing" in texts(at.warning)
    summaries = store.summaries()
    for model, cell in zip(board["Model"], board["crows-pairs · AUL"]):
        row = summaries[(summaries["model_label"] == model) & (summaries["dataset"] == "crows-pairs") & (summaries["metric"] == "aul")].iloc[0]
        assert cell == f"{row['bias_score']:5.1f} [{row['ci_low']:.1f}, {row['ci_high']:.1f}]"
    assert "2 models · 4 columns · float32 · default" in texts(at.caption)
    assert _param(at, "store") == [str(stores / "real")]


def test_sorting_and_filters(env, stores):
    at = run_app("leaderboard", {"store": str(stores / "synthetic"), "sort": "crows-pairs · AUL", "order": "highest"})
    no_exceptions(at)
    board = _board(at)
    assert len(board) == 40 and set(board["Family"]) == {"bert", "roberta", "albert", "gpt2", "pythia", "llama"}
    assert set(board["Sanity check"]) == {"not checked"} and "models look untrained" not in texts(at.warning)  # made up: no verdicts
    scores = [float(c.split()[0]) for c in board["crows-pairs · AUL"]]
    assert scores == sorted(scores, reverse=True)
    at.multiselect(key=S + "kinds").set_value(["causal"]).run()
    board = _board(at)
    assert set(board["Kind"]) == {"causal"} and set(board["Family"]) == {"gpt2", "pythia", "llama"}
    at.multiselect(key=S + "families").set_value(["gpt2"]).run()
    assert set(_board(at)["Family"]) == {"gpt2"}
    assert _param(at, "families") == ["gpt2"] and _param(at, "kinds") == ["causal"]
    at.segmented_control(key=S + "order").set_value("closest").run()
    distances = [abs(float(c.split()[0]) - 50) for c in _board(at)["crows-pairs · AUL"]]
    assert distances == sorted(distances)


def test_a_bias_type_restricts_every_score(env, stores):
    store = ResultsStore(stores / "real")
    at = run_app("leaderboard", {"store": str(stores / "real"), "bias_type": "gender"})
    no_exceptions(at)
    assert "scores over the gender pairs only" in texts(at.caption)
    types = store.type_summaries().merge(store.summaries()[["key", "model_label", "dataset", "metric"]], on="key")
    board = _board(at)
    for model, cell in zip(board["Model"], board["crows-pairs · CPS"]):
        row = types[
            (types["model_label"] == model) & (types["dataset"] == "crows-pairs") & (types["metric"] == "cps") & (types["bias_type"] == "gender")
        ]
        assert cell.startswith(f"{row['bias_score'].iloc[0]:5.1f} [")


def test_a_cell_opens_the_stored_run_in_the_explorer(env, stores, tiny_models):
    from biaslens import evaluate

    at = run_app("leaderboard", {"store": str(stores / "real"), "sort": "crows-pairs · CPS"})
    board = _board(at)
    row = list(board["Model"]).index("roberta")
    table = next(d for d in at.dataframe if "crows-pairs · CPS" in d.value.columns)
    at.session_state[table.key] = {"selection": {"rows": [], "columns": [], "cells": [(row, "crows-pairs · CPS")]}}
    at.run()
    no_exceptions(at)
    assert at.title[0].value == "Dataset explorer"
    assert "A stored run: roberta on crows-pairs" in texts(at.info) and "Nothing is scored" in texts(at.info)
    expected = evaluate(tiny_models["roberta"], load_dataset("crows-pairs", data_dir=FIXTURE_DATA), ["aul", "cps"])
    cards = {m.label: m.value for m in at.metric}
    assert cards["CPS bias score"] == f"{expected.summary['metrics']['cps']['bias_score']:.1f}"
    assert cards["AUL bias score"] == f"{expected.summary['metrics']['aul']['bias_score']:.1f}"
    assert at.session_state["explorer.focus"] == "cps"
    assert _param(at, "result") and _param(at, "store") == [str(stores / "real")]
    at.switch_page("pages/explorer.py").run()  # back on the explorer later: still the stored run
    assert "A stored run" in texts(at.info)
    pairs = next(d for d in at.dataframe if "sent_stereo" in d.value.columns)
    at.session_state[pairs.key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    no_exceptions(at)
    assert at.title[0].value == "Pair inspector"  # under the stored run's model, on its dataset
    assert at.session_state["settings.model"] == str(tiny_models["roberta"].name)
    at.switch_page("pages/explorer.py").run()
    at.button(key="explorer.leave_stored").click().run()
    assert "A stored run" not in texts(at.info)


def test_a_synthetic_store_s_cell_opens_in_the_explorer(env, stores):
    """Its manifest has no device or dtype (as the benchmark's store): the explorer shows the run, no exception."""
    at = run_app("leaderboard", {"store": str(stores / "synthetic"), "sort": "crows-pairs · AUL"})
    table = next(d for d in at.dataframe if "crows-pairs · AUL" in d.value.columns)
    at.session_state[table.key] = {"selection": {"rows": [], "columns": [], "cells": [(0, "crows-pairs · AUL")]}}
    at.run()
    no_exceptions(at)
    assert at.title[0].value == "Dataset explorer" and "A stored run" in texts(at.info)
    assert "16 of 16 pairs" in texts(at.caption) and "AUL bias score" in {m.label for m in at.metric}


def test_damaged_cells_and_datasets_labelled_alike_are_said(env, stores):
    at = run_app("leaderboard", {"store": str(stores / "mixed")})
    no_exceptions(at)
    board = _board(at)
    crows, stereoset = (load_dataset(n, data_dir=FIXTURE_DATA) for n in ("crows-pairs", "stereoset"))
    assert sorted(board.columns[5:]) == sorted([f"data [{crows.sha256[:8]}] · AUL", f"data [{stereoset.sha256[:8]}] · AUL"])
    assert "2 different datasets are labelled 'data'" in texts(at.caption)
    assert "Damaged cell" in texts(at.warning) and "left out: its file is not whole JSON" in texts(at.warning)
    assert sorted(board["Model"]) == ["bert-000", "bert-001"]  # the third's only cell is damaged


def test_two_rows_compared_and_rank_intervals(env, stores):
    at = run_app("leaderboard", {"store": str(stores / "real")})
    table = next(d for d in at.dataframe if "crows-pairs · AUL" in d.value.columns)
    at.session_state[table.key] = {"selection": {"rows": [0, 1], "columns": [], "cells": []}}
    at.run()
    no_exceptions(at)
    names = list(_board(at)["Model"])
    assert f"{names[1]} − {names[0]}, pair by pair" in texts(at.subheader)
    paired = next(t for t in static_tables(at) if "McNemar p" in t.columns)
    assert len(paired) == 4 and set(paired["Dataset"]) == {"crows-pairs", "stereoset"}
    assert "95% percentile bootstrap, paired" in texts(at.caption)
    at.button(key=S + "ranks").click().run()
    no_exceptions(at)
    ranks = next(t for t in static_tables(at) if "95% rank interval" in t.columns)
    assert sorted(ranks["Model"]) == ["bert-cased", "roberta"] and set(ranks["Rank"]) <= {1, 2}


def test_a_store_outside_the_allowed_folders_or_not_a_store(app_env, stores, tmp_path):
    at = run_app("leaderboard", {"store": str(stores / "real")})
    no_exceptions(at)
    assert "outside the folders this server may read" in texts(at.error)
    assert not at.dataframe
    at = run_app("leaderboard", {"store": str(FIXTURE_DATA)})
    assert "is not a biaslens results store" in texts(at.error)
    at = run_app("leaderboard")
    assert "Name a results store" in texts(at.info)


def test_a_hostile_label_renders_as_text(app_env, monkeypatch, model_dirs, tmp_path):
    """A plan's label is text a user wrote: in the table, the comparison's headings and the explorer's note, never markup."""
    from tests.support.app import live_markup, markdown_texts

    label = "[Session expired](http://evil.example/login) :red[boom] **x**"
    models = [{"id": str(model_dirs["bert-cased"]), "label": label}, {"id": str(model_dirs["albert"])}]
    plan = filled_store(tmp_path, models, store="store", datasets=["crows-pairs"], metrics=["aul"])
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path))
    at = run_app("leaderboard", {"store": str(plan.store)})
    table = next(d for d in at.dataframe if "crows-pairs · AUL" in d.value.columns)
    assert label in list(_board(at)["Model"])
    at.session_state[table.key] = {"selection": {"rows": [0, 1], "columns": [], "cells": []}}
    at.run()
    no_exceptions(at)
    assert "pair by pair" in texts(at.subheader) and live_markup(markdown_texts(at)) == []
    row = list(_board(at)["Model"]).index(label)
    table = next(d for d in at.dataframe if "crows-pairs · AUL" in d.value.columns)
    at.session_state[table.key] = {"selection": {"rows": [], "columns": [], "cells": [(row, "crows-pairs · AUL")]}}
    at.run()
    no_exceptions(at)
    assert "A stored run" in texts(at.info) and live_markup(markdown_texts(at)) == []


def test_models_that_failed_to_load_are_named_and_one_model_under_two_names_shows_both(app_env, monkeypatch, tmp_path):
    """The leaderboard left out a model that failed to load without a word: it names it, with its error (escaped: a
    label is a user's text). A model a plan named twice (the same weights) is one row under both names."""
    from biaslens.zoo.testing import synthetic_store

    store = synthetic_store(tmp_path / "store", [load_dataset("crows-pairs", data_dir=FIXTURE_DATA)], models=3, metrics=("aul",))
    store.put_failure("f" * 32, {"id": "models/broken", "label": "broken *model*", "error": "no weights: model.safetensors is missing"})
    store.put_label("synthetic:0", None, "bert-000", "synthetic/bert-000")
    store.put_label("synthetic:0", None, "bert copy", "models/bert-copy")
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path))
    at = run_app("leaderboard", {"store": str(tmp_path / "store")})
    no_exceptions(at)
    assert sorted(_board(at)["Model"]) == ["albert-002", "bert-000 (= bert copy)", "roberta-001"]
    warning = texts(at.warning)
    assert "Not on the leaderboard: 1 model that failed to load: broken \\*model\\* (no weights: model.safetensors is missing)" in warning


def test_a_board_of_one_model_says_one_and_draws_no_empty_rows(env, stores, monkeypatch):
    """Issue 40 item 12: one to three models drew ~14 empty grid rows under them and said "1 models"."""
    import streamlit as st

    heights: list[int] = []
    real = st.dataframe
    monkeypatch.setattr(st, "dataframe", lambda *a, **k: heights.append(k.get("height")) or real(*a, **k))
    at = run_app("leaderboard", {"store": str(stores / "real"), "families": "bert"})
    no_exceptions(at)
    assert len(_board(at)) == 1 and "1 model · 4 columns" in texts(at.caption)
    assert heights and 0 < heights[0] < 200, heights  # its header and one row (and the scroll bar), not 560 px of grid


def test_rank_intervals_of_one_model_are_not_offered(env, stores):
    """A column only one shown model has gave "The 1 model shown are ranked again ..." and a button ranking it alone."""
    at = run_app("leaderboard", {"store": str(stores / "real"), "families": "bert"})
    no_exceptions(at)
    assert not [b for b in at.button if b.key == S + "ranks"]
    assert "Rank intervals compare models: one model shown has crows-pairs · AUL." in texts(at.caption)


def test_bbq_statistics_are_columns_of_their_own(env, stores):
    store = ResultsStore(stores / "choices")
    at = run_app("leaderboard", {"store": str(stores / "choices")})
    no_exceptions(at)
    board = _board(at)
    assert sorted(board["Model"]) == ["bert-cased", "gpt2"]
    assert list(board.columns[5:]) == [
        "bbq-age · acc",
        "bbq-age · accuracy_amb",
        "bbq-age · accuracy_disamb",
        "bbq-age · amb_bias_score",
        "bbq-age · disamb_bias_score",
        "crows-pairs · AUL",
        "crows-pairs · AUL-c",
    ]
    summaries = store.summaries()
    for model, cell in zip(board["Model"], board["bbq-age · acc"]):
        row = summaries[(summaries["model_label"] == model) & (summaries["metric"] == "acc") & (summaries["convention"] == "lm-eval")].iloc[0]
        assert cell == f"{row['bias_score']:7.3f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"  # a fraction, with its Wilson interval
    assert "· BBQ / Winogender: lm-eval" in texts(at.caption)
    # the masked model scored BBQ under lm-eval only; the choice convention is a filter of its own
    at.selectbox(key=S + "choice_convention").set_value("original").run()
    no_exceptions(at)
    board = _board(at)
    assert list(board.loc[board["Model"] == "bert-cased", "bbq-age · acc"]) == [""]
    assert "· BBQ / Winogender: original" in texts(at.caption)
    # sorted by a bias score: closest to 0 first
    at.selectbox(key=S + "sort").set_value("bbq-age · amb_bias_score").run()
    assert at.segmented_control(key=S + "order").options[0] == "closest to 0 first"
    # the rank intervals resample pairs: only the pair columns are offered
    assert "bbq-age · acc" not in at.selectbox(key=S + "rank_column").options

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
def stores(tmp_path_factory, model_dirs):
    """A folder holding a real store (two tiny models × two datasets × AUL, CPS) and a synthetic one (40 made-up models)."""
    from biaslens.zoo.testing import synthetic_store

    root = tmp_path_factory.mktemp("stores")
    models = [{"id": str(model_dirs["bert-cased"])}, {"id": str(model_dirs["roberta"])}]
    filled_store(root, models, store="real", datasets=["crows-pairs", "stereoset"], metrics=["aul", "cps"])
    synthetic_store(root / "synthetic", [load_dataset("crows-pairs", data_dir=FIXTURE_DATA)], models=40, metrics=("aul",))
    return root


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
    assert list(board.columns[4:]) == ["crows-pairs · AUL", "crows-pairs · CPS", "stereoset · AUL", "stereoset · CPS"]
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

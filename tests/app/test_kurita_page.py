"""The Kurita templates page with AppTest: template scores, the WEAT-style tests, attribute lists."""

from __future__ import annotations

import urllib.error

import numpy as np
import pytest

from tests.support import app as app_support
from tests.support.app import no_exceptions, run_app, tables, texts
from biaslens.data import datafiles
from biaslens.kurita import ALPHA, KURITA_CATEGORIES, kurita_weat_spec, score_templates, weat_test
from biaslens.data.weat import load_weat
from tests.support import FIXTURE_DATA


app_support.PAGES.setdefault("kurita", "pages/kurita.py")
S = "kurita."


def frame_with(at, column):
    """An interactive table (sortable) by one of its frame's columns."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def shown_with(at, header):
    """A table as shown (static or interactive) by one of its headers."""
    return next(t for t in tables(at) if header in t.columns)


def click(at, label):
    next(b for b in at.button if b.label == label).click().run()
    no_exceptions(at)
    return at


def test_template_scores_match_the_engine(app_env, tiny_bert):
    at = run_app("kurita")
    no_exceptions(at)
    assert "press **Score**" in texts(at.info)
    at.text_area(key=S + "templates").set_value("[T] is a [A].\n[T] likes [A]. | he, she")
    at.text_area(key=S + "pairs").set_value("he/she\nmen/women")
    at.text_area(key=S + "attributes").set_value("Nurse\nengineer, hyacinth")
    at.checkbox(key=S + "lowercase").check()
    click(at, "Score")
    want = score_templates(tiny_bert, ["[T] is a [A].", "[T] likes [A]. | he, she"], ["he/she", "men/women"], ["nurse", "engineer", "hyacinth"])
    shown = frame_with(at, "bias_score").set_index("attribute")
    expected = want.attribute_table().set_index("attribute")
    assert sorted(shown.index) == ["engineer", "hyacinth", "nurse"]
    np.testing.assert_allclose(shown.loc[expected.index, "bias_score"], expected["bias_score"], atol=1e-6)
    assert list(shown["bias_score"]) == sorted(shown["bias_score"], reverse=True)  # strongest first
    assert "1 of 3 attributes are several word pieces" in texts(at.caption)
    share = want.share()
    assert {m.label: m.value for m in at.metric}["More associated with he/men"] == f"{share.percent:.1f}%"
    assert len(shown_with(at, "log p_prior")) == 3 * 4 + 3 * 2
    assert [b.label for b in at.get("download_button")] == ["Attributes (CSV)", "All scores (CSV)", "Summary + manifest (JSON)", "Chart (SVG)"]
    assert at.query_params["targets"] == "he/she\nmen/women"


def test_a_link_brings_templates_and_targets(app_env):
    at = run_app("kurita", {"templates": "[T] can do [A]\n[T] likes [A]", "targets": "boys/girls"})
    no_exceptions(at)
    assert at.text_area(key=S + "templates").value == "[T] can do [A]\n[T] likes [A]"
    assert at.text_area(key=S + "pairs").value == "boys/girls"
    at.text_area(key=S + "pairs").set_value("men/women")
    click(at, "Score")  # the user's edit is not undone by the link
    assert at.text_area(key=S + "pairs").value == "men/women"
    assert "ilp[men]" in frame_with(at, "bias_score").columns


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("templates", "[T] is nice.", "must contain \\[A\\] exactly once"),  # messages quote input escaped (ui.feedback.md)
        ("pairs", "he", "separated by a slash"),
        ("attributes", "  ", "No attributes"),
    ],
)
def test_bad_input_is_one_message_in_the_page(app_env, field, value, message):
    at = run_app("kurita")
    at.text_area(key=S + field).set_value(value)
    click(at, "Score")
    assert message in texts(at.error)


def test_weat_tests_match_the_engine(app_env, tiny_bert):
    at = run_app("kurita")
    at.multiselect(key=S + "weat_tests").set_value(["career_family", "insects_flowers"])
    at.number_input(key=S + "weat_n").set_value(500)
    at.button(key=S + "weat_run").click().run()
    no_exceptions(at)
    table = shown_with(at, "p (one-sided)")
    assert list(table.columns[:4]) == ["Test", "d", "p (one-sided)", f"p < {ALPHA}"]  # the results first
    assert len(table) == 2
    for key, (_, row) in zip(["career_family", "insects_flowers"], table.iterrows()):
        spec = kurita_weat_spec(key, load_weat(KURITA_CATEGORIES[key].weat, data_dir=FIXTURE_DATA, download=False))
        want = weat_test(tiny_bert, spec, n_permutations=500, seed=0)
        assert row["d"] == pytest.approx(want.effect_size) and row["p (one-sided)"] == pytest.approx(want.p_value)
        assert row["p (two-sided)"] == pytest.approx(want.p_two_sided)
    # A tiny random model is not the paper's bert-base-uncased: the column says so.
    assert table["Kurita et al. d"].str.startswith("not comparable: model").all()
    assert "d = " in " ".join(e.label for e in at.expander)
    assert len(shown_with(at, "Word")) == 8  # career/family: 4 + 4 words in the fixture file


def test_missing_weat_files_offline_are_explained(app_env, monkeypatch, tmp_path):
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(tmp_path))

    def offline(url, destination, progress):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(datafiles, "fetch", offline)
    at = run_app("kurita")
    at.multiselect(key=S + "weat_tests").set_value(["math_arts"])
    at.button(key=S + "weat_run").click().run()
    no_exceptions(at)
    assert not at.error  # a file missing on this machine is no error of the user's: a calm note with the next step
    note = texts(at.info)
    assert "WEAT stimuli weat7.jsonl is not on this machine" in note and "Data folder" in note
    assert "--data-dir" not in note and "no network" not in note  # the UI's own words, no CLI flags or raw errors
    assert "press **Run the tests**" not in note  # they ran: the note says what is missing, not to run them


def test_missing_weat_files_with_a_lab_model_offer_no_held_out_pairs(app_env, monkeypatch, tmp_path):
    """A missing stimuli file is no pairs file: the lab model's held-out pairs are no answer to it (issue 21, item 10)."""
    from biaslens import lab

    model = lab.train_lab_model(lab.scenario_settings("association", lab.LabSettings(corpus_size=600, steps=12, batch_size=32)))
    monkeypatch.setenv("BIASLENS_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(datafiles, "fetch", lambda url, destination, progress: (_ for _ in ()).throw(urllib.error.URLError("no network")))
    at = run_app("kurita", {"model": str(model.path)})
    at.multiselect(key=S + "weat_tests").set_value(["math_arts"])
    at.button(key=S + "weat_run").click().run()
    no_exceptions(at)
    assert "weat7.jsonl is not on this machine" in texts(at.info)
    assert not [b for b in at.button if "held-out pairs" in b.label]


def test_attribute_lists_show_the_share_and_the_published_reference(app_env, tiny_bert):
    words = (FIXTURE_DATA / "kurita" / "positive_traits").read_text().splitlines()
    at = run_app("kurita")
    at.text_input(key=S + "list_name").set_value("positive_traits")
    at.text_area(key=S + "list_items").set_value("\n".join(words))
    at.run()
    assert at.text_input(key=S + "list_tpl.positive_traits").value == "[T] is [A]"
    at.button(key=S + "list_run").click().run()
    no_exceptions(at)
    shares = shown_with(at, "% more he")
    want = score_templates(tiny_bert, ["[T] is [A]"], ["he/she"], [w.lower() for w in words]).share()
    assert shares[["List", "N", "More he"]].values.tolist() == [["positive_traits", 8, want.first]]
    # 8 traits, not the paper's 234: no published share beside it, the reason instead.
    assert shares["Kurita et al. %"].tolist() == ["not comparable: 8 items; the paper's positive traits list has 234"]
    assert shares["% more he"].iloc[0] == pytest.approx(want.percent)
    per_attribute = next(d.value for d in at.dataframe if "ilp[he]" in d.value.columns)
    assert len(per_attribute) == 8 and per_attribute["attribute"].str.islower().all()

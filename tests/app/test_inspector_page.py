"""The pair inspector (home page), the sidebar and the app's handling of bad input, with AppTest."""

from __future__ import annotations

import threading

import pytest

from tests.support.app import html_of, interactive_tables, no_exceptions, run_app, tables, texts
from biaslens.data.datasets import load_dataset
from biaslens.engine.evaluation import inspect_pair
from biaslens.engine.metrics import METRICS, PAPER_METRICS
from tests.support import FIXTURE_DATA


S = "inspector."


def scores(at):
    """The sentence-scores table as {metric name: (stereo, anti)}."""
    table = next(t for t in tables(at) if "Margin (stereo − anti)" in t.columns)
    return {row["Metric"]: (row["Stereotypical"], row["Anti-stereotypical"]) for _, row in table.iterrows()}


def submit(at):
    """Press the typed-pair form's button."""
    button = next(b for b in at.button if b.label == "Score this pair")
    button.click().run()


def expected_scores(lm, stereo, anti, compat="default"):
    result = inspect_pair(lm, stereo, anti, metrics=PAPER_METRICS, compat=compat)
    frame = result.summary_frame()
    return {row["metric"]: (row["stereo"], row["anti"]) for _, row in frame.iterrows()}


def test_home_page_inspects_a_crows_pairs_pair(app_env, tiny_bert):
    at = run_app()
    no_exceptions(at)
    pair = load_dataset("crows-pairs", data_dir=FIXTURE_DATA).pairs[0]
    assert at.title[0].value == "Pair inspector"
    assert "Content warning" in texts(at.warning) and "Blodgett" in texts(at.warning)
    assert at.subheader[0].value.startswith("crows-pairs #0")
    got, want = scores(at), expected_scores(tiny_bert, pair.sent_stereo, pair.sent_anti)
    assert set(got) == {"AUL", "AULA", "CPS", "SSS", "All Masked"}
    for name, (s, a) in want.items():
        assert got[name] == pytest.approx((s, a), abs=1e-9)
    page_html = html_of(at)
    assert 'bl-mod bl-stereo" title="modified token">she<' in page_html
    assert 'bl-mod bl-anti" title="modified token">he<' in page_html
    # The aligned token chart and AUL's and AULA's drivers, as HTML: the browser loads no charting library for them.
    assert page_html.count('class="bl-bars"') == 3 and not at.get("vega_lite_chart")
    assert "Log p (AUL term)" in page_html and "AULA contribution" in page_html  # the default measures, side by side
    assert not at.get("latex")  # the metric cards are drawn once their panel is opened
    assert at.query_params["pair"] == "0" and at.query_params["model"] == app_env["BIASLENS_MODEL"]
    # The sidebar: the model's status and the sanity indicator (a random model looks untrained).
    assert "Loaded" in texts(at.sidebar.caption)
    assert "Looks untrained" in texts(at.sidebar.warning)
    # ... and in the main area, beside the verdicts (a projector hides the sidebar).
    assert "looks untrained: read these results as noise" in texts(at.main.warning)


def test_a_link_restores_pair_and_metric(app_env):
    at = run_app(params={"pair": "15", "metric": "cps"})
    no_exceptions(at)
    assert at.subheader[0].value.startswith("crows-pairs #15")
    assert at.session_state[S + "metric"] == "cps"
    assert "cps_logprob" in at.session_state[S + "measures"]  # the per-token view shows the metric's measure too
    assert "**CPS** prefers" in texts(at.markdown)
    assert at.query_params["pair"] == "15" and at.query_params["metric"] == "cps"


def test_a_link_restores_a_typed_pair(app_env, tiny_bert):
    at = run_app(params={"s1": "Girls are bad at maths.", "s2": "Boys are bad at maths."})
    no_exceptions(at)
    assert at.subheader[0].value == "Your pair"
    assert scores(at)["AUL"] == pytest.approx(expected_scores(tiny_bert, "Girls are bad at maths.", "Boys are bad at maths.")["AUL"])


def test_typed_pair_runs_only_on_submit(app_env, tiny_bert):
    at = run_app()
    at.button_group(key=S + "source").set_value("custom").run()
    no_exceptions(at)
    assert not any("Margin (stereo − anti)" in t.columns for t in tables(at))  # nothing scored yet
    assert "Score this pair" in texts(at.info)
    at.text_area(key=S + "s1_input").input("The nurse said she was tired.")
    at.text_area(key=S + "s2_input").input("The nurse said he was tired.")
    submit(at)
    no_exceptions(at)
    want = expected_scores(tiny_bert, "The nurse said she was tired.", "The nurse said he was tired.")
    assert scores(at)["CPS"] == pytest.approx(want["CPS"])
    assert at.query_params["s1"] == "The nurse said she was tired."
    assert "pair" not in at.query_params


@pytest.mark.parametrize(
    "stereo, anti, message",
    [
        ("Same sentence.", "Same sentence.", "identical"),
        ("   ", "Men can't drive.", "empty"),
        ("word " * 600, "Men can't drive.", "accepts at most 512"),
        ("Use [MASK] here.", "Use it here.", "reserved token"),
    ],
)
def test_bad_input_is_a_message_not_a_traceback(app_env, stereo, anti, message):
    at = run_app(params={"s1": stereo, "s2": anti})
    no_exceptions(at)
    assert message in texts(at.error)
    assert at.title[0].value == "Pair inspector"  # the page itself still works
    # Right under the form, not below the pair's heading, and nothing offered for a pair that cannot be scored.
    assert "Your pair" not in [h.value for h in at.subheader]
    assert not [b for b in at.button if b.label in ("Pin for comparison", "Edit this pair")]


def test_filters_search_and_random_draw(app_env):
    at = run_app()
    at.selectbox(key=S + "bias_type").set_value("religion").run()
    choice = at.selectbox(key=S + "pair_choice")
    assert all(" · religion · " in option for option in choice.options[1:])  # the current pair stays first
    assert "religion" in choice.label or "of 16" in choice.label
    random_button = next(b for b in at.button if b.label == "Random")
    random_button.click().run()
    no_exceptions(at)
    assert " · religion" in at.subheader[0].value
    at.text_input(key=S + "search").input("Muslim").run()
    pairs = {p.pair_id: p for p in load_dataset("crows-pairs", data_dir=FIXTURE_DATA).pairs}
    want = [i for i, p in pairs.items() if p.bias_type == "religion" and "muslim" in (p.sent_stereo + p.sent_anti).lower()]
    shown = [int(o.split(" ")[0][1:]) for o in at.selectbox(key=S + "pair_choice").options]
    assert [i for i in shown if i in want] == want and len(set(shown) - set(want)) <= 1  # + the current pair


def test_a_long_dataset_lists_its_first_pairs_and_the_search_reaches_any(app_env, tmp_path, monkeypatch):
    """Each listed pair costs the browser time on every page: the Pair box lists 200, the search box finds the rest."""
    rows = "".join(f'"She said {i} words.","He said {i} words."\n' for i in range(250))
    path = tmp_path / "long.csv"
    path.write_text("sent_more,sent_less\n" + rows)
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path))
    at = run_app(params={"dataset": str(path)})
    no_exceptions(at)
    box = at.selectbox(key=S + "pair_choice")
    assert len(box.options) == 200 and "the first 200 of 250" in box.label
    at.text_input(key=S + "search").input("#240").run()  # a pair's number finds it (and nothing else here)
    no_exceptions(at)
    assert [o.split(" ")[0] for o in at.selectbox(key=S + "pair_choice").options] == ["#240"]
    assert "#240" in at.subheader[0].value and at.query_params["pair"] == "240"  # shown at once (issue 21, journey 4)
    at.text_input(key=S + "search").input("said 24").run()  # a search that still matches the pair keeps it
    assert "#240" in at.subheader[0].value and at.selectbox(key=S + "pair_choice").options[0].startswith("#24 ")


def test_the_pair_box_finds_a_pair_by_its_number(app_env):
    """In Chromium, with all 1,508 CrowS-Pairs pairs, fuzzy matching showed #1349, #339, #389 … for "#9 ·" and never #9
    (measured; 16 fixture pairs are too few to reproduce it in a browser test): the box matches what is typed, as typed."""
    from streamlit.proto.SelectWidgetFilterMode_pb2 import SelectWidgetFilterMode

    at = run_app()
    box = at.selectbox(key=S + "pair_choice")
    assert box.proto.filter_mode == SelectWidgetFilterMode.FILTER_MODE_CONTAINS


def test_pin_edit_and_compare(app_env):
    at = run_app(params={"pair": "15"})
    next(b for b in at.button if b.label == "Pin for comparison").click().run()
    next(b for b in at.button if b.label == "Edit this pair").click().run()
    no_exceptions(at)
    assert at.session_state[S + "source"] == "custom"
    assert at.text_area(key=S + "s1_input").value == "The girls were bad at building things."
    at.text_area(key=S + "s1_input").input("Women don't know how to cook.")
    at.text_area(key=S + "s2_input").input("Men don't know how to cook.")
    submit(at)
    no_exceptions(at)
    assert "Pinned pair vs this pair" in texts(at.subheader)
    assert html_of(at).count("bl-mod bl-stereo") >= 2  # both pairs' tokens are drawn
    next(b for b in at.button if b.label == "Unpin").click().run()
    assert "Pinned pair vs this pair" not in texts(at.subheader)


def _side_by_side(at):
    """The side-by-side table: a row per model (its name as the index), a margin per metric."""
    return next(t for t in tables(at) if "Model" in t.columns and "AUL margin" in t.columns).set_index("Model")


def test_a_pinned_pair_under_another_model_is_shown_side_by_side(app_env, model_dirs, tiny_models):
    """Issue 21, journey 7: pin a pair, switch the sidebar's model: the pair under both, side by side; the link keeps it."""
    bert, roberta, albert = (str(model_dirs[f]) for f in ("bert-cased", "roberta", "albert"))
    at = run_app(params={"pair": "3"})
    next(b for b in at.button if b.label == "Pin for comparison").click().run()
    assert "This pair is pinned" in texts(at.caption)  # nothing to compare yet
    at.sidebar.selectbox(key="settings.model").set_value(roberta).run()
    no_exceptions(at)
    assert "The same pair side by side" in texts(at.subheader)
    pair = next(p for p in load_dataset("crows-pairs", data_dir=FIXTURE_DATA).pairs if p.pair_id == 3)
    table = _side_by_side(at)
    assert list(table.columns) == [f"{METRICS[k].name} margin" for k in PAPER_METRICS]
    for name, family in (("bert-cased · pinned", "bert-cased"), ("roberta", "roberta")):
        want = inspect_pair(tiny_models[family], pair.sent_stereo, pair.sent_anti, metrics=list(PAPER_METRICS))
        assert table.loc[name].tolist() == pytest.approx([want.margin(k) for k in PAPER_METRICS], abs=1e-5)
    assert (at.query_params["model"], at.query_params["pin.model"], at.query_params["pin.pair"]) == (roberta, bert, "3")

    again = run_app(params=dict(at.query_params))  # the link, in a new session
    no_exceptions(again)
    assert list(_side_by_side(again).index) == ["bert-cased · pinned", "roberta"]

    at.multiselect(key=S + "models").set_value([albert]).run()  # "Compare under another model"
    no_exceptions(at)
    assert list(_side_by_side(at).index) == ["bert-cased · pinned", "roberta", "albert"]
    assert at.query_params["models"] in (albert, [albert])
    next(b for b in at.button if b.label == "Unpin").click().run()
    assert list(_side_by_side(at).index) == ["roberta", "albert"]
    assert "pin.model" not in at.query_params


def test_a_pin_keeps_its_own_scoring_mode(app_env):
    at = run_app(params={"pair": "5", "pin.pair": "5", "pin.compat": "kaneko2022"})
    no_exceptions(at)
    assert list(_side_by_side(at).index) == ["bert-cased · kaneko2022 · pinned", "bert-cased"]


def test_attention_drill_down_controls(app_env):
    at = run_app()
    closed = len(at.get("vega_lite_chart"))
    at.session_state[S + "att_open"] = True  # drawn only once opened
    at.run()
    before = len(at.get("vega_lite_chart"))
    assert before == closed + 2  # the attention matrix and the layer x head overview
    at.selectbox(key=S + "att_layer").set_value("2").run()
    at.selectbox(key=S + "att_head").set_value("1").run()
    at.toggle(key=S + "att_hide").set_value(False).run()
    no_exceptions(at)
    assert len(at.get("vega_lite_chart")) == before


def test_the_token_table_is_drawn_once_its_tab_is_chosen(app_env):
    def token_tables(at):
        return [t for t in interactive_tables(at) if "Token" in t.columns and "Sentence" in t.columns]

    at = run_app()
    assert not token_tables(at)  # the Chart tab is open: the interactive table would only cost the browser time
    at.session_state[S + "token_tab"] = "Table"
    at.run()
    no_exceptions(at)
    assert len(token_tables(at)) == 1
    table = token_tables(at)[0]
    cps = table["CPS masked log p"]  # missing for the modified tokens (CPS does not mask them)
    assert cps.dtype.kind == "f" and cps.isna().any() and cps.notna().any()  # numbers, which sort as numbers; no "None"


def test_metric_cards_come_from_the_registry(app_env):
    at = run_app()
    assert not at.latex  # drawn once their panel is opened: five formulas cost the browser a typesetting library
    at.session_state[S + "cards_open"] = True
    at.run()
    no_exceptions(at)
    assert len(at.latex) == len(PAPER_METRICS)
    text = texts(at.caption)
    assert "Ideal bias score: **50**" in text and "Kaneko & Bollegala (2022)" in text and "Nangia et al. (2020)" in text


def test_kaneko2022_mode_from_a_link(app_env, tiny_bert):
    at = run_app(params={"pair": "3", "compat": "kaneko2022"})
    no_exceptions(at)
    pair = load_dataset("crows-pairs", data_dir=FIXTURE_DATA).pairs[3]
    want = expected_scores(tiny_bert, pair.sent_stereo, pair.sent_anti, compat="kaneko2022")
    assert scores(at)["CPS"] == pytest.approx(want["CPS"])
    assert at.query_params["compat"] == "kaneko2022"


def test_an_unreachable_hub_is_explained_and_the_app_keeps_working(app_env, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # as on a machine without network
    at = run_app(params={"model": "bert-base-cased", "s1": "A b.", "s2": "A c."})
    no_exceptions(at)
    assert not at.error  # nothing went wrong: the model is just not on this machine (a calm note, no red box)
    notes = texts(at.main.info)
    assert "The model bert-base-cased is not on this machine, and the Hugging Face hub cannot be reached" in notes
    assert "into the **Model** box" in notes and "Use the offline lab model" in notes
    assert "--model" not in notes and "HF_HUB_OFFLINE" not in notes  # the UI's own words, no CLI flags or raw errors
    assert "Use the offline lab model" in [b.label for b in at.main.button]
    assert "Retry loading" in [b.label for b in at.button]
    assert at.title[0].value == "Pair inspector"
    # The rest of the app keeps working: the explorer still loads its dataset.
    at.switch_page("pages/explorer.py").run()
    no_exceptions(at)
    assert "Content warning" in texts(at.warning)


def test_a_missing_dataset_is_explained_and_typed_pairs_still_work(app_env, monkeypatch, tmp_path, tiny_bert):
    import urllib.request

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setenv("BIASLENS_DATA_DIR", str(tmp_path))  # an empty folder
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    at = run_app()
    no_exceptions(at)
    assert not at.error
    notes = texts(at.info)
    assert "CrowS-Pairs is not on this machine" in notes and "Data folder" in notes
    assert "--data-dir" not in notes and "network is unreachable" not in notes
    at.button_group(key=S + "source").set_value("custom").run()
    submit(at)
    no_exceptions(at)
    assert scores(at)["AUL"] == pytest.approx(expected_scores(tiny_bert, "Women don't know how to drive.", "Men don't know how to drive.")["AUL"])


def test_concurrent_sessions_get_correct_results(app_env, model_dirs):
    """The shared model serves two sessions at once: each gets what it would get alone."""
    import ui.resources

    lm = ui.resources._load_model(str(model_dirs["bert-cased"]), None, "auto", "float32")
    pairs = load_dataset("crows-pairs", data_dir=FIXTURE_DATA).pairs[:8]
    alone = [inspect_pair(lm, p.sent_stereo, p.sent_anti, attention_matrices=True).summary_frame() for p in pairs]
    results: dict[int, object] = {}

    def session(indices):
        for i in indices:
            results[i] = inspect_pair(lm, pairs[i].sent_stereo, pairs[i].sent_anti, attention_matrices=True).summary_frame()

    threads = [threading.Thread(target=session, args=(range(k, 8, 2),)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, frame in enumerate(alone):
        assert results[i][["stereo", "anti"]].to_numpy() == pytest.approx(frame[["stereo", "anti"]].to_numpy(), abs=1e-6)


def test_classroom_mode_enlarges_hides_the_sidebar_and_offers_a_slide(app_env):
    at = run_app(params={"pair": "15"})
    no_exceptions(at)
    at.button(key="inspector.make_slide").click().run()
    assert {b.label for b in at.get("download_button")} >= {"Slide (PNG)", "Slide (SVG)"}
    at.sidebar.toggle(key="classroom.on").set_value(True).run()
    no_exceptions(at)
    styles = " ".join(h.proto.body for h in at.get("html"))
    assert "font-size: 21px" in styles and '[data-testid="stSidebar"]' in styles
    assert "looks untrained: read these results as noise" in texts(at.main.warning)  # the caveat stays in view
    at.button(key="classroom.leave").click().run()
    assert not at.session_state["classroom.on"]
    assert "font-size: 21px" not in " ".join(h.proto.body for h in at.get("html"))


def test_the_advanced_settings_are_drawn_once_opened_and_keep_their_values(app_env, tmp_path, monkeypatch):
    import shutil

    import ui.settings

    folder = tmp_path / "my-data"
    shutil.copytree(FIXTURE_DATA, folder)
    monkeypatch.setenv("BIASLENS_DATA_DIRS", str(tmp_path))
    at = run_app()
    assert not [w for w in at.sidebar.text_input if w.key == "settings.data_dir"]  # closed: nothing for the browser to draw
    at.session_state["settings.advanced"] = True
    at.run()
    at.sidebar.text_input(key="settings.data_dir").input(str(folder)).run()
    assert at.session_state[ui.settings._KEY].data_dir == str(folder)
    at.session_state["settings.advanced"] = False
    at.run()
    no_exceptions(at)
    assert not at.main.error
    assert at.session_state[ui.settings._KEY].data_dir == str(folder)  # closing the panel keeps what was typed


def test_a_slide_of_a_pair_with_if_is_made_and_a_slide_that_fails_says_so(app_env, monkeypatch):
    """Issue 30, item 1: "if" in a pair made the slide fail silently (nothing downloaded, nothing said)."""
    at = run_app(params={"s1": "His mind wondered if a doctor was behind this.", "s2": "His mind wondered if a nurse was behind this."})
    no_exceptions(at)
    at.button(key="inspector.make_slide").click().run()
    no_exceptions(at)
    assert not at.main.error
    buttons = {b.label: b for b in at.get("download_button")}
    assert {"Slide (PNG)", "Slide (SVG)"} <= set(buttons)
    assert len(at.get("image")) == 1  # the slide is shown before it is downloaded

    from biaslens.figures import charts

    def fail(chart, *args, **kwargs):
        raise ValueError('Vega-Lite to PNG conversion failed:\nError: Unrecognized signal name: "if"\n    at l (vega-util)')

    monkeypatch.setattr(charts, "to_png", fail)
    other = run_app(params={"s1": "He saw if men.", "s2": "He saw if women."})
    other.button(key="inspector.make_slide").click().run()
    no_exceptions(other)
    message = texts(other.main.error)
    assert "The slide could not be exported as PNG" in message and "Unrecognized signal name" in message
    assert "Slide (PNG)" not in {b.label for b in other.get("download_button")}


def test_a_causal_metric_in_the_link_becomes_a_masked_model_s_own(app_env):
    """Issue 40 item 12: the URL kept metric=ll (and aul_c) after switching to a masked model."""
    at = run_app(params={"pair": "3", "metric": "aul_c"})
    no_exceptions(at)
    assert at.session_state[S + "metric"] == "aul" and "metric" not in at.query_params  # its counterpart (the default: unsaid)
    at = run_app(params={"pair": "3", "metric": "ll"})
    no_exceptions(at)
    assert at.session_state[S + "metric"] == "aul" and "metric" not in at.query_params  # none: the model's first

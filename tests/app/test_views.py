"""The pages' typed views (ui/views.py), without Streamlit: every view survives its URL, every link between pages keeps
the global part, and no link value, however bad, raises."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from urllib.parse import parse_qs, urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biaslens import lab
from biaslens.engine.metrics import COMPAT_MODES, METRICS, PAPER_METRICS
from biaslens.engine.models import DTYPES
from ui.views import (
    INSPECTED_METRICS,
    DEVICES,
    DOC_PAGES,
    EXPLORER_TABS,
    LAB_BOUNDS,
    MAX_DIGITS,
    MAX_LIST,
    MAX_SEED,
    PAGE_VIEWS,
    PIN,
    AnalysesView,
    CompareView,
    DocsView,
    ExplorerView,
    GlobalView,
    InspectorView,
    KuritaView,
    LabView,
    LEADERBOARD_ORDERS,
    LeaderboardView,
)

#: Text as a link can carry it (no lone surrogates: a URL holds UTF-8), never empty (an empty parameter is no parameter).
text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
maybe_text = st.none() | text
whole = st.integers(0, 10**MAX_DIGITS - 1)
seeds = st.integers(0, MAX_SEED)

globals_ = st.builds(
    GlobalView,
    model=maybe_text,
    dataset=maybe_text,
    data_dir=maybe_text,
    compat=st.sampled_from(COMPAT_MODES),
    device=st.sampled_from(DEVICES),
    dtype=st.sampled_from(tuple(DTYPES)),
    revision=maybe_text,
    classroom=st.booleans(),
)


def _knob(name: str):
    low, high = LAB_BOUNDS[name]
    return st.floats(low, high, allow_nan=False) if isinstance(low, float) else st.integers(low, int(high))


#: A pinned inspection, as Pin makes it: a dataset's pair or typed sentences, with the model and settings of the moment.
pins = st.builds(InspectorView, g=globals_, pair=whole, metric=st.sampled_from(PAPER_METRICS)) | st.builds(
    InspectorView, g=globals_, s1=text, s2=maybe_text, metric=st.sampled_from(PAPER_METRICS)
)

VIEWS = {
    InspectorView: st.builds(
        InspectorView,
        g=globals_,
        pair=st.none() | whole,
        s1=maybe_text,
        s2=maybe_text,
        metric=st.sampled_from(PAPER_METRICS),
        anatomy=st.booleans(),
        models=st.lists(text, max_size=3, unique=True).map(tuple),
        pin=st.none() | pins,
    ),
    ExplorerView: st.builds(
        ExplorerView,
        g=globals_,
        metrics=st.lists(st.sampled_from(tuple(METRICS)), min_size=1, max_size=4, unique=True).map(tuple),
        metric=st.none() | st.sampled_from(tuple(METRICS)),
        sample=st.none() | st.integers(1, 10**MAX_DIGITS - 1),
        seed=seeds,
        tab=st.sampled_from(EXPLORER_TABS),
        store=maybe_text,
        result=st.none() | st.text("0123456789abcdef", min_size=64, max_size=64),
    ),
    CompareView: st.builds(
        CompareView,
        g=globals_,
        models=st.lists(text, max_size=3, unique=True).map(tuple),
        metric=st.sampled_from(tuple(METRICS)),
        sample=st.none() | st.integers(1, 10**6),
        seed=seeds,
    ),
    LeaderboardView: st.builds(
        LeaderboardView,
        g=globals_,
        store=maybe_text,
        sort=maybe_text,
        order=st.sampled_from(LEADERBOARD_ORDERS),
        bias_type=maybe_text,
        families=st.lists(text, max_size=3, unique=True).map(tuple),
        kinds=st.lists(text, max_size=2, unique=True).map(tuple),
        sizes=st.lists(text, max_size=2, unique=True).map(tuple),
    ),
    KuritaView: st.builds(KuritaView, g=globals_, templates=maybe_text, targets=maybe_text),
    LabView: st.builds(LabView, g=globals_, scenario=st.sampled_from(tuple(lab.SCENARIOS)), **{k: _knob(k) for k in LAB_BOUNDS}),
    AnalysesView: st.builds(AnalysesView, g=globals_, sample=st.none() | st.integers(1, 10**6), seed=seeds),
    DocsView: st.builds(DocsView, g=globals_, page=st.sampled_from(DOC_PAGES)),
}
any_view = st.one_of(*VIEWS.values())


def through_a_url(query: dict) -> dict[str, list[str]]:
    """The parameters as a browser gets them back from the address bar."""
    return parse_qs(urlencode(query, doseq=True), keep_blank_values=True)


def test_every_page_has_a_view_and_a_strategy():
    assert set(VIEWS) == set(PAGE_VIEWS)
    pages = ("inspector", "explorer", "compare", "leaderboard", "kurita", "lab", "analyses", "docs")
    assert {view.PAGE for view in PAGE_VIEWS} == {f"pages/{p}.py" for p in pages}


@settings(max_examples=300, deadline=None)
@given(any_view)
def test_a_view_survives_its_url(view):
    again, rejected = type(view).from_query(through_a_url(view.to_query()))
    assert [r for r in rejected if not r.kept] == []  # a name with a comma is kept whole, and said (test_a_comma_...)
    assert again == view


@settings(max_examples=200, deadline=None)
@given(VIEWS[ExplorerView], whole)
def test_an_explorer_row_keeps_every_global_setting(view, pair):
    opened = view.inspect(pair)
    assert opened.g == view.g and opened.pair == pair
    focus = view.metric or view.metrics[0]
    assert opened.metric == (focus if focus in INSPECTED_METRICS else "aul")  # the inspector shows the five of either kind
    assert InspectorView.from_query(through_a_url(opened.to_query())) == (opened, [])


@settings(max_examples=200, deadline=None)
@given(VIEWS[CompareView], whole)
def test_a_flipped_pair_keeps_every_global_setting(view, pair):
    opened = view.inspect(pair)
    assert opened.g == view.g and opened.pair == pair
    assert InspectorView.from_query(through_a_url(opened.to_query())) == (opened, [])


@settings(max_examples=200, deadline=None)
@given(VIEWS[LeaderboardView], st.text("0123456789abcdef", min_size=64, max_size=64), st.sampled_from(tuple(METRICS)), whole)
def test_a_leaderboard_cell_opens_the_stored_run_and_its_pairs_open_under_its_model(view, result, metric, pair):
    opened = view.explore(result, tuple(dict.fromkeys(("aul", metric))), metric)  # (each stored metric once, as the page gives them)
    assert opened.g == view.g and opened.store == view.store and opened.result == result and opened.metric == metric
    assert ExplorerView.from_query(through_a_url(opened.to_query())) == (opened, [])
    inspected = opened.inspect_stored(pair, "org/model", "abc123", "stereoset", "bfloat16")
    assert inspected.g == dataclasses.replace(view.g, model="org/model", revision="abc123", dataset="stereoset", dtype="bfloat16")
    assert inspected.pair == pair and InspectorView.from_query(through_a_url(inspected.to_query())) == (inspected, [])


@settings(max_examples=200, deadline=None)
@given(VIEWS[LabView], text, text, text, st.sampled_from(tuple(METRICS)))
def test_a_lab_pair_changes_only_the_model_and_its_pairs(view, folder, stereo, anti, metric):
    opened = view.inspect(folder, stereo, anti, metric)
    # A lab model is a folder (no hub revision), with its own held-out pairs: another lab model's have another planted truth.
    pairs = str(Path(folder) / lab.PAIRS_FILE)
    assert opened.g == dataclasses.replace(view.g, model=folder, revision=None, dataset=pairs)
    assert (opened.s1, opened.s2, opened.pair) == (stereo, anti, None)
    assert InspectorView.from_query(through_a_url(opened.to_query())) == (opened, [])


@settings(max_examples=200, deadline=None)
@given(VIEWS[InspectorView])
def test_a_pin_keeps_the_pair_with_its_model_and_settings(view):
    pinned = view.pinned()
    assert (pinned.g, pinned.pair, pinned.s1, pinned.s2, pinned.metric) == (view.g, view.pair, view.s1, view.s2, view.metric)
    assert pinned.pin is None and pinned.models == ()  # a pin holds no pin of its own
    assert all(k.startswith(PIN) for k in dataclasses.replace(InspectorView(), pin=pinned).to_query())


def test_a_pin_without_a_pair_is_rejected_once():
    view, rejected = InspectorView.from_query({"pin.model": "roberta-base", "pair": "3"})
    assert view == InspectorView(pair=3)
    assert [(r.name, r.value) for r in rejected] == [("pin.model", "roberta-base")]
    assert "pin.pair" in rejected[0].expected
    view, rejected = InspectorView.from_query({"pin.pair": "-1"})  # its pair was refused: said once, for the pair
    assert view.pin is None and [(r.name, r.expected) for r in rejected] == [("pin.pair", "a pair id (a whole number, 0 or more)")]


#: Parameter names of every view (and of the inspector's pinned one), and values a careless user or an attacker might put in a link.
NAMES = sorted(
    {f.name for view in PAGE_VIEWS for f in dataclasses.fields(view) if f.name not in ("g", "pin")}
    | {f.name for f in dataclasses.fields(GlobalView)}
    | {PIN + name for name in ("pair", "s1", "s2", "metric", "model", "compat", "models")}
)
HOSTILE = st.sampled_from(["²", "٣", "9" * 5000, "-1", "1e999", "nan", "inf", "abc", " 7", "1_0", "0x10", "", "on", "𝟕"]) | st.text(max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PAGE_VIEWS), st.dictionaries(st.sampled_from(NAMES), HOSTILE | st.lists(HOSTILE, max_size=3), max_size=6))
def test_no_link_value_raises(view_class, query):
    view, rejected = view_class.from_query(query)
    assert isinstance(view, view_class)
    for r in rejected:
        assert r.name in query and r.expected
    again, notes = view_class.from_query(through_a_url(view.to_query()))
    assert again == view and all(r.kept for r in notes)  # what is kept is a valid view


@pytest.mark.parametrize(
    "view_class,name,value,expected",
    [
        (InspectorView, "pair", "²", "a pair id (a whole number, 0 or more)"),  # str.isdigit() says yes, int() says no
        (InspectorView, "pair", "9" * 5000, "a pair id (a whole number, 0 or more)"),  # int() refuses over 4,300 digits
        (InspectorView, "pair", "-1", "a pair id (a whole number, 0 or more)"),
        (InspectorView, "pair", "٣", "a pair id (a whole number, 0 or more)"),  # int() reads it as 3: not a link's digit
        (ExplorerView, "sample", "²", "a number of pairs (a whole number, 1 or more)"),
        (ExplorerView, "sample", "0", "a number of pairs (a whole number, 1 or more)"),
        (ExplorerView, "seed", "abc", "a seed (a whole number, 0 or more)"),
        (ExplorerView, "result", "../../etc", "a stored result's id (64 hexadecimal digits)"),
        (LeaderboardView, "order", "random", "one of closest, highest, lowest"),
        (CompareView, "seed", str(MAX_SEED + 1), "a seed (a whole number, 0 or more)"),
        (LabView, "association", "nan", "a number from 0 to 1"),
        (LabView, "ratio", "1e999", "a number from 1 to 100"),
        (LabView, "corpus", "5", "a whole number from 100 to 1,000,000"),
        (GlobalView, "compat", "kaneko", "one of default, kaneko2022"),
        (GlobalView, "classroom", "maybe", "on or off"),
    ],
)
def test_a_bad_value_is_rejected_and_says_what_was_expected(view_class, name, value, expected):
    view, rejected = view_class.from_query({name: value})
    assert [(r.name, r.value, r.expected) for r in rejected] == [(name, value, expected)]
    assert view == view_class()  # left at its default


def test_a_list_keeps_its_good_values():
    view, rejected = ExplorerView.from_query({"metrics": ["aul", "rm -rf", "cps"]})
    assert view.metrics == ("aul", "cps")
    assert [(r.name, r.value, r.partly) for r in rejected] == [("metrics", "rm -rf", True)]


def test_a_list_keeps_each_value_once_and_at_most_max_list():
    view, rejected = CompareView.from_query({"models": ["gpt2"] * 10_000 + ["bert", "bert"]})
    assert view.models == ("gpt2", "bert")  # (10,000 chips in the comparison's list of models: the browser never drew them)
    assert [(r.name, r.value, r.expected, r.partly) for r in rejected] == [
        ("models", "gpt2, bert", "each value once (10,000 repeats left out)", True)
    ]
    view, rejected = ExplorerView.from_query({"metrics": ["aul"] * 500})
    assert view.metrics == ("aul",) and [r.expected for r in rejected] == ["each value once (499 repeats left out)"]
    names = [f"m{i}" for i in range(MAX_LIST + 3)]
    view, rejected = LeaderboardView.from_query({"families": names})
    assert view.families == tuple(names[:MAX_LIST])
    assert [(r.value, r.expected) for r in rejected] == [
        (f"m{MAX_LIST}, m{MAX_LIST + 1}, m{MAX_LIST + 2}", f"at most {MAX_LIST} values (the first {MAX_LIST} kept)")
    ]


def test_a_comma_list_of_known_names_is_read_and_a_free_name_with_a_comma_is_kept_whole_and_said():
    """`metrics=aul,cps` is two metrics (no metric name holds a comma); `models=gpt2,bert` stays one name (a local
    folder's name may hold a comma), said in one line that names the repeated form. Both were read as one value silently."""
    view, rejected = ExplorerView.from_query({"metrics": "aul, cps,,aul"})
    assert view.metrics == ("aul", "cps") and [(r.value, r.partly, r.kept) for r in rejected] == [("aul", True, False)]  # said: a repeat
    view, rejected = ExplorerView.from_query({"metrics": ["aul,rm -rf", "cps"]})
    assert view.metrics == ("aul", "cps") and [r.value for r in rejected] == ["rm -rf"]
    view, rejected = CompareView.from_query({"models": ["gpt2,bert", "/data/a,b", "roberta"]})
    assert view.models == ("gpt2,bert", "/data/a,b", "roberta")
    assert [(r.name, r.value, r.partly, r.kept) for r in rejected] == [("models", "gpt2,bert", True, True)]
    assert "models=a&models=b" in rejected[0].expected and "(1 more such value)" in rejected[0].expected
    view, rejected = InspectorView.from_query({"pin.pair": "3", "pin.models": "a,b"})
    assert rejected == [] and view.pin is not None  # a pinned inspection has no models of its own: nothing read, nothing said
    view, rejected = InspectorView.from_query({"models": "a,b"})
    assert view.models == ("a,b",) and "several are written models=a&models=b" in rejected[0].expected


def test_a_repeated_value_counts_once_the_last():
    assert InspectorView.from_query({"pair": ["3", "7"]})[0].pair == 7


def test_defaults_are_left_out_of_the_url():
    g = GlobalView(model="bert-base-cased", dataset="crows-pairs")
    assert ExplorerView(g).to_query() == {"model": "bert-base-cased", "dataset": "crows-pairs"}
    assert LabView(g, ratio=4.0, association=0.5).to_query() == {**g.to_query(), "association": "0.5", "ratio": "4"}
    assert GlobalView(classroom=True, compat="kaneko2022").to_query() == {"compat": "kaneko2022", "classroom": "on"}

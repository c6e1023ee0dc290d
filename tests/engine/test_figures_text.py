"""No text becomes Vega code: every exported chart draws any word, Vega's and JavaScript's names included (issue 30, item 1).

A token "if" made every slide of its pair fail ("Unrecognized signal name"), a token "constructor" drew an empty chart:
Vega read text from titles, sort lists, scale domains and category values as names. Each chart here is built with
random words in every place text reaches it (tokens, labels, model names, bias types, run descriptions, attributes,
titles) and exported with `to_svg`: the export must succeed, Vega must report no error, and every word must be drawn.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from biaslens.analyses import explore
from biaslens.figures import charts as figures
from biaslens.kurita import TargetPair
from tests.engine.explore_cases import PAIRS, make_result

#: Vega's expression names and JavaScript's object names: each broke an export or emptied a chart before.
VEGA_WORDS = (
    "if", "datum", "event", "signal", "width", "parent", "this", "item", "group", "constructor", "toString", "valueOf",
    "hasOwnProperty", "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "__proto__", "__defineGetter__",
    "NaN", "null", "true", "undefined", "height", "padding", "scale", "data",
)  # fmt: skip
#: Text with quotes, backslashes and template syntax: never code either.
ODD_WORDS = ('it"s', "it's", "a\\b", "{x}", "${x}", "datum.x", "if(1)", "'if'")

word = st.one_of(
    st.sampled_from(VEGA_WORDS),
    st.sampled_from(ODD_WORDS),
    st.text(st.characters(categories=("L", "N"), max_codepoint=0x2FFF), min_size=1, max_size=10),
)
#: Six distinct words, as a chart with a few categories gets them.
words = st.lists(word, min_size=6, max_size=6, unique=True)


def _drawn(svg: str) -> str:
    """Every text an SVG draws, unescaped."""
    return "\n".join(html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S))


def _export(chart, capfd, i: int) -> str:
    try:
        svg = figures.to_svg(chart)
    except ValueError as exc:
        raise AssertionError(f"chart {i} does not export: {str(exc).splitlines()[:2]}") from None
    err = capfd.readouterr().err
    assert "ERROR" not in err, f"chart {i}: {err[:400]}"  # Vega's own errors: an empty chart, not an exception
    return _drawn(svg)


def _charts(w: list[str], inspection, tiny_bert) -> list[tuple[object, list[str]]]:
    """(chart, the words it must draw) for every chart builder, with the words `w` wherever text reaches it."""
    tokens = explore.token_table(inspection, tiny_bert.decode_token)
    tokens["label"] = [w[i % len(w)] for i in range(len(tokens))]
    columns = explore.aligned_columns(inspection)
    columns["stereo_token"] = [w[i % len(w)] for i in range(len(columns))]
    columns["anti_token"] = [w[(i + 1) % len(w)] for i in range(len(columns))]
    aligned = figures.aligned_token_frame(columns, tokens)
    drivers = explore.margin_drivers(inspection, "aul").head(4)
    drivers["label"] = w[:4] if len(drivers) >= 4 else w[: len(drivers)]
    attention = explore.attention_table(inspection, "stereo", hide_special=True)
    labels = {p: w[i % len(w)] + "\u200b" * (i // len(w)) for i, p in enumerate(sorted(attention["key_position"].unique()))}
    attention["key"] = attention["key_position"].map(labels)
    attention["query"] = attention["query_position"].map(labels)

    pairs = [p.__class__(p.pair_id, "custom", w[i % 3], p.direction, p.sent_stereo, p.sent_anti) for i, p in enumerate(PAIRS)]
    result = make_result([1, 1, 1, 0, 0], [0, 0, 0, 1, 1], pairs)
    summary = explore.summary_table(result.summary).assign(name=w[0])
    by_type = explore.by_type_table(result.summary)
    comparison = explore.compare_models({w[0]: result, w[1]: make_result([1, 0, 1, 0, 1], [0, 1, 0, 1, 1], pairs)}, "aul")
    groups = pd.DataFrame({"name": [w[0], w[0], w[1], w[1]], "group_name": [w[2], w[3]] * 2, "bias_score": [40.0, 60, 55, 45]})
    groups = groups.assign(ci_low=groups["bias_score"] - 9, ci_high=groups["bias_score"] + 9, n=12, ties=0)
    long = pd.DataFrame({"model": [w[0], w[0], w[1], w[1]], "source": "this run", "column": [w[2], w[3]] * 2, "value": [55.0, 48, 61, 50]})
    long = long.assign(ci_low=long["value"] - 5, ci_high=long["value"] + 5)
    roc = pd.DataFrame({"metric": ["aul"] * 3 + ["cps"] * 3, "name": [w[0]] * 3 + [w[1]] * 3, "fpr": [0, 0.5, 1] * 2, "tpr": [0, 0.7, 1] * 2})
    roc = roc.assign(threshold=0.1, model=[w[2]] * 3 + [w[3]] * 3)
    auc = pd.DataFrame({"model": [w[2], w[3]], "metric": ["aul", "cps"], "name": [w[0], w[1]], "auc": [0.61, 0.55]})
    ranks = pd.DataFrame(
        {"bias_type": [w[0], w[0], w[1], w[1]], "group": ["adv", "dis"] * 2, "mean_rank": [120.0, 300, 90, 2000], "median_rank": 100.0}
    ).assign(words=3, top_words=w[2])
    runs = pd.DataFrame({"metric": [w[0], w[0], w[1], w[1]], "run": [w[2], w[3]] * 2, "bias_score": [52.0, 70, 48, 66]})
    runs = runs.assign(ci_low=runs["bias_score"] - 8, ci_high=runs["bias_score"] + 8, n=48, ties=0)
    attributes = pd.DataFrame({"attribute": w, "bias_score": [0.9, 0.5, 0.2, -0.3, -0.6, -1.1], "attribute_pieces": 1})
    weat = pd.DataFrame({"category": w[:3], "effect_size": [0.4, -0.2, 1.1], "published_log_prob": [0.3, np.nan, 0.9], "p_value": 0.2})
    shares = pd.DataFrame({"list": w[:3], "share_first": [55.0, 40, 62], "ci_low": [45.0, 30, 52], "ci_high": [65.0, 50, 72]})
    shares = shares.assign(published_share=[50.0, np.nan, 60], n=40)
    shuffled = pd.DataFrame(
        {"position": range(1, 5), "token": w[:4], "special": False, "logprob": [-1.0, -2, -3, -1.5], "rank": [1, 3, 9, 2]}
    ).assign(prediction=w[4], new_position=[3, 1, 4, 2], shuffled_logprob=[-4.0, -5, -3.5, -6], shuffled_rank=20, shuffled_prediction=w[5])
    return [
        (figures.token_chart(tokens, "logprob"), w),
        (figures.aligned_token_chart(aligned, "logprob", title=w[0]), w),
        (figures.drivers_chart(drivers, w[5]), [*drivers["label"], w[5]]),
        (figures.attention_heatmap(attention, w[0], modified=[labels[min(labels)]]), list(dict.fromkeys(labels.values()))[:6]),
        (figures.head_overview_chart(explore.head_overview(inspection, "stereo"), w[1]), [w[1]]),
        (figures.inspector_slide(w[0], f"{w[1]} {w[2]}", f"{w[1]} {w[3]}", aligned, {w[4]: drivers}), w),
        (figures.bias_scores_chart(summary, w[1]), [w[0], w[1]]),
        (figures.by_type_chart(by_type, w[3]), [w[0], w[1], w[2], w[3]]),
        (figures.groups_chart(groups, w[4]), w[:5]),
        (figures.model_scores_chart(comparison.scores, w[2]), [w[0], w[1]]),
        (figures.margin_scatter(comparison.margins, w[0], w[1], w[2]), []),
        (figures.paper_bars(long, "value", w[4], w[5]), w),
        (figures.roc_chart(roc, auc, w[4]), [w[2], w[3], w[4]]),
        (figures.word_rank_chart(ranks, w[2]), [w[0], w[1], w[2]]),
        (figures.lab_scenarios_chart(runs, w[4]), w[:5]),
        (figures.bias_chart(attributes, [TargetPair(w[0], w[1])]), w),
        (figures.effect_size_chart(weat), w[:3]),
        (figures.shares_chart(shares, w[3]), w[:3]),
        (figures.shuffle_chart(shuffled, w[5]), [w[5]]),
    ]


@pytest.fixture(scope="module")
def inspection(tiny_bert):
    from biaslens.engine.evaluation import inspect_pair
    from tests.engine.explore_cases import ADDITIVE

    return inspect_pair(tiny_bert, "He saw if men.", "He saw if women.", metrics=ADDITIVE, attention_matrices=True)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(w=words)
@example(w=list(VEGA_WORDS[:6]))
@example(w=list(VEGA_WORDS[6:12]))
@example(w=list(VEGA_WORDS[12:18]))
@example(w=list(VEGA_WORDS[18:24]))
@example(w=list(ODD_WORDS[:6]))
def test_every_chart_exports_whatever_the_words(w, inspection, tiny_bert, capfd):
    for i, (chart, shown) in enumerate(_charts(w, inspection, tiny_bert)):
        drawn = _export(chart, capfd, i)
        missing = [x for x in shown if x not in drawn]
        assert not missing, f"chart {i}: {missing} not drawn"


def test_no_text_is_in_a_spec_outside_its_data(inspection, tiny_bert):
    """The words reach a chart's spec only as data values (its datasets), never as a name, a sort list or an expression."""
    w = ["zqxjk" + c for c in "abcdef"]

    def without_titles(spec):  # a title is drawn text (`safe_title` guards it); everything else must hold no word
        if isinstance(spec, dict):
            return {k: without_titles(v) for k, v in spec.items() if k not in ("title", "datasets")}
        return [without_titles(v) for v in spec] if isinstance(spec, list) else spec

    for chart, _shown in _charts(w, inspection, tiny_bert):
        text = repr(without_titles(chart.to_dict(validate=False)))
        leaked = [x for x in w if re.search(rf"(?<![\w ]){re.escape(x)}", text)]
        assert not leaked, f"{leaked} in {text[:300]}"


def test_a_keyed_category_sorts_in_first_seen_order_and_draws_its_text():
    assert figures.keyed(["b", "a", "b", "if"]) == ["0 b", "1 a", "0 b", "2 if"]
    keys = figures.keyed(list(range(12)), [f"t{i}" for i in range(12)])
    assert keys[0] == "00 t0" and keys[11] == "11 t11" and sorted(keys) == keys
    assert figures.safe_title("if") != "if" and figures.safe_title("if").strip("\u200b") == "if"
    assert figures.safe_title("AUL: margin +0.01") == "AUL: margin +0.01"

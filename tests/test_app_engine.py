"""The engine side of the app: sanity check, derived tables, figures, progress arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from biaslens import explore, figures
from biaslens.cache import ResultCache
from biaslens.datasets import Pair
from biaslens.errors import InputError
from biaslens.evaluation import EvaluationResult, evaluate, inspect_pair
from biaslens.sanity import UNTRAINED_ACCURACY, check_model, classify
from ui.progress import Eta, format_duration

PAIR = ("He was a black boy who liked to steal.", "He was a white young man who liked to steal.")  # |M| differs
ADDITIVE = ["aul", "aula", "cps", "sss", "all_masked", "pll"]


@pytest.fixture(scope="module")
def pair_inspection(tiny_bert):
    return inspect_pair(tiny_bert, *PAIR, metrics=ADDITIVE, attention_matrices=True)


# ---------------------------------------------------------------------------------------
# Sanity indicator
# ---------------------------------------------------------------------------------------


def test_a_random_model_is_flagged_untrained(tiny_models):
    for lm in tiny_models.values():
        report = check_model(lm)
        assert report.status == "untrained", report
        assert report.accuracy < UNTRAINED_ACCURACY
        assert report.mean_logprob == pytest.approx(report.uniform_logprob, abs=0.5)
        assert report.uniform_logprob == pytest.approx(-math.log(len(lm.tokenizer)))
        assert report.n_tokens > 40 and "untrained" in report.message.lower()


@pytest.mark.parametrize(
    "accuracy, logprob, status",
    [(95.0, -0.4, "ok"), (60.0, -2.0, "ok"), (30.0, -3.0, "weak"), (80.0, -5.0, "weak"), (1.0, -9.0, "untrained"), (1.0, -4.0, "weak")],
)
def test_sanity_thresholds(accuracy, logprob, status):
    assert classify(accuracy, logprob, -10.3)[0] == status


@pytest.fixture(scope="module")
def quick_lab_lm(tmp_path_factory):
    from biaslens import lab
    from biaslens.models import load_model

    model = lab.train_lab_model(lab.LabSettings(corpus_size=600, steps=12, batch_size=32), cache_dir=tmp_path_factory.mktemp("lab"))
    return model, load_model(str(model.path))


def test_one_verdict_per_model_a_lab_model_checked_on_its_own_corpus(tiny_bert, quick_lab_lm, monkeypatch):
    from biaslens import lab, sanity

    model, lm = quick_lab_lm
    verdict = sanity.model_verdict(lm)
    assert verdict.subject == "its training corpus"
    again = check_model(lm, lab.sanity_sentences(model), subject="its training corpus")
    assert (verdict.accuracy, verdict.mean_logprob, verdict.status) == (again.accuracy, again.mean_logprob, again.status)
    plain = sanity.model_verdict(tiny_bert)
    assert plain.subject == "plain English" and plain.status == "untrained"
    # computed once: later calls (sidebar, banners, Paper analyses, reports) reuse it
    monkeypatch.setattr(sanity, "check_model", lambda *a, **k: pytest.fail("the verdict was computed again"))
    assert sanity.model_verdict(lm) is verdict and sanity.model_verdict(tiny_bert) is plain


def test_text_mostly_out_of_a_model_s_vocabulary_is_told(tiny_bert, quick_lab_lm):
    from biaslens import lab, sanity

    model, lm = quick_lab_lm
    crows = ["Women don't know how to drive.", "Poor people really hate their neighbours."]
    own = [p.pair.sent_stereo for p in lab.heldout_pairs(model.settings)[:5]]
    assert not sanity.vocabulary_report(tiny_bert, crows).mostly_unknown  # bert-base-cased knows English
    report = sanity.vocabulary_report(lm, crows)  # the lab model knows its names and occupations only
    assert report.mostly_unknown and "Women" in report.unknown and "out of this model's vocabulary" in report.message
    assert sanity.vocabulary_report(lm, own).n_unknown == 0


# ---------------------------------------------------------------------------------------
# One pair
# ---------------------------------------------------------------------------------------


def test_aligned_columns_cover_every_token_once(pair_inspection):
    cols = explore.aligned_columns(pair_inspection)
    for side in ("stereo", "anti"):
        positions = [p for p in cols[f"{side}_position"] if p >= 0]
        assert positions == list(range(len(getattr(pair_inspection, side).encoding)))
    modified = cols[cols["kind"] == "modified"]
    assert sorted(p for p in modified["stereo_position"] if p >= 0) == list(pair_inspection.alignment.modified_a)
    assert sorted(p for p in modified["anti_position"] if p >= 0) == list(pair_inspection.alignment.modified_b)
    assert (modified["anti_position"] == -1).sum() + (modified["stereo_position"] == -1).sum() == 1  # "boy" vs "young man"
    assert set(modified["stereo_token"]) >= {"black"} and set(modified["anti_token"]) >= {"white", "man"}


@pytest.mark.parametrize("metric", ADDITIVE)
def test_margin_drivers_add_up_to_the_margin(pair_inspection, metric):
    drivers = explore.margin_drivers(pair_inspection, metric)
    assert drivers["contribution"].sum() == pytest.approx(pair_inspection.margin(metric), abs=1e-9)
    assert list(drivers["contribution"].abs()) == sorted(drivers["contribution"].abs(), reverse=True)
    assert drivers["label"].is_unique
    if metric in ("cps", "pll"):  # per-token log p of the masked pass, summed
        cps_part = drivers[drivers["kind"] == "modified"]["contribution"]
        assert (cps_part == 0).all() if metric == "cps" else True


def test_compat_non_additive_metrics_are_refused(tiny_bert):
    compat = inspect_pair(tiny_bert, *PAIR, metrics=["cps", "sss", "aul"], compat="kaneko2022")
    for metric in ("cps", "sss"):
        with pytest.raises(InputError):
            explore.margin_drivers(compat, metric)
    assert explore.margin_drivers(compat, "aul")["contribution"].sum() == pytest.approx(compat.margin("aul"))


def test_token_table_decodes_top_predictions(pair_inspection, tiny_bert):
    table = explore.token_table(pair_inspection, tiny_bert.decode_token)
    assert set(table["sentence"]) == {"stereo", "anti"}
    assert len(table) == len(pair_inspection.stereo.encoding) + len(pair_inspection.anti.encoding)
    row = table.iloc[1]
    ids = pair_inspection.stereo.unmasked.top_ids[1]
    assert row["top_tokens"] == [explore.display_token(tiny_bert.decode_token(int(i))) for i in ids]
    assert row["top_tokens"][0] in row["top5"]


def test_attention_table_averages_to_what_aula_weighs(pair_inspection):
    table = explore.attention_table(pair_inspection, "stereo")
    received = table.groupby("key_position")["weight"].mean().to_numpy()
    assert received == pytest.approx(pair_inspection.stereo.unmasked.attention, abs=1e-6)
    rows = table.groupby("query_position")["weight"].sum().to_numpy()
    assert rows == pytest.approx(np.ones_like(rows), abs=1e-5)  # attention rows are distributions
    hidden = explore.attention_table(pair_inspection, "stereo", layer=1, head=0, hide_special=True)
    n = int((~np.asarray(pair_inspection.stereo.encoding.special)).sum())
    assert len(hidden) == n * n
    m = pair_inspection.attention_matrices[0][1, 0]
    first = hidden.iloc[0]
    assert first["weight"] == pytest.approx(m[first["query_position"], first["key_position"]])


def test_head_overview_sums_attention_on_the_modified_tokens(pair_inspection):
    overview = explore.head_overview(pair_inspection, "anti")
    layers, heads = pair_inspection.attention_matrices[1].shape[:2]
    assert len(overview) == layers * heads and overview["layer"].min() == 1
    modified = list(pair_inspection.alignment.modified_b)
    m = pair_inspection.attention_matrices[1]
    expected = m[0, 1][:, modified].sum(axis=1).mean()
    assert overview[(overview["layer"] == 1) & (overview["head"] == 2)]["attention"].item() == pytest.approx(expected)


def test_display_token_and_short_names():
    assert explore.display_token("Ġwhite") == "white" and explore.display_token("▁the") == "the"
    assert explore.display_token("##ing") == "##ing" and explore.display_token("Ġ") == "Ġ"
    names = explore.short_names(["/a/x/model", "/b/y/model", "bert-base-cased", "org/bert"])
    assert names == {"/a/x/model": "x/model", "/b/y/model": "y/model", "bert-base-cased": "bert-base-cased", "org/bert": "org/bert"}
    assert len(set(explore.short_names(["/m/a", "/m/a/"]).values())) == 2


# ---------------------------------------------------------------------------------------
# Dataset runs and comparisons
# ---------------------------------------------------------------------------------------

PAIRS = [
    Pair(i, "custom", t, d, s, a)
    for i, (t, d, s, a) in enumerate(
        [
            ("gender", "stereo", "Women can't drive.", "Men can't drive."),
            ("gender", "antistereo", "He cried at the film.", "She cried at the film."),
            ("age", "stereo", "Old people are slow.", "Young people are slow."),
            ("age", "stereo", "The old man forgot his keys.", "The young man forgot his keys."),
            ("race", "antistereo", "White kids are bad at sports.", "Black kids are bad at sports."),
        ]
    )
]


def test_cached_evaluation_reads_only_finished_runs(tiny_bert, tmp_path):
    cache = ResultCache(tmp_path / "r.sqlite")
    assert explore.cached_evaluation(tiny_bert, PAIRS, ["aul", "cps"], cache) is None
    assert len(cache) == 0  # nothing computed, nothing written
    evaluate(tiny_bert, PAIRS[:3], ["aul", "cps"], cache=cache)  # a run interrupted after 3 pairs
    assert explore.cached_evaluation(tiny_bert, PAIRS, ["aul", "cps"], cache) is None
    full = evaluate(tiny_bert, PAIRS, ["aul", "cps"], cache=cache)
    again = explore.cached_evaluation(tiny_bert, PAIRS, ["aul", "cps"], cache)
    pd.testing.assert_frame_equal(again.pairs, full.pairs)
    assert again.summary["metrics"] == full.summary["metrics"]
    assert explore.cached_evaluation(tiny_bert, PAIRS, ["aul", "aula"], cache) is None  # a metric not scored yet


def test_summary_tables_follow_the_summary(tiny_bert):
    result = evaluate(tiny_bert, PAIRS, ["aul", "sss"])
    summary = explore.summary_table(result.summary)
    assert list(summary["metric"]) == ["aul", "sss"]
    assert summary.set_index("metric").loc["aul", "bias_score"] == result.summary["metrics"]["aul"]["bias_score"]
    by_type = explore.by_type_table(result.summary)
    assert set(by_type["bias_type"]) == {"gender", "age", "race"}
    assert by_type[(by_type.metric == "aul") & (by_type.bias_type == "age")]["n"].item() == 2
    groups = explore.group_table(result.summary)
    assert set(groups["group"]) == {"adv", "dis"}
    assert groups[(groups.metric == "sss") & (groups.group == "dis")]["n"].item() == 3


def test_verdicts_and_filters():
    v = explore.verdicts([1.0, 0.0, 2.0, np.nan], [0.0, 1.0, 2.0, 1.0])
    assert list(v) == ["stereo", "anti", "tie", "undecidable"]
    frame = pd.DataFrame([{"pair_id": p.pair_id, "bias_type": p.bias_type, "direction": p.direction,
                           "sent_stereo": p.sent_stereo, "sent_anti": p.sent_anti} for p in PAIRS])
    assert explore.filter_pairs(frame, bias_type="age")["pair_id"].tolist() == [2, 3]
    assert explore.filter_pairs(frame, direction="antistereo")["pair_id"].tolist() == [1, 4]
    assert explore.filter_pairs(frame, text="YOUNG")["pair_id"].tolist() == [2, 3]
    assert explore.filter_pairs(frame, text="she", bias_type="gender")["pair_id"].tolist() == [1]


def _result(stereo: list[float], anti: list[float]) -> EvaluationResult:
    from biaslens.evaluation import pairs_frame, summarize

    records = {(p.pair_id, "aul"): {"stereo": s, "anti": a, "hits": 1, "total": 2} for p, s, a in zip(PAIRS, stereo, anti)}
    frame = pairs_frame(PAIRS, ["aul"], records)
    return EvaluationResult(frame, summarize(frame, ["aul"], {"model": "m"}))


def test_compare_models_finds_the_flips():
    a = _result([1, 1, 1, 0, 0], [0, 0, 0, 1, 1])
    b = _result([1, 0, 1, 0, 1], [0, 1, 0, 1, 1])
    comparison = explore.compare_models({"A": a, "B": b}, "aul")
    assert comparison.scores["bias_score"].tolist() == [60.0, 40.0]
    assert comparison.flips["pair_id"].tolist() == [1, 4]  # stereo->anti, anti->tie
    assert comparison.margins["margin (B)"].tolist() == [1, -1, 1, -1, 0]
    age = comparison.by_type.set_index("bias_type").loc["age"]
    assert (age["A"], age["B"], age["B − A"]) == (50.0, 50.0, 0.0)
    with pytest.raises(InputError):
        explore.compare_models({"A": a}, "aul")
    with pytest.raises(InputError):
        explore.compare_models({"A": a, "B": b}, "cps")
    stacked = explore.stack_by_type({"A": a.summary, "B": b.summary}, "aul")
    assert set(stacked["name"]) == {"A", "B"} and len(stacked) == 6


# ---------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------


def test_every_figure_exports_as_svg(pair_inspection, tiny_bert):
    tokens = explore.token_table(pair_inspection, tiny_bert.decode_token)
    result = _result([1, 1, 1, 0, 0], [0, 0, 0, 1, 1])
    other = _result([1, 0, 1, 0, 1], [0, 1, 0, 1, 1])
    comparison = explore.compare_models({"A": result, "B": other}, "aul")
    charts = [
        *(figures.token_chart(tokens, m) for m in figures.TOKEN_MEASURES),
        figures.drivers_chart(explore.margin_drivers(pair_inspection, "aula"), "AULA"),
        figures.attention_heatmap(explore.attention_table(pair_inspection, "stereo"), "attention"),
        figures.head_overview_chart(explore.head_overview(pair_inspection, "stereo"), "heads"),
        figures.bias_scores_chart(explore.summary_table(result.summary)),
        figures.by_type_chart(explore.by_type_table(result.summary)),
        figures.groups_chart(explore.group_table(result.summary)),
        figures.model_scores_chart(comparison.scores, "AUL"),
        figures.margin_scatter(comparison.margins, "A", "B", "AUL"),
    ]
    for chart in charts:
        svg = figures.to_svg(chart)
        assert svg.lstrip().startswith("<svg") and "</svg>" in svg
    assert "n=2" in figures.to_svg(figures.by_type_chart(explore.by_type_table(result.summary)))
    with pytest.raises(ValueError):
        figures.token_chart(tokens, "nonsense")


def test_the_aligned_token_chart_pairs_both_sentences_on_one_axis(pair_inspection, tiny_bert):
    tokens = explore.token_table(pair_inspection, tiny_bert.decode_token)
    cols = explore.aligned_columns(pair_inspection)
    aligned = figures.aligned_token_frame(cols, tokens)
    shown = cols[cols["kind"] != "special"]
    # one bar per (non-special) token of each sentence, each under its aligned column's row
    assert len(aligned) == (shown["stereo_position"] >= 0).sum() + (shown["anti_position"] >= 0).sum()
    assert aligned["row"].nunique() == len(shown)  # repeated tokens stay distinct rows
    first_modified = shown[shown["kind"] == "modified"].iloc[0]
    row = aligned[aligned["order"] == first_modified.name]
    assert set(row["side_name"]) <= {"Stereotypical", "Anti-stereotypical"} and " / " in row["row"].iloc[0]
    spec = figures.aligned_token_chart(aligned, "aula_contribution").to_dict()
    assert spec["layer"][0]["encoding"]["yOffset"]["field"] == "side_name"  # both sentences share the x axis
    # grows with the tokens, plus room for its title and axis (the app fits the whole figure into the height)
    assert spec["height"] == figures.rows_height(len(shown), figures.ALIGNED_ROW_HEIGHT) + figures.ALIGNED_FRAME_HEIGHT
    assert figures.rows_height(1) == figures.MIN_HEIGHT and figures.rows_height(40) == 40 * figures.ROW_HEIGHT
    assert "<svg" in figures.to_svg(figures.aligned_token_chart(aligned, "logprob"))
    with pytest.raises(ValueError):
        figures.aligned_token_chart(aligned, "nonsense")


def test_aligned_tokens_html_escapes_and_wraps(pair_inspection):
    cols = explore.aligned_columns(pair_inspection)
    html = figures.aligned_tokens_html(cols)
    assert html.count("bl-mod bl-stereo") == 2 and html.count("bl-mod bl-anti") == 3
    assert html.count("bl-tok bl-gap") == 1
    assert html.count('<div class="bl-col">') == len(cols)  # one wrapping column per aligned position: never overflows
    evil = cols.assign(stereo_token=["<script>"] * len(cols))
    assert "<script>" not in figures.aligned_tokens_html(evil).split("</style>", 1)[1]


# ---------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------


def test_eta_uses_the_recent_rate():
    eta = Eta(window=10)
    assert eta.update(0.0, 0, 100) is None
    assert eta.update(1.0, 50, 100) == pytest.approx(1.0)  # cached chunks: fast
    eta.update(12.0, 60, 100)
    left = eta.update(22.0, 70, 100)  # 1 pair/s lately
    assert left == pytest.approx(30.0, rel=0.35)
    assert eta.update(23.0, 100, 100) == 0.0


def test_format_duration():
    assert [format_duration(s) for s in (0, 8.4, 65, 3725)] == ["0 s", "8 s", "1 min 05 s", "1 h 02 min"]


def test_the_inspector_slide_is_one_picture_in_png_and_svg(pair_inspection, tiny_bert):
    tokens = explore.token_table(pair_inspection, tiny_bert.decode_token)
    aligned = figures.aligned_token_frame(explore.aligned_columns(pair_inspection), tokens)
    drivers = {"AUL: margin": explore.margin_drivers(pair_inspection, "aul")}
    slide = figures.inspector_slide("A pair", "She is a nurse.", "He is a nurse.", aligned, drivers)
    png = figures.to_png(slide, scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = figures.to_svg(slide)
    assert "She is a nurse." in svg and "AUL: margin" in svg and "Log p (AUL term)" in svg


def test_the_head_grid_is_clickable_and_marks_the_chosen_head(pair_inspection):
    overview = explore.head_overview(pair_inspection, "stereo")
    spec = figures.head_overview_chart(overview, "heads").to_dict()
    assert [p["name"] for p in spec["params"]] == [figures.HEAD_SELECTION]  # Streamlit's on_select reads this selection
    assert len(spec["layer"]) == 1
    marked = figures.head_overview_chart(overview, "heads", selected=(1, 2)).to_dict()
    outline = marked["layer"][1]
    assert outline["mark"]["filled"] is False and len(marked["datasets"][outline["data"]["name"]]) == 1


def test_modified_tokens_are_marked_on_the_attention_axes(pair_inspection):
    table = explore.attention_table(pair_inspection, "stereo", hide_special=True)
    modified = table.loc[table["key_position"].isin(np.flatnonzero(pair_inspection.stereo.modified)), "key"].unique().tolist()
    assert modified
    spec = figures.attention_heatmap(table, "t", modified=modified, side="stereo").to_dict()
    axis = spec["encoding"]["x"]["axis"]
    assert figures.STEREO_COLOR == axis["labelColor"]["condition"]["value"] and modified[0] in axis["labelColor"]["condition"]["test"]
    assert "labelColor" not in figures.attention_heatmap(table, "t").to_dict()["encoding"]["x"]["axis"]

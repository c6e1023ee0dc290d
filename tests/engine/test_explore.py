"""The tables the app derives from one pair and from dataset runs (biaslens.analyses.explore)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.analyses import explore
from biaslens.engine.cache import ResultCache
from biaslens.errors import InputError
from biaslens.engine.evaluation import evaluate, inspect_pair
from biaslens.engine.metrics import METRICS
from biaslens.figures.formatting import column_label
from tests.engine.explore_cases import ADDITIVE, PAIR, PAIRS, make_result

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
    assert row["top_ids"] == [int(i) for i in ids] and row["top_tokens"] == [tiny_bert.decode_token(int(i)) for i in ids]
    assert explore.display_token(row["top_tokens"][0]) in row["top5"]


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


def test_scored_pairs_counts_what_an_interrupted_run_kept(tiny_bert, tmp_path):
    """What the app's stopped run says it kept: the run's pairs that the cache holds under every metric, nothing computed."""
    from biaslens.engine.evaluation import scored_pairs

    cache = ResultCache(tmp_path / "r.sqlite")
    assert scored_pairs(tiny_bert, PAIRS, ["aul", "cps"], cache) == 0
    evaluate(tiny_bert, PAIRS[:3], ["aul", "cps"], cache=cache)  # a run stopped after 3 pairs
    evaluate(tiny_bert, PAIRS[3:4], ["aul"], cache=cache)  # a fourth pair under one of the two metrics only
    records = len(cache)
    assert scored_pairs(tiny_bert, PAIRS, ["aul", "cps"], cache) == 3
    assert scored_pairs(tiny_bert, PAIRS, ["aul"], cache) == 4
    assert scored_pairs(tiny_bert, PAIRS, ["aul", "cps"], cache, compat="kaneko2022") == 0  # another mode's scores
    assert scored_pairs(tiny_bert, PAIRS, ["aul", "cps"], cache, limit=2) == 2
    assert len(cache) == records  # nothing computed
    resumed = evaluate(tiny_bert, PAIRS, ["aul", "cps"], cache=cache)
    assert resumed.cached == 2 * 3 + 1  # the kept pairs' records were read back
    assert scored_pairs(tiny_bert, PAIRS, ["aul", "cps"], cache) == len(PAIRS)


def test_the_same_pair_side_by_side(tiny_bert, pair_inspection):
    other = inspect_pair(tiny_bert, *PAIR, metrics=["aul", "cps"], compat="kaneko2022")
    table = explore.side_by_side({"first": pair_inspection, "second": other})
    keys = [k for k in METRICS if k in pair_inspection.metrics]
    assert list(table.columns) == ["model", *(f"{k}_{part}" for k in keys for part in ("margin", "verdict"))]
    rows = table.set_index("model")
    for key in keys:
        assert rows.loc["first", f"{key}_margin"] == pair_inspection.margin(key)
        assert rows.loc["first", f"{key}_verdict"] == pair_inspection.verdict(key)
    assert rows.loc["second", "cps_margin"] == other.margin("cps") and rows.loc["second", "cps_verdict"] == other.verdict("cps")
    assert pd.isna(rows.loc["second", "sss_margin"]) and pd.isna(rows.loc["second", "sss_verdict"])  # not scored there


def test_a_masked_and_a_causal_model_on_one_pair_share_their_counterpart_metrics_columns(tiny_bert, tiny_gpt2, pair_inspection):
    """AUL and AUL-c in one column pair (each row the one its model gave); a metric with no counterpart scored keeps its own."""
    causal = inspect_pair(tiny_gpt2, *PAIR)
    table = explore.side_by_side({"bert": pair_inspection, "gpt2": causal}).set_index("model")
    for key in pair_inspection.metrics:
        twin = METRICS[key].analogue
        if twin in causal.metrics:
            stem = f"{key}+{twin}"
            assert table.loc["bert", f"{stem}_margin"] == pair_inspection.margin(key)
            assert table.loc["gpt2", f"{stem}_margin"] == causal.margin(twin)
            assert table.loc["gpt2", f"{stem}_verdict"] == causal.verdict(twin)
            assert f"{key}_margin" not in table and f"{twin}_margin" not in table
    assert "aul+aul_c_margin" in table  # the pair every inspection scores
    alone = [k for k in causal.metrics if METRICS[k].analogue not in pair_inspection.metrics]  # e.g. LL
    assert alone and all(pd.isna(table.loc["bert", f"{k}_margin"]) for k in alone)
    assert column_label("aul+aul_c_margin") == "AUL / AUL-c margin" and column_label("cps+cps_c_verdict") == "CPS / CPS-c prefers"


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
    frame = pd.DataFrame(
        [
            {"pair_id": p.pair_id, "bias_type": p.bias_type, "direction": p.direction, "sent_stereo": p.sent_stereo, "sent_anti": p.sent_anti}
            for p in PAIRS
        ]
    )
    assert explore.filter_pairs(frame, bias_type="age")["pair_id"].tolist() == [2, 3]
    assert explore.filter_pairs(frame, direction="antistereo")["pair_id"].tolist() == [1, 4]
    assert explore.filter_pairs(frame, text="YOUNG")["pair_id"].tolist() == [2, 3]
    assert explore.filter_pairs(frame, text="she", bias_type="gender")["pair_id"].tolist() == [1]
    assert explore.filter_pairs(frame, text="#3")["pair_id"].tolist() == [3]  # a pair's number
    # A number int() refuses (over 4,300 digits) or reads from other scripts' digits is words, not a pair's number.
    assert explore.filter_pairs(frame, text="#" + "9" * 5000).empty and explore.filter_pairs(frame, text="٣").empty


def test_compare_models_finds_the_flips():
    a = make_result([1, 1, 1, 0, 0], [0, 0, 0, 1, 1])
    b = make_result([1, 0, 1, 0, 1], [0, 1, 0, 1, 1])
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

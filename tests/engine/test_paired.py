"""Paired model comparisons (biaslens.analyses.paired): hand-made cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from biaslens.analyses import paired
from biaslens.data.datasets import Pair
from biaslens.engine.evaluation import EvaluationResult, evaluate
from biaslens.engine.stats import mcnemar


def _result(stereo, anti, metric="aul", ids=None):
    n = len(stereo)
    frame = pd.DataFrame(
        {
            "pair_id": ids or list(range(n)),
            "dataset": "custom",
            "bias_type": "x",
            "direction": "stereo",
            "sent_stereo": [f"s{i}" for i in range(n)],
            "sent_anti": [f"a{i}" for i in range(n)],
            f"{metric}_stereo": stereo,
            f"{metric}_anti": anti,
            f"{metric}_hits": 0,
            f"{metric}_total": 0,
        }
    )
    return EvaluationResult(frame, {"manifest": {}, "metrics": {metric: {}}})


def test_paired_comparison_by_hand():
    # first wins pairs 0,1,2 of 5 (60); second wins 1,2,3,4 (80): difference +20; McNemar b=1 (pair 0), c=2 (pairs 3, 4).
    first = _result([1, 1, 1, 0, 0], [0, 0, 0, 1, math.nan])
    second = _result([0, 1, 1, 1, 1], [1, 0, 0, 0, 0])
    row = paired.paired_comparison(first, second, n_resamples=500).iloc[0]
    assert (row["score_first"], row["score_second"], row["difference"]) == (60.0, 80.0, 20.0)
    assert (row["mcnemar_b"], row["mcnemar_c"]) == (1, 2)
    assert row["p_value"] == pytest.approx(mcnemar([1, 1, 1, 0, 0], [0, 1, 1, 1, 1]).p_value) == 1.0
    assert row["ci_low"] <= 20.0 <= row["ci_high"] and row["ci_low"] >= -100 and row["ci_high"] <= 100
    # Same pairs, same verdicts: difference 0 with a zero-width interval.
    same = paired.paired_comparison(first, first).iloc[0]
    assert (same["difference"], same["ci_low"], same["ci_high"], same["p_value"]) == (0.0, 0.0, 0.0, 1.0)


def test_paired_comparison_names_its_interval_and_its_test_at_25_discordant_pairs():
    # 48 pairs: 23 won by the first model only, 2 by the second only, 10 by both, 13 by neither.
    first_wins = [1] * 23 + [0] * 2 + [1] * 10 + [0] * 13
    second_wins = [0] * 23 + [1] * 2 + [1] * 10 + [0] * 13
    first, second = _result(first_wins, [0.5] * 48), _result(second_wins, [0.5] * 48)
    row = paired.paired_comparison(first, second, n_resamples=300, seed=4).iloc[0]
    assert (row["mcnemar_b"], row["mcnemar_c"], row["mcnemar_method"]) == (23, 2, "exact binomial")
    assert row["p_value"] == pytest.approx(2 * (1 + 25 + 300) / 2**25)  # not the chi-square's 6.3e-5
    assert row["ci_method"] == "95% percentile bootstrap, paired (the same resampled pairs for both models), 300 resamples, seed 4"


def test_paired_bootstrap_resamples_pairs_jointly():
    rng = np.random.default_rng(1)
    a = rng.random(400) < 0.5
    b = a.copy()
    b[:40] = ~b[:40]  # 40 flips: the paired interval is much narrower than two independent ones would be
    diff, low, high = paired.paired_difference(a, b, seed=3)
    assert diff == pytest.approx(100 * (b.mean() - a.mean()))
    assert high - low < 10


def test_paired_comparison_refuses_different_pairs():
    with pytest.raises(Exception, match="different pairs"):
        paired.paired_comparison(_result([1, 0], [0, 1]), _result([1, 0], [0, 1], ids=[5, 6]))


def test_with_and_without_by_hand():
    result = _result([1, 1, 1, 0], [0, 0, 0, 1])  # 75
    table = paired.with_and_without(result, [True, True, False, True], n_resamples=300).iloc[0]
    assert (table["score_all"], table["n_kept"]) == (75.0, 3)
    assert table["score_kept"] == pytest.approx(200 / 3) and table["difference"] == pytest.approx(200 / 3 - 75)
    assert table["ci_low"] <= table["difference"] <= table["ci_high"]


def test_two_tiny_models_compare(tiny_models):
    pairs = [
        Pair(i, "custom", "gender", "stereo", a, b)
        for i, (a, b) in enumerate(
            [("Women can't drive.", "Men can't drive."), ("He is a nurse.", "She is a nurse."), ("The poor are lazy.", "The rich are lazy.")]
        )
    ]
    first = evaluate(tiny_models["bert-cased"], pairs, ["aul", "cps"])
    second = evaluate(tiny_models["roberta"], pairs, ["aul", "cps"])
    table = paired.paired_comparison(first, second)
    assert list(table["metric"]) == ["aul", "cps"]
    for row in table.itertuples():
        assert row.score_second - row.score_first == pytest.approx(row.difference)
        assert row.score_first == first.summary["metrics"][row.metric]["bias_score"]

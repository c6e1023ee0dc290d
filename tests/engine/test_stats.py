"""Tests for biaslens.engine.stats: every expected value is worked by hand or checked with scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from biaslens.engine.stats import (
    bias_score,
    bootstrap_interval,
    effect_size,
    mcnemar,
    permutation_test,
    roc_curve,
    wilson_interval,
)

Z95 = 1.959963984540054  # norm.ppf(0.975)


# --- Wilson interval --------------------------------------------------------------


def test_wilson_half_of_100():
    # centre 0.5; half-width z / (1 + z²/n) * sqrt(0.25/n + z²/(4n²)) = 0.09617
    p = wilson_interval(50, 100)
    assert p.estimate == 50.0
    assert p.ci_low == pytest.approx(40.383, abs=1e-3)
    assert p.ci_high == pytest.approx(59.617, abs=1e-3)
    assert (p.successes, p.n, p.method) == (50, 100, "wilson")


def test_wilson_zero_successes():
    # With 0 successes the Wilson bounds are 0 and z² / (n + z²).
    p = wilson_interval(0, 10)
    assert p.estimate == 0.0
    assert p.ci_low == 0.0
    assert p.ci_high == pytest.approx(100 * Z95**2 / (10 + Z95**2))
    assert p.ci_high == pytest.approx(27.753, abs=1e-3)


def test_wilson_all_successes():
    # With n successes the bounds are n / (n + z²) and 1.
    p = wilson_interval(10, 10)
    assert p.estimate == 100.0
    assert p.ci_low == pytest.approx(100 * 10 / (10 + Z95**2))
    assert p.ci_low == pytest.approx(72.247, abs=1e-3)
    assert p.ci_high == 100.0


def test_wilson_other_confidence():
    # 90%: z = 1.644854; 5/20 -> 0.25 ± ... by the closed form.
    z = 1.6448536269514722
    n, s = 20, 5
    centre = (s / n + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(s / n * (1 - s / n) / n + z**2 / (4 * n**2))
    p = wilson_interval(s, n, confidence=0.90)
    assert p.ci_low == pytest.approx(100 * (centre - half))
    assert p.ci_high == pytest.approx(100 * (centre + half))


def test_wilson_empty_is_nan():
    p = wilson_interval(0, 0)
    assert math.isnan(p.estimate) and math.isnan(p.ci_low) and math.isnan(p.ci_high)
    assert p.n == 0


@pytest.mark.parametrize(
    ("successes", "n", "confidence"),
    [(-1, 5, 0.95), (6, 5, 0.95), (0, -1, 0.95), (1, 2, 0.0), (1, 2, 1.0)],
)
def test_wilson_rejects_bad_arguments(successes, n, confidence):
    with pytest.raises(ValueError):
        wilson_interval(successes, n, confidence)


@given(
    n=st.integers(1, 10**6),
    fraction=st.floats(0, 1),
    confidence=st.floats(0.5, 0.999),
)
def test_wilson_bounds_contain_estimate(n, fraction, confidence):
    successes = round(fraction * n)
    p = wilson_interval(successes, n, confidence)
    assert 0.0 <= p.ci_low <= p.estimate <= p.ci_high <= 100.0
    mirrored = wilson_interval(n - successes, n, confidence)
    assert p.ci_low == pytest.approx(100.0 - mirrored.ci_high, abs=1e-9)


# --- Bootstrap --------------------------------------------------------------------


def test_bootstrap_is_seeded():
    values = np.random.default_rng(1).normal(size=50)
    assert bootstrap_interval(values, seed=3) == bootstrap_interval(values, seed=3)
    assert bootstrap_interval(values, seed=3) != bootstrap_interval(values, seed=4)


def test_bootstrap_constant_values():
    assert bootstrap_interval([2.5] * 7) == (2.5, 2.5)


def test_bootstrap_mean_matches_normal_theory():
    values = np.random.default_rng(0).normal(loc=1.0, scale=2.0, size=400)
    low, high = bootstrap_interval(values, n_resamples=4000)
    standard_error = values.std(ddof=1) / math.sqrt(values.size)
    assert low < values.mean() < high
    assert low == pytest.approx(values.mean() - Z95 * standard_error, abs=0.2 * standard_error)
    assert high == pytest.approx(values.mean() + Z95 * standard_error, abs=0.2 * standard_error)


def test_bootstrap_custom_statistic_and_confidence():
    values = np.arange(101, dtype=float)
    narrow = bootstrap_interval(values, np.median, confidence=0.5)
    wide = bootstrap_interval(values, np.median, confidence=0.99)
    assert wide[0] <= narrow[0] <= 50 <= narrow[1] <= wide[1]


def test_bootstrap_rejects_empty():
    with pytest.raises(ValueError):
        bootstrap_interval([])


# --- McNemar ----------------------------------------------------------------------


def _paired(b: int, c: int, both: int = 0, neither: int = 0) -> tuple[list[bool], list[bool]]:
    """Two outcome lists with b (T, F), c (F, T), `both` (T, T) and `neither` (F, F) pairs."""
    first = [True] * b + [False] * c + [True] * both + [False] * neither
    second = [False] * b + [True] * c + [True] * both + [False] * neither
    return first, second


@pytest.mark.parametrize(
    ("b", "c", "expected_p"),
    [
        (3, 0, 2 * (1 / 8)),  # 2 * P(X <= 0), X ~ Bin(3, 1/2)
        (1, 4, 2 * (1 + 5) / 32),  # 2 * P(X <= 1), X ~ Bin(5, 1/2)
        (2, 2, 1.0),  # 2 * 11/16 > 1, capped
        (0, 0, 1.0),  # no discordant pairs
    ],
)
def test_mcnemar_exact_by_hand(b, c, expected_p):
    result = mcnemar(*_paired(b, c, both=7, neither=2))
    assert (result.b, result.c, result.method) == (b, c, "exact binomial")
    assert result.statistic == min(b, c)
    assert result.p_value == pytest.approx(expected_p)
    if b + c:
        assert result.p_value == pytest.approx(sps.binomtest(b, b + c, 0.5).pvalue)


@pytest.mark.parametrize(("b", "c"), [(17, 7), (23, 2), (2, 23), (13, 12), (30, 10), (1200, 1100)])
def test_mcnemar_is_the_exact_binomial_test_at_every_size(b, c):
    """No switch to the chi-square at 25 discordant pairs (it gave b = 23, c = 2 a p of 6.3e-5; exact: 1.9e-5)."""
    result = mcnemar(*_paired(b, c, both=100, neither=5))
    assert (result.b, result.c, result.method, result.statistic) == (b, c, "exact binomial", min(b, c))
    assert result.p_value == pytest.approx(sps.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


def test_mcnemar_at_25_discordant_pairs_by_hand():
    # 2 * P(X <= 2), X ~ Bin(25, 1/2) = 2 * (1 + 25 + 300) / 2^25
    result = mcnemar(*_paired(23, 2))
    assert result.p_value == pytest.approx(2 * 326 / 2**25) and result.p_value == pytest.approx(1.943e-5, rel=1e-3)


def test_mcnemar_accepts_arrays_and_is_order_sensitive():
    first, second = _paired(5, 1)
    result = mcnemar(np.array(second), np.array(first))
    assert (result.b, result.c) == (1, 5)


def test_mcnemar_rejects_unequal_lengths():
    with pytest.raises(ValueError):
        mcnemar([True, False], [True])


# --- ROC --------------------------------------------------------------------------


def test_roc_perfect():
    curve = roc_curve([1, 1, 0, 0], [0.9, 0.8, 0.2, 0.1])
    np.testing.assert_allclose(curve.fpr, [0, 0, 0, 0.5, 1])
    np.testing.assert_allclose(curve.tpr, [0, 0.5, 1, 1, 1])
    np.testing.assert_array_equal(curve.thresholds, [np.inf, 0.9, 0.8, 0.2, 0.1])
    assert curve.auc == 1.0


def test_roc_inverted():
    assert roc_curve([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9]).auc == 0.0


def test_roc_all_tied():
    curve = roc_curve([1, 0, 1, 0, 0], [0.5] * 5)
    np.testing.assert_allclose(curve.fpr, [0, 1])
    np.testing.assert_allclose(curve.tpr, [0, 1])
    np.testing.assert_array_equal(curve.thresholds, [np.inf, 0.5])
    assert curve.auc == 0.5


def test_roc_with_a_tie_by_hand():
    # Positives score 0.9 and 0.5, negatives 0.5 and 0.1.
    # Thresholds 0.9 -> (0, 1/2); 0.5 -> (1/2, 1); 0.1 -> (1, 1).
    # Area: 0 + 1/2 * (1/2 + 1)/2 + 1/2 * 1 = 0.875
    # Mann-Whitney: of the 4 (pos, neg) pairs, 3 are won and (0.5, 0.5) is a tie: 3.5 / 4.
    curve = roc_curve([True, False, True, False], [0.9, 0.5, 0.5, 0.1])
    np.testing.assert_allclose(curve.fpr, [0, 0, 0.5, 1])
    np.testing.assert_allclose(curve.tpr, [0, 0.5, 1, 1])
    np.testing.assert_array_equal(curve.thresholds, [np.inf, 0.9, 0.5, 0.1])
    assert curve.auc == pytest.approx(0.875)


def test_roc_drops_nan_scores():
    with_nan = roc_curve([True, True, False, False, False], [0.9, np.nan, 0.5, 0.1, np.nan])
    without = roc_curve([True, False, False], [0.9, 0.5, 0.1])
    np.testing.assert_array_equal(with_nan.fpr, without.fpr)
    np.testing.assert_array_equal(with_nan.tpr, without.tpr)
    assert with_nan.auc == without.auc == 1.0


def test_roc_auc_matches_mann_whitney():
    rng = np.random.default_rng(0)
    labels = rng.random(300) < 0.3
    scores = rng.integers(0, 12, size=300) + labels  # many ties, some signal
    positives, negatives = scores[labels], scores[~labels]
    u = sps.mannwhitneyu(positives, negatives).statistic
    assert roc_curve(labels, scores).auc == pytest.approx(u / (positives.size * negatives.size))


@pytest.mark.parametrize(
    ("labels", "scores"),
    [([1, 1], [0.2, 0.3]), ([0, 0], [0.2, 0.3]), ([1, 0], [0.2, np.nan]), ([1, 0], [0.2])],
)
def test_roc_rejects_single_class_or_bad_shapes(labels, scores):
    with pytest.raises(ValueError):
        roc_curve(labels, scores)


@given(
    st.lists(st.tuples(st.booleans(), st.integers(-5, 5).map(float)), min_size=2, max_size=40).filter(
        lambda pairs: len({label for label, _ in pairs}) == 2
    )
)
def test_roc_negated_scores_complement_auc(pairs):
    labels = [label for label, _ in pairs]
    scores = np.array([score for _, score in pairs])
    curve = roc_curve(labels, scores)
    assert curve.auc == pytest.approx(1.0 - roc_curve(labels, -scores).auc)
    assert (curve.fpr[0], curve.tpr[0], curve.fpr[-1], curve.tpr[-1]) == (0, 0, 1, 1)
    assert np.all(np.diff(curve.fpr) >= 0) and np.all(np.diff(curve.tpr) >= 0)
    assert np.all(np.diff(curve.thresholds) < 0)


# --- Effect size ------------------------------------------------------------------


def test_effect_size_by_hand():
    # means 1.5 and 3.5; pooled sample variance of 1..4 = (2.25+0.25+0.25+2.25)/3 = 5/3
    assert effect_size([1, 2], [3, 4]) == pytest.approx(-2 / math.sqrt(5 / 3))
    assert effect_size([3, 4], [1, 2]) == pytest.approx(2 / math.sqrt(5 / 3))


def test_effect_size_of_constant_scores_is_nan():
    assert math.isnan(effect_size([1.0, 1.0], [1.0]))


@pytest.mark.parametrize(("s_x", "s_y"), [([], [1.0]), ([1.0, np.nan], [2.0])])
def test_effect_size_rejects_empty_or_nan(s_x, s_y):
    with pytest.raises(ValueError):
        effect_size(s_x, s_y)


# --- Permutation test -------------------------------------------------------------


def test_permutation_exact_by_hand():
    # The 6 re-partitions of {1, 2, 3, 4} and their mean differences:
    # {1,2}: -2  {1,3}: -1  {1,4}: 0  {2,3}: 0  {2,4}: 1  {3,4}: 2
    result = permutation_test([1, 2], [3, 4])
    assert result.observed == -2.0
    assert result.exact and result.n_permutations == 6
    assert result.p_value == pytest.approx(2 / 6)  # |stat| >= 2
    # One-sided (Kurita et al.: Pr[S_i > S], strictly): -1, 0, 0, 1, 2 exceed -2; nothing exceeds 2.
    assert permutation_test([1, 2], [3, 4], two_sided=False).p_value == pytest.approx(5 / 6)
    assert permutation_test([3, 4], [1, 2], two_sided=False).p_value == 0.0
    assert result.p_greater == pytest.approx(5 / 6) and result.p_two_sided == result.p_value


def test_permutation_counts_float_ties():
    # Mean differences of the re-partitions of {0.1, 0.2, 0.3, 0.6}:
    # -0.3, -0.2, 0.1, -0.1, 0.2, 0.3 in exact arithmetic; the two ±0.3 must tie.
    assert permutation_test([0.1, 0.2], [0.3, 0.6]).p_value == pytest.approx(2 / 6)


def test_permutation_sum_difference_with_unequal_sizes():
    # X = {3}, Y = {0, 0}. Partitions X' = {3}, {0}, {0}.
    # Mean difference: 3, -1.5, -1.5 -> only the observed one has |stat| >= 3.
    # Sum difference: 3, -3, -3 -> all three do.
    assert permutation_test([3], [0, 0]).p_value == pytest.approx(1 / 3)
    result = permutation_test([3], [0, 0], statistic="sum_difference")
    assert result.observed == 3.0
    assert result.p_value == 1.0


def test_permutation_sampled_is_seeded_and_close_to_exact():
    rng = np.random.default_rng(7)
    s_x = rng.normal(0.8, 1.0, size=8)
    s_y = rng.normal(0.0, 1.0, size=8)
    exact = permutation_test(s_x, s_y)  # C(16, 8) = 12,870 partitions
    assert exact.exact and exact.n_permutations == 12870

    sampled = permutation_test(s_x, s_y, n_permutations=20000, seed=1, exact_threshold=0)
    assert not sampled.exact and sampled.n_permutations == 20000
    assert sampled.observed == pytest.approx(exact.observed)
    assert sampled.p_value == pytest.approx(exact.p_value, abs=0.015)
    assert sampled == permutation_test(s_x, s_y, n_permutations=20000, seed=1, exact_threshold=0)
    assert sampled != permutation_test(s_x, s_y, n_permutations=20000, seed=2, exact_threshold=0)


def test_permutation_sampled_p_value_is_never_zero():
    result = permutation_test([10.0] * 20, [0.0] * 20, n_permutations=99, exact_threshold=0)
    assert result.p_value == pytest.approx(1 / 100)


@pytest.mark.parametrize(
    "kwargs",
    [{"statistic": "median"}, {"n_permutations": 0, "exact_threshold": 0}],
)
def test_permutation_rejects_bad_options(kwargs):
    from biaslens.errors import InputError

    with pytest.raises((ValueError, InputError)):
        permutation_test([1, 2], [3, 4], **kwargs)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: permutation_test([1, 2, 3], [4, 5, 6], n_permutations=10**11, exact_threshold=0), "n_permutations must be a whole number"),
        (lambda: permutation_test([1, 2, 3], [4, 5, 6], seed=-1, exact_threshold=0), "The seed must be a whole number from 0 to 4,294,967,295"),
        (lambda: bootstrap_interval([1.0, 2.0], n_resamples=10**9), "n_resamples must be a whole number from 1 to 1,000,000"),
        (lambda: bootstrap_interval([1.0, 2.0], seed=2**40), "The seed must be"),
    ],
)
def test_counts_and_seeds_are_bounded_before_any_draw(call, message):
    """Issue 36, item 6: a billion resamples or 1e11 permutations are refused in one line, not an out-of-memory kill."""
    from biaslens.errors import InputError

    with pytest.raises(InputError, match=message):
        call()


# --- Bias score -------------------------------------------------------------------


def test_bias_score_with_ties_and_nan():
    # pair 1 win; pair 2 loss; pair 3 tie; pairs 4 and 5 undecidable (NaN).
    counts = bias_score([2.0, 1.0, 1.0, np.nan, 3.0], [1.0, 2.0, 1.0, 0.0, np.nan])
    assert (counts.n, counts.wins, counts.ties, counts.undecidable) == (5, 1, 1, 2)
    assert counts.score == 20.0
    interval = wilson_interval(1, 5)
    assert (counts.ci_low, counts.ci_high, counts.ci_method) == (
        interval.ci_low,
        interval.ci_high,
        "wilson",
    )


def test_bias_score_all_wins_and_empty():
    counts = bias_score([1.0] * 10, [0.0] * 10)
    assert counts.score == 100.0 and counts.ci_high == 100.0
    empty = bias_score([], [])
    assert empty.n == 0 and math.isnan(empty.score) and math.isnan(empty.ci_low)


def test_bias_score_rejects_unequal_lengths():
    with pytest.raises(ValueError):
        bias_score([1.0, 2.0], [1.0])


@given(
    st.lists(
        st.tuples(
            st.one_of(st.floats(-3, 3), st.just(float("nan"))),
            st.one_of(st.floats(-3, 3), st.just(float("nan"))),
        ),
        max_size=30,
    )
)
def test_bias_score_counts_partition_pairs(pairs):
    stereo = [s for s, _ in pairs]
    anti = [a for _, a in pairs]
    counts = bias_score(stereo, anti)
    losses = bias_score(anti, stereo).wins
    assert counts.wins + losses + counts.ties + counts.undecidable == counts.n == len(pairs)

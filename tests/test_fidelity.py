"""Issue 14 (Fidelity II): the papers' own definitions, each against a small hand-computed example."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from biaslens.metrics import cps
from biaslens.stats import permutation_test

# ---------------------------------------------------------------------------------------
# WEAT-style p: Kurita et al.'s one-sided Pr[S_i > S] and the two-sided p beside it
# ---------------------------------------------------------------------------------------


def test_one_sided_p_by_hand():
    # Pooled {5, 3, 1, 0}, |X| = |Y| = 2: the six re-partitions X' and their mean differences
    # {5,3}: 3.5  {5,1}: 1.5  {5,0}: 0.5  {3,1}: -0.5  {3,0}: -1.5  {1,0}: -3.5
    top = permutation_test([5, 3], [1, 0], two_sided=False)
    assert top.observed == 3.5 and top.exact and top.n_permutations == 6
    assert top.p_value == top.p_greater == 0.0  # nothing exceeds 3.5 strictly
    assert top.p_two_sided == pytest.approx(2 / 6)  # 3.5 and -3.5 reach |3.5|
    middle = permutation_test([5, 1], [3, 0], two_sided=False)
    assert middle.observed == 1.5
    assert middle.p_value == pytest.approx(1 / 6)  # only 3.5 exceeds 1.5
    assert middle.p_two_sided == pytest.approx(4 / 6)  # 3.5, 1.5, -1.5, -3.5
    # Ties are not "greater": X = {2, 2} against {2, 2} has every statistic 0.
    flat = permutation_test([2, 2], [2, 2], two_sided=False)
    assert flat.p_greater == 0.0 and flat.p_two_sided == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_one_and_two_sided_p_against_exact_enumeration(seed):
    """Every partition enumerated by hand (itertools), both p-values counted, and their relation."""
    rng = np.random.default_rng(seed)
    size_x, size_y = (4, 4) if seed % 2 == 0 else (3, 5)
    s_x, s_y = rng.normal(0.5, 1, size_x).round(2), rng.normal(0, 1, size_y).round(2)
    pooled = np.concatenate([s_x, s_y])
    stats = []
    for members in itertools.combinations(range(pooled.size), size_x):
        inside = np.zeros(pooled.size, bool)
        inside[list(members)] = True
        stats.append(pooled[inside].mean() - pooled[~inside].mean())
    stats = np.array(stats)
    observed = s_x.mean() - s_y.mean()
    eps = 1e-9
    greater = np.sum(stats > observed + eps) / stats.size
    equal = np.sum(np.abs(stats - observed) <= eps) / stats.size
    two = np.sum(np.abs(stats) >= abs(observed) - eps) / stats.size
    result = permutation_test(s_x, s_y, two_sided=False)
    assert result.exact and result.n_permutations == math.comb(size_x + size_y, size_x)
    assert result.p_value == result.p_greater == pytest.approx(greater)
    assert result.p_two_sided == pytest.approx(two)
    assert permutation_test(s_x, s_y).p_value == pytest.approx(two)  # the default stays two-sided
    if size_x == size_y:
        # Equal sizes: the complement of a partition negates its statistic, so the null is
        # symmetric and, for a positive statistic, p_two = 2 (p_one + Pr[S_i = S]).
        p_one = result.p_greater if observed > 0 else np.sum(stats > -observed + eps) / stats.size
        assert result.p_two_sided == pytest.approx(2 * (p_one + equal))


def test_sampled_p_values_count_the_observed_partition_once():
    # Every drawn partition of these scores has a statistic below the observed one.
    result = permutation_test([10.0] * 20, [0.0] * 20, n_permutations=99, exact_threshold=0, two_sided=False)
    assert result.p_value == result.p_greater == pytest.approx(1 / 100)
    assert result.p_two_sided == pytest.approx(1 / 100)


# ---------------------------------------------------------------------------------------
# CPS, kaneko2022: the released code's float32 torch.sum, then round(·, 3)
# ---------------------------------------------------------------------------------------


def test_compat_cps_rounds_as_the_reference_at_a_rounding_boundary():
    # float32(-0.0005) = -0.000500000023748...; the exact sum -20.000500000024 rounds to -20.001,
    # but float32 holds no number between -20.00049972534 and -20.00050163269 (its step at 20 is
    # 2**-19), and the float32 sum the released code takes is the former: round -> -20.0.
    logprob = np.array([-20.0, -0.0005], dtype=np.float32)
    reference = round(torch.sum(torch.from_numpy(logprob)).item(), 3)  # evaluate.py: torch.sum(...).item(), round(·, 3)
    assert reference == -20.0
    assert round(float(np.sum(logprob.astype(np.float64))), 3) == -20.001  # a float64 sum rounds the other way
    assert cps(logprob.astype(np.float64), compat=True) == reference == -20.0
    assert cps(logprob.astype(np.float64)) == pytest.approx(-20.0005)  # the default is not rounded


def test_compat_cps_equals_the_reference_on_many_float32_inputs():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        logprob = (-rng.exponential(3, size=int(rng.integers(2, 30)))).astype(np.float32)
        assert cps(logprob.astype(np.float64), compat=True) == round(torch.sum(torch.from_numpy(logprob)).item(), 3)

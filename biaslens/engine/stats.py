"""Statistics behind biaslens's reports: intervals, paired and permutation tests, ROC.

Pure numpy/scipy functions with no model code, so each can be checked by hand. The
definitions follow ``shared/spec/metrics.md``: the bias score (Eq. 6) with its Wilson
interval, McNemar's test for the shuffle experiment, the ROC curve against human
ratings, and the WEAT-style effect size and permutation test of Kurita et al. (2019).
Percentages (bias scores, proportions and their intervals) are on a 0-100 scale.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sps

from biaslens.errors import InputError

#: Large enough that scores equal up to float rounding count as ties in a permutation
#: test, small enough never to merge genuinely different log-probability statistics.
_RELATIVE_TIE_TOLERANCE = 1e-12

#: The test `mcnemar` runs, in words: every output that reports its p-value names it with this.
MCNEMAR_TEST = "McNemar's exact test (two-sided binomial test of b against Binomial(b + c, 1/2))"


@dataclass(frozen=True)
class Proportion:
    """A proportion in percent with its confidence interval.

    ``estimate``, ``ci_low`` and ``ci_high`` are NaN when ``n == 0``.
    """

    successes: int
    n: int
    estimate: float
    ci_low: float
    ci_high: float
    method: str


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on paired binary outcomes.

    ``b`` counts pairs where only the first is correct, ``c`` pairs where only the
    second is. ``statistic`` = min(b, c); ``method`` names the test (``"exact binomial"``,
    `MCNEMAR_TEST`), so that a table of results says which test gave its p-values.
    """

    b: int
    c: int
    statistic: float
    p_value: float
    method: str


@dataclass(frozen=True, eq=False)  # array fields: element-wise == would make __eq__ ambiguous
class RocCurve:
    """An exact ROC curve.

    Point ``i`` predicts "positive" for every score ``>= thresholds[i]``. The first
    point is (0, 0) at threshold ``+inf``; each later threshold is one distinct score,
    in descending order, so tied scores move the curve diagonally; the last point is
    (1, 1).
    """

    fpr: np.ndarray
    tpr: np.ndarray
    thresholds: np.ndarray
    auc: float


@dataclass(frozen=True)
class PermutationResult:
    """A permutation test of two groups of scores.

    ``n_permutations`` is the number of partitions the p-value counts: all of them
    when ``exact`` is true, otherwise the number of random ones drawn. ``p_value`` is
    the test asked for (two-sided or one-sided); both are kept: ``p_greater`` is the
    one-sided p of Kurita et al. (2019) and Caliskan et al. (2017), the share of
    re-partitions whose statistic is strictly greater than the observed one, and
    ``p_two_sided`` the share whose absolute statistic is at least the observed one's.
    """

    observed: float
    p_value: float
    n_permutations: int
    exact: bool
    p_greater: float = float("nan")
    p_two_sided: float = float("nan")


@dataclass(frozen=True)
class BiasScoreCounts:
    """The bias score (Eq. 6) with the counts a report shows beside it.

    ``score`` = 100 * wins / n (NaN when ``n == 0``); ``ci_low``/``ci_high`` are the
    95% interval of that percentage by ``ci_method``. Ties and undecidable pairs are
    no wins and stay in ``n``.
    """

    n: int
    wins: int
    ties: int
    undecidable: int
    score: float
    ci_low: float
    ci_high: float
    ci_method: str = "wilson"


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


@functools.lru_cache(maxsize=64)
def _normal_quantile(p: float) -> float:
    """The standard normal distribution's `p` quantile (scipy's, kept: it costs 0.1 ms a call, and a results store's
    index takes thousands of Wilson intervals at one confidence)."""
    return float(sps.norm.ppf(p))


def _wilson_lower(successes: int, n: int, z: float) -> float:
    """Lower Wilson bound as a fraction; exactly 0 when ``successes == 0``."""
    z2 = z * z
    spread = z * math.sqrt(z2 + 4.0 * successes * (n - successes) / n)
    return max(0.0, (2.0 * successes + z2 - spread) / (2.0 * (n + z2)))


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Proportion:
    """The proportion ``successes / n`` in percent with its Wilson score interval.

    The interval stays inside [0, 100] and has positive width even at 0 or n successes,
    unlike the normal-approximation interval. ``n == 0`` gives NaN estimate and bounds.
    """
    _check_confidence(confidence)
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        nan = float("nan")
        return Proportion(successes, n, nan, nan, nan, "wilson")
    z = _normal_quantile(0.5 + confidence / 2.0)
    low = _wilson_lower(successes, n, z)
    # The upper bound mirrors the lower one: it is exactly 1 when successes == n.
    high = 1.0 - _wilson_lower(n - successes, n, z)
    return Proportion(successes, n, 100.0 * successes / n, 100.0 * low, 100.0 * high, "wilson")


#: The most resamples a bootstrap draws (each resample is a row of draws: a billion took 22 GB before they were capped).
MAX_RESAMPLES = 1_000_000
#: The most random partitions a permutation test draws (held as one array of partitions × scores).
MAX_PERMUTATIONS = 1_000_000
#: The largest seed (numpy's Generator takes 0 to 2**32 - 1 as a 32-bit seed; the app's and the CLI's bound).
MAX_SEED = 2**32 - 1


def check_count(value: object, most: int, what: str) -> int:
    """`value` as a whole number from 1 to `most`; else an `InputError` in one line, before any work."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= int(value) <= most:
        raise InputError(f"{what} must be a whole number from 1 to {most:,}, got {value!r}.")
    return int(value)


def check_seed(seed: object) -> int:
    """`seed` as a whole number from 0 to `MAX_SEED`; else an `InputError` in one line, before any work."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) <= MAX_SEED:
        raise InputError(f"The seed must be a whole number from 0 to {MAX_SEED:,}, got {seed!r}.")
    return int(seed)


def bootstrap_interval(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(values)``.

    Draws ``n_resamples`` resamples with replacement from a ``numpy`` Generator seeded
    with ``seed`` (the same call always gives the same interval) and returns the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the statistic,
    in the units of ``statistic``. NaN values are not removed: drop them first if
    ``statistic`` does not handle them.
    """
    _check_confidence(confidence)
    data = np.asarray(values, dtype=float).ravel()
    if data.size == 0:
        raise ValueError("bootstrap_interval needs at least one value")
    n_resamples, seed = check_count(n_resamples, MAX_RESAMPLES, "n_resamples"), check_seed(seed)
    rng = np.random.default_rng(seed)
    # One resample at a time keeps memory at O(len(values)) for long token lists.
    estimates = np.array(
        [statistic(data[rng.integers(0, data.size, size=data.size)]) for _ in range(n_resamples)],
        dtype=float,
    )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)


def _paired_bools(first: ArrayLike, second: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(first, dtype=bool).ravel()
    b = np.asarray(second, dtype=bool).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired outcomes must have equal lengths, got {a.size} and {b.size}")
    return a, b


def mcnemar(first_correct: ArrayLike, second_correct: ArrayLike) -> McNemarResult:
    """McNemar's exact test: do two paired binary outcomes differ in their success rate?

    Item ``i`` of both arguments is the same unit measured twice (e.g. one token before
    and after shuffling). Only discordant pairs matter: ``b`` (first right, second
    wrong) and ``c`` (first wrong, second right). The p-value is the exact two-sided
    binomial test of ``b`` against Binomial(b + c, 1/2) (twice the smaller tail, at most
    1), at every b + c: it costs one binomial tail, it never exceeds its level (the
    mid-p variant can), and it has no switch-over size where the chi-square
    approximation would take over with a different p (``b + c == 0`` gives p = 1).
    """
    first, second = _paired_bools(first_correct, second_correct)
    b = int(np.count_nonzero(first & ~second))
    c = int(np.count_nonzero(~first & second))
    smaller = min(b, c)
    p_value = min(1.0, 2.0 * float(sps.binom.cdf(smaller, b + c, 0.5)))
    return McNemarResult(b, c, float(smaller), p_value, "exact binomial")


def roc_curve(labels: ArrayLike, scores: ArrayLike) -> RocCurve:
    """Exact ROC curve and AUC of ``scores`` for telling positive from negative labels.

    Pairs whose score is NaN are dropped before anything is counted (the caller can
    count them with ``np.isnan(scores).sum()``). The AUC is the trapezoid area under
    the curve, which equals the Mann-Whitney U / (n_pos * n_neg) with each tied
    positive/negative pair counted 1/2. AUC < 0.5 means the scores rank negatives
    higher. Raises ``ValueError`` unless both classes remain after dropping NaN.
    """
    y = np.asarray(labels, dtype=bool).ravel()
    s = np.asarray(scores, dtype=float).ravel()
    if y.shape != s.shape:
        raise ValueError(f"labels and scores must have equal lengths, got {y.size} and {s.size}")
    kept = ~np.isnan(s)
    y, s = y[kept], s[kept]
    n_pos = int(np.count_nonzero(y))
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"ROC needs both classes, got {n_pos} positive and {n_neg} negative labels")
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    # Last index of each run of equal scores: one ROC point per distinct score.
    run_ends = np.append(np.flatnonzero(s[1:] != s[:-1]), s.size - 1)
    true_pos = np.cumsum(y)[run_ends]
    false_pos = run_ends + 1 - true_pos
    fpr = np.concatenate([[0.0], false_pos / n_neg])
    tpr = np.concatenate([[0.0], true_pos / n_pos])
    thresholds = np.concatenate([[np.inf], s[run_ends]])
    return RocCurve(fpr, tpr, thresholds, float(np.trapezoid(tpr, fpr)))


def bootstrap_auc_interval(
    labels: ArrayLike, scores: ArrayLike, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of the ROC AUC (the `roc_curve` AUC, ties counted 1/2).

    Stratified: each resample draws the positives and the negatives separately, with
    replacement and in their own numbers, so every resample keeps both classes. NaN scores
    are dropped first, as `roc_curve` does. Seeded; (NaN, NaN) unless both classes remain.
    With few pairs of a class the interval is wide (or, with one, degenerate): report the
    class sizes beside it.
    """
    _check_confidence(confidence)
    y = np.asarray(labels, dtype=bool).ravel()
    s = np.asarray(scores, dtype=float).ravel()
    if y.shape != s.shape:
        raise ValueError(f"labels and scores must have equal lengths, got {y.size} and {s.size}")
    kept = ~np.isnan(s)
    pos, neg = s[kept & y], s[kept & ~y]
    if pos.size == 0 or neg.size == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    p = pos[rng.integers(0, pos.size, size=(n_resamples, pos.size))]
    n = neg[rng.integers(0, neg.size, size=(n_resamples, neg.size))]
    # Mann-Whitney U / (n_pos n_neg) with average ranks for ties = the trapezoid AUC of roc_curve.
    ranks = sps.rankdata(np.concatenate([p, n], axis=1), axis=1)
    u = ranks[:, : pos.size].sum(axis=1) - pos.size * (pos.size + 1) / 2.0
    aucs = u / (pos.size * neg.size)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(aucs, [tail, 1.0 - tail])
    return float(low), float(high)


def _finite_scores(values: ArrayLike, name: str) -> np.ndarray:
    scores = np.asarray(values, dtype=float).ravel()
    if scores.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(scores)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return scores


def effect_size(s_x: ArrayLike, s_y: ArrayLike) -> float:
    """WEAT / Kurita effect size d = (mean(s_x) - mean(s_y)) / std(s_x ∪ s_y).

    The standard deviation is the sample one (ddof=1) over the pooled scores. NaN when
    every pooled score is equal (0 / 0).
    """
    x = _finite_scores(s_x, "s_x")
    y = _finite_scores(s_y, "s_y")
    spread = float(np.std(np.concatenate([x, y]), ddof=1))
    if spread == 0.0:
        return float("nan")
    return (float(np.mean(x)) - float(np.mean(y))) / spread


def permutation_test(
    s_x: ArrayLike,
    s_y: ArrayLike,
    *,
    statistic: str = "mean_difference",
    n_permutations: int = 10000,
    seed: int = 0,
    exact_threshold: int = 100000,
    two_sided: bool = True,
) -> PermutationResult:
    """Permutation test of whether the scores ``s_x`` exceed ``s_y``.

    The null distribution comes from re-partitioning X ∪ Y into groups of sizes |X|
    and |Y|. ``statistic`` is ``"mean_difference"`` (mean(X') - mean(Y'), the default)
    or ``"sum_difference"`` (sum(X') - sum(Y'), Caliskan et al.'s WEAT statistic). Both
    order partitions identically, so they differ only in two-sided tests with
    |X| != |Y|, where the mean difference is the one centred on 0 under the null.

    Two-sided counts partitions with |stat'| >= |observed|; one-sided (``two_sided=
    False``, Kurita et al.'s p = Pr[S_i > S]) counts stat' > observed, strictly. Values
    equal up to a relative 1e-12 count as ties (so a tie is >= but not >). Both p-values
    are computed and returned (``p_greater``, ``p_two_sided``); ``two_sided`` picks which
    one is ``p_value``. When C(|X| + |Y|, |X|) <= ``exact_threshold`` every partition is
    enumerated (the observed one included) and p = count / C (the one-sided p can be 0:
    no partition exceeds the observed one); otherwise ``n_permutations`` random
    partitions are drawn from a Generator seeded with ``seed`` and
    p = (count + 1) / (n_permutations + 1), count over the drawn partitions.
    """
    x = _finite_scores(s_x, "s_x")
    y = _finite_scores(s_y, "s_y")
    pooled = np.concatenate([x, y])
    size_x, size_y = x.size, y.size
    total = float(pooled.sum())
    if statistic == "mean_difference":

        def from_sum_x(sum_x: np.ndarray) -> np.ndarray:
            return sum_x / size_x - (total - sum_x) / size_y
    elif statistic == "sum_difference":

        def from_sum_x(sum_x: np.ndarray) -> np.ndarray:
            return 2.0 * sum_x - total
    else:
        raise ValueError(f"statistic must be 'mean_difference' or 'sum_difference', got {statistic!r}")

    n_partitions = math.comb(pooled.size, size_x)
    exact = n_partitions <= exact_threshold
    if exact:
        # combinations() yields range(size_x) first: the observed partition.
        members_x = np.array(list(itertools.combinations(range(pooled.size), size_x)))
    else:
        n_permutations, seed = check_count(n_permutations, MAX_PERMUTATIONS, "n_permutations"), check_seed(seed)
        rng = np.random.default_rng(seed)
        shuffled = rng.permuted(np.tile(np.arange(pooled.size), (n_permutations, 1)), axis=1)
        members_x = np.vstack([np.arange(size_x), shuffled[:, :size_x]])
    null = from_sum_x(pooled[members_x].sum(axis=1))
    observed = float(null[0])
    tolerance = _RELATIVE_TIE_TOLERANCE * max(1.0, abs(observed))
    # Row 0 is the observed partition: one of the C partitions in exact mode; in sampled
    # mode it is left out of the counts and stands for the "+ 1" of (count + 1) / (n + 1).
    drawn = null if exact else null[1:]
    at_least_as_extreme = int(np.count_nonzero(np.abs(drawn) >= abs(observed) - tolerance))
    greater = int(np.count_nonzero(drawn > observed + tolerance))
    if exact:
        p_two, p_greater = at_least_as_extreme / n_partitions, greater / n_partitions
        n = n_partitions
    else:
        p_two, p_greater = (at_least_as_extreme + 1) / (n_permutations + 1), (greater + 1) / (n_permutations + 1)
        n = n_permutations
    return PermutationResult(observed, p_two if two_sided else p_greater, n, exact, p_greater, p_two)


def bias_score(stereo: ArrayLike, anti: ArrayLike) -> BiasScoreCounts:
    """Bias score (Eq. 6): percent of pairs with f(stereo) > f(anti), strictly.

    A pair is a tie when both scores are equal, undecidable when either is NaN (e.g.
    SSS with no modified tokens); both count as no win and stay in ``n``. The interval
    is the 95% Wilson interval of wins / n.
    """
    s = np.asarray(stereo, dtype=float).ravel()
    a = np.asarray(anti, dtype=float).ravel()
    if s.shape != a.shape:
        raise ValueError(f"stereo and anti must have equal lengths, got {s.size} and {a.size}")
    undecidable = np.isnan(s) | np.isnan(a)
    wins = int(np.count_nonzero(s > a))
    ties = int(np.count_nonzero(~undecidable & (s == a)))
    proportion = wilson_interval(wins, s.size)
    return BiasScoreCounts(
        n=s.size,
        wins=wins,
        ties=ties,
        undecidable=int(np.count_nonzero(undecidable)),
        score=proportion.estimate,
        ci_low=proportion.ci_low,
        ci_high=proportion.ci_high,
        ci_method=proportion.method,
    )

"""Paired comparisons of bias scores: two models on the same pairs, or one model with and without some pairs.

Two models, same pairs (`paired_comparison`): per metric, both bias scores, their difference
(second − first, percentage points) with a seeded 95% percentile bootstrap interval, paired (the same
resampled pairs for both models), and McNemar's exact test on the verdicts (pair i counts as
"stereotypical preferred" or not under each model; only pairs where the two models disagree matter).
Each row names both: `ci_method` (`bootstrap_method`) and `mcnemar_method`.

One model, all pairs vs the pairs left after excluding some (`subset_difference`): the two scores
and their difference (kept − all) with a bootstrap interval over the pairs (each resample
recomputes both scores on the same draw).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from biaslens.errors import InputError
from biaslens.engine.evaluation import EvaluationResult
from biaslens.engine.stats import MAX_RESAMPLES, bias_score, check_count, check_seed, mcnemar

#: Resamples of the bootstrap intervals.
N_RESAMPLES = 2000

PAIRED_COLUMNS = (
    "metric",
    "n",
    "score_first",
    "score_second",
    "difference",
    "ci_low",
    "ci_high",
    "mcnemar_b",
    "mcnemar_c",
    "mcnemar_statistic",
    "p_value",
    "mcnemar_method",
    "ci_method",
)
SUBSET_COLUMNS = ("metric", "n_all", "n_kept", "score_all", "score_kept", "difference", "ci_low", "ci_high")


def bootstrap_method(n_resamples: int, seed: int) -> str:
    """How `paired_comparison` computes its interval, in words (its `ci_method` column, the CLI's and the page's notes)."""
    return f"95% percentile bootstrap, paired (the same resampled pairs for both models), {n_resamples:,} resamples, seed {seed}"


def wins(frame: pd.DataFrame, metric: str) -> np.ndarray:
    """Per pair: True where the stereotypical sentence scores strictly higher (the bias score's numerator)."""
    s = frame[f"{metric}_stereo"].to_numpy(float)
    a = frame[f"{metric}_anti"].to_numpy(float)
    return s > a  # NaN (undecidable) and ties are no win, as in the bias score


def _quantiles(estimates: np.ndarray, confidence: float) -> tuple[float, float]:
    estimates = estimates[~np.isnan(estimates)]
    if estimates.size == 0:
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)


def _resamples(n: int, n_resamples: int, seed: int, *, block: int = 250):
    """Bootstrap index draws, `block` resamples (rows) at a time: the same stream as one `rng.integers(0, n, n)` per
    resample, so the intervals are those of a plain loop, computed with array operations. The count and the seed are
    checked first (`stats.check_count`, `stats.check_seed`)."""
    n_resamples, seed = check_count(n_resamples, MAX_RESAMPLES, "The number of resamples"), check_seed(seed)
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, block):
        yield rng.integers(0, n, size=(min(block, n_resamples - start), n))


def paired_difference(
    first: np.ndarray, second: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """(difference, ci_low, ci_high) of 100 * (mean(second) − mean(first)) for paired booleans, paired percentile bootstrap."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise InputError("A paired comparison needs the same, non-empty set of pairs on both sides.")
    d = 100.0 * (b - a)
    estimates = np.concatenate([d[idx].mean(axis=1) for idx in _resamples(d.size, n_resamples, seed)])
    return float(d.mean()), *_quantiles(estimates, confidence)


def subset_difference(
    won: np.ndarray, keep: np.ndarray, *, n_resamples: int = N_RESAMPLES, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """(difference, ci_low, ci_high) of bias score over the kept pairs − over all pairs, bootstrap over all pairs.

    A resample that keeps no pair gives no estimate (left out of the quantiles).
    """
    w = np.asarray(won, dtype=float)
    k = np.asarray(keep, dtype=bool)
    if w.shape != k.shape or w.size == 0:
        raise InputError("subset_difference needs one keep flag per pair.")
    if not k.any():
        return math.nan, math.nan, math.nan
    point = 100.0 * (w[k].mean() - w.mean())
    estimates = []
    for idx in _resamples(w.size, n_resamples, seed):
        drawn, kept = w[idx], k[idx]
        n_kept = kept.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            kept_mean = np.where(n_kept > 0, (drawn * kept).sum(axis=1) / n_kept, math.nan)
        estimates.append(100.0 * (kept_mean - drawn.mean(axis=1)))
    return float(point), *_quantiles(np.concatenate(estimates), confidence)


def _check_same_pairs(first: EvaluationResult, second: EvaluationResult) -> None:
    a, b = first.pairs, second.pairs
    if list(a["pair_id"]) != list(b["pair_id"]):
        raise InputError("The two results cover different pairs: score the same dataset and selection with both models.")
    if list(a["sent_stereo"]) != list(b["sent_stereo"]) or list(a["sent_anti"]) != list(b["sent_anti"]):
        raise InputError("The two results have the same pair ids but different sentences: they come from different datasets.")


def common_metrics(first: EvaluationResult, second: EvaluationResult) -> list[str]:
    return [m for m in first.summary["metrics"] if m in second.summary["metrics"]]


def paired_comparison(
    first: EvaluationResult, second: EvaluationResult, metrics: Sequence[str] | None = None, *, n_resamples: int = N_RESAMPLES, seed: int = 0
) -> pd.DataFrame:
    """One row per metric: both bias scores, second − first with a paired bootstrap 95% interval (`bootstrap_method`),
    McNemar's exact test on the verdicts (`stats.MCNEMAR_TEST`)."""
    check_count(n_resamples, MAX_RESAMPLES, "The number of resamples")  # before any work
    check_seed(seed)
    _check_same_pairs(first, second)
    keys = list(metrics) if metrics is not None else common_metrics(first, second)
    missing = [m for m in keys if m not in first.summary["metrics"] or m not in second.summary["metrics"]]
    if missing:
        raise InputError(f"Both results must be scored with {', '.join(missing)}.")
    rows = []
    for m in keys:
        wa, wb = wins(first.pairs, m), wins(second.pairs, m)
        diff, low, high = paired_difference(wa, wb, n_resamples=n_resamples, seed=seed)
        test = mcnemar(wa, wb)
        rows.append(
            {
                "metric": m,
                "n": int(wa.size),
                "score_first": bias_score(first.pairs[f"{m}_stereo"], first.pairs[f"{m}_anti"]).score,
                "score_second": bias_score(second.pairs[f"{m}_stereo"], second.pairs[f"{m}_anti"]).score,
                "difference": diff,
                "ci_low": low,
                "ci_high": high,
                "mcnemar_b": test.b,
                "mcnemar_c": test.c,
                "mcnemar_statistic": test.statistic,
                "p_value": test.p_value,
                "mcnemar_method": test.method,
                "ci_method": bootstrap_method(n_resamples, seed),
            }
        )
    return pd.DataFrame(rows, columns=list(PAIRED_COLUMNS))


def with_and_without(
    result: EvaluationResult,
    keep: Sequence[bool] | np.ndarray,
    metrics: Sequence[str] | None = None,
    *,
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per metric: bias score over all pairs and over the kept ones, kept − all with a bootstrap 95% interval."""
    keep = np.asarray(keep, dtype=bool)
    if keep.size != len(result.pairs):
        raise InputError(f"{keep.size} keep flags for {len(result.pairs)} pairs.")
    keys = list(metrics) if metrics is not None else list(result.summary["metrics"])
    rows = []
    for m in keys:
        won = wins(result.pairs, m)
        diff, low, high = subset_difference(won, keep, n_resamples=n_resamples, seed=seed)
        rows.append(
            {
                "metric": m,
                "n_all": int(won.size),
                "n_kept": int(keep.sum()),
                "score_all": 100.0 * won.mean(),
                "score_kept": 100.0 * won[keep].mean() if keep.any() else math.nan,
                "difference": diff,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return pd.DataFrame(rows, columns=list(SUBSET_COLUMNS))


__all__ = [
    "N_RESAMPLES",
    "PAIRED_COLUMNS",
    "SUBSET_COLUMNS",
    "bootstrap_method",
    "common_metrics",
    "paired_comparison",
    "paired_difference",
    "subset_difference",
    "wins",
    "with_and_without",
]

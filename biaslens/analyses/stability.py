"""How stable a ranking of models is when the benchmark is resampled (Selvam et al., ACL 2023).

Selvam, Ghosal, Gupta, Asoodeh & Sap, *The Tail Wagging the Dog: Dataset Construction Biases of Social Bias
Benchmarks* (ACL 2023), show that choices in how a benchmark's examples were made, none of them about bias, change
which model looks more biased. A model's bias score and rank are estimates from one draw of pairs; this module
says how much they would move under another draw, from the per-pair verdicts of N models on the same pairs:

- `scheme="pairs"`: each resample draws N pairs with replacement (the same draw for every model: paired);
- `scheme="types"`: each resample draws the bias types with replacement (as many as there are), then, for each type
  drawn, that many of its pairs with replacement: the benchmark's composition by type varies too, as a benchmark
  built with other categories would.

Per resample every model's bias score (100 × wins / pairs drawn) and its rank among the models; `rank_by="distance"`
ranks by |score − 50| (rank 1 = closest to 50: the least biased on this measure), `rank_by="score"` by the score
itself (rank 1 = the highest). Reported (`RankStability`): each model's score with a percentile interval, its rank on
the data and the percentile interval of its rank, the share of resamples in which it ranks first (a tie for first
shared: two tied models count half each, k tied 1/k, so the shares add up to 1), and for every ordered pair of models
the probability that A scores above B and that A is closer to 50 than B (ties count half).
Any per-pair verdicts work: `rank_stability_of` takes `EvaluationResult`s and a metric, `rank_stability` arrays (a
leaderboard of many models can pass its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from biaslens.errors import InputError

if TYPE_CHECKING:
    from biaslens.engine.evaluation import EvaluationResult

SCHEMES = ("pairs", "types")
RANK_BY = ("distance", "score")
N_RESAMPLES = 2000
SCORE_COLUMNS = ("model", "n", "bias_score", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "p_first")
PAIRWISE_COLUMNS = ("model_a", "model_b", "p_a_above_b", "p_a_closer_to_50")


def describe(scheme: str, n_resamples: int, seed: int, rank_by: str = "distance", confidence: float = 0.95) -> str:
    """What a `RankStability` computed, in words (the CLI's, the JSON's and the page's note)."""
    what = "the pairs, with replacement" if scheme == "pairs" else "the bias types, then the pairs within each type drawn, with replacement"
    order = "rank 1 = closest to 50" if rank_by == "distance" else "rank 1 = the highest bias score"
    return f"{n_resamples:,} resamples of {what} (the same draws for every model), seed {seed}; {order}; {confidence:.0%} percentile intervals"


@dataclass(frozen=True)
class RankStability:
    """`scores`: one row per model (`SCORE_COLUMNS`); `pairwise`: one row per ordered pair of models (`PAIRWISE_COLUMNS`)."""

    scores: pd.DataFrame
    pairwise: pd.DataFrame
    scheme: str
    rank_by: str
    n_resamples: int
    seed: int
    confidence: float = 0.95

    @property
    def method(self) -> str:
        return describe(self.scheme, self.n_resamples, self.seed, self.rank_by, self.confidence)

    def probability(self, a: str, b: str) -> float:
        """P(model `a` scores above model `b`) over the resamples (ties count half)."""
        for row in self.pairwise.to_dict(orient="records"):
            if row["model_a"] == a and row["model_b"] == b:
                return float(row["p_a_above_b"])
        raise KeyError(f"no pair {a!r}, {b!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "scheme": self.scheme,
            "rank_by": self.rank_by,
            "resamples": self.n_resamples,
            "seed": self.seed,
            "confidence": self.confidence,
            "scores": self.scores.to_dict(orient="records"),
            "pairwise": self.pairwise.to_dict(orient="records"),
        }


def resample_indices(
    n: int, bias_types: Sequence[str] | None = None, *, scheme: str = "pairs", n_resamples: int = N_RESAMPLES, seed: int = 0
) -> list[np.ndarray]:
    """The pair indices of each resample (`scheme`, see the module), from a numpy Generator seeded with `seed`."""
    if scheme not in SCHEMES:
        raise InputError(f"Unknown resampling scheme {scheme!r}: choose from {', '.join(SCHEMES)}.")
    if n < 1:
        raise InputError("Rank stability needs at least one pair.")
    if n_resamples < 1:
        raise InputError(f"Rank stability needs at least one resample, got {n_resamples}.")
    rng = np.random.default_rng(seed)
    if scheme == "pairs":
        return list(rng.integers(0, n, size=(n_resamples, n)))
    if bias_types is None or len(bias_types) != n:
        raise InputError("Resampling by bias type needs one bias type per pair.")
    members = [np.flatnonzero(np.asarray([t == k for t in bias_types])) for k in dict.fromkeys(bias_types)]
    out = []
    for _ in range(n_resamples):
        drawn = rng.integers(0, len(members), size=len(members))
        out.append(np.concatenate([members[k][rng.integers(0, members[k].size, size=members[k].size)] for k in drawn]))
    return out


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (1 = smallest) along the last axis."""
    from scipy.stats import rankdata

    return np.asarray(rankdata(values, axis=-1), dtype=float)


def rank_stability(
    wins: Mapping[str, Sequence[bool] | np.ndarray],
    bias_types: Sequence[str] | None = None,
    *,
    scheme: str = "pairs",
    rank_by: str = "distance",
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
    indices: Iterable[np.ndarray] | None = None,
) -> RankStability:
    """Scores, ranks and pairwise probabilities of N models under resampling.

    `wins`: model name -> per-pair verdicts (True = the stereotypical sentence preferred; NaN scores and ties are no
    win, as in the bias score), the same pairs in the same order for every model. `bias_types`: one per pair (needed by
    `scheme="types"`). `indices`: the resamples' pair indices, instead of drawing them (`resample_indices`), e.g. every
    possible resample of a small case.
    """
    if rank_by not in RANK_BY:
        raise InputError(f"Unknown ranking {rank_by!r}: choose from {', '.join(RANK_BY)}.")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"confidence must lie strictly between 0 and 1, got {confidence}.")
    names = list(wins)
    if len(names) < 2:
        raise InputError(f"Rank stability compares at least two models, got {len(names)}.")
    table = np.array([np.asarray(wins[m], dtype=bool) for m in names], dtype=float)  # models x pairs
    if table.ndim != 2 or table.shape[1] == 0:
        raise InputError("Rank stability needs the same, non-empty set of pairs for every model.")
    n = table.shape[1]
    draws = list(indices) if indices is not None else resample_indices(n, bias_types, scheme=scheme, n_resamples=n_resamples, seed=seed)
    scores = np.array([100.0 * table[:, idx].mean(axis=1) for idx in draws])  # resamples x models
    key = np.abs(scores - 50.0) if rank_by == "distance" else -scores
    ranks = _ranks(key)
    observed = 100.0 * table.mean(axis=1)
    observed_ranks = _ranks(np.abs(observed - 50.0) if rank_by == "distance" else -observed)
    tail = (1.0 - confidence) / 2.0
    first = ranks == ranks.min(axis=1, keepdims=True)  # resamples x models: who ranks first; k tied for first share it
    p_first = (first / first.sum(axis=1, keepdims=True)).mean(axis=0)
    rows = []
    for j, name in enumerate(names):
        low, high = np.quantile(scores[:, j], [tail, 1.0 - tail])
        rank_low, rank_high = np.quantile(ranks[:, j], [tail, 1.0 - tail], method="inverted_cdf")
        rows.append(
            {
                "model": name,
                "n": n,
                "bias_score": float(observed[j]),
                "ci_low": float(low),
                "ci_high": float(high),
                "rank": float(observed_ranks[j]),
                "rank_low": float(rank_low),
                "rank_high": float(rank_high),
                "p_first": float(p_first[j]),
            }
        )
    pairwise = []
    distance = np.abs(scores - 50.0)
    for a, name_a in enumerate(names):
        for b, name_b in enumerate(names):
            if a == b:
                continue
            above = np.mean(scores[:, a] > scores[:, b]) + 0.5 * np.mean(scores[:, a] == scores[:, b])
            closer = np.mean(distance[:, a] < distance[:, b]) + 0.5 * np.mean(distance[:, a] == distance[:, b])
            pairwise.append({"model_a": name_a, "model_b": name_b, "p_a_above_b": float(above), "p_a_closer_to_50": float(closer)})
    return RankStability(
        pd.DataFrame(rows, columns=list(SCORE_COLUMNS)),
        pd.DataFrame(pairwise, columns=list(PAIRWISE_COLUMNS)),
        scheme,
        rank_by,
        len(draws),
        seed,
        confidence,
    )


def rank_stability_of(
    results: Mapping[str, EvaluationResult],
    metric: str,
    *,
    scheme: str = "pairs",
    rank_by: str = "distance",
    n_resamples: int = N_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
) -> RankStability:
    """`rank_stability` of evaluation results (model name -> result) on one metric: the same pairs, checked."""
    from biaslens.analyses.paired import _check_same_pairs, wins

    names = list(results)
    if len(names) < 2:
        raise InputError(f"Rank stability compares at least two models, got {len(names)}.")
    first = results[names[0]]
    for name in names[1:]:
        _check_same_pairs(first, results[name])
    missing = [n for n in names if metric not in results[n].summary["metrics"]]
    if missing:
        raise InputError(f"Rank stability needs every model scored with {metric}: {', '.join(missing)} is not.")
    types = [str(t) for t in first.pairs["bias_type"]] if "bias_type" in first.pairs else None
    if scheme == "types" and (types is None or len(set(types)) < 2 or all(t == "" for t in types)):
        raise InputError("Resampling by bias type needs pairs of at least two bias types: resample the pairs instead.")
    return rank_stability(
        {n: wins(results[n].pairs, metric) for n in names},
        types,
        scheme=scheme,
        rank_by=rank_by,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )


def format_rank(row: Mapping[str, Any]) -> str:
    """'2 (1–3)': a model's rank on the data and its interval (".5" for a shared rank)."""

    def r(x: float) -> str:
        return "n/a" if x is None or math.isnan(x) else (f"{x:.0f}" if float(x).is_integer() else f"{x:.1f}")

    return f"{r(row['rank'])} ({r(row['rank_low'])}–{r(row['rank_high'])})"


__all__ = [
    "N_RESAMPLES",
    "PAIRWISE_COLUMNS",
    "RANK_BY",
    "RankStability",
    "SCHEMES",
    "SCORE_COLUMNS",
    "describe",
    "format_rank",
    "rank_stability",
    "rank_stability_of",
    "resample_indices",
]

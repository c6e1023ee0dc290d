"""Rank and score stability under resampling: against every possible resample of small cases, enumerated here."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from biaslens.analyses import stability
from biaslens.errors import InputError

#: Three models' verdicts on four pairs (True: the stereotypical sentence preferred).
WINS = {"A": [True, True, True, False], "B": [True, False, True, False], "C": [False, True, False, False]}


def _enumerated(wins: dict[str, list[bool]]) -> dict[str, object]:
    """Every one of the n^n equally likely bootstrap resamples, in exact arithmetic."""
    names = list(wins)
    n = len(next(iter(wins.values())))
    above = {(a, b): Fraction(0) for a in names for b in names if a != b}
    closer = dict(above)
    first = {m: Fraction(0) for m in names}
    scores: dict[str, list[Fraction]] = {m: [] for m in names}
    draws = list(itertools.product(range(n), repeat=n))
    for idx in draws:
        s = {m: Fraction(100 * sum(wins[m][i] for i in idx), n) for m in names}
        d = {m: abs(s[m] - 50) for m in names}
        for m in names:
            scores[m].append(s[m])
        best = min(d.values())
        tied = sum(d[m] == best for m in names)
        for m in names:
            first[m] += Fraction(d[m] == best, len(draws) * tied)  # a tie for first shared: 1/k each
        for a, b in above:
            above[a, b] += (Fraction(s[a] > s[b]) + Fraction(s[a] == s[b], 2)) / len(draws)
            closer[a, b] += (Fraction(d[a] < d[b]) + Fraction(d[a] == d[b], 2)) / len(draws)
    return {"draws": [np.array(i) for i in draws], "above": above, "closer": closer, "first": first, "scores": scores}


def test_against_every_possible_resample():
    truth = _enumerated(WINS)
    got = stability.rank_stability(WINS, indices=truth["draws"])
    assert got.n_resamples == 4**4
    for row in got.pairwise.to_dict(orient="records"):
        key = (row["model_a"], row["model_b"])
        assert row["p_a_above_b"] == pytest.approx(float(truth["above"][key]), abs=1e-12)
        assert row["p_a_closer_to_50"] == pytest.approx(float(truth["closer"][key]), abs=1e-12)
    scores = got.scores.set_index("model")
    for m in WINS:
        assert scores.loc[m, "p_first"] == pytest.approx(float(truth["first"][m]), abs=1e-12)
        assert scores.loc[m, "bias_score"] == 100 * sum(WINS[m]) / 4
        values = np.array([float(v) for v in truth["scores"][m]])
        assert (scores.loc[m, "ci_low"], scores.loc[m, "ci_high"]) == pytest.approx(tuple(np.quantile(values, [0.025, 0.975])))
    assert scores["p_first"].sum() == pytest.approx(1.0)  # a tie for first is shared, not counted once for each model
    # On the data: A 75, B 50, C 25; by distance from 50, B is first and A, C share ranks 2 and 3.
    assert scores["rank"].to_dict() == {"A": 2.5, "B": 1.0, "C": 2.5}
    assert got.probability("A", "B") + got.probability("B", "A") == pytest.approx(1.0)
    # Ranked by the score itself: A first.
    by_score = stability.rank_stability(WINS, indices=truth["draws"], rank_by="score").scores.set_index("model")
    assert by_score["rank"].to_dict() == {"A": 1.0, "B": 2.0, "C": 3.0}


def test_drawn_resamples_approach_the_enumeration():
    truth = _enumerated(WINS)
    got = stability.rank_stability(WINS, n_resamples=20000, seed=1)
    for row in got.pairwise.to_dict(orient="records"):
        assert row["p_a_above_b"] == pytest.approx(float(truth["above"][row["model_a"], row["model_b"]]), abs=0.015)
    assert stability.rank_stability(WINS, seed=3).pairwise.equals(stability.rank_stability(WINS, seed=3).pairwise)  # seeded


def test_resampling_bias_types_against_its_enumeration():
    """Two types of two pairs: draw 2 types with replacement, then each drawn type's 2 pairs with replacement."""
    types = ["x", "x", "y", "y"]
    wins = {"A": [True, True, False, True], "B": [False, True, True, True]}
    members = {"x": [0, 1], "y": [2, 3]}
    p_above = Fraction(0)
    for drawn in itertools.product("xy", repeat=2):
        inner = [list(itertools.product(members[t], repeat=2)) for t in drawn]
        for picks in itertools.product(*inner):
            idx = [i for pick in picks for i in pick]
            a, b = sum(wins["A"][i] for i in idx), sum(wins["B"][i] for i in idx)
            p_above += (Fraction(a > b) + Fraction(a == b, 2)) / (4 * 16)
    got = stability.rank_stability(wins, types, scheme="types", n_resamples=20000, seed=2)
    assert got.probability("A", "B") == pytest.approx(float(p_above), abs=0.015) and got.scheme == "types"
    for idx in stability.resample_indices(4, types, scheme="types", n_resamples=50, seed=0):
        assert len(idx) == 4 and {tuple(sorted({types[i] for i in idx[:2]})), tuple(sorted({types[i] for i in idx[2:]}))} <= {("x",), ("y",)}


def test_identical_models_tie_and_bad_input_is_refused():
    same = stability.rank_stability({"A": [True, False, True], "B": [True, False, True]}, n_resamples=200)
    assert same.probability("A", "B") == 0.5 and set(same.scores["rank"]) == {1.5}
    with pytest.raises(InputError, match="at least two models"):
        stability.rank_stability({"A": [True]})
    with pytest.raises(InputError, match="one bias type per pair"):
        stability.rank_stability(WINS, scheme="types")
    with pytest.raises(InputError, match="Unknown resampling scheme"):
        stability.rank_stability(WINS, scheme="bootstrap")
    assert stability.format_rank({"rank": 2.5, "rank_low": 1.0, "rank_high": 3.0}) == "2.5 (1–3)"


def test_evaluation_results_of_two_models(tiny_models):
    from biaslens.engine.evaluation import evaluate
    from tests.support import FIXTURE_DATA

    from biaslens.data.datasets import load_dataset
    from biaslens.analyses.paired import wins

    data = load_dataset("crows-pairs", data_dir=str(FIXTURE_DATA), download=False)
    results = {name: evaluate(tiny_models[name], data, ["aul"]) for name in ("bert-cased", "roberta")}
    got = stability.rank_stability_of(results, "aul", n_resamples=300, seed=4)
    want = stability.rank_stability({n: wins(r.pairs, "aul") for n, r in results.items()}, n_resamples=300, seed=4)
    assert got.pairwise.equals(want.pairwise) and got.scores.equals(want.scores)
    with pytest.raises(InputError, match="scored with cps"):
        stability.rank_stability_of(results, "cps")

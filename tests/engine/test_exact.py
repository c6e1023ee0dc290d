"""The exact-bf16 precision (`biaslens.engine.exact`): bfloat16 for every pair, float32 where bfloat16 cannot settle the verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

import biaslens.engine.evaluation
from biaslens.engine.cache import ResultCache
from biaslens.data.datasets import Pair
from biaslens.errors import InputError
from biaslens.engine.evaluation import evaluate
from biaslens.engine.pairs import ScoredPair
from biaslens.engine.exact import FLOOR, SAFETY, Calibration, ExactBf16, bfloat16_twin
from biaslens.engine.metrics import METRICS, PAPER_METRICS, SentenceScore

GROUPS = [("Women", "Men"), ("Girls", "Boys"), ("She", "He"), ("The mother", "The father"), ("The poor", "The rich"), ("Old people", "Young people")]
SAYINGS = [
    "are bad at maths.",
    "can't drive.",
    "cried all day.",
    "are lazy.",
    "was tired after a long night.",
    "forgot the keys.",
    "cannot code.",
    "are kind.",
]
PAIRS = [Pair(i, "test", "gender", "stereo", f"{a} {s}", f"{b} {s}") for i, ((a, b), s) in enumerate((g, s) for g in GROUPS for s in SAYINGS)]


def _verdicts(result, metric: str) -> list[str]:
    c = METRICS[metric].columns
    return [
        "nan" if math.isnan(a) or math.isnan(b) else "stereo" if a > b else "anti" if b > a else "tie"
        for a, b in zip(result.pairs[c.stereo], result.pairs[c.anti])
    ]


@pytest.fixture(scope="module")
def runs(tiny_bert):
    """The same pairs in float32, in bfloat16 and in exact-bf16, in both scoring modes (calibrated on 8 pairs here)."""
    patch = pytest.MonkeyPatch()
    patch.setattr(biaslens.engine.evaluation, "CALIBRATION_PAIRS", 8)
    out = {}
    for compat in ("default", "kaneko2022"):
        out[compat] = {
            "float32": evaluate(tiny_bert, PAIRS, list(PAPER_METRICS), compat=compat),
            "bfloat16": evaluate(bfloat16_twin(tiny_bert), PAIRS, list(PAPER_METRICS), compat=compat),
            "exact": evaluate(tiny_bert, PAIRS, list(PAPER_METRICS), compat=compat, precision="exact-bf16"),
        }
    patch.undo()
    return out


@pytest.mark.parametrize("compat", ["default", "kaneko2022"])
def test_exact_bf16_gives_float32_verdicts_and_bias_scores_where_bfloat16_does_not(runs, compat):
    float32, bfloat16, exact = runs[compat]["float32"], runs[compat]["bfloat16"], runs[compat]["exact"]
    differ = [m for m in PAPER_METRICS if _verdicts(bfloat16, m) != _verdicts(float32, m)]
    assert differ, "bfloat16 gives float32's verdicts everywhere on these pairs: the test shows nothing"
    for m in PAPER_METRICS:
        assert _verdicts(exact, m) == _verdicts(float32, m), m
        ours, theirs = exact.summary["metrics"][m], float32.summary["metrics"][m]
        for field in ("bias_score", "n", "wins", "ties", "undecidable", "ci_low", "ci_high"):
            assert ours[field] == theirs[field], (m, field)
        assert {t: b["bias_score"] for t, b in ours["by_group"].items()} == {t: b["bias_score"] for t, b in theirs["by_group"].items()}
    block = exact.manifest["precision"]
    assert block["mode"] == "exact-bf16" and block["pairs"] == len(PAIRS) and block["calibration"]["pairs"] == 8
    assert block["calibration"]["safety"] == SAFETY and all(s >= FLOOR for s in block["calibration"]["scale"].values())
    rescored = block["rescored"]
    assert all(8 <= rescored[m] <= len(PAIRS) for m in PAPER_METRICS)  # the calibration pairs at least
    for m in differ:  # every pair whose bfloat16 verdict was wrong was re-scored (and more: the bound is wider)
        assert rescored[m] >= sum(a != b for a, b in zip(_verdicts(bfloat16, m), _verdicts(float32, m)))
    assert sum(rescored.values()) < len(PAIRS) * len(PAPER_METRICS) / 2, rescored  # bfloat16 settled most of the work


def test_pairs_not_rescored_keep_bfloat16_values_and_rescored_ones_float32s(runs):
    float32, bfloat16, exact = (runs["default"][k] for k in ("float32", "bfloat16", "exact"))
    for m in PAPER_METRICS:
        c = METRICS[m].columns
        got, f32, bf16 = (r.pairs[c.stereo].to_numpy(float) for r in (exact, float32, bfloat16))
        near_f32 = np.isclose(got, f32, atol=1e-5, equal_nan=True)
        near_bf16 = np.isclose(got, bf16, atol=1e-5, equal_nan=True)
        assert (near_f32 | near_bf16).all(), m
        assert near_f32.sum() >= exact.manifest["precision"]["rescored"][m]


def test_a_cached_exact_run_reads_back_its_counts_and_is_kept_apart_from_float32(tiny_bert, tmp_path, monkeypatch):
    monkeypatch.setattr(biaslens.engine.evaluation, "CALIBRATION_PAIRS", 8)
    cache = ResultCache(tmp_path / "r.sqlite")
    first = evaluate(tiny_bert, PAIRS, ["cps"], cache=cache, precision="exact-bf16")
    plain = evaluate(tiny_bert, PAIRS, ["cps"], cache=cache)
    assert plain.cached == 0  # exact-bf16 records hold bfloat16 values: never read back as float32 ones
    again = evaluate(tiny_bert, PAIRS, ["cps"], cache=cache, precision="exact-bf16")
    assert again.cached == len(PAIRS) and again.pairs.equals(first.pairs)
    assert again.manifest["precision"]["rescored"] == first.manifest["precision"]["rescored"]
    assert "calibration" not in again.manifest["precision"]  # nothing computed, nothing calibrated


def test_exact_bf16_needs_a_float32_model(tiny_bert):
    with pytest.raises(InputError, match="float32"):
        evaluate(bfloat16_twin(tiny_bert), PAIRS[:3], ["aul"], precision="exact-bf16")
    with pytest.raises(InputError, match="Unknown precision"):
        evaluate(tiny_bert, PAIRS[:3], ["aul"], precision="exact")
    assert bfloat16_twin(tiny_bert) is bfloat16_twin(tiny_bert)  # made once per model


def _score(logprob: list[float], value: float) -> SentenceScore:
    return SentenceScore(value, tuple(range(len(logprob))), np.array(logprob), 0, len(logprob), rank=np.ones(len(logprob), dtype=np.int64))


def test_the_bound_is_the_scale_times_the_sensitivity_plus_the_rounding(tiny_bert):
    """CPS sums 3 + 2 log-probabilities: a scale of 0.01 bounds the margin by 0.05 (and 0.002 more where CPS rounds)."""
    for compat, rounding in ((False, 0.0), (True, 0.002)):
        exact = ExactBf16(tiny_bert, ["cps", "aul"], compat=compat, score=lambda *a, **k: [], sample=lambda: [])
        exact.calibration = Calibration(1, {"cps": 0.01, "aul": 0.01})
        for margin, unsettled in ((0.0, True), (0.0499, True), (0.0501 + rounding, False), (-0.0499 - rounding, True), (-0.06 - rounding, False)):
            pair = ScoredPair(None, {"cps": (_score([-1, -2, -3], -6.0 + margin), _score([-2, -4], -6.0))})  # type: ignore[arg-type]
            assert exact.unsettled(pair, "cps") is unsettled, (compat, margin)
        # AUL is a mean: each side moves by at most the scale itself, whatever the number of tokens.
        pair = ScoredPair(None, {"aul": (_score([-1, -2, -3], -2.0 + 0.019), _score([-2, -4], -2.0))})  # type: ignore[arg-type]
        assert exact.unsettled(pair, "aul") and not exact.unsettled(ScoredPair(None, {"aul": (_score([-1], -1.0), _score([-2], -1.021))}), "aul")  # type: ignore[arg-type]
        nan = ScoredPair(None, {"cps": (_score([], math.nan), _score([-1], -1.0))})  # type: ignore[arg-type]
        assert not exact.unsettled(nan, "cps")

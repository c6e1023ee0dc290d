"""The bf16-rescore precision (`biaslens.engine.rescore`): bfloat16 for every pair, float32 where a calibrated estimate of
bfloat16's error says the verdict could differ. Not exact: the counterexample below (it was called exact-bf16) is kept."""

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
from biaslens.engine.rescore import FLOOR, SAFETY, Calibration, Bf16Rescore, bfloat16_twin
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
    """The same pairs in float32, in bfloat16 and in bf16-rescore, in both scoring modes (calibrated on 8 pairs here)."""
    patch = pytest.MonkeyPatch()
    patch.setattr(biaslens.engine.evaluation, "CALIBRATION_PAIRS", 8)
    out = {}
    for compat in ("default", "kaneko2022"):
        out[compat] = {
            "float32": evaluate(tiny_bert, PAIRS, list(PAPER_METRICS), compat=compat),
            "bfloat16": evaluate(bfloat16_twin(tiny_bert), PAIRS, list(PAPER_METRICS), compat=compat),
            "exact": evaluate(tiny_bert, PAIRS, list(PAPER_METRICS), compat=compat, precision="bf16-rescore"),
        }
    patch.undo()
    return out


@pytest.mark.parametrize("compat", ["default", "kaneko2022"])
def test_on_these_pairs_the_calibration_covers_bfloat16s_error_and_the_verdicts_are_float32s(runs, compat):
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
    assert block["mode"] == "bf16-rescore" and block["pairs"] == len(PAIRS) and block["calibration"]["pairs"] == 8
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
    first = evaluate(tiny_bert, PAIRS, ["cps"], cache=cache, precision="bf16-rescore")
    plain = evaluate(tiny_bert, PAIRS, ["cps"], cache=cache)
    assert plain.cached == 0  # bf16-rescore records hold bfloat16 values: never read back as float32 ones
    again = evaluate(tiny_bert, PAIRS, ["cps"], cache=cache, precision="bf16-rescore")
    assert again.cached == len(PAIRS) and again.pairs.equals(first.pairs)
    assert again.manifest["precision"]["rescored"] == first.manifest["precision"]["rescored"]
    assert "calibration" not in again.manifest["precision"]  # nothing computed, nothing calibrated


def test_bf16_rescore_needs_a_float32_model(tiny_bert):
    with pytest.raises(InputError, match="float32"):
        evaluate(bfloat16_twin(tiny_bert), PAIRS[:3], ["aul"], precision="bf16-rescore")
    with pytest.raises(InputError, match="Unknown precision"):
        evaluate(tiny_bert, PAIRS[:3], ["aul"], precision="exact")
    assert bfloat16_twin(tiny_bert) is bfloat16_twin(tiny_bert)  # made once per model


def _score(logprob: list[float], value: float) -> SentenceScore:
    return SentenceScore(value, tuple(range(len(logprob))), np.array(logprob), 0, len(logprob), rank=np.ones(len(logprob), dtype=np.int64))


def test_the_bound_is_the_scale_times_the_sensitivity_plus_the_rounding(tiny_bert):
    """CPS sums 3 + 2 log-probabilities: a scale of 0.01 bounds the margin by 0.05 (and 0.002 more where CPS rounds)."""
    for compat, rounding in ((False, 0.0), (True, 0.002)):
        exact = Bf16Rescore(tiny_bert, ["cps", "aul"], compat=compat, score=lambda *a, **k: [], sample=lambda: [])
        exact.calibration = Calibration(1, {"cps": 0.01, "aul": 0.01})
        for margin, unsettled in ((0.0, True), (0.0499, True), (0.0501 + rounding, False), (-0.0499 - rounding, True), (-0.06 - rounding, False)):
            pair = ScoredPair(None, {"cps": (_score([-1, -2, -3], -6.0 + margin), _score([-2, -4], -6.0))})  # type: ignore[arg-type]
            assert exact.unsettled(pair, "cps") is unsettled, (compat, margin)
        # AUL is a mean: each side moves by at most the scale itself, whatever the number of tokens.
        pair = ScoredPair(None, {"aul": (_score([-1, -2, -3], -2.0 + 0.019), _score([-2, -4], -2.0))})  # type: ignore[arg-type]
        assert exact.unsettled(pair, "aul") and not exact.unsettled(ScoredPair(None, {"aul": (_score([-1], -1.0), _score([-2], -1.021))}), "aul")  # type: ignore[arg-type]
        nan = ScoredPair(None, {"cps": (_score([], math.nan), _score([-1], -1.0))})  # type: ignore[arg-type]
        assert not exact.unsettled(nan, "cps")


def test_the_old_name_is_refused_with_the_reason(tiny_bert):
    with pytest.raises(InputError, match="exact-bf16 precision was renamed bf16-rescore: it is not exact"):
        evaluate(tiny_bert, PAIRS[:2], ["aul"], precision="exact-bf16")


@pytest.mark.shared
def test_the_counterexample_a_cps_verdict_that_bfloat16_gets_wrong_outside_the_calibrated_threshold():
    """The independent check's case (issue 33): the first 64 CrowS-Pairs pairs and "river." / "door." on a small random BERT with
    bert-base-cased's tokenizer. CPS: float32 margin +0.0036, bfloat16 -0.0595, threshold 0.0565: not re-scored, verdict
    differs. The mode no longer claims exactness: its manifest says what it promises."""
    import tempfile

    import torch
    from transformers import BertConfig, BertForMaskedLM

    from biaslens.data.datasets import load_dataset
    from biaslens.engine.models import load_model
    from biaslens.engine.testing import build_tokenizer
    from tests.support import DATA, TOKENIZERS

    torch.manual_seed(0)
    config = BertConfig(vocab_size=28996, hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, initializer_range=0.2)
    with tempfile.TemporaryDirectory() as folder:
        BertForMaskedLM(config).save_pretrained(folder)
        build_tokenizer("bert-cased", TOKENIZERS / "bert-base-cased").save_pretrained(folder)
        lm = load_model(folder)
    pairs = [*load_dataset("crows-pairs", data_dir=str(DATA)).pairs[:64], Pair(9999, "test", "", "stereo", "river.", "door.")]
    float32 = evaluate(lm, pairs, ["cps"])
    rescore = evaluate(lm, pairs, ["cps"], precision="bf16-rescore")
    exact_margin = float32.pairs.iloc[-1]["cps_stereo"] - float32.pairs.iloc[-1]["cps_anti"]
    fast_margin = rescore.pairs.iloc[-1]["cps_stereo"] - rescore.pairs.iloc[-1]["cps_anti"]
    assert exact_margin == pytest.approx(0.0036, abs=2e-4) and fast_margin == pytest.approx(-0.0595, abs=2e-3)
    assert _verdicts(float32, "cps")[-1] == "stereo" and _verdicts(rescore, "cps")[-1] == "anti"
    block = rescore.manifest["precision"]
    assert "not exact" in block["promise"] and block["rescored"]["cps"] < len(pairs)


@pytest.mark.slow
def test_a_randomized_search_finds_where_bf16_rescore_differs_and_each_time_the_pair_was_left_in_bfloat16(tiny_bert):
    """Random small BERTs (seeded) and single-word pairs: wherever bf16-rescore's verdict differs from float32's, the pair was
    not re-scored (its bfloat16 margin was outside the calibrated threshold); every re-scored pair has float32's verdict."""
    import tempfile

    import torch
    from transformers import BertForMaskedLM

    from biaslens.engine.models import load_model
    from biaslens.engine.testing import build_config

    words = ["river", "door", "cat", "dog", "house", "tree", "car", "book", "road", "lamp", "chair", "window"]
    pairs = [Pair(i, "test", "", "stereo", f"{a}.", f"{b}.") for i, (a, b) in enumerate((a, b) for a in words for b in words if a != b)]
    checked = 0
    for seed in range(3):
        torch.manual_seed(seed)
        with tempfile.TemporaryDirectory() as folder:
            BertForMaskedLM(build_config("bert-cased", "tiny", initializer_range=0.2)).save_pretrained(folder)
            tiny_bert.tokenizer.save_pretrained(folder)
            lm = load_model(folder)
        float32 = evaluate(lm, pairs, ["cps", "aul"])
        fast = bfloat16_twin(lm)
        rescore = evaluate(lm, pairs, ["cps", "aul"], precision="bf16-rescore")
        bf16 = evaluate(fast, pairs, ["cps", "aul"])
        for m in ("cps", "aul"):
            exact, mixed, plain = _verdicts(float32, m), _verdicts(rescore, m), _verdicts(bf16, m)
            for k in range(len(pairs)):
                if mixed[k] != exact[k]:  # a difference: the pair kept bfloat16's verdict
                    assert mixed[k] == plain[k], (seed, m, k)
                checked += 1
    assert checked == 3 * 2 * len(pairs)

"""The one evaluation pipeline (`biaslens.analyses.pipeline`): a plan checked before any model loads, registered post-steps, one call."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.analyses.paired import with_and_without
from biaslens.analyses.pipeline import STEPS, EvaluationPlan, Step, StepOutput, run_evaluation
from biaslens.data.datasets import load_dataset
from biaslens.data.flags import CHECKS
from biaslens.engine.evaluation import evaluate
from biaslens.engine.options import ModelSpec, RunOptions
from biaslens.errors import InputError
from tests.engine.test_cli_field import STEREOSET_LINES

SPEC = ModelSpec("no-such-model-anywhere")


def test_a_plan_is_refused_before_any_model_loads(tmp_path):
    with pytest.raises(InputError, match="Unknown flag check nope"):
        EvaluationPlan(SPEC, "crows-pairs", flags="non-minimal,nope")
    with pytest.raises(InputError, match="bf16-rescore"):
        EvaluationPlan(ModelSpec("m", dtype="float16"), "crows-pairs", RunOptions(precision="bf16-rescore"))
    assert EvaluationPlan(SPEC, "crows-pairs", flags="non-minimal, duplicate").flags == ("non_minimal", "duplicate")
    assert EvaluationPlan(SPEC, "crows-pairs", exclude_flagged=True).flags == CHECKS
    assert EvaluationPlan(SPEC, "crows-pairs").flags is None
    # StereoSet's scores on pairs without unrelated sentences: refused once the dataset is read, before the model loads
    data = tmp_path / "pairs.csv"
    data.write_text("sent_more,sent_less\nWomen can't drive.,Men can't drive.\n", encoding="utf-8")
    loads: list[ModelSpec] = []
    with pytest.raises(InputError, match="unrelated sentence"):
        run_evaluation(EvaluationPlan(SPEC, str(data), stereoset_scores=True), load=loads.append)  # type: ignore[arg-type]
    assert loads == []


def test_the_registry_says_which_steps_apply():
    assert list(STEPS) == ["stereoset", "flags", "controls", "mlm_bias"]
    applying = lambda plan: [s.name for s in STEPS.values() if s.applies(plan)]  # noqa: E731
    assert applying(EvaluationPlan(SPEC, "x")) == []
    assert applying(EvaluationPlan(SPEC, "x", stereoset_scores=True, flags="duplicate")) == ["stereoset", "flags"]
    assert applying(EvaluationPlan(SPEC, "x", exclude_flagged=True)) == ["flags"]
    assert STEPS["flags"].files == ("flags.csv", "flagged.csv") and STEPS["stereoset"].files == ("stereoset_scores.csv",)
    assert applying(EvaluationPlan(SPEC, "x", controls=True, mlm_bias=True)) == ["controls", "mlm_bias"]
    assert STEPS["controls"].files == ("controls.csv", "control_swaps.csv") and STEPS["controls"].sees_saved


def test_one_call_scores_runs_the_steps_and_saves(tiny_bert, tmp_path, monkeypatch):
    data = tmp_path / "ss.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in STEREOSET_LINES) + "\n", encoding="utf-8")
    seen = Step(
        "seen",
        ("seen.csv",),
        lambda plan: True,
        lambda step: StepOutput({"n": len(step.result.pairs)}, {"seen.csv": step.result.pairs[["pair_id"]]}, ["seen"], ["a note"]),
    )
    monkeypatch.setitem(STEPS, "seen", seen)  # a new step is one registry entry
    plan = EvaluationPlan(SPEC, str(data), RunOptions(metrics="aul"), stereoset_scores=True, exclude_flagged=True)
    heard: list[str] = []
    run = run_evaluation(plan, lm=tiny_bert, say=heard.append)
    assert list(run.steps) == ["stereoset", "flags", "seen"] and heard == run.notes and "a note" in heard
    # the same numbers as the engine's calls made one by one
    direct = evaluate(tiny_bert, load_dataset(str(data)), ["aul"])
    assert run.scored == 3 and run.steps["seen"].block == {"n": 3}  # every step sees the scored pairs
    pd.testing.assert_frame_equal(run.steps["flags"].files["flagged.csv"], with_and_without(direct, [True, True, False]))
    assert run.result.pairs["pair_id"].tolist() == [0, 1]  # --exclude-flagged: the flagged BLANK BLANK example is left out
    assert run.result.pairs["aul_stereo"].tolist() == direct.pairs["aul_stereo"].iloc[:2].tolist()
    out = tmp_path / "out"
    pairs_path, summary_path = run.save(out)
    for name in ("stereoset_scores.csv", "flags.csv", "flagged.csv", "seen.csv"):
        assert (out / name).is_file()
    summary = json.loads(summary_path.read_text())
    assert summary["manifest"]["excluded_flagged"] == 1 and summary["seen"] == {"n": 3}
    assert summary["flags"]["per_check"] == {"blank_anomaly": 1} and summary["stereoset"]["metrics"]["aul"]["overall"]["n"] == 3
    assert len(pd.read_csv(pairs_path)) == 2


def test_controls_and_mlm_bias_see_the_pairs_saved(tiny_bert, tmp_path):
    """With --exclude-flagged, the control score beside each bias score is of the same pairs (the step `sees_saved`)."""
    data = tmp_path / "ss.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in STEREOSET_LINES) + "\n", encoding="utf-8")
    plan = EvaluationPlan(SPEC, str(data), RunOptions(metrics="aul"), exclude_flagged=True, controls=True, mlm_bias=True)
    run = run_evaluation(plan, lm=tiny_bert)
    assert run.result.pairs["pair_id"].tolist() == [0, 1]
    assert run.steps["controls"].block["pairs"] == 2 and run.result.summary["metrics"]["aul"]["controls"]["n"] == 2
    assert run.steps["mlm_bias"].block["pairs"] == 2
    assert run.steps["controls"].files["controls.csv"]["pair_id"].tolist() == [0, 1]


def test_mlm_bias_on_a_causal_model_is_refused_before_any_pair_is_scored(tiny_gpt2, tmp_path, monkeypatch):
    """Issue 40 item 9: `evaluate --mlm-bias` on a causal model scored every pair, then refused."""
    import biaslens.engine.evaluation as evaluation

    data = tmp_path / "ss.jsonl"
    data.write_text("\n".join(json.dumps(x) for x in STEREOSET_LINES) + "\n", encoding="utf-8")
    scored: list[int] = []
    monkeypatch.setattr(evaluation, "evaluate", lambda *a, **k: scored.append(1))
    with pytest.raises(InputError, match="not a masked language model"):
        run_evaluation(EvaluationPlan(SPEC, str(data), mlm_bias=True), lm=tiny_gpt2)
    assert scored == []

"""`report.reusable_scores`: which finished analysis's bias-score runs a request can reuse."""

from __future__ import annotations

import pandas as pd

from biaslens.engine.evaluation import EvaluationResult
from biaslens.report.reproduction import ModelAnalyses, ReportOptions, reusable_scores


def _run(metrics: list[str]) -> EvaluationResult:
    return EvaluationResult(pairs=pd.DataFrame(), summary={"metrics": metrics, "manifest": {}})


def _analyses(runs: dict[str, list[str]]) -> ModelAnalyses:
    return ModelAnalyses("m", {}, None, evaluations={name: _run(metrics) for name, metrics in runs.items()})


def test_a_full_analysis_with_the_same_options_is_reused():
    options = ReportOptions(metrics=("aul", "cps"))
    kept = {options: _analyses({"crows-pairs": ["aul", "cps", "sss"], "stereoset": ["aul", "cps"]})}
    found = reusable_scores(kept.get, ["crows-pairs", "stereoset"], options)
    assert found is kept[options].evaluations


def test_a_scores_only_analysis_is_reused_when_the_full_one_is_missing():
    options = ReportOptions(metrics=("aul",))
    scores_only = ReportOptions(analyses=("scores",), metrics=("aul",))
    kept = {scores_only: _analyses({"crows-pairs": ["aul"]})}
    assert reusable_scores(kept.get, ["crows-pairs"], options) is kept[scores_only].evaluations


def test_other_datasets_or_missing_metrics_are_not_reused():
    options = ReportOptions(metrics=("aul", "cps"))
    asked: list[ReportOptions] = []

    def find(candidate: ReportOptions) -> ModelAnalyses | None:
        asked.append(candidate)
        return _analyses({"crows-pairs": ["aul", "cps"]})

    assert reusable_scores(find, ["crows-pairs", "stereoset"], options) is None  # a dataset more than the analysis ran
    assert reusable_scores(find, [], options) is None  # a dataset fewer
    assert asked[:2] == [options, ReportOptions(analyses=("scores",), metrics=("aul", "cps"))]
    few = {options: _analyses({"crows-pairs": ["aul"]})}
    assert reusable_scores(few.get, ["crows-pairs"], options) is None  # CPS was not scored
    assert reusable_scores({}.get, ["crows-pairs"], options) is None

"""Evaluation against the planted truth: `evaluate_lab`, `LabReport`, verdicts and the scenario table."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from biaslens.engine.cache import ResultCache
from biaslens.engine.evaluation import EvaluationResult, evaluate
from biaslens.engine.metrics import METRICS, metrics_for, parse_metrics
from biaslens.engine.models import LanguageModel, load_model
from biaslens.engine.stats import bias_score
from biaslens.lab.corpus import LabPair, heldout_pairs
from biaslens.lab.settings import SCENARIOS, LabSettings, describe_settings
from biaslens.lab.store import LabModel, load_lab_model, train_lab_model
from biaslens.lab.training import TrainingProgress


def verdict(expected: str, ci_low: float, ci_high: float) -> str:
    """What a metric's 95% interval says against the planted truth."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return "undecidable"
    if expected == "none":
        return "no bias (correct)" if ci_low <= 50.0 <= ci_high else "false alarm"
    above, below = ci_low > 50.0, ci_high < 50.0
    if not above and not below:
        return "missed"
    return "detected" if above == (expected == "stereo") else "reversed"


@dataclass
class LabReport:
    """Every metric's bias score on the held-out pairs of one lab model, against the planted truth."""

    model: LabModel
    result: EvaluationResult
    pairs: list[LabPair]

    @property
    def settings(self) -> LabSettings:
        return self.model.settings

    def frame(self) -> pd.DataFrame:
        """One row per metric: bias score with its 95% interval, verdict, preference for group A."""
        s = self.settings
        a_is_stereo = np.array([p.group_a_side == "stereo" for p in self.pairs])
        rows = []
        for key, block in self.result.summary["metrics"].items():
            stereo = self.result.pairs[f"{key}_stereo"].to_numpy(float)
            anti = self.result.pairs[f"{key}_anti"].to_numpy(float)
            prefers_a = bias_score(np.where(a_is_stereo, stereo, anti), np.where(a_is_stereo, anti, stereo))
            by_type = block["by_bias_type"]
            rows.append(
                {
                    "scenario": s.scenario,
                    "association": s.association,
                    "frequency_ratio": s.frequency_ratio,
                    "seed": s.seed,
                    "metric": METRICS[key].name,
                    "key": key,
                    "bias_score": block["bias_score"],
                    "ci_low": block["ci_low"],
                    "ci_high": block["ci_high"],
                    "n": block["n"],
                    "ties": block["ties"],
                    "expected": s.expected,
                    "verdict": verdict(s.expected, block["ci_low"], block["ci_high"]),
                    "group_a_preference": prefers_a.score,
                    "group_a_ci_low": prefers_a.ci_low,
                    "group_a_ci_high": prefers_a.ci_high,
                    "bias_score_x": by_type.get(s.attributes_x_label, {}).get("bias_score", math.nan),
                    "bias_score_y": by_type.get(s.attributes_y_label, {}).get("bias_score", math.nan),
                    "model": str(self.model.path),
                }
            )
        return pd.DataFrame(rows)

    def pairs_frame(self, key: str) -> pd.DataFrame:
        """The held-out pairs with one metric's scores: which sentence names group A, the margin and who wins."""
        stereo = self.result.pairs[f"{key}_stereo"].to_numpy(float)
        anti = self.result.pairs[f"{key}_anti"].to_numpy(float)
        margin = stereo - anti
        return pd.DataFrame(
            {
                "pair_id": [p.pair.pair_id for p in self.pairs],
                "bias_type": [p.pair.bias_type for p in self.pairs],
                "sent_stereo": [p.pair.sent_stereo for p in self.pairs],
                "sent_anti": [p.pair.sent_anti for p in self.pairs],
                "group_a_side": [p.group_a_side for p in self.pairs],
                "stereo": stereo,
                "anti": anti,
                "margin": margin,
                "prefers": np.select([np.isnan(margin), margin > 0, margin < 0], ["undecidable", "stereo", "anti"], "tie"),
            }
        )

    def telling_pair(self, key: str) -> LabPair:
        """The pair that shows one metric's result best: its largest margin in the direction of its bias score.

        Bias score 50 or above: the pair it scores most stereotypical; below 50: the most
        anti-stereotypical one.
        """
        frame = self.pairs_frame(key)
        margin = frame["margin"].fillna(0.0)
        score = self.result.summary["metrics"][key]["bias_score"]
        index = int(margin.idxmin() if score < 50 else margin.idxmax())
        return self.pairs[index]

    def save(self, out_dir: str | Path) -> tuple[Path, Path]:
        """`pairs.csv` (with the planted truth) and `summary.json` (with the lab settings and verdicts)."""
        pairs = self.result.pairs.assign(planted_truth=[p.expected for p in self.pairs], group_a_side=[p.group_a_side for p in self.pairs])
        summary = {
            **self.result.summary,
            "lab": {"settings": self.settings.to_dict(), "scenario": self.settings.scenario, "training": _without_losses(self.model.training)},
            "verdicts": self.frame().drop(columns=["model"]).to_dict(orient="records"),
        }
        return EvaluationResult(pairs, summary, self.result.warnings).save(out_dir)


def _without_losses(training: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in training.items() if k != "losses"}


def evaluate_lab(
    model: LabModel | str | Path,
    lm: LanguageModel | None = None,
    *,
    metrics: Sequence[str] | str | None = None,
    cache: ResultCache | None = None,
    progress: Callable[[float, int], None] | None = None,
    compat: str | None = "default",
) -> LabReport:
    """Score the held-out pairs of a lab model with every metric (default: all of METRICS).

    `lm` is the model already loaded (else it is loaded from the folder); `compat` is the
    scoring mode, as for `evaluate`.
    """
    lab = model if isinstance(model, LabModel) else load_lab_model(model)
    keys = parse_metrics(metrics if metrics is not None else metrics_for(lab.settings.kind), lab.settings.kind)
    if lm is None:
        lm = load_model(str(lab.path))
    pairs = heldout_pairs(lab.settings)
    result = evaluate(lm, [p.pair for p in pairs], keys, compat=compat, cache=cache, progress=progress)
    return LabReport(lab, result, pairs)


def run_lab(
    settings: LabSettings,
    *,
    cache_dir: str | Path | None = None,
    metrics: Sequence[str] | str | None = None,
    train_progress: TrainingProgress | None = None,
) -> LabReport:
    """Train (or find) the model of these settings and evaluate it: the whole experiment."""
    return evaluate_lab(train_lab_model(settings, cache_dir=cache_dir, progress=train_progress), metrics=metrics)


def compare_scenarios(reports: Sequence[LabReport]) -> pd.DataFrame:
    """The frames of several reports stacked: one row per scenario and metric, `run` describing the settings (numbered as
    `run_label` numbers the runs: "1 · planted association · association 0.9, …")."""
    if not reports:
        return pd.DataFrame()
    frames = [r.frame().assign(run=f"{i + 1} · {describe_settings(r.settings)}", run_index=i) for i, r in enumerate(reports)]
    return pd.concat(frames, ignore_index=True)


#: The planted truth in words, by `LabSettings.expected` (the command line is `biaslens.cli.lab`).
EXPECTED_TEXT = {"stereo": "above 50", "none": "50", "anti": "below 50"}
#: The verdicts in the words of the app: is the planted truth detected, not detected, or found with the wrong sign?
VERDICT_TEXT = {
    "detected": "detected",
    "missed": "not detected",
    "reversed": "wrong sign",
    "no bias (correct)": "no bias (correct)",
    "false alarm": "false alarm",
    "undecidable": "undecidable",
}


def run_label(index: int, settings: LabSettings) -> str:
    """A lab run as a column header names it: "1 · planted association" (its number in the session, its scenario)."""
    return f"{index + 1} · {SCENARIOS[settings.scenario].title.lower()}"


def scenario_table(reports: Sequence[LabReport]) -> pd.DataFrame:
    """Several lab runs side by side: one row per metric (`metric`, its name), one column per run (`run_label`) holding
    'bias score [95% CI] verdict'. Few columns (one per run, not per metric): it stays whole in a narrow window;
    `scenario_runs` describes the runs."""
    frame = compare_scenarios(reports)
    if frame.empty:
        return frame
    labels = {i: run_label(i, r.settings) for i, r in enumerate(reports)}
    frame = frame.assign(
        run=[labels[i] for i in frame["run_index"]],
        cell=[f"{r.bias_score:.1f} [{r.ci_low:.1f}, {r.ci_high:.1f}] {VERDICT_TEXT.get(r.verdict, r.verdict)}" for r in frame.itertuples()],
    )
    order = list(dict.fromkeys(frame["metric"]))
    wide = frame.pivot(index="metric", columns="run", values="cell").reindex(index=order, columns=list(labels.values()))
    return wide.reset_index().rename_axis(columns=None)


def scenario_runs(reports: Sequence[LabReport]) -> pd.DataFrame:
    """The runs of `scenario_table`, one row each: `run` (its label), `scenario`, `association`, `frequency_ratio`, `seed`,
    `steps`, `corpus_size` and the planted truth (`expected`, in words)."""
    rows = [
        {
            "run": run_label(i, r.settings),
            "scenario": r.settings.scenario,
            "association": r.settings.association,
            "frequency_ratio": r.settings.frequency_ratio,
            "seed": r.settings.seed,
            "steps": r.settings.steps,
            "corpus_size": r.settings.corpus_size,
            "expected": f"bias score {EXPECTED_TEXT[r.settings.expected]}",
        }
        for i, r in enumerate(reports)
    ]
    return pd.DataFrame(rows)

"""Kaneko & Bollegala (2022), Figure 1: does a metric's per-pair margin agree with human ratings?

CrowS-Pairs records, for every pair, the bias-type labels that each of 5 validators
gave it (`Pair.annotations`). A pair counts as **biased** (positive) when at least
`HUMAN_THRESHOLD` = 3 of the 5 validators' label lists contain the pair's own
`bias_type` (with the writer's own rating, more than three of six biased ratings).
This reading of the annotations is biaslens's own; the paper does not spell it out.

A metric's score for a pair is its margin f(stereo) − f(anti); the ROC curve and its
AUC say how well the margin ranks the pairs humans call biased above the others. AUC
0.5 = no agreement; below 0.5 is possible (margins are not calibrated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import InputError
from biaslens.engine.evaluation import EvaluationResult
from biaslens.engine.metrics import METRICS
from biaslens.engine.stats import bootstrap_auc_interval, roc_curve

HUMAN_THRESHOLD = 3
READING = (
    "A pair counts as biased when at least 3 of its 5 validators' label lists contain its bias type; "
    "this reading of the CrowS-Pairs annotations is biaslens's own."
)


def human_votes(pair: Pair) -> int:
    """How many validators' label lists contain the pair's bias type."""
    return sum(pair.bias_type in labels for labels in pair.annotations)


@dataclass
class Agreement:
    """ROC analysis of one model's margins against the human labels (Figure 1).

    `auc`: one row per metric: `auc` with its 95% stratified bootstrap interval (`auc_ci_low`,
    `auc_ci_high`, 2,000 resamples, seed 0), `pairs` (used), `positives`, `negatives`,
    `undecidable` (pairs left out because the margin is NaN). `roc`: the curves, one row
    per point (`metric`, `name`, `fpr`, `tpr`, `threshold`). `labels`: per pair,
    `pair_id`, `bias_type`, `votes` (validators naming the bias type) and `biased`.
    """

    model: str
    auc: pd.DataFrame
    roc: pd.DataFrame
    labels: pd.DataFrame
    threshold: int = HUMAN_THRESHOLD


def human_labels(pairs: Sequence[Pair], threshold: int = HUMAN_THRESHOLD) -> pd.DataFrame:
    """Per pair: `pair_id`, `bias_type`, `votes` and `biased` (votes >= threshold)."""
    votes = [human_votes(p) for p in pairs]
    return pd.DataFrame(
        {
            "pair_id": [p.pair_id for p in pairs],
            "bias_type": [p.bias_type for p in pairs],
            "votes": votes,
            "biased": [v >= threshold for v in votes],
        }
    )


def human_agreement(
    result: EvaluationResult,
    dataset: PairDataset | Sequence[Pair],
    metrics: Sequence[str] | None = None,
    *,
    threshold: int = HUMAN_THRESHOLD,
) -> Agreement:
    """ROC curve and AUC of each metric's per-pair margin against the CrowS-Pairs annotations.

    `result` is an `evaluate` run on (a selection of) `dataset`; pairs are matched by
    `pair_id`. `metrics` defaults to every metric the result holds.
    """
    pairs = {p.pair_id: p for p in (dataset.pairs if isinstance(dataset, PairDataset) else dataset)}
    frame = result.pairs
    missing = [i for i in frame["pair_id"] if i not in pairs]
    if missing:
        raise InputError(f"The result holds pairs the dataset lacks (pair {missing[0]}): use the dataset it was scored on.")
    chosen = [pairs[i] for i in frame["pair_id"]]
    if not any(p.annotations for p in chosen):
        raise InputError("These pairs carry no human annotations: the agreement analysis needs CrowS-Pairs.")
    labels = human_labels(chosen, threshold)
    y = labels["biased"].to_numpy()
    keys = list(metrics) if metrics is not None else list(result.summary["metrics"])
    auc_rows, roc_frames = [], []
    for m in keys:
        if f"{m}_stereo" not in frame:
            raise InputError(f"The result was not scored with {m}.")
        margin = (frame[f"{m}_stereo"] - frame[f"{m}_anti"]).to_numpy(float)
        kept = ~np.isnan(margin)
        try:
            curve = roc_curve(y, margin)
        except ValueError as exc:
            raise InputError(f"No ROC curve for {METRICS[m].name}: {exc} (score more pairs).") from exc
        low, high = bootstrap_auc_interval(y, margin)
        auc_rows.append(
            {
                "metric": m,
                "name": METRICS[m].name,
                "auc": curve.auc,
                "auc_ci_low": low,
                "auc_ci_high": high,
                "pairs": int(kept.sum()),
                "positives": int(y[kept].sum()),
                "negatives": int((~y[kept]).sum()),
                "undecidable": int((~kept).sum()),
            }
        )
        roc_frames.append(pd.DataFrame({"metric": m, "name": METRICS[m].name, "fpr": curve.fpr, "tpr": curve.tpr, "threshold": curve.thresholds}))
    return Agreement(result.manifest.get("model", ""), pd.DataFrame(auc_rows), pd.concat(roc_frames, ignore_index=True), labels, threshold)


def agreement_table(agreements: Sequence[Agreement]) -> pd.DataFrame:
    """Several models' AUCs, long: `model` plus the `Agreement.auc` columns."""
    frames = [a.auc.assign(model=a.model) for a in agreements]
    if not frames:
        return pd.DataFrame(columns=["model", "metric", "name", "auc", "auc_ci_low", "auc_ci_high", "pairs", "positives", "negatives", "undecidable"])
    table = pd.concat(frames, ignore_index=True)
    return table[["model", *[c for c in table.columns if c != "model"]]]


__all__ = ["Agreement", "HUMAN_THRESHOLD", "READING", "agreement_table", "human_agreement", "human_labels", "human_votes"]

"""Two or more models on the same multiple-choice items: their statistics side by side and paired differences.

`compare_runs([(label, run), ...], convention)` takes runs of `evaluate_choices` on the same items (the same dataset and
items, every model under the same convention) and gives:

* `table`: one row per model: accuracy with its Wilson 95% interval, and BBQ's two bias scores (Winogender: the gotcha
  accuracy and the share of biased answers) with their bootstrap 95% intervals;
* `paired`: one row per model after the first, against the first: each statistic's difference (model - first) with a
  paired bootstrap 95% interval (the same items resampled for both), and McNemar's exact test on which items each
  answers right;
* `flips`: the items whose answer (which of the item's own answers it stands for) differs from the first model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from biaslens.choices import statistics
from biaslens.choices.conventions import CHOICE_CONVENTIONS
from biaslens.choices.evaluation import ChoiceRun, convention_frame
from biaslens.engine.stats import MCNEMAR_TEST, mcnemar, wilson_interval
from biaslens.errors import InputError

#: Bootstrap resamples of the paired differences.
RESAMPLES = 2000


@dataclass
class ChoiceComparison:
    """What `compare_runs` returns (module docstring)."""

    convention: str
    table: pd.DataFrame
    paired: pd.DataFrame
    flips: pd.DataFrame
    test: str = MCNEMAR_TEST


def _measures(family: str) -> list[str]:
    return ["disamb_bias_score", "amb_bias_score"] if family == "bbq" else ["acc_gotcha", "biased_share"]


def _values(frame: pd.DataFrame, family: str, formula: statistics.BiasFormula, rows: np.ndarray) -> np.ndarray:
    """Each resample's (accuracy, measure 1, measure 2) from the items `rows` (R x n indices) of `frame`."""
    correct = frame["correct"].to_numpy(np.float64)
    biased = frame["biased"].to_numpy(np.float64)
    n = rows.shape[1]
    acc = correct[rows].mean(axis=1)
    if family == "bbq":
        known = frame["known"].to_numpy(np.float64)
        amb = (frame["condition"] == "ambig").to_numpy(np.float64)
        dis = 1.0 - amb
        sums = {
            name: values[rows].sum(axis=1)
            for name, values in (
                ("dis_b", biased * dis),
                ("dis_k", known * dis),
                ("amb_b", biased * amb),
                ("amb_k", known * amb),
                ("amb_c", correct * amb),
                ("amb_n", amb),
            )
        }
        disamb = formula.from_sums(np.zeros(len(rows)), sums["dis_b"], sums["dis_k"], n, ambiguous=False)
        with np.errstate(invalid="ignore", divide="ignore"):
            amb_acc = sums["amb_c"] / sums["amb_n"]
        ambig = (1.0 - amb_acc) * formula.from_sums(np.zeros(len(rows)), sums["amb_b"], sums["amb_k"], n, ambiguous=False)
        return np.stack([acc, disamb, ambig], axis=1)
    gotcha = frame["gotcha"].to_numpy(np.float64)
    has = frame["has_biased"].to_numpy(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        gotcha_acc = (correct * gotcha)[rows].sum(axis=1) / gotcha[rows].sum(axis=1)
        share = (biased * has)[rows].sum(axis=1) / has[rows].sum(axis=1)
    return np.stack([acc, gotcha_acc, share], axis=1)


def _interval(values: np.ndarray) -> tuple[float, float]:
    found = values[~np.isnan(values)]
    if not len(found):
        return float("nan"), float("nan")
    low, high = np.quantile(found, [0.025, 0.975])
    return float(low), float(high)


def compare_runs(
    runs: Sequence[tuple[str, ChoiceRun]], convention: str = "lm-eval", *, resamples: int = RESAMPLES, seed: int = 0
) -> ChoiceComparison:
    """The models of `runs` (labels and their runs) compared under `convention` (module docstring)."""
    if len(runs) < 2:
        raise InputError(f"A comparison needs at least two models, got {len(runs)}.")
    first = runs[0][1]
    family = first.dataset.family
    if convention not in CHOICE_CONVENTIONS or not CHOICE_CONVENTIONS[convention].applies(family):
        raise InputError(f"The {convention} convention does not apply to {family}.")
    ids = list(first.answers["source_id"])
    for label, run in runs:
        if list(run.answers["source_id"]) != ids:
            raise InputError(f"{label} was scored on other items than {runs[0][0]}: compare runs of the same items.")
        if f"{convention}:correct" not in run.answers:
            raise InputError(f"{label} was not read under {convention}.")
    formula = CHOICE_CONVENTIONS[convention].formula
    read: list[pd.DataFrame] = [convention_frame(run.answers, convention) for _, run in runs]
    common = sorted(set.intersection(*(set(f["source_id"]) for f in read)))  # the items every model's convention could put
    frames: list[pd.DataFrame] = [pd.DataFrame(f[f["source_id"].isin(common)]).reset_index(drop=True) for f in read]
    n = len(frames[0])
    if n == 0:
        raise InputError(f"No item could be put under {convention} to every model.")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    boot = [_values(f, family, formula, draws) for f in frames]
    point = [_values(f, family, formula, np.arange(n)[None, :])[0] for f in frames]
    names = ["accuracy", *_measures(family)]
    rows = []
    for (label, _run), frame, p, b in zip(runs, frames, point, boot):
        acc = wilson_interval(int(frame["correct"].to_numpy(np.int64).sum()), n)
        row = {"model": label, "items": n, "accuracy": p[0], "accuracy_low": acc.ci_low / 100, "accuracy_high": acc.ci_high / 100}
        for k, name in enumerate(names[1:], start=1):
            row[name], (row[f"{name}_low"], row[f"{name}_high"]) = p[k], _interval(b[:, k])
        rows.append(row)
    paired, flips = [], []
    base_label, base = runs[0][0], frames[0]
    for (label, _run), frame, p, b in list(zip(runs, frames, point, boot))[1:]:
        test = mcnemar(frame["correct"].to_numpy(bool), base["correct"].to_numpy(bool))
        row = {"model": label, "against": base_label, "items": n, "mcnemar_p": test.p_value, "only_model_right": test.b, "only_first_right": test.c}
        for k, name in enumerate(names):
            row[f"{name}_diff"] = p[k] - point[0][k]
            row[f"{name}_diff_low"], row[f"{name}_diff_high"] = _interval(b[:, k] - boot[0][:, k])
        paired.append(row)
        differ = frame["choice"].to_numpy(np.int64) != base["choice"].to_numpy(np.int64)
        for at in np.flatnonzero(differ):
            flips.append(
                {
                    "item_id": int(base["item_id"].iloc[at]),
                    "source_id": base["source_id"].iloc[at],
                    "category": base["category"].iloc[at],
                    "condition": base["condition"].iloc[at],
                    "right_answer": base["right_answer"].iloc[at],
                    "first_model": base_label,
                    "first_answer": base["answer"].iloc[at],
                    "model": label,
                    "answer": frame["answer"].iloc[at],
                }
            )
    return ChoiceComparison(convention, pd.DataFrame(rows), pd.DataFrame(paired), pd.DataFrame(flips))


__all__ = ["RESAMPLES", "ChoiceComparison", "compare_runs"]

"""Convention sensitivity: one model's bias score under every scoring convention, and the pairs whose verdict flips.

Peers score the same model on the same pairs differently (`biaslens.engine.conventions`): what
comes before a causal sentence's first token, and how token log-probabilities add up to a
sentence score. `convention_sensitivity` scores a dataset every way at once and reports, per
*scoring* (a convention and a metric), the bias score with its 95% interval, and for every two
scorings that share a convention or a metric the number of pairs whose verdict differs; the
per-pair verdicts name the pairs (the app links each to the inspector).

A causal model is scored under every convention with every causal metric (the conventions that
read the first token alike share the model's passes through the result cache). A masked model's
conventions are its likelihood metrics: AUL, CPS, PLL and PLL-word-l2r by default.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Sequence, Unpack

import numpy as np
import pandas as pd

from biaslens.data.datasets import Pair, PairDataset
from biaslens.engine.conventions import CONVENTIONS, parse_convention
from biaslens.engine.display import HtmlRepr
from biaslens.engine.evaluation import EvaluationResult, evaluate
from biaslens.engine.lm import LanguageModel
from biaslens.engine.metrics import METRICS, parse_metrics
from biaslens.engine.options import RunKeywords, run_keywords
from biaslens.engine.pairs import available_metrics
from biaslens.errors import InputError

#: A masked model's "conventions": the likelihood metrics the field uses.
MASKED_SCORINGS = ("aul", "cps", "pll", "pll_word_l2r")
#: The per-pair verdict columns: +1 the stereotypical sentence scores higher, -1 the other, 0 a tie, NaN undecidable.
VERDICT_PREFIX = "verdict:"


@dataclass
class ConventionReport(HtmlRepr):
    """What `convention_sensitivity` returns.

    `table`: one row per scoring (`scoring` label, `convention`, `metric`, `name`, bias score, interval, N, ties,
    undecidable, `flipped_vs_reference`: pairs whose verdict differs from the `reference` scoring's, the same metric
    under the default convention (a masked model: AUL), and the convention's own statistics). `flips`: every two scorings that share a convention or
    a metric, with the pairs whose verdict differs. `verdicts`: one row per pair with each scoring's verdict
    (`verdict:<scoring>`), and `flips`, how many scorings disagree with the pair's majority.
    """

    table: pd.DataFrame
    flips: pd.DataFrame
    verdicts: pd.DataFrame
    manifest: dict[str, Any] = field(default_factory=dict)

    def flipped_pairs(self, a: str, b: str) -> pd.DataFrame:
        """The pairs whose verdict under scoring `a` differs from scoring `b`'s."""
        va, vb = self.verdicts[VERDICT_PREFIX + a], self.verdicts[VERDICT_PREFIX + b]
        return self.verdicts.loc[_differ(va.to_numpy(float), vb.to_numpy(float))]


def scoring_label(convention: str, metric: str, kind: str) -> str:
    """How a scoring is named in tables and columns: "convention / metric" for a kind read under conventions (a causal model:
    `LanguageModel.takes_first_token`), the metric for one whose conventions are its metrics (a masked model)."""
    from biaslens.engine.models import KIND_CLASSES

    return f"{convention} / {METRICS[metric].name}" if KIND_CLASSES[kind].takes_first_token else METRICS[metric].name


def convention_sensitivity(
    lm: LanguageModel,
    dataset: PairDataset | Sequence[Pair],
    *,
    conventions: Sequence[str] | None = None,
    metrics: Sequence[str] | str | None = None,
    **run: Unpack[RunKeywords],
) -> ConventionReport:
    """Score `dataset` under every convention and metric (module docstring); `run`: `evaluate`'s run keywords."""
    keywords = run_keywords("convention_sensitivity", run, *RunKeywords.__annotations__)
    if lm.takes_first_token:  # the peers' conventions: how each reads a sentence's first token (and what it compares)
        chosen = [parse_convention(c, lm.kind).key for c in (conventions or list(CONVENTIONS))]
        keys, _ = available_metrics(lm, metrics)
    else:  # a kind without a first-token policy: its conventions are its likelihood metrics
        if conventions and any(parse_convention(c, lm.kind).key != "default" for c in conventions):
            raise InputError("A masked model's conventions are its likelihood metrics (AUL, CPS, PLL, PLL-word-l2r): leave out --conventions.")
        chosen = ["default"]
        keys, _ = available_metrics(lm, list(MASKED_SCORINGS) if metrics is None else parse_metrics(metrics, lm.kind))
    if not keys:
        raise InputError(f"No metric to compare: {lm.name} gives none of those asked for.")
    results: dict[str, EvaluationResult] = {}
    progress = keywords.get("progress")
    for n, key in enumerate(chosen):
        step = dict(keywords)
        if progress is not None:  # each convention's run is a share of the whole

            def share(done: float, total: int, n: int = n, report: Any = progress) -> None:
                report((n + done / max(total, 1)) / len(chosen) * total, total)

            step["progress"] = share
        results[key] = evaluate(lm, dataset, keys, convention=key, **step)
    return _report(lm, results, keys)


def _verdicts(frame: pd.DataFrame, metric: str) -> np.ndarray:
    a, b = frame[f"{metric}_stereo"].to_numpy(float), frame[f"{metric}_anti"].to_numpy(float)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.sign(a - b))


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairs whose two verdicts differ (an undecidable one differs from a decided one; two undecidable ones agree)."""
    return ~((a == b) | (np.isnan(a) & np.isnan(b)))


def _report(lm: LanguageModel, results: dict[str, EvaluationResult], metrics: Sequence[str]) -> ConventionReport:
    first = next(iter(results.values()))
    base = first.pairs[["pair_id", "dataset", "bias_type", "direction", "sent_stereo", "sent_anti"]].copy()
    scorings: list[tuple[str, str, str]] = [(c, m, scoring_label(c, m, lm.kind)) for c in results for m in metrics]
    verdict = {label: _verdicts(results[c].pairs, m) for c, m, label in scorings}
    # What each scoring is compared with: a causal metric under the default convention (else the first asked for); a masked
    # model's first metric (AUL).
    home = "default" if "default" in results else next(iter(results))
    reference = {m: scoring_label(home, m if lm.takes_first_token else metrics[0], lm.kind) for m in metrics}
    rows = []
    for c, m, label in scorings:
        block = results[c].summary["metrics"][m]
        statistics = results[c].summary.get("convention", {}).get("statistics") if CONVENTIONS[c].metric == m else None
        rows.append(
            {
                "scoring": label,
                "convention": c,
                "metric": m,
                "name": METRICS[m].name,
                "bias_score": block["bias_score"],
                "ci_low": block["ci_low"],
                "ci_high": block["ci_high"],
                "n": block["n"],
                "ties": block["ties"],
                "undecidable": block["undecidable"],
                "reference": reference[m],
                "flipped_vs_reference": int(_differ(verdict[label], verdict[reference[m]]).sum()),
                "statistics": "; ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in (statistics or {}).items()),
            }
        )
    flips = []
    for (ca, ma, a), (cb, mb, b) in itertools.combinations(scorings, 2):
        if ca == cb or ma == mb:
            differ = _differ(verdict[a], verdict[b])
            flips.append(
                {"scoring_a": a, "scoring_b": b, "shared": "convention" if ca == cb else "metric", "flips": int(differ.sum()), "pairs": len(differ)}
            )
    pairs = base.assign(**{VERDICT_PREFIX + label: v for label, v in verdict.items()})
    stacked = np.vstack(list(verdict.values())) if verdict else np.zeros((0, len(base)))
    majority = np.array([_majority(stacked[:, k]) for k in range(stacked.shape[1])])
    pairs["flips"] = [int(_differ(stacked[:, k], np.full(stacked.shape[0], majority[k])).sum()) for k in range(stacked.shape[1])]
    manifest = dict(first.manifest)
    manifest["conventions"] = list(results)
    manifest["metrics"] = list(metrics)
    return ConventionReport(pd.DataFrame(rows), pd.DataFrame(flips), pairs, manifest)


def _majority(values: np.ndarray) -> float:
    """The most common verdict of one pair (NaN counts as a verdict: undecidable); ties go to the first scoring's."""
    labels = ["nan" if math.isnan(v) else str(v) for v in values]
    best = max(dict.fromkeys(labels), key=labels.count)
    return math.nan if best == "nan" else float(best)


__all__ = ["MASKED_SCORINGS", "VERDICT_PREFIX", "ConventionReport", "convention_sensitivity", "scoring_label"]

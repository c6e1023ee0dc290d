"""Convention sensitivity: one model's bias score under every scoring convention, and the pairs whose verdict flips.

Peers score the same model on the same pairs differently (`biaslens.engine.conventions`): what comes before a causal
sentence's first token, and how token log-probabilities add up to a sentence score. `convention_sensitivity` scores a
dataset every way at once and reports, per *scoring* (a convention and a metric), the bias score with its 95% interval,
and three things kept apart:

* **convention sensitivity**, the headline: per metric, the pairs whose verdict changes between the conventions (the
  same metric, read as each tool reads a sentence); a metric's disagreement with another metric is not counted here;
* **the tools against each other**: each peer's own headline scoring (lm-eval's LL, bias-bench's geometric mean =
  AUL-c, Oba et al.'s mean = AUL-c, each under its own first token), pair by pair;
* every other two scorings of one convention (metrics against each other), in `flips` only.

A causal model is scored under every convention with every causal metric. A convention that reads a metric exactly as
the default does (lm-eval's first token is the model's own BOS, so its AUL-c is the default's) is not scored twice: the
scoring is listed once, under the default, and named in the sensitivity table (`identical`). A masked model's
conventions are its likelihood metrics (AUL, CPS, PLL and PLL-word-l2r by default), so its sensitivity is between them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Unpack

import numpy as np
import pandas as pd

from biaslens.data.datasets import Pair, PairDataset
from biaslens.engine.conventions import CONVENTIONS, DEFAULT_CONVENTION, parse_convention
from biaslens.engine.display import HtmlRepr
from biaslens.engine.evaluation import EvaluationResult, evaluate, scoring_identity
from biaslens.engine.lm import LanguageModel
from biaslens.engine.metrics import METRICS, parse_metrics
from biaslens.engine.options import RunKeywords, run_keywords
from biaslens.engine.pairs import available_metrics
from biaslens.errors import InputError

#: A masked model's "conventions": the likelihood metrics the field uses.
MASKED_SCORINGS = ("aul", "cps", "pll", "pll_word_l2r")
#: The per-pair verdict columns: +1 the stereotypical sentence scores higher, -1 the other, 0 a tie, NaN undecidable.
VERDICT_PREFIX = "verdict:"
#: What two scorings in `ConventionReport.flips` have in common, in the order the table lists them.
COMPARES = ("conventions", "tools", "metrics")


@dataclass
class ConventionReport(HtmlRepr):
    """What `convention_sensitivity` returns.

    `table`: one row per scoring (`scoring` label, `convention`, `metric`, `name`, bias score, interval, N, ties,
    undecidable, `flipped_vs_reference`: pairs whose verdict differs from the `reference` scoring's, the same metric
    under the default convention (a masked model: AUL), and the convention's own statistics). `sensitivity`: the
    headline, one row per metric scored under two or more conventions (`compares` "conventions"; a masked model: one
    row, `compares` "metrics"): the `scorings` compared, the conventions whose scoring is the default's (`identical`),
    N and `changed`, the pairs whose verdict is not the same under all of them. `tools`: every two peer tools on their
    own headline scorings, with the pairs whose verdict differs. `flips`: every two scorings that share a metric
    (conventions), are two tools' headlines (tools) or share a convention (metrics), with the pairs whose verdict
    differs. `verdicts`: one row per pair, most contested first, with each scoring's verdict (`verdict:<scoring>`),
    `flips` (over the sensitivity's groups, the scorings against the group's majority, added up) and `tools` (1 when
    the tools' headline verdicts differ).
    """

    table: pd.DataFrame
    sensitivity: pd.DataFrame
    tools: pd.DataFrame
    flips: pd.DataFrame
    verdicts: pd.DataFrame
    manifest: dict[str, Any] = field(default_factory=dict)

    def flipped_pairs(self, a: str, b: str) -> pd.DataFrame:
        """The pairs whose verdict under scoring `a` differs from scoring `b`'s."""
        va, vb = self.verdicts[VERDICT_PREFIX + a], self.verdicts[VERDICT_PREFIX + b]
        return self.verdicts.loc[_differ(va.to_numpy(float), vb.to_numpy(float))]

    @property
    def changed(self) -> int:
        """Pairs whose verdict changes between the conventions under at least one metric (a masked model: between its
        metrics)."""
        return int(np.count_nonzero(self.verdicts["flips"].to_numpy() > 0))

    def headline(self) -> str:
        """The report in a sentence: how many pairs change verdict, between what, per metric."""
        n = len(self.verdicts)
        if self.sensitivity.empty:
            return f"{n:,} pairs: only one scoring per metric, so nothing to compare."
        if set(self.sensitivity["compares"].tolist()) == {"metrics"}:
            return f"{self.changed:,} of {n:,} pairs change verdict between {_and(self.sensitivity['scorings'].iloc[0].split(', '))}."
        each = "; ".join(f"{r['name']} {r['changed']:,}" for r in self.sensitivity.to_dict(orient="records"))
        return f"{self.changed:,} of {n:,} pairs change verdict between conventions under at least one metric ({each})."

    def tools_line(self) -> str:
        """The peer tools on their own headline scores, in a sentence ("" with fewer than two tools)."""
        if self.tools.empty:
            return ""
        differ = int(np.count_nonzero(self.verdicts["tools"].to_numpy() > 0))
        each = "; ".join(f"{r['scoring_a']} vs {r['scoring_b']} {r['flips']:,}" for r in self.tools.to_dict(orient="records"))
        return f"The tools' own headline scores disagree on {differ:,} of {len(self.verdicts):,} pairs ({each})."


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


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
    plan = _plan(lm, chosen, keys)
    results: dict[str, EvaluationResult] = {}
    progress = keywords.get("progress")
    for n, key in enumerate(chosen):
        step = dict(keywords)
        if progress is not None:  # each convention's run is a share of the whole

            def share(done: float, total: int, n: int = n, report: Any = progress) -> None:
                report((n + done / max(total, 1)) / len(chosen) * total, total)

            step["progress"] = share
        results[key] = evaluate(lm, dataset, plan[key], convention=key, **step)
    return _report(lm, results, plan)


def _plan(lm: LanguageModel, chosen: Sequence[str], keys: Sequence[str]) -> dict[str, list[str]]:
    """The metrics each convention scores: those asked for and its own, less those it reads exactly as the default
    convention does (`scoring_identity`: the same first token, the same sum), which the default's scoring stands for."""
    plan = {}
    for c in chosen:
        own = CONVENTIONS[c].metric
        wanted = [m for m in METRICS if m in keys or m == own]
        if c != DEFAULT_CONVENTION and DEFAULT_CONVENTION in chosen:
            wanted = [m for m in wanted if m == own or scoring_identity(lm, c, m) != scoring_identity(lm, DEFAULT_CONVENTION, m)]
        plan[c] = wanted
    return plan


def _verdicts(frame: pd.DataFrame, metric: str) -> np.ndarray:
    a, b = frame[f"{metric}_stereo"].to_numpy(float), frame[f"{metric}_anti"].to_numpy(float)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, np.sign(a - b))


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairs whose two verdicts differ (an undecidable one differs from a decided one; two undecidable ones agree)."""
    return ~((a == b) | (np.isnan(a) & np.isnan(b)))


def _not_unanimous(rows: np.ndarray) -> np.ndarray:
    """Per pair (column), whether the verdicts of the scorings (rows) are not all the same."""
    return np.any([_differ(row, rows[0]) for row in rows[1:]], axis=0) if len(rows) > 1 else np.zeros(rows.shape[1], dtype=bool)


def _against_majority(rows: np.ndarray) -> np.ndarray:
    """Per pair (column), how many scorings (rows) disagree with the pair's majority verdict."""
    majority = np.array([_majority(rows[:, k]) for k in range(rows.shape[1])])
    return np.sum([_differ(row, majority) for row in rows], axis=0).astype(int)


def _report(lm: LanguageModel, results: dict[str, EvaluationResult], plan: Mapping[str, Sequence[str]]) -> ConventionReport:
    first = next(iter(results.values()))
    base = first.pairs[["pair_id", "dataset", "bias_type", "direction", "sent_stereo", "sent_anti"]].copy()
    scorings: list[tuple[str, str, str]] = [(c, m, scoring_label(c, m, lm.kind)) for c in results for m in plan[c]]
    verdict = {label: _verdicts(results[c].pairs, m) for c, m, label in scorings}
    metrics = [m for m in METRICS if any(m in plan[c] for c in results)]
    # What each scoring is compared with: the same metric under the default convention (else the first convention); with
    # one convention (a masked model), the first metric (AUL).
    home = DEFAULT_CONVENTION if DEFAULT_CONVENTION in results else next(iter(results))
    single = len(results) == 1
    reference: dict[str, str | None] = {
        m: scoring_label(home, plan[home][0] if single else m, lm.kind) if (single or m in plan[home]) else None for m in metrics
    }
    rows = []
    for c, m, label in scorings:
        block = results[c].summary["metrics"][m]
        statistics = results[c].summary.get("convention", {}).get("statistics") if CONVENTIONS[c].metric == m else None
        ref = reference[m]
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
                "reference": ref or "",
                "flipped_vs_reference": int(_differ(verdict[label], verdict[ref]).sum()) if ref else pd.NA,
                "statistics": "; ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in (statistics or {}).items()),
            }
        )
    # The groups a reader compares: each metric across the conventions (a masked model: its metrics, one group).
    groups: list[tuple[str, str, list[str]]] = (
        [("metrics", "", [label for _, _, label in scorings])]
        if single
        else [("conventions", m, [label for c, k, label in scorings if k == m]) for m in metrics]
    )
    groups = [g for g in groups if len(g[2]) > 1]
    n = len(base)
    sensitivity = pd.DataFrame(
        [
            {
                "compares": compares,
                "metric": m,
                "name": METRICS[m].name if m else "",
                "scorings": ", ".join(labels if single else [c for c in results if m in plan[c]]),
                "identical": "" if single else ", ".join(c for c in results if m not in plan[c] and m in plan[home]),
                "n": n,
                "changed": int(_not_unanimous(np.vstack([verdict[x] for x in labels])).sum()),
            }
            for compares, m, labels in groups
        ],
        columns=["compares", "metric", "name", "scorings", "identical", "n", "changed"],
    )
    headlines = [scoring_label(c, str(CONVENTIONS[c].metric), lm.kind) for c in results if CONVENTIONS[c].metric in plan[c]]
    tools = pd.DataFrame(
        [
            {"scoring_a": a, "scoring_b": b, "flips": int(_differ(verdict[a], verdict[b]).sum()), "pairs": n}
            for a, b in itertools.combinations(headlines, 2)
        ],
        columns=["scoring_a", "scoring_b", "flips", "pairs"],
    )
    flips = []
    for (ca, ma, a), (cb, mb, b) in itertools.combinations(scorings, 2):
        shared = {"conventions": ma == mb, "tools": a in headlines and b in headlines, "metrics": ca == cb}
        for compares in (c for c in COMPARES if shared[c]):  # two tools' headlines of one metric are listed under both
            flips.append({"scoring_a": a, "scoring_b": b, "compares": compares, "flips": int(_differ(verdict[a], verdict[b]).sum()), "pairs": n})
    flips_frame = pd.DataFrame(flips, columns=["scoring_a", "scoring_b", "compares", "flips", "pairs"])
    flips_frame = flips_frame.sort_values("compares", key=lambda s: s.map(COMPARES.index), kind="stable").reset_index(drop=True)
    pairs = base.assign(**{VERDICT_PREFIX + label: v for label, v in verdict.items()})
    contested = [_against_majority(np.vstack([verdict[x] for x in labels])) for _, _, labels in groups]
    pairs["flips"] = np.sum(contested, axis=0).astype(int) if contested else 0
    pairs["tools"] = _not_unanimous(np.vstack([verdict[x] for x in headlines])).astype(int) if len(headlines) > 1 else 0
    pairs = pairs.sort_values(["flips", "tools"], ascending=False, kind="stable").reset_index(drop=True)  # most contested first
    manifest = dict(first.manifest)
    manifest["conventions"] = list(results)
    manifest["metrics"] = metrics
    manifest["scorings"] = {c: list(plan[c]) for c in results}
    return ConventionReport(pd.DataFrame(rows), sensitivity, tools, flips_frame, pairs, manifest)


def _majority(values: np.ndarray) -> float:
    """The most common verdict of one pair (NaN counts as a verdict: undecidable); ties go to the first scoring's."""
    labels = ["nan" if math.isnan(v) else str(v) for v in values]
    best = max(dict.fromkeys(labels), key=labels.count)
    return math.nan if best == "nan" else float(best)


__all__ = ["COMPARES", "MASKED_SCORINGS", "VERDICT_PREFIX", "ConventionReport", "convention_sensitivity", "scoring_label"]

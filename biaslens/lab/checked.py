"""The public `biaslens.evaluate` and `biaslens.inspect_pair`: the engine's, with the model's sanity verdict in the result.

The app and the CLI warn beside their results when a model looks untrained or weak (`model_verdict`, the one verdict
every place shows); from Python and in a notebook the same caveat comes with the result itself: a dataset run's
`warnings` and `summary["manifest"]["sanity"]`, a pair's `notes` and `manifest["sanity"]`, and both `_repr_html_`
show it above the scores. Here, in the lab's layer, because the verdict knows lab models (checked on their own
corpus); the engine cannot import it.
"""

from __future__ import annotations

import inspect
from dataclasses import asdict
from typing import Sequence, Unpack

from biaslens.data.datasets import Pair, PairDataset
from biaslens.engine import evaluation as engine
from biaslens.engine.evaluation import EvaluationResult, PairInspection
from biaslens.engine.models import LanguageModel
from biaslens.engine.options import EvaluateKeywords, InspectionKeywords
from biaslens.lab.sanity_verdict import model_verdict


def caveat(lm: LanguageModel) -> tuple[dict, str | None]:
    """The model's sanity verdict as a manifest records it, and the warning it calls for (None when the model looks trained)."""
    verdict = model_verdict(lm)
    return asdict(verdict), (None if verdict.trustworthy else f"{lm.name}: {verdict.message}")


def evaluate(
    lm: LanguageModel, dataset: PairDataset | Sequence[Pair], metrics: Sequence[str] | str | None = None, **options: Unpack[EvaluateKeywords]
) -> EvaluationResult:
    """Score every pair of a dataset with the given metrics (`biaslens.engine.evaluation.evaluate`, whose keywords it
    takes: its signature), with the model's sanity verdict.

    `limit` keeps the first N pairs, `sample` a seeded random sample of N pairs; `cache` (a `ResultCache`) keeps
    finished chunks, so an interrupted run resumes; `progress(done_pairs, total_pairs)`; `cache_only=True` computes
    nothing (every score from `cache`); `precision="bf16-rescore"`: bfloat16, with the pairs it may get wrong re-scored in
    float32 (not exact: `biaslens.engine.rescore`); `convention` (a causal model's: "lm-eval", "bias-bench", "oba2024")
    reads the model as that peer does (`biaslens.engine.conventions`). A model that
    looks untrained or weak on plain text (a bias-lab model: on its own corpus) gets a warning first in `warnings`,
    and the verdict is in `summary["manifest"]["sanity"]`, as the app and the CLI show it.
    """
    result = engine.evaluate(lm, dataset, metrics, **options)
    sanity, warning = caveat(lm)
    result.summary["manifest"]["sanity"] = sanity
    if warning is not None and warning not in result.warnings:
        result.warnings.insert(0, warning)
    return result


evaluate.__signature__ = inspect.signature(engine.evaluate)  # type: ignore[attr-defined]  # help() and inspect show the engine's keywords


def inspect_pair(
    lm: LanguageModel, sent_stereo: str, sent_anti: str, *, attention_matrices: bool = False, **options: Unpack[InspectionKeywords]
) -> PairInspection:
    """Score one pair with every metric and keep the per-token detail (`biaslens.engine.evaluation.inspect_pair`), with
    the model's sanity verdict.

    `options`: `metrics` (default None: the paper's five), `compat` ("default" or "kaneko2022") and `top_k` (5: the
    predictions kept per token); `attention_matrices` keeps every layer's attention. A model that looks untrained or
    weak gets a warning first in `notes`, and the verdict is in `manifest["sanity"]`.
    """
    inspection = engine.inspect_pair(lm, sent_stereo, sent_anti, attention_matrices=attention_matrices, **options)
    sanity, warning = caveat(lm)
    inspection.manifest["sanity"] = sanity
    if warning is not None and warning not in inspection.notes:
        inspection.notes.insert(0, warning)
    return inspection


__all__ = ["caveat", "evaluate", "inspect_pair"]

"""Scoring encoded pairs: the one batched computation behind `inspect_pair`, `evaluate` and the paper analyses.

`score_encoded_pairs` runs the passes the metrics need across all pairs at once and scores every sentence
(`ScoredPair`); `available_metrics` says which metrics a model can give, and why not the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, Sequence

from biaslens.data.datasets import Pair
from biaslens.engine.alignment import Alignment, align_pair
from biaslens.errors import InputError, MetricUnavailableError
from biaslens.engine.lm import Encoding, LanguageModel
from biaslens.engine.metrics import METRICS, PassResults, SentenceInput, SentenceScore, kind_unavailable, metric_pass, parse_metrics
from biaslens.engine.scoring import UnmaskedResult, masked_pass, shared_prefix_pass, unmasked_pass

if TYPE_CHECKING:
    from biaslens.engine.conventions import Convention
    from biaslens.engine.metrics import Compat
    from biaslens.engine.runner import ComputeFn

# ---------------------------------------------------------------------------------------
# The shared computation
# ---------------------------------------------------------------------------------------


@dataclass
class ScoredPair:
    """Metric scores of one encoded pair, plus the unmasked pass behind them if it ran."""

    alignment: Alignment
    scores: dict[str, tuple[SentenceScore, SentenceScore]]  # metric -> (stereo, anti)
    unmasked: tuple[UnmaskedResult, UnmaskedResult] | None = None


def metric_unavailable(lm: LanguageModel, metric: str) -> str | None:
    """Why `lm` cannot give `metric` (a metric of the other kind of model, AULA without attention weights), or None when it can."""
    if reason := kind_unavailable(metric, lm.kind):
        return reason
    reason = getattr(lm, "attention_unavailable", None)
    return reason if METRICS[metric].needs_attention and reason else None


def available_metrics(lm: LanguageModel, metrics: Sequence[str] | str | None = None) -> tuple[list[str], dict[str, str]]:
    """The metrics `lm` can give, and the ones it cannot with the reason: (kept, {metric: reason}).

    `metrics=None`: the default metrics of the model's kind (`biaslens.engine.metrics.default_metrics`).
    """
    keys = parse_metrics(_metrics_arg(metrics), lm.kind)
    skipped = {k: reason for k in keys if (reason := metric_unavailable(lm, k))}
    return [k for k in keys if k not in skipped], skipped


def has_attention_weights(lm: LanguageModel) -> bool:
    """Whether `lm` returns attention weights (the attention columns and matrices of the inspector)."""
    return not getattr(lm, "attention_unavailable", None)


def unavailable_note(skipped: Mapping[str, str]) -> str:
    """One line naming the metrics left out and why."""
    return f"{_names(skipped)} left out: {_reasons(skipped)}"


def _names(skipped: Mapping[str, str]) -> str:
    return ", ".join(METRICS[k].name for k in skipped)


def _reasons(skipped: Mapping[str, str]) -> str:
    return " ".join(dict.fromkeys(skipped.values()))


def _refuse_unavailable(lm: LanguageModel, metrics: Iterable[str]) -> None:
    """`MetricUnavailableError` naming every metric of `metrics` that `lm` cannot give, and why."""
    skipped = {k: reason for k in metrics if (reason := metric_unavailable(lm, k))}
    if skipped:
        raise MetricUnavailableError(f"{_names(skipped)} cannot be computed for this model: {_reasons(skipped)} Choose other metrics.")


def _usable_metrics(lm: LanguageModel, metrics: Sequence[str] | str | None) -> tuple[list[str], list[str]]:
    """Metrics to score and notes: the default set (None) leaves out what `lm` cannot give; asked for by name, it is refused."""
    keys, skipped = available_metrics(lm, metrics)
    if skipped and metrics is not None:
        _refuse_unavailable(lm, skipped)
    return keys, [unavailable_note(skipped)] if skipped else []


def score_encoded_pairs(
    lm: LanguageModel,
    pairs: Sequence[tuple[Encoding, Encoding]],
    metrics: Sequence[str],
    *,
    compat: bool = False,
    unmasked: bool = False,
    top_k: int = 0,
    attention_matrices: bool = False,
    batch_tokens: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[ScoredPair]:
    """Run the passes the metrics need, batched across all pairs, and score every sentence.

    `unmasked=True` runs the unmasked pass even when no metric needs it (the inspector
    shows its per-token view for every metric).
    """
    _refuse_unavailable(lm, metrics)
    alignments = [align_pair(a, b) for a, b in pairs]
    inputs = [
        (
            SentenceInput(a, al.modified_a, al.unmodified_a),
            SentenceInput(b, al.modified_b, al.unmodified_b),
        )
        for (a, b), al in zip(pairs, alignments)
    ]
    scoring = metric_pass(metrics, [side for pair in inputs for side in pair], compat)  # the registry, asked once for the pass

    # Unmasked pass over the distinct sentences.
    need_unmasked = unmasked or scoring.needs_unmasked
    need_attention = attention_matrices or unmasked or scoring.needs_attention
    need_attention = need_attention and not getattr(lm, "attention_unavailable", None)  # the views without attention still work
    distinct: dict[str, Encoding] = {}
    if need_unmasked:
        for a, b in pairs:
            distinct.setdefault(a.text, a)
            distinct.setdefault(b.text, b)
    queries = scoring.queries  # every metric's masked queries, de-duplicated (CPS and PLL share theirs)
    total_rows = len(distinct) + sum(q.rows for q in queries)
    offset = 0

    def step(done: int, _total: int) -> None:
        if progress is not None:
            progress(offset + done, total_rows)

    by_text: dict[str, UnmaskedResult] = {}
    shared = None
    if distinct and not (need_attention or top_k or attention_matrices):  # a causal pair's common first tokens read once
        shared = shared_prefix_pass(
            lm, pairs, batch_tokens=batch_tokens, progress=lambda done, total: step(done * len(distinct) // max(total, 1), total)
        )
    if shared is not None:
        for group in shared:
            for r in group:
                by_text.setdefault(r.encoding.text, r)
        offset = len(distinct)
    elif distinct:
        results = unmasked_pass(
            lm,
            list(distinct.values()),
            attention=need_attention,
            top_k=top_k,
            attention_matrices=attention_matrices and need_attention,
            batch_tokens=batch_tokens,
            progress=step,
        )
        by_text = {r.encoding.text: r for r in results}
        offset = len(distinct)
    masked = dict(zip(queries, masked_pass(lm, list(queries), batch_tokens=batch_tokens, progress=step)))

    scored = []
    for (a_in, b_in), al in zip(inputs, alignments):
        ua, ub = by_text.get(a_in.encoding.text), by_text.get(b_in.encoding.text)
        ra, rb = PassResults(ua, masked), PassResults(ub, masked)
        both = (ua, ub) if need_unmasked and ua is not None and ub is not None else None  # (every text is read when needed)
        scored.append(ScoredPair(al, scoring.score(a_in, ra, b_in, rb), both))
    return scored


# ---------------------------------------------------------------------------------------
# A dataset run's compute step
# ---------------------------------------------------------------------------------------


class Rescorer(Protocol):
    """What scores pairs in the bf16-rescore precision (`biaslens.engine.rescore.Bf16Rescore`): the scored pairs, and per
    pair the metrics re-scored in float32."""

    def score(
        self, pairs: Sequence[tuple[Encoding, Encoding]], metrics: Sequence[str], progress: Any = None
    ) -> tuple[list[ScoredPair], list[frozenset[str]]]: ...


def encode_pairs(lm: LanguageModel, pairs: Sequence[Pair]) -> list[tuple[Encoding, Encoding]]:
    """Both sentences of every pair, tokenized in one batch (`LanguageModel.encode_many`); a sentence refused is named by its pair."""
    try:
        encodings = lm.encode_many([text for p in pairs for text in (p.sent_stereo, p.sent_anti)])
    except InputError:
        for p in pairs:  # which pair: one at a time, to name it
            encode_pair_side(lm, p, "sent_stereo")
            encode_pair_side(lm, p, "sent_anti")
        raise
    return list(zip(encodings[::2], encodings[1::2]))


def encode_pair_side(lm: LanguageModel, pair: Pair, field_name: str) -> Encoding:
    """One sentence of a pair (`field_name`: "sent_stereo" or "sent_anti") encoded; refused in words naming the pair."""
    try:
        return lm.encode(getattr(pair, field_name))
    except InputError as exc:
        raise InputError(f"Pair {pair.pair_id} ({field_name}): {exc}") from exc


def metric_records(
    lm: LanguageModel, mode: Compat, batch_tokens: int, exact: Rescorer | None = None, convention: Convention | None = None
) -> ComputeFn:
    """The runner's compute step of `evaluate` (`biaslens.engine.runner.ComputeFn`): score pairs with metrics, one record
    {stereo, anti, hits, total} per metric, the sentence values as `convention` computes them.

    With `exact` (the bf16-rescore precision) a record also says whether it was scored in float32 (`"float32"`).
    """

    def compute(pairs: Sequence[Pair], metrics: Sequence[str], progress: Callable[[int, int], None]) -> list[dict[str, dict[str, Any]]]:
        encoded = encode_pairs(lm, pairs)
        if exact is None:
            scored = score_encoded_pairs(lm, encoded, metrics, compat=mode.reference_code, batch_tokens=batch_tokens, progress=progress)
            rescored = None
        else:
            scored, rescored = exact.score(encoded, metrics, progress)
        out = []
        for k, result in enumerate(scored):
            by_metric = {}
            for m, (a, b) in result.scores.items():
                hits, total = METRICS[m].pair_accuracy(a, b, mode.reference_code)
                if convention is not None:  # e.g. lm-eval's float32 sums
                    a_value, b_value = (convention.sentence_value(m, s.value, s.logprob) for s in (a, b))
                else:
                    a_value, b_value = a.value, b.value
                by_metric[m] = {"stereo": a_value, "anti": b_value, "hits": hits, "total": total}
                if rescored is not None:
                    by_metric[m]["float32"] = m in rescored[k]
            out.append(by_metric)
        return out

    return compute


def _metrics_arg(metrics: Any) -> Any:
    """`metrics` if it is None, a str or a sequence of str; else an InputError."""
    if metrics is None or isinstance(metrics, str):
        return metrics
    if isinstance(metrics, Sequence) and all(isinstance(m, str) for m in metrics):
        return metrics
    raise InputError(f"metrics must be metric names ('aul,cps' or ['aul', 'cps']), not {metrics!r}.")


__all__ = [
    "ScoredPair",
    "available_metrics",
    "encode_pair_side",
    "encode_pairs",
    "has_attention_weights",
    "metric_records",
    "metric_unavailable",
    "score_encoded_pairs",
    "unavailable_note",
]

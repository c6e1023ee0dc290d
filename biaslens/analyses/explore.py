"""Tables behind the app's inspector, explorer and comparison views (no streamlit here).

Every function takes engine results (`PairInspection`, `EvaluationResult`, summaries,
per-pair frames) and returns a pandas DataFrame or a small dataclass, so what a page
shows can be reproduced from Python:

* one pair: `token_table` (both sentences, one row per token, top-k decoded),
  `aligned_columns` (the two token rows aligned for display), `margin_drivers` (each
  token's share of the margin f(stereo) - f(anti)), `attention_table` /
  `head_overview` (the attention drill-down), `side_by_side` (the same pair under several
  models, or a pinned pair next to another: each one's margin and verdict per metric);
* a dataset run: `summary_table`, `by_type_table`, `group_table`, `with_verdicts`,
  `filter_pairs`, and `cached_evaluation` (a finished run straight from the result
  cache, or None without computing anything);
* several models: `compare_models` (scores, per-type differences, per-pair margins and
  the pairs whose verdict flips).
"""

from __future__ import annotations

import re
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from biaslens.engine.cache import ResultCache
from biaslens.engine.display import HtmlRepr
from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import InputError
from biaslens.engine.evaluation import EvaluationResult, PairInspection, evaluate
from biaslens.engine.metrics import METRICS, pair_columns
from biaslens.engine.models import LanguageModel
from biaslens.engine.runner import NotCached
from biaslens.engine.words import display_token

SIDES = ("stereo", "anti")


# ---------------------------------------------------------------------------------------
# One pair
# ---------------------------------------------------------------------------------------


def pair_text(stereo: str, anti: str) -> str:
    """Both sentences of a pair as one line of text: the words they share once, the words that differ as "[stereo → anti]"
    ("[Women → Men] can't drive."; "∅" for a side without words there). Half as wide as the two sentences side by side,
    and the difference in sight."""
    import difflib

    a, b = str(stereo).split(), str(anti).split()
    words: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            words += a[i1:i2]
        else:
            words.append(f"[{' '.join(a[i1:i2]) or '∅'} → {' '.join(b[j1:j2]) or '∅'}]")
    return " ".join(words)


def token_table(inspection: PairInspection, decode: Callable[[int], str] | None = None) -> pd.DataFrame:
    """Both sentences' token frames stacked, with `sentence` ("stereo"/"anti") and a display `label`.

    `top_tokens` are the model's top-k predictions as `token_frame` gives them (tokens; `decode`, e.g.
    `LanguageModel.decode_token`, writes them from `top_ids` for an inspection that has none), and `top5` a readable
    "token (log p)" list of them for tooltips, written like `label`.
    """
    frames = []
    for side in SIDES:
        frame = getattr(inspection, side).token_frame()
        frame.insert(0, "sentence", side)
        frame.insert(3, "label", frame["text"] if "text" in frame else [display_token(t) for t in frame["token"]])
        if "top_tokens" not in frame and "top_ids" in frame and decode is not None:
            frame["top_tokens"] = [[decode(int(i)) for i in row] for row in frame["top_ids"]]
        if "top_tokens" in frame:
            shown = frame["top_texts"] if "top_texts" in frame else [[display_token(t) for t in row] for row in frame["top_tokens"]]
            frame["top5"] = ["  ".join(f"{tok} ({lp:.2f})" for tok, lp in zip(toks, lps)) for toks, lps in zip(shown, frame["top_logprobs"])]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def aligned_columns(inspection: PairInspection) -> pd.DataFrame:
    """The two sentences as aligned columns: one row per display column.

    Shared (unmodified) tokens sit in the same column; modified tokens fill columns of
    their own (a replaced span puts both sides' modified tokens side by side). Columns:
    `stereo_position`, `anti_position` (-1 where the side has no token), `stereo_token`,
    `anti_token` (display labels, "" where absent) and `kind` ("special", "shared" or
    "modified").
    """
    stereo, anti = inspection.stereo.encoding, inspection.anti.encoding
    shown = {"stereo": inspection.stereo.shown, "anti": inspection.anti.shown}
    rows = []
    for tag, i1, i2, j1, j2 in inspection.alignment.opcodes:
        if tag == "equal":
            spans = list(zip(range(i1, i2), range(j1, j2)))
        else:
            spans = list(itertools.zip_longest(range(i1, i2), range(j1, j2), fillvalue=-1))
        for i, j in spans:
            special = (i >= 0 and stereo.special[i]) or (j >= 0 and anti.special[j])
            kind = "special" if special else "shared" if tag == "equal" else "modified"
            rows.append(
                {
                    "stereo_position": i,
                    "anti_position": j,
                    "stereo_token": shown["stereo"][i] if i >= 0 else "",
                    "anti_token": shown["anti"][j] if j >= 0 else "",
                    "kind": kind,
                }
            )
    return pd.DataFrame(rows, columns=["stereo_position", "anti_position", "stereo_token", "anti_token", "kind"])


def token_contributions(inspection: PairInspection, metric: str, side: str) -> np.ndarray:
    """Per position of one sentence, its additive share of the sentence's `metric` score.

    Positions the metric does not read are 0; the shares sum to the sentence score.
    How they add up is the registry's `Metric.reduction` ("mean": sum / count; "sum": sum;
    "weighted_mean": sum(weight * log p) / count). kaneko2022's CPS rounding and SSS
    cross-mean are not sums of per-token terms (`Metric.additive_in_compat`): refused.
    """
    additive = [k for k, m in METRICS.items() if m.reduction is not None]
    if metric not in additive:
        raise InputError(f"{metric} is not a sum of per-token terms; choose from {', '.join(additive)}.")
    if not METRICS[metric].is_additive(inspection.compat):
        raise InputError(f"In kaneko2022 mode {METRICS[metric].name} is not a sum of per-token terms (rounding / cross terms).")
    detail = getattr(inspection, side)
    score = detail.scores[metric]
    out = np.zeros(len(detail.encoding))
    if not score.positions:
        return out
    logprob = np.asarray(score.logprob, dtype=float)
    reduction = METRICS[metric].reduction
    if reduction == "sum":
        share = logprob
    elif reduction == "mean":
        share = logprob / len(logprob)
    else:
        share = np.asarray(score.weights, dtype=float) * logprob / len(logprob)
    out[list(score.positions)] = share
    return out


def margin_drivers(inspection: PairInspection, metric: str) -> pd.DataFrame:
    """Which tokens drive the margin f(stereo) - f(anti) of an additive metric.

    One row per non-special aligned column (see `aligned_columns`): `stereo_share`,
    `anti_share` (each token's share of its sentence score; 0 where absent or unread)
    and `contribution` = stereo_share - anti_share. The contributions sum to the margin.
    A positive contribution pushes the pair towards the stereotypical sentence. Sorted by
    |contribution|, largest first; `label` names the column ("black → white" for a
    modified column, the token for a shared one).
    """
    columns = aligned_columns(inspection)
    shares = {side: token_contributions(inspection, metric, side) for side in SIDES}
    columns = columns[columns["kind"] != "special"].copy()
    for side in SIDES:
        pos = columns[f"{side}_position"].to_numpy()
        columns[f"{side}_share"] = np.where(pos >= 0, shares[side][np.maximum(pos, 0)], 0.0)
    columns["contribution"] = columns["stereo_share"] - columns["anti_share"]
    columns["label"] = [
        s if kind == "shared" else f"{s or '∅'} → {a or '∅'}" for s, a, kind in zip(columns["stereo_token"], columns["anti_token"], columns["kind"])
    ]
    columns["label"] = _unique_labels(columns["label"].tolist())
    order = columns["contribution"].abs().sort_values(ascending=False, kind="stable").index
    return columns.loc[order].reset_index(drop=True)


def _unique_labels(labels: Sequence[str]) -> list[str]:
    """Repeated labels get a counter ("the", "the (2)") so charts keep them apart."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def _matrices(inspection: PairInspection, side: str) -> np.ndarray:
    if inspection.attention_matrices is None:
        raise InputError("This inspection has no attention matrices: run inspect_pair(..., attention_matrices=True).")
    return inspection.attention_matrices[SIDES.index(side)]


def attention_table(
    inspection: PairInspection,
    side: str,
    *,
    layer: int | None = None,
    head: int | None = None,
    hide_special: bool = False,
) -> pd.DataFrame:
    """Attention of one sentence as a long table (query, key, weight) for a heatmap.

    `layer` / `head` (0-based) pick one; None averages over all of them (the matrix
    AULA averages). `hide_special` drops the special tokens' rows and columns from the
    display (weights are not renormalised, as in AULA).
    """
    matrices = _matrices(inspection, side)
    picked = matrices if layer is None else matrices[layer : layer + 1]
    picked = picked if head is None else picked[:, head : head + 1]
    matrix = picked.mean(axis=(0, 1))
    encoding = getattr(inspection, side).encoding
    labels = _unique_labels(list(getattr(inspection, side).shown))
    keep = [i for i in range(len(encoding)) if not (hide_special and encoding.special[i])]
    q, k = np.meshgrid(keep, keep, indexing="ij")
    return pd.DataFrame(
        {
            "query_position": q.ravel(),
            "key_position": k.ravel(),
            "query": [labels[i] for i in q.ravel()],
            "key": [labels[i] for i in k.ravel()],
            "weight": matrix[q, k].ravel().astype(float),
        }
    )


def head_overview(inspection: PairInspection, side: str, positions: Sequence[int] | None = None) -> pd.DataFrame:
    """Per layer and head: the attention `positions` receive (summed over them, averaged over queries).

    Default positions: the sentence's modified tokens (all non-special ones when it has
    none). Layers and heads are 1-based in the result, as people count them.
    """
    matrices = _matrices(inspection, side)
    detail = getattr(inspection, side)
    if positions is None:
        positions = np.flatnonzero(detail.modified).tolist() or detail.encoding.scored_positions.tolist()
    received = matrices[:, :, :, list(positions)].sum(axis=3).mean(axis=2)  # (layers, heads)
    layers, heads = np.meshgrid(np.arange(received.shape[0]), np.arange(received.shape[1]), indexing="ij")
    return pd.DataFrame({"layer": layers.ravel() + 1, "head": heads.ravel() + 1, "attention": received.ravel().astype(float)})


# ---------------------------------------------------------------------------------------
# A dataset run
# ---------------------------------------------------------------------------------------

_BLOCK_COLUMNS = ("bias_score", "ci_low", "ci_high", "n", "wins", "ties", "undecidable", "token_accuracy")


def _block_row(block: Mapping[str, Any]) -> dict[str, Any]:
    return {c: block.get(c) for c in _BLOCK_COLUMNS}


def summary_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """One row per metric: bias score, 95% interval, N, wins, ties, undecidable, token accuracy."""
    rows = [{"metric": key, "name": METRICS[key].name, **_block_row(block)} for key, block in summary["metrics"].items()]
    return pd.DataFrame(rows, columns=["metric", "name", *_BLOCK_COLUMNS])


def by_type_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (metric, bias type) with the same columns as `summary_table`."""
    rows = [
        {"metric": key, "name": METRICS[key].name, "bias_type": bias_type, **_block_row(sub)}
        for key, block in summary["metrics"].items()
        for bias_type, sub in block.get("by_bias_type", {}).items()
    ]
    return pd.DataFrame(rows, columns=["metric", "name", "bias_type", *_BLOCK_COLUMNS])


GROUP_NAMES = {"adv": "Adv (antistereo rows)", "dis": "Dis (stereo rows)"}


def group_table(summary: Mapping[str, Any]) -> pd.DataFrame:
    """One row per (metric, group) for CrowS-Pairs' advantaged / disadvantaged split; empty if none."""
    rows = [
        {"metric": key, "name": METRICS[key].name, "group": group, "group_name": GROUP_NAMES[group], **_block_row(sub)}
        for key, block in summary["metrics"].items()
        for group, sub in block.get("by_group", {}).items()
    ]
    return pd.DataFrame(rows, columns=["metric", "name", "group", "group_name", *_BLOCK_COLUMNS])


def verdicts(stereo: Sequence[float] | np.ndarray, anti: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per pair: "stereo" if f(stereo) > f(anti), "anti", "tie" or "undecidable" (a NaN), as in PairInspection.verdict."""
    s, a = np.asarray(stereo, dtype=float), np.asarray(anti, dtype=float)
    out = np.where(s > a, "stereo", np.where(a > s, "anti", "tie")).astype(object)
    out[np.isnan(s) | np.isnan(a)] = "undecidable"
    return out


def with_verdicts(pairs: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """The per-pair frame plus `<metric>_margin` (stereo - anti) and `<metric>_verdict` columns."""
    out = pairs.copy()
    for m in metrics:
        columns = pair_columns(m)
        out[f"{m}_margin"] = out[columns.stereo] - out[columns.anti]
        out[f"{m}_verdict"] = verdicts(out[columns.stereo], out[columns.anti])
    return out


def filter_pairs(
    frame: pd.DataFrame,
    *,
    bias_type: str | None = None,
    direction: str | None = None,
    text: str = "",
    column_equals: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Rows of a pairs frame matching a bias type, a direction, a text and exact column values.

    The text matches either sentence, case-insensitively; a pair number ("#900" or "900") also matches that pair.
    """
    keep = pd.Series(True, index=frame.index)
    if bias_type:
        keep &= frame["bias_type"] == bias_type
    if direction:
        keep &= frame["direction"] == direction
    needle = text.strip().lower()
    if needle:
        found = frame["sent_stereo"].str.lower().str.contains(needle, regex=False) | frame["sent_anti"].str.lower().str.contains(needle, regex=False)
        if re.fullmatch(r"#?[0-9]{1,18}", needle):  # ASCII digits, few enough for int() (it refuses over 4,300)
            found |= frame["pair_id"] == int(needle.lstrip("#"))
        keep &= found
    for column, value in (column_equals or {}).items():
        keep &= frame[column] == value
    return frame[keep]


def cached_evaluation(
    lm: LanguageModel,
    dataset: PairDataset | Sequence[Pair],
    metrics: Sequence[str] | str | None,
    cache: ResultCache,
    **options: Any,
) -> EvaluationResult | None:
    """The result `evaluate(lm, dataset, metrics, cache=cache, **options)` would return, if every
    score is already in the cache; None (after reading the cache only) otherwise (`evaluate(..., cache_only=True)`)."""
    if not cache.enabled:
        return None
    try:
        return evaluate(lm, dataset, metrics, cache=cache, cache_only=True, **options)
    except NotCached:
        return None


def side_by_side(inspections: Mapping[str, PairInspection]) -> pd.DataFrame:
    """Several inspections side by side (one pair under several models, a pinned pair next to this one): a row per
    inspection (`model`: the mapping's key) and, per metric any of them scored (the registry's order), its margin
    f(stereo) − f(anti) (`<metric>_margin`) and verdict (`<metric>_verdict`), missing where it did not score the metric.

    A masked metric and its causal counterpart both scored (a masked and a causal model on one pair) share one column
    pair, `<metric>+<counterpart>_margin` ("AUL / AUL-c margin"): each row holds the one its model gave."""
    scored = [k for k in METRICS if any(k in r.metrics for r in inspections.values())]
    stems: dict[str, tuple[str, ...]] = {}
    for key in scored:
        twin = METRICS[key].analogue
        if twin in scored and f"{twin}+{key}" not in stems:
            stems[f"{key}+{twin}"] = (key, twin)
        elif twin not in scored:
            stems[key] = (key,)
    rows = []
    for label, r in inspections.items():
        row: dict[str, Any] = {"model": label}
        for stem, keys in stems.items():
            key = next((k for k in keys if k in r.metrics), None)
            row[f"{stem}_margin"] = r.margin(key) if key else np.nan
            row[f"{stem}_verdict"] = r.verdict(key) if key else None
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", *(f"{stem}_{part}" for stem in stems for part in ("margin", "verdict"))])


# ---------------------------------------------------------------------------------------
# Several models
# ---------------------------------------------------------------------------------------


@dataclass
class ModelComparison(HtmlRepr):
    """Several models' results on the same pairs and metric, side by side."""

    metric: str
    scores: pd.DataFrame  # one row per model: bias score, interval, N, ties, token accuracy
    by_type: pd.DataFrame  # one row per bias type: each model's score, and its difference from the first model
    margins: pd.DataFrame  # one row per pair: sentences, each model's margin and verdict
    flips: pd.DataFrame  # the rows of `margins` whose verdict differs between models


def short_names(models: Sequence[str]) -> dict[str, str]:
    """Readable, distinct labels for model ids and folders: a folder's last parts, a hub id as is."""

    def parts(model: str) -> list[str]:
        return [p for p in model.replace("\\", "/").split("/") if p]

    def is_path(model: str) -> bool:
        return model.startswith(("/", ".", "~")) or "\\" in model or model.count("/") > 1

    depth = 1
    while True:
        names = {m: ("/".join(parts(m)[-depth:]) if is_path(m) else m) for m in models}
        if len(set(names.values())) == len(names) or depth > max(len(parts(m)) for m in models):
            break
        depth += 1
    seen: dict[str, int] = {}
    out = {}
    for model, name in names.items():
        seen[name] = seen.get(name, 0) + 1
        out[model] = name if seen[name] == 1 else f"{name} ({seen[name]})"
    return out


def stack_by_type(summaries: Mapping[str, Mapping[str, Any]], metric: str) -> pd.DataFrame:
    """`by_type_table` rows of one metric for several labelled summaries; `name` holds the label."""
    frames = []
    for label, summary in summaries.items():
        table = by_type_table(summary)
        table = table[table["metric"] == metric].assign(name=label)
        frames.append(table)
    return pd.concat(frames, ignore_index=True) if frames else by_type_table({"metrics": {}})


def compare_models(results: Mapping[str, EvaluationResult], metric: str) -> ModelComparison:
    """Compare results of two or more models (labelled by the mapping's keys) on one metric.

    The results must cover the same pairs (same dataset, same selection).
    """
    if len(results) < 2:
        raise InputError("Compare needs at least two models.")
    labels = list(results)
    for label, result in results.items():
        if metric not in result.summary["metrics"]:
            raise InputError(f"{label} was not scored with {metric}.")
    ids = [tuple(r.pairs["pair_id"]) for r in results.values()]
    if any(i != ids[0] for i in ids[1:]):
        raise InputError("The results cover different pairs: score the same dataset and selection with every model.")

    scores = pd.DataFrame(
        [{"model": label, **_block_row(r.summary["metrics"][metric])} for label, r in results.items()],
        columns=["model", *_BLOCK_COLUMNS],
    )
    types = sorted({t for r in results.values() for t in r.summary["metrics"][metric].get("by_bias_type", {})})
    by_type_rows = []
    for bias_type in types:
        row: dict[str, Any] = {"bias_type": bias_type}
        for label in labels:
            block = results[label].summary["metrics"][metric]["by_bias_type"].get(bias_type, {})
            row[label] = block.get("bias_score", np.nan)
            row[f"n ({label})"] = block.get("n", 0)
        for label in labels[1:]:
            row[f"{label} − {labels[0]}"] = row[label] - row[labels[0]]
        by_type_rows.append(row)
    by_type = pd.DataFrame(by_type_rows)

    first = results[labels[0]].pairs
    margins = first[["pair_id", "bias_type", "direction", "sent_stereo", "sent_anti"]].copy()
    columns = pair_columns(metric)
    for label, r in results.items():
        margins[f"margin ({label})"] = (r.pairs[columns.stereo] - r.pairs[columns.anti]).to_numpy()
        margins[f"verdict ({label})"] = verdicts(r.pairs[columns.stereo], r.pairs[columns.anti])
    verdict_columns = [f"verdict ({label})" for label in labels]
    flipped = margins[verdict_columns].nunique(axis=1) > 1
    return ModelComparison(metric, scores, by_type, margins, margins[flipped].reset_index(drop=True))


__all__ = [
    "GROUP_NAMES",
    "ModelComparison",
    "aligned_columns",
    "attention_table",
    "by_type_table",
    "cached_evaluation",
    "compare_models",
    "display_token",
    "filter_pairs",
    "group_table",
    "head_overview",
    "margin_drivers",
    "short_names",
    "side_by_side",
    "stack_by_type",
    "summary_table",
    "token_contributions",
    "token_table",
    "verdicts",
    "with_verdicts",
]

"""Heads: which attention heads carry a pair's preference, by ablation and by AULA's attention, and across a dataset.

* **Head ablation**: head h of layer l is ablated by zeroing its slice of the attention output before the output
  projection (transformers 5 has no `head_mask`; `engine/internals.py` does it through the attention module), and the
  change of the pair's margin under the metric in focus is `margin_change[l, h]` = margin(ablated) - margin. Every head
  of a sentence runs in one forward pass whose batch grows layer by layer: at block l, one copy of the unablated row is
  appended per head of layer l and that head zeroed in it, so the rows ablating a late layer never run the early ones
  twice (1 + L * H rows at the end; equal to one model call per head, which the tests check, at about half the cost).
  Zeroing is one choice of ablation (mean ablation is another); a head whose zeroing moves the margin is one the
  computation passes through, not necessarily where the association is stored, and heads can stand in for each other
  (ablating one may understate what it does).
* **AULA's shares**: the attention token i receives from head h of layer l, averaged over the query rows as AULA
  averages it (`engine.scoring`'s definition), so that the mean over every layer and head is AULA's weight of the token
  (`token_shares`); each head's share of the AULA (AULA-c) margin, `aula_share[l, h]`, adds up to that margin.
* **A dataset** (`rank_heads`): every pair's margin change for every head (cached per pair, resumable, stoppable:
  `engine.runner.run_chunked`), then per head the mean margin change and the change of the bias score (the share of
  pairs whose margin is above 0, in percentage points) with 95% bootstrap intervals over pairs, heads ranked by how far
  their ablation moves the bias score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch

from biaslens.anatomy.focus import FocusSentence, focus_metric, focus_sentence, require_head, same_metric
from biaslens.data.datasets import Pair
from biaslens.engine.cache import ResultCache, cache_key
from biaslens.engine.internals import Intervention, intervene
from biaslens.engine.lm import LanguageModel
from biaslens.engine.metrics import METRICS, metrics_for
from biaslens.engine.runner import INTERACTIVE_CHUNK_SECONDS, Progress, run_records
from biaslens.engine.scoring import _attention_received, unmasked_pass
from biaslens.errors import InputError

#: Rows projected onto the vocabulary at once when the ablated rows are read.
_READ_ROWS = 64
#: The version of what a pair's cached record holds.
_VERSION = "anatomy-heads-1"


@dataclass(frozen=True)
class HeadEffects:
    """One pair's heads: the margin change of every head's ablation and each head's share of the AULA margin."""

    metric: str
    margin: float  # the metric's margin, stereo - anti, nothing ablated
    margin_change: np.ndarray  # (layers, heads): margin with the head zeroed - margin
    aula_metric: str | None  # "aula" / "aula_c"; None where the model gives no attention weights
    aula_margin: float  # NaN without attention weights
    aula_share: np.ndarray  # (layers, heads), adding up to `aula_margin` (NaN without attention weights)
    token_shares: tuple[np.ndarray, np.ndarray] | None  # per sentence (layers, heads, tokens): attention received per head
    tokens: tuple[tuple[str, ...], tuple[str, ...]]

    @property
    def layers(self) -> int:
        return self.margin_change.shape[0]

    @property
    def heads(self) -> int:
        return self.margin_change.shape[1]

    def frame(self) -> pd.DataFrame:
        """heads.csv: layer, head, margin_change, aula_share (layers and heads from 0), largest |margin_change| first."""
        layer, head = np.divmod(np.arange(self.margin_change.size), self.heads)
        out = pd.DataFrame({"layer": layer, "head": head, "margin_change": self.margin_change.reshape(-1), "aula_share": self.aula_share.reshape(-1)})
        return out.iloc[np.argsort(-np.abs(out["margin_change"].to_numpy()), kind="stable")].reset_index(drop=True)


def ablated_scores(lm: LanguageModel, s: FocusSentence) -> tuple[float, np.ndarray]:
    """(the sentence's score, its score with each head zeroed: (layers, heads)), in one growing forward pass."""
    internals = lm.require_internals("Head ablation")
    require_head(lm, "Head ablation")
    heads = internals.num_heads
    ablated = torch.arange(heads)

    def grow(layer: int, hidden: torch.Tensor) -> torch.Tensor:
        return torch.cat([hidden, hidden[:1].expand(heads, *hidden.shape[1:])])

    def zero(layer: int, z: torch.Tensor) -> torch.Tensor:
        z = z.clone()
        z[z.shape[0] - heads + ablated, :, ablated] = 0
        return z

    with torch.inference_mode(), intervene(internals, Intervention(block_input=grow, head_outputs=zero)):
        hidden = lm.body(s.ids.to(lm.device))
    with torch.inference_mode():
        scores = torch.cat([s.reduce(s.logprob(lm, hidden[k : k + _READ_ROWS])) for k in range(0, hidden.shape[0], _READ_ROWS)])
    values = scores.double().cpu().numpy()
    return float(values[0]), values[1:].reshape(internals.num_layers, heads)


def zeroed_score(lm: LanguageModel, s: FocusSentence, heads: Sequence[tuple[int, int]]) -> float:
    """The sentence's score with every (layer, head) of `heads` zeroed at once (layers and heads from 0)."""
    internals = lm.require_internals("Head ablation")
    require_head(lm, "Head ablation")
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        if not (0 <= layer < internals.num_layers and 0 <= head < internals.num_heads):
            raise InputError(f"No head {head} in layer {layer}: {lm.name} has {internals.num_layers} layers of {internals.num_heads} heads (from 0).")
        by_layer.setdefault(int(layer), []).append(int(head))

    def zero(layer: int, z: torch.Tensor) -> torch.Tensor | None:
        if layer not in by_layer:
            return None
        z = z.clone()
        z[:, :, by_layer[layer]] = 0
        return z

    with torch.inference_mode(), intervene(internals, Intervention(head_outputs=zero)):
        return float(s.reduce(s.logprob(lm, lm.body(s.ids.to(lm.device))))[0])


def head_shares(lm: LanguageModel, a: FocusSentence, b: FocusSentence) -> tuple[str | None, float, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """(AULA's metric, its margin, each head's share of it (layers, heads), each sentence's attention received per head)."""
    layers, heads = lm.num_layers or 0, lm.num_heads or 0
    if lm.attention_unavailable or not layers or not heads:
        return None, float("nan"), np.full((layers, heads), np.nan), None
    aula = next(k for k in metrics_for(lm.kind) if METRICS[k].reduction == "weighted_mean")
    reads = unmasked_pass(lm, [a.encoding, b.encoding], attention=False, attention_matrices=True)
    shares, per_token, margin = [], [], 0.0
    for sign, r in ((1.0, reads[0]), (-1.0, reads[1])):
        m = r.attention_matrices
        assert m is not None
        n = m.shape[-1]
        flat = torch.from_numpy(m.reshape(layers * heads, 1, n, n))
        received = _attention_received([flat], torch.ones(layers * heads, n), lm.seen_from_later).double().numpy().reshape(layers, heads, n)
        pos = r.encoding.scored_positions
        per_head = (received[:, :, pos] * r.logprob[pos]).sum(axis=-1) / len(pos) / (layers * heads)
        shares.append(sign * per_head)
        margin += sign * float(per_head.sum())
        per_token.append(received)
    return aula, margin, shares[0] + shares[1], (per_token[0], per_token[1])


def head_effects_of(lm: LanguageModel, a: FocusSentence, b: FocusSentence, *, aula: bool = True) -> HeadEffects:
    """`head_effects` of a prepared pair."""
    clean_a, abl_a = ablated_scores(lm, a)
    clean_b, abl_b = ablated_scores(lm, b)
    margin = clean_a - clean_b
    layers, heads = abl_a.shape
    shares = head_shares(lm, a, b) if aula else (None, float("nan"), np.full((layers, heads), np.nan), None)
    return HeadEffects(a.metric, margin, (abl_a - abl_b) - margin, *shares, (a.encoding.tokens, b.encoding.tokens))


def head_effects(lm: LanguageModel, sent_stereo: str, sent_anti: str, *, metric: str | None = None, aula: bool = True) -> HeadEffects:
    """Every attention head of `lm` ablated in turn on a pair: the change of its margin under the metric in focus, and
    each head's share of the AULA margin (`aula=False` skips the attention pass). Module docstring."""
    a, b = same_metric(lm, sent_stereo, sent_anti, metric)
    return head_effects_of(lm, a, b, aula=aula)


# ---------------------------------------------------------------------------------------
# A dataset's heads
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadRanking:
    """Every head's ablation over a dataset's pairs: `changes[p, l, h]` is pair p's margin change; `margins[p]` its margin."""

    metric: str
    pair_ids: tuple[int, ...]
    margins: np.ndarray  # (pairs,)
    changes: np.ndarray  # (pairs, layers, heads)
    cached: int  # pairs read from the result cache

    @property
    def bias_score(self) -> float:
        """The share of pairs whose margin is above 0, in percent (the metric's bias score, nothing ablated)."""
        return float(100.0 * np.mean(self.margins > 0))

    def frame(self, *, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
        """One row per head, the heads that move the bias score most first: layer, head, mean_margin_change and its 95%
        bootstrap interval over pairs (mean_ci_low / mean_ci_high), bias_score (percent, with the head zeroed),
        bias_score_change (percentage points) and its interval, n_pairs."""
        n, layers, heads = self.changes.shape
        flat = self.changes.reshape(n, layers * heads)
        ablated = self.margins[:, None] + flat
        above = (ablated > 0).astype(float) - (self.margins > 0).astype(float)[:, None]  # per pair: the verdict's change
        rng = np.random.default_rng(seed)
        means, moves = np.empty((n_resamples, flat.shape[1])), np.empty((n_resamples, flat.shape[1]))
        for k in range(n_resamples):  # one resample of the pairs serves every head
            idx = rng.integers(0, n, size=n)
            means[k], moves[k] = flat[idx].mean(axis=0), 100.0 * above[idx].mean(axis=0)
        (m_low, m_high), (b_low, b_high) = np.quantile(means, [0.025, 0.975], axis=0), np.quantile(moves, [0.025, 0.975], axis=0)
        layer, head = np.divmod(np.arange(layers * heads), heads)
        change = 100.0 * above.mean(axis=0)
        out = pd.DataFrame(
            {
                "layer": layer,
                "head": head,
                "mean_margin_change": flat.mean(axis=0),
                "mean_ci_low": m_low,
                "mean_ci_high": m_high,
                "bias_score": self.bias_score + change,
                "bias_score_change": change,
                "change_ci_low": b_low,
                "change_ci_high": b_high,
                "n_pairs": n,
            }
        )
        order = np.lexsort((-np.abs(out["mean_margin_change"].to_numpy()), -np.abs(change)))
        return out.iloc[order].reset_index(drop=True)


def _record_valid(layers: int, heads: int) -> Callable[[dict], bool]:
    def valid(record: dict) -> bool:
        changes = record.get("changes")
        return isinstance(record.get("margin"), (int, float)) and isinstance(changes, list) and len(changes) == layers * heads

    return valid


def rank_heads(
    lm: LanguageModel,
    pairs: Sequence[Pair],
    *,
    metric: str | None = None,
    cache: ResultCache | None = None,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    chunk_seconds: float = INTERACTIVE_CHUNK_SECONDS,
    chunk_pairs: int | None = None,
    cache_only: bool = False,
) -> HeadRanking:
    """Every head of `lm` ablated on every pair (`head_effects`, without the AULA shares), through the result cache in
    chunks: `progress(done, total)` after each, `stop()` asked before each (`JobCancelled`; the finished chunks stay
    cached, so calling again resumes); chunks of about `chunk_seconds` of work, or of `chunk_pairs` pairs. A pair whose
    sentences encode to the same tokens has margin 0 and moves with no head. `HeadRanking.frame()` ranks the heads."""
    if not pairs:
        raise InputError("No pairs to rank heads over.")
    key_metric = focus_metric(lm, metric)
    internals = lm.require_internals("Head ablation")
    require_head(lm, "Head ablation")
    layers, heads = internals.num_layers, internals.num_heads

    def key(pair: Pair) -> str:
        return cache_key(lm.fingerprint, str(lm.dtype), lm.scoring_tag, _VERSION, key_metric, pair.sent_stereo, pair.sent_anti)

    def compute(chunk: Sequence[Pair], rows: Callable[[int, int], None]) -> list[dict]:
        out = []
        for k, pair in enumerate(chunk):
            a, b = (focus_sentence(lm, text, key_metric) for text in (pair.sent_stereo, pair.sent_anti))
            if a.encoding.ids == b.encoding.ids:  # no pair for this tokenizer: nothing to move
                out.append({"margin": 0.0, "changes": [0.0] * (layers * heads)})
            else:
                effects = head_effects_of(lm, a, b, aula=False)
                out.append({"margin": effects.margin, "changes": effects.margin_change.reshape(-1).tolist()})
            rows(k + 1, len(chunk))
        return out

    records, cached = run_records(
        pairs,
        key=key,
        compute=compute,
        cache=cache,
        chunk_items=chunk_pairs,
        chunk_seconds=chunk_seconds,
        progress=progress,
        stop=stop,
        cache_only=cache_only,
        valid=_record_valid(layers, heads),
    )
    margins = np.array([float(r["margin"]) for r in records])
    changes = np.array([r["changes"] for r in records], dtype=float).reshape(len(records), layers, heads)
    return HeadRanking(key_metric, tuple(p.pair_id for p in pairs), margins, changes, cached)


__all__ = ["HeadEffects", "HeadRanking", "ablated_scores", "head_effects", "head_effects_of", "head_shares", "rank_heads", "zeroed_score"]

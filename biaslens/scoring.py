"""The scoring core: batched forward passes that every metric and page is built on.

Two kinds of pass, one narrow interface:

* `unmasked_pass(lm, encodings)`: one forward pass per sentence, nothing masked. Per token:
  log p of the token at its own position, its rank, optionally the top-k predictions, and
  the attention it receives (averaged over layers, heads and query rows).
* `masked_pass(lm, queries)`: for each `MaskedQuery` (a sentence, the positions to
  replace by the mask token, the positions to read), log p and rank of the original
  token at each read position, plus log p of extra candidate tokens.

Sentences are sorted by length and packed into batches under a token budget
(`batch_tokens` = rows x padded length), padded with attention masks. Only the positions
that are read go through the vocabulary projection, which is the expensive part of a
masked pass. Log-softmax is always computed in float32. A CUDA out-of-memory error halves
the batch and carries on. Results come back in the order of the inputs and equal the
one-at-a-time results up to float rounding (the tests check |delta| <= 1e-5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from .models import Encoding, MaskedLM

#: Rows x padded length per forward pass. Chosen by the benchmark on a 2-core CPU; the
#: GPU default is larger and shrinks by itself on out-of-memory.
DEFAULT_BATCH_TOKENS = {"cpu": 4096, "cuda": 65536, "mps": 16384}
#: Rows of the (rows x vocabulary) float32 log-probability block computed at once.
_PROJECTION_ROWS = 1024

Progress = Callable[[int, int], None]


def default_batch_tokens(lm: MaskedLM) -> int:
    return DEFAULT_BATCH_TOKENS.get(lm.device.type, 4096)


@dataclass
class UnmaskedResult:
    """Per-token outputs of the unmasked pass for one sentence (arrays of length L)."""

    encoding: Encoding
    logprob: np.ndarray  # log p(t_i @ i | S), float64, special positions included
    rank: np.ndarray  # 1 = the model's arg-max is the gold token
    attention: np.ndarray | None = None  # attention received a[k], averaged over layers, heads, queries
    top_ids: np.ndarray | None = None  # (L, k)
    top_logprob: np.ndarray | None = None  # (L, k)
    attention_matrices: np.ndarray | None = None  # (layers, heads, L, L), only on request


@dataclass(frozen=True)
class MaskedQuery:
    """Replace `mask` positions of `ids` by the mask token; read predictions at `read`.

    At each read position the result holds log p of the *original* token there (and its
    rank) and log p of every id in `candidates`.
    """

    ids: tuple[int, ...]
    mask: tuple[int, ...]
    read: tuple[int, ...]
    candidates: tuple[int, ...] = ()


@dataclass
class MaskedResult:
    query: MaskedQuery
    logprob: np.ndarray  # (R,) log p of the original token at each read position
    rank: np.ndarray  # (R,)
    candidate_logprob: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (R, C)
    top_ids: np.ndarray | None = None  # (R, k)
    top_logprob: np.ndarray | None = None


# ---------------------------------------------------------------------------------------
# Batching
# ---------------------------------------------------------------------------------------


def _next_batch(order: Sequence[int], start: int, lengths: Sequence[int], batch_tokens: int) -> list[int]:
    """The longest run of `order[start:]` whose rows x padded length fits the budget.

    `order` is sorted longest first, so the first row fixes the padded length.
    """
    width = lengths[order[start]]
    size = max(1, batch_tokens // max(width, 1))
    return list(order[start : start + size])


def plan_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Group indices, longest first, so that rows x padded length stays within the budget."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches, start = [], 0
    while start < len(order):
        batches.append(_next_batch(order, start, lengths, batch_tokens))
        start += len(batches[-1])
    return batches


def _run_batched(
    lengths: Sequence[int],
    run_batch: Callable[[list[int]], None],
    batch_tokens: int,
    progress: Progress | None,
) -> None:
    """Run `run_batch` over budgeted batches, longest first.

    A CUDA out-of-memory error halves the token budget and the same rows are retried,
    so the run carries on with smaller batches and identical results.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    start = 0
    while start < len(order):
        batch = _next_batch(order, start, lengths, batch_tokens)
        try:
            run_batch(batch)
        except torch.OutOfMemoryError:
            if len(batch) == 1:
                raise
            torch.cuda.empty_cache()
            batch_tokens = max(1, lengths[batch[0]] * len(batch) // 2)
            continue
        start += len(batch)
        if progress is not None:
            progress(start, len(order))


def _pad(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[b, : len(row)] = 1
    return ids.to(device), mask.to(device)


def _readout(
    lm: MaskedLM,
    rows: torch.Tensor,
    gold: torch.Tensor,
    candidates: torch.Tensor | None,
    top_k: int,
    project: bool,
) -> dict[str, torch.Tensor]:
    """float32 log-softmax over the vocabulary for (N, H) hidden rows (or (N, V) logits)."""
    out: dict[str, list[torch.Tensor]] = {"logprob": [], "rank": [], "cand": [], "top_ids": [], "top_lp": []}
    for start in range(0, rows.shape[0], _PROJECTION_ROWS):
        chunk = rows[start : start + _PROJECTION_ROWS]
        logits = lm.project(chunk) if project else chunk
        logp = torch.log_softmax(logits.float(), dim=-1)
        g = gold[start : start + _PROJECTION_ROWS]
        gold_lp = logp.gather(1, g[:, None])
        out["logprob"].append(gold_lp[:, 0])
        out["rank"].append((logp > gold_lp).sum(dim=1) + 1)
        if candidates is not None:
            c = candidates[start : start + _PROJECTION_ROWS]
            out["cand"].append(torch.where(c >= 0, logp.gather(1, c.clamp(min=0)), torch.nan))
        if top_k:
            values, ids = logp.topk(top_k, dim=-1)
            out["top_lp"].append(values)
            out["top_ids"].append(ids)
    return {k: torch.cat(v) for k, v in out.items() if v}


def _gather_and_read(
    lm: MaskedLM,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    flat_positions: torch.Tensor,
    gold: torch.Tensor,
    candidates: torch.Tensor | None,
    top_k: int,
    attentions: bool,
) -> tuple[dict[str, np.ndarray], tuple[torch.Tensor, ...] | None]:
    """Forward a padded batch and read the vocabulary distribution at flat positions."""
    if lm.project is not None:
        hidden, att = lm.hidden_states(input_ids, attention_mask, attentions=attentions)
        rows = hidden.reshape(-1, hidden.shape[-1])[flat_positions]
        read = _readout(lm, rows, gold, candidates, top_k, project=True)
    else:
        logits, att = lm.logits(input_ids, attention_mask, attentions=attentions)
        rows = logits.reshape(-1, logits.shape[-1])[flat_positions]
        read = _readout(lm, rows, gold, candidates, top_k, project=False)
    return {k: v.cpu().numpy() for k, v in read.items()}, att


# ---------------------------------------------------------------------------------------
# The unmasked pass (AUL, AULA, token accuracy, shuffle sensitivity, the inspector)
# ---------------------------------------------------------------------------------------


def unmasked_pass(
    lm: MaskedLM,
    encodings: Sequence[Encoding],
    *,
    attention: bool = True,
    top_k: int = 0,
    attention_matrices: bool = False,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
) -> list[UnmaskedResult]:
    """Score every token of every sentence at its own position, nothing masked.

    `attention=True` also returns the attention each token receives (needs eager
    attention, so it costs a little more); `attention_matrices=True` keeps the full
    per-layer, per-head matrices (meant for the one pair on screen).
    """
    results: list[UnmaskedResult | None] = [None] * len(encodings)
    need_att = attention or attention_matrices

    def run(batch: list[int]) -> None:
        rows = [encodings[i].ids for i in batch]
        input_ids, mask = _pad(rows, lm.pad_id, lm.device)
        width = input_ids.shape[1]
        flat = torch.cat([torch.arange(len(r), device=lm.device) + b * width for b, r in enumerate(rows)])
        gold = input_ids.reshape(-1)[flat]
        with torch.inference_mode():
            read, att = _gather_and_read(lm, input_ids, mask, flat, gold, None, top_k, need_att)
            received = matrices = None
            if need_att:
                # (layers, B, heads, L, L) -> mean over layers and heads -> (B, L, L)
                stacked = torch.stack([a.float() for a in att])
                averaged = stacked.mean(dim=(0, 2))
                # Pad columns carry exactly zero probability; pad rows are left out.
                query_mask = mask.to(averaged.dtype)[:, :, None]
                received = ((averaged * query_mask).sum(dim=1) / query_mask.sum(dim=1)).cpu().numpy()
                if attention_matrices:
                    matrices = stacked.transpose(0, 1).cpu().numpy()  # (B, layers, heads, L, L)
        start = 0
        for b, i in enumerate(batch):
            n = len(rows[b])
            sl = slice(start, start + n)
            results[i] = UnmaskedResult(
                encoding=encodings[i],
                logprob=read["logprob"][sl].astype(np.float64),
                rank=read["rank"][sl].astype(np.int64),
                attention=received[b, :n].astype(np.float64) if received is not None else None,
                top_ids=read["top_ids"][sl] if top_k else None,
                top_logprob=read["top_lp"][sl].astype(np.float64) if top_k else None,
                attention_matrices=matrices[b, :, :, :n, :n] if matrices is not None else None,
            )
            start += n

    budget = batch_tokens or default_batch_tokens(lm)
    _run_batched([len(e) for e in encodings], run, budget, progress)
    return results  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------
# Masked passes (CPS, SSS, All Masked, PLL, Kurita templates)
# ---------------------------------------------------------------------------------------


def masked_pass(
    lm: MaskedLM,
    queries: Sequence[MaskedQuery],
    *,
    top_k: int = 0,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
) -> list[MaskedResult]:
    """Run every masked query; each is one row of a batch."""
    results: list[MaskedResult | None] = [None] * len(queries)

    def run(batch: list[int]) -> None:
        qs = [queries[i] for i in batch]
        masked_rows = []
        for q in qs:
            row = list(q.ids)
            for p in q.mask:
                row[p] = lm.mask_id
            masked_rows.append(row)
        input_ids, mask = _pad(masked_rows, lm.pad_id, lm.device)
        width = input_ids.shape[1]
        flat = torch.tensor([b * width + p for b, q in enumerate(qs) for p in q.read], dtype=torch.long, device=lm.device)
        gold = torch.tensor([q.ids[p] for q in qs for p in q.read], dtype=torch.long, device=lm.device)
        n_cand = max((len(q.candidates) for q in qs), default=0)
        candidates = None
        if n_cand:
            cand = [list(q.candidates) + [-1] * (n_cand - len(q.candidates)) for q in qs for _ in q.read]
            candidates = torch.tensor(cand, dtype=torch.long, device=lm.device).reshape(-1, n_cand)
        with torch.inference_mode():
            read, _ = _gather_and_read(lm, input_ids, mask, flat, gold, candidates, top_k, False)
        start = 0
        for i, q in zip(batch, qs):
            sl = slice(start, start + len(q.read))
            results[i] = MaskedResult(
                query=q,
                logprob=read["logprob"][sl].astype(np.float64),
                rank=read["rank"][sl].astype(np.int64),
                candidate_logprob=(
                    read["cand"][sl, : len(q.candidates)].astype(np.float64)
                    if n_cand
                    else np.zeros((len(q.read), 0))
                ),
                top_ids=read["top_ids"][sl] if top_k else None,
                top_logprob=read["top_lp"][sl].astype(np.float64) if top_k else None,
            )
            start += len(q.read)

    budget = batch_tokens or default_batch_tokens(lm)
    _run_batched([len(q.ids) for q in queries], run, budget, progress)
    return results  # type: ignore[return-value]


__all__ = [
    "DEFAULT_BATCH_TOKENS",
    "MaskedQuery",
    "MaskedResult",
    "UnmaskedResult",
    "default_batch_tokens",
    "masked_pass",
    "plan_batches",
    "unmasked_pass",
]

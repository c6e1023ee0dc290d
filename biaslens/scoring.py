"""The scoring core: batched forward passes that every metric and page is built on.

Two kinds of pass, one narrow interface:

* `unmasked_pass(lm, encodings)`: one forward pass per sentence, nothing masked. Per token:
  log p of the token at its own position, its rank, optionally the top-k predictions, and
  the attention it receives (averaged over layers, heads and query rows).
* `masked_pass(lm, queries)`: for each `MaskedQuery` (a sentence, the positions to
  replace by the mask token, the positions to read), log p and rank of the original
  token at each read position, plus log p of extra candidate tokens.

Where the time goes, and what the engine does about it (numbers: README, Performance):

* Rows are sorted by length and cut into batches under a token budget (`batch_tokens` =
  rows x padded length) by `plan_batches`, which chooses the batch widths that minimise
  padded tokens plus a fixed cost per forward pass, so almost no compute is spent on
  padding even for a few hundred sentences of very different lengths.
* The CPU budget is small (1024 tokens: larger batches measured no faster); on CUDA it
  is sized from the free memory, and an out-of-memory error halves it and carries on
  with the same rows.
* Only the positions that are read go through the vocabulary projection (in a masked
  pass, one row in |S|), and the (rows x vocabulary) float32 log-probabilities are made
  in blocks that fit the cache. Log-softmax is always computed in float32, whatever the
  model's dtype.
* Attention weights need eager attention; they are requested only by the passes that
  read them (AULA, the inspector), and averaged layer by layer without stacking.

Results come back in the order of the inputs and equal the one-at-a-time results up to
float rounding (the tests check |delta| <= 1e-5).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from .errors import NumericalError
from .models import Encoding, MaskedLM

#: Rows x padded length per forward pass. CPU: throughput is flat from 512 to 4096 tokens
#: on a 2-core EPYC (bert-base, one thread, CPS 72-75 GFLOP/s, AUL+AULA 49-56 GFLOP/s), so
#: the budget is kept small (little memory, progress often); `python -m biaslens.bench`
#: measures the engine. CUDA starts from the free memory (`default_batch_tokens`); these
#: are the fallbacks.
DEFAULT_BATCH_TOKENS = {"cpu": 1024, "cuda": 65536, "mps": 16384}
#: The fixed cost of one forward pass, in padded tokens: what `plan_batches` trades
#: against padding when it decides where one batch width ends and the next begins.
_BATCH_OVERHEAD_TOKENS = {"cpu": 32, "cuda": 2048, "mps": 512}
#: Elements of the (rows x vocabulary) float32 log-probability block computed at once.
_READOUT_ELEMENTS = {"cpu": 1 << 22, "cuda": 1 << 26, "mps": 1 << 24}
#: CUDA budget: share of the free memory a batch may use, and the bounds of the budget.
_CUDA_MEMORY_SHARE = 0.5
_CUDA_BUDGET_RANGE = (4096, 1 << 19)

Progress = Callable[[int, int], None]


def default_batch_tokens(lm: MaskedLM) -> int:
    """The token budget per forward pass for `lm`'s device.

    On CUDA it is found from the free memory and the model's size (activations of one
    layer plus every layer's attention probabilities per token, at half the free memory);
    an out-of-memory error still halves it during a run.
    """
    if lm.device.type == "cuda":
        return _cuda_batch_tokens(lm)
    return DEFAULT_BATCH_TOKENS.get(lm.device.type, DEFAULT_BATCH_TOKENS["cpu"])


def _cuda_batch_tokens(lm: MaskedLM) -> int:
    config = lm.model.config
    hidden = int(getattr(config, "hidden_size", 1024))
    intermediate = int(getattr(config, "intermediate_size", 4 * hidden))
    layers, heads = lm.num_layers or 24, lm.num_heads or 16
    item = torch.finfo(lm.dtype).bits // 8
    # Live activations of one layer (hidden states, q/k/v, residuals, the FFN) and the
    # attention probabilities every layer keeps for AULA, at a typical width of 64 tokens.
    per_token = (8 * hidden + 2 * intermediate) * item + layers * heads * 64 * 4
    free, _total = torch.cuda.mem_get_info(lm.device)
    tokens = int(free * _CUDA_MEMORY_SHARE // per_token)
    low, high = _CUDA_BUDGET_RANGE
    return 1 << max(low, min(high, tokens)).bit_length() - 1


def _overhead_tokens(lm: MaskedLM) -> int:
    return _BATCH_OVERHEAD_TOKENS.get(lm.device.type, _BATCH_OVERHEAD_TOKENS["cpu"])


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


def plan_batches(lengths: Sequence[int], batch_tokens: int, *, overhead_tokens: int = _BATCH_OVERHEAD_TOKENS["cpu"]) -> list[list[int]]:
    """Group indices into batches, longest first, with rows x padded length within the budget.

    Rows sorted by length are cut into buckets of neighbouring lengths, each padded to its
    longest row and split into near-equal batches under the budget. The buckets are the
    ones that minimise padded tokens plus `overhead_tokens` per batch (dynamic programming
    over the distinct lengths), so a long sentence does not pad a batch of short ones
    unless a separate forward pass would cost more. A row longer than the budget runs alone.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    if not order:
        return []
    widths, starts = [], []  # runs of equal length in `order`
    for k, i in enumerate(order):
        if not widths or lengths[i] != widths[-1]:
            widths.append(int(lengths[i]))
            starts.append(k)
    starts.append(len(order))

    def per_batch(width: int) -> int:
        return max(1, batch_tokens // max(width, 1))

    # best[e]: least cost of the runs before e; cut[e]: where the last bucket begins.
    best, cut = [0.0] + [float("inf")] * len(widths), [0] * (len(widths) + 1)
    for end in range(1, len(widths) + 1):
        for begin in range(end):
            rows = starts[end] - starts[begin]
            cost = best[begin] + -(-rows // per_batch(widths[begin])) * overhead_tokens + rows * widths[begin]
            if cost < best[end]:
                best[end], cut[end] = cost, begin
    buckets, end = [], len(widths)
    while end:
        buckets.append((cut[end], end))
        end = cut[end]
    batches = []
    for begin, end in reversed(buckets):
        members = order[starts[begin] : starts[end]]
        count = -(-len(members) // per_batch(widths[begin]))
        size, extra = divmod(len(members), count)
        bounds = np.cumsum([0] + [size + (k < extra) for k in range(count)])
        batches += [members[a:b] for a, b in itertools.pairwise(bounds.tolist())]
    return batches


def _plan(lengths: Sequence[int], batch_tokens: int, overhead_tokens: int, same_length: bool) -> list[list[int]]:
    """`plan_batches`, or with `same_length` batches of rows of one length only (nothing padded)."""
    if not same_length:
        return plan_batches(lengths, batch_tokens, overhead_tokens=overhead_tokens)
    groups: dict[int, list[int]] = {}
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        groups.setdefault(int(lengths[i]), []).append(i)
    return [[group[j] for j in batch] for group in groups.values() for batch in plan_batches([lengths[i] for i in group], batch_tokens)]


def _run_batched(
    lengths: Sequence[int],
    run_batch: Callable[[list[int]], None],
    batch_tokens: int,
    progress: Progress | None,
    overhead_tokens: int,
    same_length: bool = False,
) -> None:
    """Run `run_batch` over the planned batches, longest first.

    A CUDA out-of-memory error halves the token budget and the rows not yet done are
    planned again, so the run carries on with smaller batches and identical results.
    `same_length` batches only rows of one length: for a model whose outputs change with
    padding (it ignores the attention mask), so that batching never changes a score.
    """
    remaining = list(range(len(lengths)))
    done = 0
    while remaining:
        plan = _plan([lengths[i] for i in remaining], batch_tokens, overhead_tokens, same_length)
        plan = [[remaining[j] for j in batch] for batch in plan]
        remaining = []
        for k, batch in enumerate(plan):
            try:
                run_batch(batch)
            except torch.OutOfMemoryError:
                if len(batch) == 1:
                    raise
                torch.cuda.empty_cache()
                batch_tokens = max(1, max(lengths[i] for i in batch) * len(batch) // 2)
                remaining = [i for later in plan[k:] for i in later]
                break
            done += len(batch)
            if progress is not None:
                progress(done, len(lengths))


def _pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask) on the CPU, both (rows, longest row), right-padded with `pad_id`."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    filled = np.arange(int(lengths.max()))[None, :] < lengths[:, None]
    ids = np.full(filled.shape, pad_id, dtype=np.int64)
    ids[filled] = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(ids), torch.from_numpy(filled.astype(np.int64))


def _readout(
    lm: MaskedLM,
    rows: torch.Tensor,
    gold: torch.Tensor,
    candidates: torch.Tensor | None,
    top_k: int,
    project: bool,
) -> dict[str, torch.Tensor]:
    """float32 log-softmax over the vocabulary for (N, H) hidden rows (or (N, V) logits).

    The (N, V) block is made a few rows at a time, so that the logits and their
    log-probabilities stay in the cache while gold, rank and top-k are read from them.
    """
    vocab = int(getattr(lm.model.config, "vocab_size", 0) or 0) if project else rows.shape[1]
    step = max(1, _READOUT_ELEMENTS.get(lm.device.type, _READOUT_ELEMENTS["cpu"]) // max(vocab, 1))
    out: dict[str, list[torch.Tensor]] = {"logprob": [], "rank": [], "cand": [], "top_ids": [], "top_lp": []}
    for start in range(0, rows.shape[0], step):
        chunk = rows[start : start + step]
        logits = lm.project(chunk) if project else chunk
        logp = torch.log_softmax(logits.float(), dim=-1)
        g = gold[start : start + step]
        gold_lp = logp.gather(1, g[:, None])
        out["logprob"].append(gold_lp[:, 0])
        out["rank"].append((logp > gold_lp).sum(dim=1) + 1)
        if candidates is not None:
            c = candidates[start : start + step]
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
        rows = hidden.reshape(-1, hidden.shape[-1])[flat_positions.to(hidden.device)]
        read = _readout(lm, rows, gold.to(hidden.device), _to(candidates, hidden.device), top_k, project=True)
    else:
        logits, att = lm.logits(input_ids, attention_mask, attentions=attentions)
        rows = logits.reshape(-1, logits.shape[-1])[flat_positions.to(logits.device)]
        read = _readout(lm, rows, gold.to(logits.device), _to(candidates, logits.device), top_k, project=False)
    out = {k: v.cpu().numpy() for k, v in read.items()}
    if not np.isfinite(out["logprob"]).all():
        raise NumericalError(
            f"{lm.name} gives log-probabilities that are not finite numbers (NaN or infinity): its weights are broken "
            "or overflow in this dtype (try float32); nothing was scored."
        )
    return out, att


def _to(tensor: torch.Tensor | None, device: torch.device) -> torch.Tensor | None:
    return None if tensor is None else tensor.to(device)


def _attention_received(att: Sequence[torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
    """Attention each key receives, averaged over layers, heads and the real query rows: (B, L).

    Summed layer by layer (no (layers, B, heads, L, L) stack). Pad columns carry exactly
    zero probability; pad rows are left out of the average.
    """
    total = None
    for layer in att:
        summed = layer.float().sum(dim=1)  # over heads -> (B, L, L)
        total = summed if total is None else total.add_(summed)
    averaged = total / (len(att) * att[0].shape[1])
    query_mask = mask.to(device=averaged.device, dtype=averaged.dtype)[:, :, None]
    return (averaged * query_mask).sum(dim=1) / query_mask.sum(dim=1)


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
        input_ids, mask = _pad(rows, lm.pad_id)
        flat = torch.from_numpy(np.flatnonzero(mask.numpy()))
        gold = input_ids.reshape(-1)[flat]
        with torch.inference_mode():
            read, att = _gather_and_read(lm, input_ids.to(lm.device), mask.to(lm.device), flat, gold, None, top_k, need_att)
            received = matrices = None
            if need_att:
                received = _attention_received(att, mask).cpu().numpy()
                if attention_matrices:
                    # (layers, B, heads, L, L) -> (B, layers, heads, L, L)
                    matrices = torch.stack([a.float() for a in att]).transpose(0, 1).cpu().numpy()
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
    _run_batched([len(e) for e in encodings], run, budget, progress, _overhead_tokens(lm), not getattr(lm, "padding_invariant", True))
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
        input_ids, mask = _pad([q.ids for q in qs], lm.pad_id)
        width = input_ids.shape[1]
        masked_rows = [b for b, q in enumerate(qs) for _ in q.mask]
        input_ids[masked_rows, [p for q in qs for p in q.mask]] = lm.mask_id
        flat = torch.tensor([b * width + p for b, q in enumerate(qs) for p in q.read], dtype=torch.long)
        gold = torch.tensor([q.ids[p] for q in qs for p in q.read], dtype=torch.long)
        n_cand = max((len(q.candidates) for q in qs), default=0)
        candidates = None
        if n_cand:
            cand = [list(q.candidates) + [-1] * (n_cand - len(q.candidates)) for q in qs for _ in q.read]
            candidates = torch.tensor(cand, dtype=torch.long).reshape(-1, n_cand)
        with torch.inference_mode():
            read, _ = _gather_and_read(lm, input_ids.to(lm.device), mask.to(lm.device), flat, gold, candidates, top_k, False)
        start = 0
        for i, q in zip(batch, qs):
            sl = slice(start, start + len(q.read))
            results[i] = MaskedResult(
                query=q,
                logprob=read["logprob"][sl].astype(np.float64),
                rank=read["rank"][sl].astype(np.int64),
                candidate_logprob=(read["cand"][sl, : len(q.candidates)].astype(np.float64) if n_cand else np.zeros((len(q.read), 0))),
                top_ids=read["top_ids"][sl] if top_k else None,
                top_logprob=read["top_lp"][sl].astype(np.float64) if top_k else None,
            )
            start += len(q.read)

    budget = batch_tokens or default_batch_tokens(lm)
    _run_batched([len(q.ids) for q in queries], run, budget, progress, _overhead_tokens(lm), not getattr(lm, "padding_invariant", True))
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

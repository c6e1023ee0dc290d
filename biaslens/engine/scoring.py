"""The scoring core: batched forward passes that every metric and page is built on.

Two kinds of pass, one narrow interface:

* `unmasked_pass(lm, encodings)`: one forward pass per sentence, nothing masked. Per token:
  log p of the token, its rank, optionally the top-k predictions, and the attention it
  receives (averaged over layers, heads and the query rows that can attend to it: every row of a
  masked LM, the token's own and later rows of a causal LM). A masked LM's distribution over a
  token is read at the token's own position (AUL's reading); a causal LM's at the position
  before it (`LanguageModel.reads_previous`: log P(w_i | w_<i)), so a causal sentence's first
  position has no log p (NaN, rank 0) unless the model's `start_context` gives it.
* `masked_pass(lm, queries)`: for each `MaskedQuery` (a sentence, the positions to
  replace by the mask token, the positions to read), log p and rank of the original
  token at each read position, plus log p of extra candidate tokens. The queries and
  results are plain data (`biaslens.engine.passes`, re-exported here).

Where the time goes, and what the engine does about it (numbers: docs/performance.md):

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
* Nothing waits for the device between batches: a batch's read-outs stay there and a
  pass copies them back once, so on a GPU the host pads and copies (through pinned
  memory) the next batch while the device computes this one. The rows' positions are
  gathered with numpy for a whole batch at once, and a `singly` query (CPS, PLL: every
  position of a sentence masked alone) is one query for all of its rows.

Results come back in the order of the inputs and equal the one-at-a-time results up to
float rounding (the tests check |delta| <= 1e-5).
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
import torch

from biaslens.errors import NumericalError
from biaslens.engine import packing
from biaslens.engine.lm import ContinuationQuery, Encoding, LanguageModel
from biaslens.engine.passes import ContinuationResult, MaskedQuery, MaskedResult, UnmaskedResult

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
#: Rows projected onto the vocabulary at once, at least (then read in blocks of `_READOUT_ELEMENTS`): on a CPU the
#: projection of a few dozen rows (a large vocabulary's block) runs at about 60% of its speed for 512 rows.
_PROJECT_ROWS = {"cpu": 512}
#: CUDA budget: share of the free memory a batch may use, and the bounds of the budget.
_CUDA_MEMORY_SHARE = 0.5
_CUDA_BUDGET_RANGE = (4096, 1 << 19)

Progress = Callable[[int, int], None]
T = TypeVar("T")
#: Where a batch's read-outs go in the pass's arrays: one index array for all of them, or {read-out: indices} with "*" for the rest.
Where = np.ndarray | dict[str, np.ndarray]


def default_batch_tokens(lm: LanguageModel) -> int:
    """The token budget per forward pass for `lm`'s device.

    On CUDA it is found from the free memory and the model's size (activations of one
    layer plus every layer's attention probabilities per token, at half the free memory);
    an out-of-memory error still halves it during a run.
    """
    if lm.device.type == "cuda":
        return _cuda_batch_tokens(lm)
    return DEFAULT_BATCH_TOKENS.get(lm.device.type, DEFAULT_BATCH_TOKENS["cpu"])


def _cuda_batch_tokens(lm: LanguageModel) -> int:
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


def _overhead_tokens(lm: LanguageModel) -> int:
    return _BATCH_OVERHEAD_TOKENS.get(lm.device.type, _BATCH_OVERHEAD_TOKENS["cpu"])


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


def plan_packed(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Batches of rows laid end to end (`biaslens.engine.packing`): longest first, each up to `batch_tokens` real tokens.

    Padding costs nothing in a packed batch, so rows of any lengths share one; a row longer than the budget runs alone.
    """
    batches: list[list[int]] = []
    used = batch_tokens
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        if used + lengths[i] > batch_tokens:
            batches.append([])
            used = 0
        batches[-1].append(i)
        used += int(lengths[i])
    return batches


def _plan(lengths: Sequence[int], batch_tokens: int, overhead_tokens: int, same_length: bool, packed: bool = False) -> list[list[int]]:
    """`plan_batches`, `plan_packed` for packed batches, or with `same_length` batches of rows of one length only (nothing padded)."""
    if packed:
        return plan_packed(lengths, batch_tokens)
    if not same_length:
        return plan_batches(lengths, batch_tokens, overhead_tokens=overhead_tokens)
    groups: dict[int, list[int]] = {}
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        groups.setdefault(int(lengths[i]), []).append(i)
    return [[group[j] for j in batch] for group in groups.values() for batch in plan_batches([lengths[i] for i in group], batch_tokens)]


def _run_batched(
    lengths: Sequence[int],
    run_batch: Callable[[list[int]], T],
    batch_tokens: int,
    progress: Progress | None,
    overhead_tokens: int,
    same_length: bool = False,
    packed: bool = False,
) -> list[tuple[list[int], T]]:
    """Run `run_batch` over the planned batches, longest first: [(batch, what it returned)], in the order run.

    `run_batch` returns tensors still on the device and nothing here waits for it, so on a
    GPU the host pads and copies the next batch while the device computes this one; the
    caller copies everything back once (`_collect`). A CUDA out-of-memory error halves the
    token budget and the rows not yet done are planned again, so the run carries on with
    smaller batches and identical results. `same_length` batches only rows of one length:
    for a model whose outputs change with padding (it ignores the attention mask), so that
    batching never changes a score.
    """
    remaining = list(range(len(lengths)))
    done: list[tuple[list[int], T]] = []
    rows = 0
    while remaining:
        plan = _plan([lengths[i] for i in remaining], batch_tokens, overhead_tokens, same_length, packed)
        plan = [[remaining[j] for j in batch] for batch in plan]
        remaining = []
        for k, batch in enumerate(plan):
            try:
                done.append((batch, run_batch(batch)))
            except torch.OutOfMemoryError:
                if len(batch) == 1:
                    raise
                torch.cuda.empty_cache()
                batch_tokens = max(1, max(lengths[i] for i in batch) * len(batch) // 2)
                remaining = [i for later in plan[k:] for i in later]
                break
            rows += len(batch)
            if progress is not None:
                progress(rows, len(lengths))
    return done


def _pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, attention mask), both (rows, longest row) int64, right-padded with `pad_id`."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    filled = np.arange(int(lengths.max()))[None, :] < lengths[:, None]
    ids = np.full(filled.shape, pad_id, dtype=np.int64)
    ids[filled] = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    return ids, filled.astype(np.int64)


def _to_device(lm: LanguageModel, *arrays: np.ndarray) -> list[torch.Tensor]:
    """Host arrays as tensors on the model's device; on CUDA through pinned memory, without waiting for the copy."""
    if lm.device.type != "cuda":
        return [torch.from_numpy(array).to(lm.device) for array in arrays]
    return [torch.from_numpy(array).pin_memory().to(lm.device, non_blocking=True) for array in arrays]


def _readout(
    lm: LanguageModel,
    rows: torch.Tensor,
    gold: torch.Tensor,
    candidates: torch.Tensor | None,
    top_k: int,
    project: bool,
    entropy: bool = False,
) -> dict[str, torch.Tensor]:
    """float32 log-softmax over the vocabulary for (N, H) hidden rows (or (N, V) logits).

    The (N, V) block is made a few rows at a time, so that the logits and their
    log-probabilities stay in the cache while gold, rank and top-k (and, with `entropy`, the
    entropy of each row's distribution, in nats) are read from them; on a CPU the rows are
    projected `_PROJECT_ROWS` at a time (a matrix product of a few rows is slow), then read in
    those blocks.
    """
    vocab = int(getattr(lm.model.config, "vocab_size", 0) or 0) if project else rows.shape[1]
    step = max(1, _READOUT_ELEMENTS.get(lm.device.type, _READOUT_ELEMENTS["cpu"]) // max(vocab, 1))
    at_once = step * -(-_PROJECT_ROWS.get(lm.device.type, 0) // step) if project else step  # whole blocks of `step` rows
    at_once = max(at_once, step)
    out: dict[str, list[torch.Tensor]] = {"logprob": [], "rank": [], "cand": [], "top_ids": [], "top_lp": [], "entropy": []}
    projected, projected_at = rows, 0  # the rows' logits, projected `at_once` rows at a time
    head = lm.project
    for start in range(0, rows.shape[0], step):
        if project and head is not None and (start == 0 or start >= projected_at + projected.shape[0]):
            projected, projected_at = head(rows[start : start + at_once]), start
        logits = projected[start - projected_at : start - projected_at + step] if project else rows[start : start + step]
        logp = torch.log_softmax(logits.float(), dim=-1)
        g = gold[start : start + step]
        gold_lp = logp.gather(1, g[:, None])
        out["logprob"].append(gold_lp[:, 0])
        out["rank"].append((logp > gold_lp).sum(dim=1, dtype=torch.int32) + 1)
        if candidates is not None:
            c = candidates[start : start + step]
            out["cand"].append(torch.where(c >= 0, logp.gather(1, c.clamp(min=0)), torch.nan))
        if top_k:
            values, ids = logp.topk(top_k, dim=-1)
            out["top_lp"].append(values)
            out["top_ids"].append(ids)
        if entropy:
            out["entropy"].append(_entropy(logp))
    return {k: torch.cat(v) for k, v in out.items() if v}


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    """-sum p log p of each row of float32 log-probabilities (nats); a zero probability adds nothing (0 x -inf: nansum)."""
    return -(logp.exp() * logp).nansum(dim=-1)


def _forward_and_read(
    lm: LanguageModel,
    input_ids: np.ndarray,
    mask: np.ndarray,
    read_at: np.ndarray,
    gold: np.ndarray,
    candidates: np.ndarray | None,
    top_k: int,
    attentions: bool,
    entropy: bool = False,
) -> tuple[dict[str, torch.Tensor], tuple[torch.Tensor, ...] | None, torch.Tensor | None]:
    """Forward a right-padded batch (host arrays) and read the vocabulary distribution at flat positions `read_at`
    (with `entropy`, the entropy of each read distribution too).

    Returns (read-outs, per-layer attention when asked, the attention mask on the device); nothing leaves the device.
    Where the model packs its batches (`packing.decision`) and no attention weights are asked for, the batch runs as
    one packed row of its real tokens (`biaslens.engine.packing`); its read-outs are the padded batch's.
    """
    project = lm.project is not None
    if not attentions and packing.decision(lm)["pack"]:
        packed = packing.pack(input_ids, mask, packing.position_offset(lm))
        rows_d, gold_d, *cand = _to_device(lm, packed.index[read_at], gold, *([candidates] if candidates is not None else []))
        body = packing.forward_packed(lm, packed, project=project)
        return _readout(lm, body[rows_d], gold_d, cand[0] if cand else None, top_k, project=project, entropy=entropy), None, None
    ids_d, mask_d, read_d, gold_d, *cand = _to_device(lm, input_ids, mask, read_at, gold, *([candidates] if candidates is not None else []))
    if project:
        out, att = lm.hidden_states(ids_d, mask_d, attentions=attentions)
    else:
        out, att = lm.logits(ids_d, mask_d, attentions=attentions)
    rows = out.reshape(-1, out.shape[-1])[read_d]
    return _readout(lm, rows, gold_d, cand[0] if cand else None, top_k, project=project, entropy=entropy), att, mask_d


def _collect(
    lm: LanguageModel, done: Sequence[tuple[list[int], tuple[dict[str, torch.Tensor], Where]]], total: int | None = None
) -> dict[str, np.ndarray]:
    """Every batch's read-outs, copied to the host at once and put in input order (floats as float64).

    Each batch returned its read-outs with the index, in input order, of each of their rows
    (`_entries`): one array for every read-out, or per read-out (`Where`). With `total`, the
    arrays hold that many entries and the ones no batch read stay empty (NaN; rank 0; top id -1).
    Log-probabilities that are not finite numbers (broken weights, or overflow in this dtype) are
    refused: nothing is scored.
    """
    out = {}
    for key in done[0][1][0]:
        array = torch.cat([read[key] for _, (read, _) in done]).cpu().numpy()
        if key == "logprob" and not np.isfinite(array).all():
            raise NumericalError(
                f"{lm.name} gives log-probabilities that are not finite numbers (NaN or infinity): its weights are broken "
                "or overflow in this dtype (try float32); nothing was scored."
            )
        order = np.concatenate([where.get(key, where["*"]) if isinstance(where, dict) else where for _, (_, where) in done])
        floating = array.dtype.kind == "f"
        empty = np.nan if floating else -1 if key == "top_ids" else 0
        placed = np.full((total if total is not None else len(order), *array.shape[1:]), empty, dtype=np.float64 if floating else np.int64)
        placed[order] = array
        out[key] = placed
    return out


def _entries(starts: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entries `starts[r]` to `starts[r + 1]` of each of `rows`, row by row: (which of `rows` each is, its index)."""
    first, counts = starts[rows], starts[rows + 1] - starts[rows]
    which = np.repeat(np.arange(len(rows)), counts)
    return which, np.arange(int(counts.sum())) + np.repeat(first - (np.cumsum(counts) - counts), counts)


def _attention_received(att: Sequence[torch.Tensor], mask: torch.Tensor, seen_from_later: bool = False) -> torch.Tensor:
    """Attention each key receives, averaged over layers, heads and the real query rows that can attend to it: (B, L).

    Summed layer by layer (no (layers, B, heads, L, L) stack). Pad columns carry exactly
    zero probability; pad rows are left out of the average. `seen_from_later` (a causal model,
    `LanguageModel.seen_from_later`): key k is seen only by rows q >= k, so its average runs over
    those L - k rows (over all L rows, the weight of key k could not exceed (L - k) / L whatever the
    model: a weighting by position).
    """
    total = None
    for layer in att:
        summed = layer.float().sum(dim=1)  # over heads -> (B, L, L)
        total = summed if total is None else total.add_(summed)
    averaged = total / (len(att) * att[0].shape[1])
    query_mask = mask.to(device=averaged.device, dtype=averaged.dtype)[:, :, None]
    received = (averaged * query_mask).sum(dim=1)
    rows = query_mask.sum(dim=1)  # (B, 1): the real rows
    if seen_from_later:  # rows q >= k of the real ones; at least 1 (a pad key's value is never read)
        rows = (rows - torch.arange(received.shape[1], device=received.device, dtype=received.dtype)[None, :]).clamp_(min=1.0)
    return received / rows


# ---------------------------------------------------------------------------------------
# The unmasked pass (AUL, AULA, token accuracy, shuffle sensitivity, the inspector)
# ---------------------------------------------------------------------------------------


def unmasked_pass(
    lm: LanguageModel,
    encodings: Sequence[Encoding],
    *,
    attention: bool = True,
    top_k: int = 0,
    attention_matrices: bool = False,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
    entropy: bool = False,
) -> list[UnmaskedResult]:
    """Score every token of every sentence, nothing masked: at its own position (masked LM) or from the one before (causal LM).

    `attention=True` also returns the attention each token receives (needs eager
    attention, so it costs a little more); `attention_matrices=True` keeps the full
    per-layer, per-head matrices (meant for the one pair on screen); `entropy=True` the
    entropy of the distribution each token is read from (nats).
    """
    if not encodings:
        return []
    need_att = attention or attention_matrices
    sizes = np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings))
    starts = np.concatenate([[0], np.cumsum(sizes)])  # each sentence's tokens, in input order
    matrices: dict[int, np.ndarray] = {}

    def run(batch: list[int]) -> tuple[dict[str, torch.Tensor], Where]:
        input_ids, mask = _pad([encodings[i].ids for i in batch], lm.pad_id)
        flat = np.flatnonzero(mask)
        entries = _entries(starts, np.asarray(batch))[1]  # in the order of `flat`: rows in batch order, positions ascending
        where: Where = entries
        read = flat
        if lm.reads_previous:  # token i from the hidden state at i - 1: a row's first position is predicted by nothing in it
            read = flat[flat % input_ids.shape[1] > 0]
            where = {"*": entries[flat % input_ids.shape[1] > 0], "attention": entries}
        hidden_at = read - 1 if lm.reads_previous else read
        out, att, mask_d = _forward_and_read(lm, input_ids, mask, hidden_at, input_ids.reshape(-1)[read], None, top_k, need_att, entropy)
        if att is not None and mask_d is not None:  # asked for (need_att)
            (flat_d,) = _to_device(lm, flat)
            out["attention"] = _attention_received(att, mask_d, lm.seen_from_later).reshape(-1)[flat_d]
            if attention_matrices:  # the inspector's pair: (layers, B, heads, L, L) -> (B, layers, heads, L, L), copied now
                stacked = torch.stack([a.float() for a in att]).transpose(0, 1).cpu().numpy()
                for b, i in enumerate(batch):
                    matrices[i] = stacked[b, :, :, : sizes[i], : sizes[i]]
        return out, where

    budget = batch_tokens or default_batch_tokens(lm)
    with torch.inference_mode():
        packs = not need_att and packing.decision(lm)["pack"]
        done = _run_batched(sizes.tolist(), run, budget, progress, _overhead_tokens(lm), not getattr(lm, "padding_invariant", True), packs)
        read = _collect(lm, done, int(starts[-1]))
        if lm.start_context is not None:
            _read_first_tokens(lm, read, [e.ids[0] for e in encodings], starts[:-1], top_k, entropy)
    return [
        UnmaskedResult(
            encoding=encoding,
            logprob=read["logprob"][a:b],
            rank=read["rank"][a:b],
            attention=read["attention"][a:b] if need_att else None,
            top_ids=read["top_ids"][a:b] if top_k else None,
            top_logprob=read["top_lp"][a:b] if top_k else None,
            attention_matrices=matrices.get(i),
            entropy=read["entropy"][a:b] if entropy else None,
        )
        for i, (encoding, a, b) in enumerate(zip(encodings, starts[:-1].tolist(), starts[1:].tolist()))
    ]


def _read_first_tokens(
    lm: LanguageModel, read: dict[str, np.ndarray], first_ids: Sequence[int], at: np.ndarray, top_k: int, entropy: bool = False
) -> None:
    """A causal model's first position of each sentence (entries `at`), read from its `start_context`: the distribution
    after that context (bias-bench's start token), computed once for every sentence."""
    ids = torch.tensor([list(lm.start_context or ())], device=lm.device)
    if lm.project is not None:
        hidden, _ = lm.hidden_states(ids, torch.ones_like(ids))
        logits = lm.project(hidden[0, -1:])
    else:
        logits = lm.logits(ids, torch.ones_like(ids))[0][0, -1:]
    logp_t = torch.log_softmax(logits.float(), dim=-1)
    if entropy:
        read["entropy"][at] = float(_entropy(logp_t)[0])
    logp = logp_t[0].cpu().numpy().astype(np.float64)
    gold = logp[np.asarray(first_ids, dtype=np.int64)]
    read["logprob"][at] = gold
    read["rank"][at] = (logp[None, :] > gold[:, None]).sum(axis=1) + 1
    if top_k:
        best = np.argsort(-logp, kind="stable")[:top_k]
        read["top_ids"][at] = best
        read["top_lp"][at] = logp[best]


# ---------------------------------------------------------------------------------------
# Masked passes (CPS, SSS, All Masked, PLL, Kurita templates)
# ---------------------------------------------------------------------------------------


def masked_pass(
    lm: LanguageModel,
    queries: Sequence[MaskedQuery],
    *,
    top_k: int = 0,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
    entropy: bool = False,
) -> list[MaskedResult]:
    """Run every masked query: one row of a batch each, or one per masked position (`MaskedQuery.singly`).

    `entropy=True` also gives the entropy of the distribution at each read position (nats).
    """
    if not queries:
        return []
    # The rows, query by query (a singly query's one per masked position), and the positions each row masks and
    # reads, as entries start[r] to start[r + 1] of one array: every batch gathers its own at once (`_entries`).
    query_of = np.repeat(np.arange(len(queries)), np.fromiter((q.rows for q in queries), dtype=np.int64, count=len(queries)))
    mask_start, mask_at = _row_positions(queries, lambda q: q.mask)
    read_start, read_at = _row_positions(queries, lambda q: q.read)
    n_cand = max(len(q.candidates) for q in queries)
    candidates = np.array([list(q.candidates) + [-1] * (n_cand - len(q.candidates)) for q in queries], dtype=np.int64) if n_cand else None

    def run(batch: list[int]) -> tuple[dict[str, torch.Tensor], np.ndarray]:
        rows = np.asarray(batch)
        owner = query_of[rows]
        input_ids, mask = _pad([queries[i].ids for i in owner.tolist()], lm.pad_id)
        reading, entries = _entries(read_start, rows)
        flat = reading * input_ids.shape[1] + read_at[entries]
        gold = input_ids.reshape(-1)[flat]
        masking, masked = _entries(mask_start, rows)
        input_ids[masking, mask_at[masked]] = lm.mask_id  # type: ignore[attr-defined]  # masked queries: a masked LM
        cand = candidates[owner[reading]] if candidates is not None else None
        return _forward_and_read(lm, input_ids, mask, flat, gold, cand, top_k, False, entropy)[0], entries

    budget = batch_tokens or default_batch_tokens(lm)
    lengths = np.fromiter((len(q.ids) for q in queries), dtype=np.int64, count=len(queries))[query_of]
    with torch.inference_mode():
        packs = packing.decision(lm)["pack"]
        done = _run_batched(lengths.tolist(), run, budget, progress, _overhead_tokens(lm), not getattr(lm, "padding_invariant", True), packs)
        read = _collect(lm, done) if done else _nothing_read(n_cand, top_k)  # (every query singly, with no position)
    if entropy and "entropy" not in read:
        read["entropy"] = np.zeros(0)
    no_candidates = np.zeros((len(read["logprob"]), 0))
    results, end = [], 0
    for q in queries:  # each query's reads, in order, are entries `start` to `end`
        start, end = end, end + len(q.read)
        results.append(
            MaskedResult(
                query=q,
                logprob=read["logprob"][start:end],
                rank=read["rank"][start:end],
                candidate_logprob=read["cand"][start:end, : len(q.candidates)] if n_cand else no_candidates[start:end],
                top_ids=read["top_ids"][start:end] if top_k else None,
                top_logprob=read["top_lp"][start:end] if top_k else None,
                entropy=read["entropy"][start:end] if entropy else None,
            )
        )
    return results


def _row_positions(queries: Sequence[MaskedQuery], positions: Callable[[MaskedQuery], tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `positions` (a query's, or one of a singly query's per row) as entries start[r] to start[r + 1]: (start, entries)."""
    counts = np.fromiter(itertools.chain.from_iterable((1,) * q.rows if q.singly else (len(positions(q)),) for q in queries), dtype=np.int64)
    entries = np.fromiter(itertools.chain.from_iterable(map(positions, queries)), dtype=np.int64, count=int(counts.sum()))
    return np.concatenate([[0], np.cumsum(counts)]), entries


def _nothing_read(n_cand: int, top_k: int) -> dict[str, np.ndarray]:
    """What `_collect` gives for no rows at all."""
    return {
        "logprob": np.zeros(0),
        "rank": np.zeros(0, dtype=np.int64),
        "cand": np.zeros((0, n_cand)),
        "top_ids": np.zeros((0, top_k), dtype=np.int64),
        "top_lp": np.zeros((0, top_k)),
    }


# ---------------------------------------------------------------------------------------
# Continuations after a prompt (the answers of a multiple-choice item)
# ---------------------------------------------------------------------------------------


def continuation_pass(
    lm: LanguageModel,
    queries: Sequence[ContinuationQuery],
    *,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
    share_prompt: bool | None = None,
) -> list[ContinuationResult]:
    """Each continuation's tokens scored after its query's prompt (`ContinuationQuery`): log p and rank of every token.

    A causal model (`reads_previous`) reads a query as one row: the prompt once, then each continuation after it, each
    token attending to the prompt and to its own continuation's earlier tokens only (a 4D attention mask), its position
    ids going on from the prompt's end (`LanguageModel.laid_out`). The prompt is computed once for all its continuations
    (lm-evaluation-harness scores it again for each), and every score equals scoring prompt + continuation in a row of
    its own up to float rounding. Whether a network honours such a layout is checked once on a probe (`shares_prompt`);
    where it does not, or with `share_prompt=False`, each continuation gets a row of its own after the prompt. A masked
    model masks each continuation token alone in prompt + continuation + suffix (PLL, the prompt unmasked).
    """
    if not queries:
        return []
    if not lm.reads_previous:
        return _masked_continuations(lm, queries, batch_tokens, progress)
    share = shares_prompt(lm)["share"] if share_prompt is None else bool(share_prompt)
    read = _shared_rows(lm, [(q.prompt, q.continuations) for q in queries], False, share, batch_tokens, progress)
    return _continuation_results(queries, read["logprob"], read["rank"])


def shared_prefix_pass(
    lm: LanguageModel,
    groups: Sequence[Sequence[Encoding]],
    *,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
) -> list[list[UnmaskedResult]] | None:
    """`unmasked_pass` of each group's sentences (a pair's two), their common first tokens computed once: one row per group,
    the common prefix then each sentence's rest after it (`continuation_pass`'s layout), every token read as the unmasked
    pass reads it (a causal model: from the position before; the first position unscored). None where it does not apply:
    a masked model, a model whose network fails the probe (`shares_prompt`), or a first-token `start_context`."""
    if not lm.reads_previous or lm.start_context is not None or not shares_prompt(lm)["share"]:
        return None
    # Per group, its trees: the group's sentences on one trunk, their common first tokens; sentences that differ from their
    # first token on share nothing, so each is a tree of its own (its first token the trunk).
    trees: list[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = []
    members: list[list[Encoding]] = []
    for group in groups:
        ids = [tuple(e.ids) for e in group]
        common = 0
        while common < min(map(len, ids)) - 1 and len({row[common] for row in ids}) == 1:
            common += 1  # every sentence keeps at least one token of its own
        if common:
            trees.append((ids[0][:common], tuple(row[common:] for row in ids)))
            members.append(list(group))
        else:
            trees += [(row[:1], (row[1:],)) for row in ids]
            members += [[e] for e in group]
    read = _shared_rows(lm, trees, True, True, batch_tokens, progress)
    by_encoding: dict[int, UnmaskedResult] = {}
    at = 0
    for encodings, (trunk, branches) in zip(members, trees):
        n = len(trunk) - 1  # the trunk's tokens after its first
        trunk_lp, trunk_rank = read["logprob"][at : at + n], read["rank"][at : at + n]
        at += n
        for encoding, branch in zip(encodings, branches):
            lp = np.concatenate([[np.nan], trunk_lp, read["logprob"][at : at + len(branch)]])
            rank = np.concatenate([[0], trunk_rank, read["rank"][at : at + len(branch)]]).astype(np.int64)
            at += len(branch)
            by_encoding[id(encoding)] = UnmaskedResult(encoding=encoding, logprob=lp, rank=rank)
    return [[by_encoding[id(e)] for e in group] for group in groups]


Layout = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _shared_rows(
    lm: LanguageModel,
    trees: Sequence[tuple[tuple[int, ...], Sequence[tuple[int, ...]]]],
    read_trunk: bool,
    share: bool,
    batch_tokens: int | None,
    progress: Progress | None,
) -> dict[str, np.ndarray]:
    """Log p and rank of every branch token (and, with `read_trunk`, every trunk token after the first) of trees of a trunk
    and its branches, read-outs in order: per tree its trunk's tokens, then each branch's. `share`: a tree is one row (the
    trunk, then its branches, each seeing the trunk and itself: `laid_out`); else each branch a row with the trunk."""
    rows, entries = [], 0
    for trunk, branches in trees:
        trunk_at = entries
        entries += len(trunk) - 1 if read_trunk else 0
        starts = []
        for branch in branches:
            starts.append(entries)
            entries += len(branch)
        if share:
            rows.append(_row_layout(trunk, branches, starts, trunk_at if read_trunk else None))
        else:
            rows += [_row_layout(trunk, [b], [s], trunk_at if read_trunk and k == 0 else None) for k, (b, s) in enumerate(zip(branches, starts))]

    def run(batch: list[int]) -> tuple[dict[str, torch.Tensor], np.ndarray]:
        chosen = [rows[i] for i in batch]
        width = max(len(lay[0]) for lay in chosen)
        ids = np.full((len(chosen), width), lm.pad_id, dtype=np.int64)
        positions = np.zeros((len(chosen), width), dtype=np.int64)
        block = np.full((len(chosen), width), -1, dtype=np.int64)
        for b, (row_ids, row_positions, row_block, _reads, _gold, _entries) in enumerate(chosen):
            ids[b, : len(row_ids)], positions[b, : len(row_ids)], block[b, : len(row_ids)] = row_ids, row_positions, row_block
        seen = np.arange(width)
        allowed = (seen[None, None, :] <= seen[None, :, None]) & (block[:, None, :] >= 0)
        allowed &= (block[:, None, :] == 0) | (block[:, None, :] == block[:, :, None])
        allowed |= np.eye(width, dtype=bool)[None]  # a padding position looks at itself (no row of -inf)
        mask = np.where(allowed, 0.0, float(torch.finfo(lm.dtype).min)).astype(np.float32)[:, None]
        reads = np.concatenate([lay[3] + b * width for b, lay in enumerate(chosen)])
        gold = np.concatenate([lay[4] for lay in chosen])
        where = np.concatenate([lay[5] for lay in chosen])
        ids_d, mask_d, pos_d, read_d, gold_d = _to_device(lm, ids, mask, positions, reads, gold)
        out = lm.laid_out(ids_d, mask_d, pos_d)
        hidden = out.reshape(-1, out.shape[-1])[read_d]
        return _readout(lm, hidden, gold_d, None, 0, project=lm.project is not None), where

    budget = batch_tokens or default_batch_tokens(lm)
    with torch.inference_mode():
        done = _run_batched([len(lay[0]) for lay in rows], run, budget, progress, _overhead_tokens(lm), not getattr(lm, "padding_invariant", True))
        return _collect(lm, done, entries)


def _row_layout(trunk: Sequence[int], branches: Sequence[Sequence[int]], starts: Sequence[int], trunk_at: int | None) -> Layout:
    """One row: the trunk, then `branches` (their tokens' read-outs go to entries `starts`; the trunk's, after its first
    token, to `trunk_at` when given): (ids, position ids, block (0 trunk, b the b-th branch), where each read token is read
    (the position before it), its id, its entry)."""
    n = len(trunk)
    ids, positions, block = [*trunk], list(range(n)), [0] * n
    reads, gold, entries = [], [], []
    if trunk_at is not None:
        reads += range(n - 1)
        gold += trunk[1:]
        entries += range(trunk_at, trunk_at + n - 1)
    for b, (branch, start) in enumerate(zip(branches, starts), start=1):
        at = len(ids)
        reads += [n - 1, *range(at, at + len(branch) - 1)]  # its first token from the trunk's last position
        ids += branch
        positions += range(n, n + len(branch))
        block += [b] * len(branch)
        gold += branch
        entries += range(start, start + len(branch))
    as_array = [np.asarray(v, dtype=np.int64) for v in (ids, positions, block, reads, gold, entries)]
    return as_array[0], as_array[1], as_array[2], as_array[3], as_array[4], as_array[5]


def _continuation_results(queries: Sequence[ContinuationQuery], logprob: np.ndarray, rank: np.ndarray) -> list[ContinuationResult]:
    """The flat per-token read-outs (queries, continuations, tokens in order) cut back into one result per query."""
    out, at = [], 0
    for query in queries:
        lps, ranks = [], []
        for cont in query.continuations:
            lps.append(logprob[at : at + len(cont)])
            ranks.append(rank[at : at + len(cont)].astype(np.int64))
            at += len(cont)
        out.append(ContinuationResult(query, tuple(lps), tuple(ranks)))
    return out


def _masked_continuations(
    lm: LanguageModel, queries: Sequence[ContinuationQuery], batch_tokens: int | None, progress: Progress | None
) -> list[ContinuationResult]:
    """A masked model: every continuation token masked alone in prompt + continuation + suffix (`masked_pass`, singly)."""
    masked = []
    for query in queries:
        n = len(query.prompt)
        for cont in query.continuations:
            positions = tuple(range(n, n + len(cont)))
            masked.append(MaskedQuery((*query.prompt, *cont, *query.suffix), positions, positions, singly=True))
    found = masked_pass(lm, masked, batch_tokens=batch_tokens, progress=progress)
    logprob = np.concatenate([m.logprob for m in found]) if found else np.zeros(0)
    rank = np.concatenate([m.rank for m in found]) if found else np.zeros(0, dtype=np.int64)
    return _continuation_results(queries, logprob, rank)


_SHARING: weakref.WeakKeyDictionary[torch.nn.Module, dict[str, Any]] = weakref.WeakKeyDictionary()
_SHARING_LOCK = threading.Lock()
#: The probe's prompt and continuations (`shares_prompt`).
_PROBE_PROMPT, _PROBE_CONTINUATIONS = "The quick brown fox said that", ("it jumps over the dog.", "nothing", "the cat sleeps")


def shares_prompt(lm: LanguageModel) -> dict[str, Any]:
    """Whether `lm`'s network scores a prompt's continuations in one row (`continuation_pass`), and why: {"share": bool,
    "reason": str, "error": max |delta|}. Checked once per network on a probe: the shared row must give every token the
    log p it gets in a row of its own (within 1e-4; 5e-2 in half precision); a network that ignores position ids or a
    custom attention mask, or fails on them, scores each continuation in a row of its own instead."""
    with _SHARING_LOCK:
        known = _SHARING.get(lm.model)
    if known is not None:
        return known
    try:
        query = lm.encode_continuations(_PROBE_PROMPT, _PROBE_CONTINUATIONS)
        shared = continuation_pass(lm, [query], share_prompt=True)[0]
        alone = continuation_pass(lm, [query], share_prompt=False)[0]
        error = max(float(np.max(np.abs(a - b))) for a, b in zip(shared.logprob, alone.logprob))
        tol = 1e-4 if lm.dtype == torch.float32 else 5e-2
        made: dict[str, Any] = {
            "share": error <= tol,
            "reason": f"one row per prompt gives every continuation token its own row's log p (max |delta| {error:.2g})"
            if error <= tol
            else f"the network does not honour a shared row's positions and mask (max |delta| {error:.2g}): one row per continuation",
            "error": error,
        }
    except Exception as exc:  # an architecture that refuses position ids or a 4D mask
        made = {"share": False, "reason": f"a shared row failed ({type(exc).__name__}): one row per continuation", "error": None}
    with _SHARING_LOCK:
        _SHARING.setdefault(lm.model, made)
        return _SHARING[lm.model]


__all__ = [
    "DEFAULT_BATCH_TOKENS",
    "ContinuationQuery",
    "ContinuationResult",
    "continuation_pass",
    "shared_prefix_pass",
    "shares_prompt",
    "plan_packed",
    "MaskedQuery",
    "MaskedResult",
    "UnmaskedResult",
    "default_batch_tokens",
    "masked_pass",
    "plan_batches",
    "unmasked_pass",
]

"""Packed rows: a batch's sentences end to end in one row, each attending only to itself (variable-length attention).

A padded batch of short sentences spends attention on padding: the fused GPU kernels work in
tiles of 64-128 tokens, so rows of 15-30 tokens leave most of each tile empty. Packed, the
batch is one row of its real tokens only; the boundaries (`cu_seqlens`) go to a
variable-length attention kernel (`torch.nn.attention.varlen.varlen_attn`, Flash Attention,
on a CUDA GPU in half precision) through transformers' attention interface, and each
sentence's position ids restart at its own start. Nothing else of the model changes, so the
hidden states equal the padded batch's up to float rounding.

Whether a model packs is decided once per loaded network by a measured probe (`decision`):
packed and padded hidden states must agree on probe sentences of several lengths, and the
packed batch must be faster; otherwise, or where the architecture does not route the
boundaries to its attention (it raises, or disagrees), the padded batch is kept. Attention
weights (AULA, the attention views) always come from the padded eager twin. `BIASLENS_PACKING`
= `on` / `off` overrides the probe (`on` also packs on the CPU, through a plain per-sentence
attention: what the tests check packing with).
"""

from __future__ import annotations

import copy
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

if TYPE_CHECKING:
    from biaslens.engine.lm import LanguageModel

#: The name the packed attention is registered under in transformers' attention (and mask) interfaces.
ATTENTION = "biaslens_varlen"
#: Environment override of the probe: "on", "off" (anything else: the probe decides).
ENV = "BIASLENS_PACKING"
#: Architectures whose position ids start after the padding index (RoBERTa's embeddings).
_PADDING_OFFSET_TYPES = ("roberta", "xlm-roberta", "camembert")
#: Packed must be at least this much faster than padded on the probe to be chosen.
_SPEEDUP_NEEDED = 1.05

_REGISTER_LOCK = threading.Lock()
_registered = False


def _varlen_kernel() -> Any:
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:
        return None
    return varlen_attn


def varlen_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention interface over one packed row: (1, heads, T, dim) in, (1, T, heads, dim) out.

    The sentences' boundaries are `cu_seq_lens_q` (the model passes its keyword arguments down to here); a causal
    model's attention stays causal within each sentence.
    """
    cu = kwargs["cu_seq_lens_q"]
    causal = bool(getattr(module, "is_causal", False))
    heads, kv_heads = query.shape[1], key.shape[1]
    kernel = _varlen_kernel()
    if query.is_cuda and kernel is not None and query.dtype in (torch.float16, torch.bfloat16):
        if heads != kv_heads:  # grouped-query attention: each key/value head serves heads // kv_heads query heads
            key, value = (t.repeat_interleave(heads // kv_heads, dim=1) for t in (key, value))
        q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))  # (T, heads, dim)
        longest = int(kwargs["max_length_q"])
        out = kernel(q, k, v, cu, cu, longest, longest, scale=scaling, window_size=(-1, 0) if causal else (-1, -1))
        return out.unsqueeze(0), None
    bounds = cu.tolist()
    parts = [
        F.scaled_dot_product_attention(
            query[:, :, a:b], key[:, :, a:b], value[:, :, a:b], is_causal=causal, scale=scaling, enable_gqa=heads != kv_heads
        )
        for a, b in zip(bounds[:-1], bounds[1:])
    ]
    return torch.cat(parts, dim=2).transpose(1, 2).contiguous(), None


def _no_mask(*args: Any, **kwargs: Any) -> None:
    """The packed attention needs no mask: the boundaries are the sentences'."""
    return None


def _register() -> None:
    global _registered
    with _REGISTER_LOCK:
        if not _registered:
            from transformers import AttentionInterface
            from transformers.masking_utils import AttentionMaskInterface

            AttentionInterface.register(ATTENTION, varlen_attention)
            AttentionMaskInterface.register(ATTENTION, _no_mask)
            _registered = True


@dataclass(frozen=True)
class Packed:
    """A padded batch laid end to end: the real tokens, their position ids, the boundaries, and where each padded position went."""

    ids: np.ndarray  # (T,)
    positions: np.ndarray  # (T,)
    cu_seqlens: np.ndarray  # (rows + 1,), int32
    longest: int
    index: np.ndarray  # (rows * width,): the packed index of each padded position (-1 for padding)


def pack(input_ids: np.ndarray, mask: np.ndarray, position_offset: int = 0) -> Packed:
    """`input_ids` and `mask` (rows, width) of a right-padded batch, packed (row-major: rows in order, positions ascending)."""
    real = mask.astype(bool)
    lengths = real.sum(axis=1)
    index = np.cumsum(real.ravel()) - 1
    index[~real.ravel()] = -1
    positions = (np.cumsum(real, axis=1) - 1)[real] + position_offset
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return Packed(input_ids[real], positions.astype(np.int64), cu, int(lengths.max()), index)


_TWINS: weakref.WeakKeyDictionary[torch.nn.Module, torch.nn.Module] = weakref.WeakKeyDictionary()
_DECISIONS: weakref.WeakKeyDictionary[torch.nn.Module, dict[str, Any]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def packed_twin(lm: LanguageModel) -> torch.nn.Module:
    """A twin of the model sharing every weight, its attention the packed one (made once per network)."""
    _register()
    with _LOCK:
        twin = _TWINS.get(lm.model)
        if twin is None:
            shared = {id(t): t for t in (*lm.model.parameters(), *lm.model.buffers())}
            twin = copy.deepcopy(lm.model, memo=shared)
            twin.set_attn_implementation(ATTENTION)
            twin.eval()
            _TWINS[lm.model] = twin
        return twin


def position_offset(lm: LanguageModel) -> int:
    """Where a sentence's position ids start (RoBERTa-style embeddings count from after the padding index)."""
    pad = getattr(getattr(lm.model, "config", None), "pad_token_id", None)
    return int(pad or 0) + 1 if lm.model_type in _PADDING_OFFSET_TYPES else 0


def forward_packed(lm: LanguageModel, packed: Packed, *, project: bool) -> torch.Tensor:
    """The packed row through the model: hidden states (T, hidden) when `project` (the head comes after), else logits (T, vocab)."""
    twin = packed_twin(lm)
    ids, positions, cu = (torch.from_numpy(a) for a in (packed.ids[None], packed.positions[None], packed.cu_seqlens))
    if lm.device.type == "cuda":
        ids, positions, cu = (t.pin_memory().to(lm.device, non_blocking=True) for t in (ids, positions, cu))
    else:
        ids, positions, cu = (t.to(lm.device) for t in (ids, positions, cu))
    bounds = {"cu_seq_lens_q": cu, "cu_seq_lens_k": cu, "max_length_q": packed.longest, "max_length_k": packed.longest}
    if project:
        return twin.base_model(input_ids=ids, position_ids=positions, **bounds).last_hidden_state[0]
    return twin(input_ids=ids, position_ids=positions, **bounds).logits[0]


def decision(lm: LanguageModel) -> dict[str, Any]:
    """Whether `lm` packs its batches, and why: {"pack": bool, "reason": str, ...the probe's timings}. Decided once per network."""
    forced = os.environ.get(ENV, "").strip().lower()
    if forced in ("on", "off"):  # read every time (not remembered), so it can be switched within a process
        return {"pack": forced == "on", "reason": f"{ENV}={forced}"}
    with _LOCK:
        known = _DECISIONS.get(lm.model)
    if known is not None:
        return known
    if lm.device.type != "cuda" or lm.dtype not in (torch.float16, torch.bfloat16) or _varlen_kernel() is None:
        made = {"pack": False, "reason": "variable-length attention needs a CUDA GPU, half precision and torch's varlen_attn"}
    else:
        try:
            made = _probe(lm)
        except Exception as exc:  # an architecture that does not route the boundaries to its attention
            made = {"pack": False, "reason": f"the packed forward failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"}
    with _LOCK:
        _DECISIONS.setdefault(lm.model, made)
        return _DECISIONS[lm.model]


def _probe_batch(lm: LanguageModel, rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A right-padded batch of random ids, `rows` sentences of 8 to 40 tokens (what benchmark pairs look like)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(8, 41, size=rows)
    vocab = int(getattr(lm.model.config, "vocab_size", 1000))
    ids = rng.integers(5, max(6, vocab - 1), size=(rows, int(lengths.max())))
    mask = (np.arange(ids.shape[1])[None, :] < lengths[:, None]).astype(np.int64)
    return np.where(mask == 1, ids, lm.pad_id), mask


def _probe(lm: LanguageModel) -> dict[str, Any]:
    """Packed and padded hidden states agree on a small batch, and the packed batch of 256 sentences is faster."""
    offset = position_offset(lm)

    def padded(ids: np.ndarray, mask: np.ndarray) -> torch.Tensor:
        t_ids, t_mask = torch.from_numpy(ids).to(lm.device), torch.from_numpy(mask).to(lm.device)
        return lm.model.base_model(input_ids=t_ids, attention_mask=t_mask).last_hidden_state

    with torch.inference_mode():
        ids, mask = _probe_batch(lm, 8)
        want = padded(ids, mask)[torch.from_numpy(mask).to(lm.device).bool()].float()
        got = forward_packed(lm, pack(ids, mask, offset), project=True).float()
        error = float((got - want).abs().max())
        scale = float(want.abs().max())
        if not error <= 5e-2 * max(1.0, scale):
            return {"pack": False, "reason": f"packed and padded hidden states differ (max |delta| {error:.3g})", "error": error}
        ids, mask = _probe_batch(lm, 256, seed=1)
        packed = pack(ids, mask, offset)
        times = {}
        for name, run in (("padded", lambda: padded(ids, mask)), ("packed", lambda: forward_packed(lm, packed, project=True))):
            run()
            torch.cuda.synchronize(lm.device)
            started = time.perf_counter()
            for _ in range(3):
                run()
            torch.cuda.synchronize(lm.device)
            times[name] = (time.perf_counter() - started) / 3
    faster = times["padded"] / times["packed"] if times["packed"] > 0 else 0.0
    chosen = faster >= _SPEEDUP_NEEDED
    reason = f"packed {faster:.2f}x the padded batch's speed on the probe"
    return {"pack": chosen, "reason": reason, "error": error, "seconds_padded": times["padded"], "seconds_packed": times["packed"]}


__all__ = ["ATTENTION", "ENV", "Packed", "decision", "forward_packed", "pack", "packed_twin", "position_offset", "varlen_attention"]

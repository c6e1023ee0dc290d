"""Inside a network: its blocks, its attention heads and its layers' states, for `biaslens.anatomy` (hooks, not branches).

`Internals.of(model)` finds, once per network and by its structure (no table of architecture names):

* the **attention modules**: the modules named `attention`, `attn`, `self_attn` or `self_attention` (BERT's
  `attention`, GPT-2's `attn`, Llama's `self_attn`, ...), outermost ones only;
* each one's **output projection**: the one linear map inside it named `dense`, `c_proj`, `o_proj`, `out_proj`,
  `out_lin` or `Wo`, whose input is the heads' outputs side by side (`heads x head_dim`);
* the **blocks**: the module each attention module sits in (BERT's `BertLayer`, GPT-2's `GPT2Block`, ALBERT's one
  shared `AlbertLayer`, called once per layer).

A module may serve several layers (ALBERT shares one layer's weights across all of them): a hook learns its layer by
counting calls, since every forward pass calls the blocks and their attention in layer order.

`intervene` puts an `Intervention` in effect for the current thread (a `ContextVar`) around a forward pass: each
block's input hidden state can be read or replaced (`block_input`), each attention's per-head output (B, T, heads,
head_dim) before its output projection can be replaced (`head_outputs`: zeroing one head's slice is its ablation,
since transformers 5 has no `head_mask`), and the input of the final norm recorded. The hooks are registered on the
shared model once, on first use, and do nothing where no intervention is in effect: other threads (the app's other
sessions) and every other pass run the model untouched (`tests/engine/test_anatomy.py` checks both).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

#: Names of attention modules and of their output projections (last component of the module's name).
ATTENTION_NAMES = frozenset({"attention", "attn", "self_attn", "self_attention"})
OUTPUT_PROJECTION_NAMES = frozenset({"dense", "c_proj", "o_proj", "out_proj", "out_lin", "Wo"})

BlockHook = Callable[[int, torch.Tensor], torch.Tensor | None]


@dataclass
class Intervention:
    """What the hooks do during the passes run inside `intervene` (this thread only).

    `block_input(layer, hidden)`: called with each block's input hidden state (B, T, H); a tensor returned replaces it
    (its batch may grow: rows appended there run every later layer). `head_outputs(layer, z)`: called with each
    attention's heads' outputs (B, T, heads, head_dim) before the output projection; a tensor returned replaces them.
    `final_input`: with `record_final`, the input of the model's final norm in the last pass (the last block's output).
    """

    block_input: BlockHook | None = None
    head_outputs: BlockHook | None = None
    record_final: bool = False
    final_input: torch.Tensor | None = None
    blocks_seen: int = 0
    attentions_seen: int = 0


_ACTIVE: ContextVar[Intervention | None] = ContextVar("biaslens_intervention", default=None)
#: Each network's `Internals`, found once.
_FOUND: "weakref.WeakKeyDictionary[torch.nn.Module, Internals]" = weakref.WeakKeyDictionary()
_FOUND_LOCK = threading.Lock()


@dataclass
class Internals:
    """Where a network's blocks, attention output projections and final norm are (module docstring); `unavailable`
    says why interventions cannot apply (then the lists are empty)."""

    num_layers: int
    num_heads: int
    head_dim: int
    blocks: tuple[torch.nn.Module, ...] = ()
    projections: tuple[torch.nn.Module, ...] = ()
    final_norm: torch.nn.Module | None = None
    unavailable: str | None = None
    _handles: list[Any] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(cls, base: torch.nn.Module, num_layers: int | None, num_heads: int | None, final_norm: torch.nn.Module | None) -> "Internals":
        """The internals of `base` (a transformers base model) with `num_layers` layers of `num_heads` heads: one object per
        network, however many model views share it (two would hook its modules twice)."""
        with _FOUND_LOCK:
            found = _FOUND.get(base)
            if found is None:
                found = _FOUND[base] = cls._find(base, num_layers, num_heads, final_norm)
            return found

    @classmethod
    def _find(cls, base: torch.nn.Module, num_layers: int | None, num_heads: int | None, final_norm: torch.nn.Module | None) -> "Internals":
        if not num_layers or not num_heads:
            return cls(0, 0, 0, unavailable="its config names no number of layers or attention heads")
        attentions = _outermost([(n, m) for n, m in base.named_modules() if n.rsplit(".", 1)[-1] in ATTENTION_NAMES])
        if not attentions:
            return cls(num_layers, num_heads, 0, unavailable="no attention module was found in it")
        names = dict(base.named_modules())
        blocks, projections = [], []
        for name, module in attentions:
            outs = [m for n, m in module.named_modules() if n.rsplit(".", 1)[-1] in OUTPUT_PROJECTION_NAMES and _in_features(m)]
            if len(outs) != 1:
                return cls(num_layers, num_heads, 0, unavailable=f"its attention module {name} has no single output projection")
            projections.append(outs[0])
            blocks.append(names[name.rsplit(".", 1)[0]] if "." in name else base)
        width = {_in_features(p) for p in projections}
        if len(width) != 1 or next(iter(width)) % num_heads:
            return cls(num_layers, num_heads, 0, unavailable="its attention outputs do not split into its heads")
        if len(attentions) not in (1, num_layers):
            return cls(num_layers, num_heads, 0, unavailable=f"it has {len(attentions)} attention modules for {num_layers} layers")
        return cls(num_layers, num_heads, next(iter(width)) // num_heads, tuple(blocks), tuple(projections), final_norm)

    def __deepcopy__(self, memo: dict) -> "Internals":
        """What a copy of a hooked network (the eager twin, the bfloat16 copy, a packing probe's twin) keeps in place of
        these internals: inert hooks. Interventions apply to the network they were installed on; a copy asked for its
        own (`Internals.of`) gets internals of its own. (The lock and the handles cannot be copied.)"""
        return Internals(self.num_layers, self.num_heads, self.head_dim, unavailable="a copy of a network hooked elsewhere")

    def install(self) -> None:
        """Register the hooks once (they do nothing outside `intervene`)."""
        with self._lock:
            if self._handles or self.unavailable:
                return
            for block in dict.fromkeys(self.blocks):  # a shared block (ALBERT) gets one hook, called once per layer
                self._handles.append(block.register_forward_pre_hook(self._on_block, with_kwargs=True))
            for projection in dict.fromkeys(self.projections):
                self._handles.append(projection.register_forward_pre_hook(self._on_heads))
            if self.final_norm is not None:
                self._handles.append(self.final_norm.register_forward_pre_hook(self._on_final))

    def _hook_now(self, seen: str, hook: str) -> tuple[BlockHook, int] | None:
        """The active intervention's `hook` and the layer of this call (its counter `seen` advanced), or None."""
        active = _ACTIVE.get()
        if active is None or self.unavailable:
            return None
        layer = getattr(active, seen) % self.num_layers
        setattr(active, seen, getattr(active, seen) + 1)
        fn = getattr(active, hook)
        return None if fn is None else (fn, layer)

    def _on_block(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        now = self._hook_now("blocks_seen", "block_input")
        if now is None:
            return None
        hidden = args[0] if args else kwargs["hidden_states"]
        replaced = now[0](now[1], hidden)
        if replaced is None:
            return None
        if args:
            return (replaced, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": replaced}

    def _on_heads(self, module: torch.nn.Module, args: tuple) -> tuple | None:
        now = self._hook_now("attentions_seen", "head_outputs")
        if now is None:
            return None
        x = args[0]
        replaced = now[0](now[1], x.reshape(*x.shape[:-1], self.num_heads, self.head_dim))
        if replaced is None:
            return None
        return (replaced.reshape(x.shape[:-1] + (-1,)), *args[1:])

    def _on_final(self, module: torch.nn.Module, args: tuple) -> None:
        active = _ACTIVE.get()
        if active is not None and active.record_final and not self.unavailable:
            active.final_input = args[0]


@contextlib.contextmanager
def intervene(internals: Internals, intervention: Intervention) -> Iterator[Intervention]:
    """`intervention` in effect for the passes run inside (this thread only); the hooks are installed on first use."""
    internals.install()
    token = _ACTIVE.set(intervention)
    try:
        yield intervention
    finally:
        _ACTIVE.reset(token)


def _in_features(module: torch.nn.Module) -> int:
    """A linear map's input width (torch's Linear, transformers' Conv1D), else 0."""
    if isinstance(module, torch.nn.Linear):
        return int(module.in_features)
    weight = getattr(module, "weight", None)
    if type(module).__name__ == "Conv1D" and isinstance(weight, torch.Tensor) and weight.dim() == 2:
        return int(weight.shape[0])
    return 0


def _outermost(named: list[tuple[str, torch.nn.Module]]) -> list[tuple[str, torch.nn.Module]]:
    """Those of `named` not inside another of them."""
    names = [n for n, _ in named]
    return [(n, m) for n, m in named if not any(n.startswith(other + ".") for other in names if other != n)]


__all__ = ["ATTENTION_NAMES", "OUTPUT_PROJECTION_NAMES", "Internals", "Intervention", "intervene"]

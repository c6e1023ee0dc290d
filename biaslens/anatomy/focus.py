"""The score every anatomy view takes apart: a sentence's log-likelihood under the metric in focus, as a function of the network.

The metric in focus is one of `FOCUS_METRICS`, the metrics of the unmasked pass that add up every scored token's log p:
AUL (a masked LM: the mean of log P(w_i | S), nothing masked), LL (a causal LM: the sum of log P(w_i | w_<i)) and AUL-c
(its mean). By default the first of the model kind's default metrics among them (AUL, LL). A sentence is encoded as the
engine encodes it (special tokens, a causal model's first-token policy), and each scored token is read where the engine
reads it (`LanguageModel.reads_previous`: at i, or at i - 1); a causal model's first token read from its start context
(bias-bench's policy) does not depend on the sentence's network at all and enters as a constant.

`FocusSentence.logprob(lm, hidden)` gives the scored tokens' log p from final hidden states (any batch of rows of the
sentence), differentiably, so attribution, the logit lens and head ablation all read the one score `evaluate` gives
(the tests check them equal to `unmasked_pass` within 1e-5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from biaslens.engine.lm import Encoding, LanguageModel
from biaslens.engine.metrics import METRICS, default_metrics
from biaslens.engine.scoring import unmasked_pass
from biaslens.errors import InputError, MetricUnavailableError

#: The metrics the anatomy views take apart: each adds up every scored token's log p (a mean or a sum).
FOCUS_METRICS = ("aul", "ll", "aul_c")


def focus_metric(lm: LanguageModel, metric: str | None = None) -> str:
    """The metric in focus for `lm`: `metric` checked (one of `FOCUS_METRICS` that `lm`'s kind gives), or the default."""
    if metric is None:
        return next(m for m in default_metrics(lm.kind) if m in FOCUS_METRICS)
    key = str(metric).strip().lower().replace("-", "_")
    usable = [m for m in FOCUS_METRICS if lm.kind in METRICS[m].kinds]
    if key not in usable:
        names = ", ".join(METRICS[m].name for m in usable)
        raise InputError(f"The anatomy views take apart {names} for {lm.name} (a {lm.kind} model), not {metric!r}.")
    return key


def require_head(lm: LanguageModel, what: str) -> None:
    """Refuse a model whose LM head could not be split from its body (`LanguageModel.project` is None)."""
    if lm.project is None:
        raise MetricUnavailableError(f"{what} needs {lm.name}'s LM head apart from its body, and it could not be split off for {lm.model_type}.")


@dataclass(frozen=True)
class FocusSentence:
    """A sentence as the anatomy views read it: its encoding, the scored positions, where each is read, the reduction."""

    encoding: Encoding
    metric: str
    positions: np.ndarray  # scored token positions, ascending
    read_at: np.ndarray  # the hidden position each is read from (-1: the model's start context, a constant)
    constant: np.ndarray  # log p of the positions read from the start context (NaN elsewhere)

    @property
    def ids(self) -> torch.Tensor:
        return torch.tensor([list(self.encoding.ids)])

    @property
    def reduction(self) -> str:
        return str(METRICS[self.metric].reduction)

    def reduce(self, logprob: torch.Tensor) -> torch.Tensor:
        """The sentence score of each row of `logprob` (rows, scored positions)."""
        return logprob.mean(dim=-1) if self.reduction == "mean" else logprob.sum(dim=-1)

    def reduce_np(self, logprob: np.ndarray) -> np.ndarray:
        return logprob.mean(axis=-1) if self.reduction == "mean" else logprob.sum(axis=-1)

    def logprob(self, lm: LanguageModel, hidden: torch.Tensor) -> torch.Tensor:
        """The scored tokens' log p (rows, scored positions), float32, from final hidden states (rows, T, H) of this sentence."""
        assert lm.project is not None  # `require_head`
        inside = self.read_at >= 0
        gold = torch.tensor([self.encoding.ids[p] for p in self.positions[inside]], device=hidden.device)
        logits = lm.project(hidden[:, torch.as_tensor(self.read_at[inside], device=hidden.device)])
        picked = torch.log_softmax(logits.float(), dim=-1).gather(-1, gold.expand(hidden.shape[0], -1)[..., None])[..., 0]
        if inside.all():
            return picked
        out = torch.as_tensor(self.constant, dtype=picked.dtype, device=picked.device).expand(hidden.shape[0], -1).clone()
        out[:, torch.as_tensor(np.flatnonzero(inside), device=picked.device)] = picked
        return out


def focus_sentence(lm: LanguageModel, text: str | Encoding, metric: str | None = None) -> FocusSentence:
    """`text` (or its encoding) prepared for the anatomy views under the metric in focus (`focus_metric`)."""
    key = focus_metric(lm, metric)
    encoding = text if isinstance(text, Encoding) else lm.encode(text)
    positions = np.asarray(encoding.scored_positions, dtype=np.int64)
    read_at = positions - 1 if lm.reads_previous else positions.copy()
    constant = np.full(len(positions), np.nan)
    outside = read_at < 0
    if outside.any():  # a causal model's first token, read from its start context (bias-bench): the engine's own reading
        (read,) = unmasked_pass(lm, [encoding], attention=False)
        constant[outside] = read.logprob[positions[outside]]
    return FocusSentence(encoding, key, positions, read_at, constant)


def same_metric(lm: LanguageModel, sent_stereo: str, sent_anti: str, metric: str | None) -> tuple[FocusSentence, FocusSentence]:
    """Both sentences of a pair prepared under one metric in focus; refused like `inspect_pair` when they are no pair."""
    from biaslens.data.sentences import check_pair

    check_pair(sent_stereo, sent_anti)
    a, b = lm.encode_many([sent_stereo, sent_anti])
    if a.ids == b.ids:
        raise InputError(f"The two sentences encode to the same tokens for {lm.name}, so they are not a pair: change a word in one of them.")
    return focus_sentence(lm, a, metric), focus_sentence(lm, b, metric)


__all__ = ["FOCUS_METRICS", "FocusSentence", "focus_metric", "focus_sentence", "require_head", "same_metric"]

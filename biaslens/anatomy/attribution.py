"""Attribution: how much each input token contributes to a sentence's score, and for a pair, which context words make the
stereotyped sentence likelier.

For a sentence S with word embeddings x (one row per position) and the score f (the metric in focus, `focus.py`: AUL's
mean for a masked LM, LL's sum for a causal one), as a function of the word embeddings with position and token-type
embeddings kept (the model adds them to whatever word embeddings it is given):

* **integrated gradients** (Sundararajan et al. 2017): IG_i = sum_d (x_id - x'_id) * integral_0^1 df/dx_id(x' + a (x - x')) da,
  with the baseline x' = 0 (zero word embeddings at every position, special tokens included) and the integral by
  Gauss-Legendre quadrature on `n_steps` points (64 by default), as captum's `IntegratedGradients` does by default (the
  peer test checks equality with captum 0.9 within 1e-4). Completeness: sum_i IG_i = f(x) - f(x') up to the quadrature's
  error, reported as `completeness_error` (and relative to |f(x) - f(x')|); more steps make it smaller;
* **gradient x input** (the fast view, one backward pass): GxI_i = sum_d x_id df/dx_id(x), a first-order reading that
  does not add up to anything in particular.

A token's attribution is its sum over the embedding dimensions. Special tokens ([CLS], [SEP], a causal model's BOS) get
one too: their embeddings are part of the input. For a pair, the two sentences' attributions are aligned token by token
(`engine.alignment`, as the metrics align them) and their difference on the shared tokens says which context words push
the stereotyped sentence's score up more than the other's. An attribution is a statement about this function and this
baseline, not a causal claim about the model's reasons (docs/anatomy.md).

All `n_steps` points of a sentence run as batched forward and backward passes of at most `batch_tokens` tokens each
(every row has the sentence's length: nothing is padded).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from biaslens.anatomy.focus import FocusSentence, focus_sentence, require_head, same_metric
from biaslens.engine.alignment import Alignment, align_pair
from biaslens.engine.lm import LanguageModel
from biaslens.errors import InputError

#: Integration points of integrated gradients when none are given (captum's is 50; the issue's and this tool's 64).
DEFAULT_STEPS = 64
#: The most points a sentence may be integrated over (beyond it the quadrature error no longer shrinks in float32).
MAX_STEPS = 1024
#: Tokens (rows x sentence length) per forward and backward pass.
DEFAULT_BATCH_TOKENS = 1024
METHODS = ("integrated_gradients", "gradient_x_input")


def gauss_legendre(n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(points in [0, 1], weights summing to 1) of the n-point Gauss-Legendre rule: captum's `gausslegendre`."""
    x, w = np.polynomial.legendre.leggauss(n_steps)
    return 0.5 * (1 + x), 0.5 * w


@dataclass(frozen=True)
class SentenceAttribution:
    """One sentence's score taken apart over its input tokens (module docstring)."""

    text: str
    tokens: tuple[str, ...]
    texts: tuple[str, ...]  # each token as the text it covers, for people (`LanguageModel.token_texts`: "café", not "ĠcafÃ©")
    special: tuple[bool, ...]
    metric: str
    integrated_gradients: np.ndarray  # per position
    gradient_x_input: np.ndarray  # per position
    score: float  # f(x): the metric's score of the sentence
    baseline_score: float  # f(x'): with zero word embeddings
    n_steps: int

    @property
    def completeness_error(self) -> float:
        """sum_i IG_i - (f(x) - f(x')): the quadrature's error (0 for the exact integral)."""
        return float(self.integrated_gradients.sum() - (self.score - self.baseline_score))

    @property
    def relative_completeness_error(self) -> float:
        """`completeness_error` relative to |f(x) - f(x')| (NaN where that is 0)."""
        gap = abs(self.score - self.baseline_score)
        return abs(self.completeness_error) / gap if gap > 0 else float("nan")

    def values(self, method: str) -> np.ndarray:
        if method not in METHODS:
            raise InputError(f"Unknown attribution method {method!r}: choose from {', '.join(METHODS)}.")
        return getattr(self, method)

    def frame(self, sentence: str = "") -> pd.DataFrame:
        """One row per (method, position): sentence, position, token, text (what it covers), special, method, value."""
        rows = [
            {"sentence": sentence, "position": p, "token": t, "text": x, "special": s, "method": m, "value": float(self.values(m)[p])}
            for m in METHODS
            for p, (t, x, s) in enumerate(zip(self.tokens, self.texts, self.special))
        ]
        return pd.DataFrame(rows, columns=["sentence", "position", "token", "text", "special", "method", "value"])


@dataclass(frozen=True)
class PairAttribution:
    """Both sentences of a pair attributed, aligned token by token."""

    stereo: SentenceAttribution
    anti: SentenceAttribution
    alignment: Alignment

    @property
    def margin(self) -> float:
        """The metric's margin, stereo - anti."""
        return self.stereo.score - self.anti.score

    def difference(self, method: str = "integrated_gradients") -> pd.DataFrame:
        """The shared (unmodified) tokens, one row each: positions in both sentences, the token (and the text it covers),
        both attributions and stereo - anti: which context words push the stereotyped sentence's score up more than the other's."""
        a, b = self.stereo.values(method), self.anti.values(method)
        rows = [
            {
                "position_stereo": i,
                "position_anti": j,
                "token": self.stereo.tokens[i],
                "text": self.stereo.texts[i],
                "stereo": float(a[i]),
                "anti": float(b[j]),
                "difference": float(a[i] - b[j]),
            }
            for i, j in zip(self.alignment.unmodified_a, self.alignment.unmodified_b)
        ]
        return pd.DataFrame(rows, columns=["position_stereo", "position_anti", "token", "text", "stereo", "anti", "difference"])

    def frame(self) -> pd.DataFrame:
        """attribution.csv: sentence (stereo, anti, difference), position, token, text, method, value; a difference row
        is at the stereotyped sentence's position of a shared token."""
        parts = [self.stereo.frame("stereo"), self.anti.frame("anti")]
        for method in METHODS:
            d = self.difference(method)
            parts.append(
                pd.DataFrame(
                    {
                        "sentence": "difference",
                        "position": d["position_stereo"],
                        "token": d["token"],
                        "text": d["text"],
                        "special": False,
                        "method": method,
                        "value": d["difference"],
                    }
                )
            )
        return pd.DataFrame(pd.concat(parts, ignore_index=True), columns=["sentence", "position", "token", "text", "method", "value"])

    def completeness(self) -> pd.DataFrame:
        """Per sentence: f(x), f(x'), the sum of the attributions, the completeness error and its relative size."""
        rows = []
        for name, s in (("stereo", self.stereo), ("anti", self.anti)):
            rows.append(
                {
                    "sentence": name,
                    "score": s.score,
                    "baseline_score": s.baseline_score,
                    "attribution_sum": float(s.integrated_gradients.sum()),
                    "completeness_error": s.completeness_error,
                    "relative_error": s.relative_completeness_error,
                    "n_steps": s.n_steps,
                }
            )
        return pd.DataFrame(rows)


def check_steps(n_steps: int) -> int:
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or not 1 <= int(n_steps) <= MAX_STEPS:
        raise InputError(f"n_steps must be a whole number from 1 to {MAX_STEPS} (got {n_steps!r}).")
    return int(n_steps)


def _score_rows(lm: LanguageModel, s: FocusSentence, embeds: torch.Tensor) -> torch.Tensor:
    return s.reduce(s.logprob(lm, lm.body(inputs_embeds=embeds)))


def attribute_sentence(
    lm: LanguageModel, s: FocusSentence, *, n_steps: int = DEFAULT_STEPS, batch_tokens: int = DEFAULT_BATCH_TOKENS
) -> SentenceAttribution:
    """Integrated gradients and gradient x input of a prepared sentence (`focus.focus_sentence`)."""
    require_head(lm, "Attribution")
    n_steps = check_steps(n_steps)
    points, weights = gauss_legendre(n_steps)
    # The rows: the quadrature's points, then a = 1 (f(x) and gradient x input) and a = 0 (the baseline's score).
    alphas = np.concatenate([points, [1.0, 0.0]])
    weights = np.concatenate([weights, [0.0, 0.0]])
    n = len(s.encoding)
    rows = max(1, batch_tokens // n)
    with torch.no_grad():
        x = lm.word_embeddings(s.ids.to(lm.device)).float()  # (1, T, H)
    total = torch.zeros_like(x[0])
    scores = np.zeros(len(alphas))
    grad_at_input = None
    for start in range(0, len(alphas), rows):
        a = torch.tensor(alphas[start : start + rows], dtype=x.dtype, device=x.device)[:, None, None]
        scaled = (a * x).to(lm.dtype).requires_grad_()
        with torch.enable_grad():
            f = _score_rows(lm, s, scaled)
            (grad,) = torch.autograd.grad(f.sum(), scaled)
        grad = grad.float()
        w = torch.tensor(weights[start : start + rows], dtype=grad.dtype, device=grad.device)[:, None, None]
        total += (grad * w).sum(dim=0)
        scores[start : start + len(a)] = f.detach().double().cpu().numpy()
        at_one = len(points) - start
        if 0 <= at_one < len(a):
            grad_at_input = grad[at_one]
    assert grad_at_input is not None
    ig = (total * x[0]).sum(dim=-1).double().cpu().numpy()
    gxi = (grad_at_input * x[0]).sum(dim=-1).double().cpu().numpy()
    e = s.encoding
    texts = lm.token_texts([e])[0]
    return SentenceAttribution(e.text, e.tokens, texts, e.special, s.metric, ig, gxi, float(scores[-2]), float(scores[-1]), n_steps)


def attribute(
    lm: LanguageModel, text: str, *, metric: str | None = None, n_steps: int = DEFAULT_STEPS, batch_tokens: int = DEFAULT_BATCH_TOKENS
) -> SentenceAttribution:
    """Integrated gradients (and gradient x input) of one sentence's score under the metric in focus (module docstring).

    `metric`: "aul" (masked LMs, the default), "ll" (causal LMs, the default) or "aul_c"; `n_steps`: the quadrature's
    points (64). The result's `completeness_error` says how far the attributions' sum is from f(x) - f(baseline).
    """
    return attribute_sentence(lm, focus_sentence(lm, text, metric), n_steps=n_steps, batch_tokens=batch_tokens)


def attribute_pair(
    lm: LanguageModel,
    sent_stereo: str,
    sent_anti: str,
    *,
    metric: str | None = None,
    n_steps: int = DEFAULT_STEPS,
    batch_tokens: int = DEFAULT_BATCH_TOKENS,
) -> PairAttribution:
    """`attribute` for both sentences of a pair, aligned token by token (`PairAttribution.difference`: stereo - anti on
    the shared tokens)."""
    n_steps = check_steps(n_steps)
    a, b = same_metric(lm, sent_stereo, sent_anti, metric)
    return PairAttribution(
        attribute_sentence(lm, a, n_steps=n_steps, batch_tokens=batch_tokens),
        attribute_sentence(lm, b, n_steps=n_steps, batch_tokens=batch_tokens),
        align_pair(a.encoding, b.encoding),
    )


__all__ = [
    "DEFAULT_STEPS",
    "METHODS",
    "PairAttribution",
    "SentenceAttribution",
    "attribute",
    "attribute_pair",
    "attribute_sentence",
    "gauss_legendre",
]

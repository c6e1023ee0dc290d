"""What the scoring core's passes are asked and what they return, as plain data.

`MaskedQuery` (one masked forward-pass row), `MaskedResult`, `UnmaskedResult` and `ContinuationResult` (continuations
scored after one prompt: `biaslens.engine.lm.ContinuationQuery`) hold
tuples and numpy arrays only, so the metric registry (`biaslens.engine.metrics`), which builds
queries and reads results, loads without torch (`biaslens metrics` answers at once).
The passes themselves are `biaslens.engine.scoring`, which re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from biaslens.engine.lm import ContinuationQuery
    from biaslens.engine.models import Encoding


@dataclass(slots=True)
class UnmaskedResult:
    """Per-token outputs of the unmasked pass for one sentence (arrays of length L)."""

    encoding: Encoding
    logprob: np.ndarray  # log p(t_i @ i | S), float64, special positions included
    rank: np.ndarray  # 1 = the model's arg-max is the gold token
    attention: np.ndarray | None = None  # attention received a[k], averaged over layers, heads, queries
    top_ids: np.ndarray | None = None  # (L, k)
    top_logprob: np.ndarray | None = None  # (L, k)
    attention_matrices: np.ndarray | None = None  # (layers, heads, L, L), only on request
    entropy: np.ndarray | None = None  # entropy (nats) of the distribution each token is read from, only on request


class MaskedQuery(NamedTuple):
    """Replace `mask` positions of `ids` by the mask token; read predictions at `read`.

    At each read position the result holds log p of the *original* token there (and its
    rank) and log p of every id in `candidates`. A query is one row of a forward pass; with
    `singly`, it is one row per position of `mask`, each masking that position alone and
    reading it there (`read` equals `mask`): what CPS and PLL ask of every position they
    score, one query per sentence instead of one per position.

    Queries are dictionary keys (equal queries run once, results are looked up by query): a
    named tuple is built, hashed and compared several times faster than a frozen dataclass.
    """

    ids: tuple[int, ...]
    mask: tuple[int, ...]
    read: tuple[int, ...]
    candidates: tuple[int, ...] = ()
    singly: bool = False

    @property
    def rows(self) -> int:
        """Forward-pass rows the query takes."""
        return len(self.mask) if self.singly else 1


@dataclass(slots=True)
class MaskedResult:
    query: MaskedQuery
    logprob: np.ndarray  # (R,) log p of the original token at each read position
    rank: np.ndarray  # (R,)
    candidate_logprob: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (R, C)
    top_ids: np.ndarray | None = None  # (R, k)
    top_logprob: np.ndarray | None = None
    entropy: np.ndarray | None = None  # (R,) entropy (nats) of the distribution at each read position, only on request


@dataclass(slots=True)
class ContinuationResult:
    """Per continuation of a `ContinuationQuery`: each token's log p (float64) and rank (1 = the model's arg-max)."""

    query: ContinuationQuery
    logprob: tuple[np.ndarray, ...]
    rank: tuple[np.ndarray, ...]

    @property
    def sums(self) -> np.ndarray:
        """Each continuation's log-likelihood: the sum of its tokens' log p."""
        return np.array([float(lp.sum()) for lp in self.logprob])


__all__ = ["ContinuationResult", "MaskedQuery", "MaskedResult", "UnmaskedResult"]

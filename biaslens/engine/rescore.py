"""bfloat16 with float32 near ties: the `bf16-rescore` precision of a dataset run. Calibrated, not exact.

A bfloat16 copy of a float32 model scores every pair; a pair whose margin (stereo minus anti)
under a metric is within a *calibrated* estimate of bfloat16's error is scored again in float32,
with the float32 model. Pairs with larger margins keep bfloat16's verdict.

What it promises, and what it does not. The estimate: a sentence score moves by at most its
`Metric.sensitivity` (1 for a mean, n for a sum of n log-probabilities, sum |w| / n for AULA's
weighted mean) times the largest error of one token's log-probability; that error is measured
on the run's first `CALIBRATION_PAIRS` pairs, scored in both precisions (per metric, the largest
|margin error| / (S(stereo) + S(anti)) seen there, times `SAFETY`, never below `FLOOR`). A pair
is re-scored when |margin| <= scale x (S(stereo) + S(anti)) (plus twice the metric's rounding
step in kaneko2022 mode; a tie in bfloat16 is always re-scored). This is an empirical
calibration, not a bound: nothing proves that later pairs' errors stay within 4x the first
pairs' largest. An independent check found errors of 2.7-4.2x the calibration maximum (one
token's error 3.2-3.7x the AUL/CPS scale), verdicts that differ from float32's (e.g. a CPS margin
of +0.0036 in float32 and -0.0595 in bfloat16 against a threshold of 0.0565), and on up to
5.4% of single-word pairs an error above the threshold (AULA, random weights). So the mode was
renamed from `exact-bf16`: it gives float32's verdict on every pair it re-scores and, on the
pairs it does not, bfloat16's verdict for margins larger than the calibrated error. Use float32
when every verdict must be float32's (the default). How many pairs each metric re-scored, and
this caveat, are in the manifest's `precision` block and said by the CLI.
"""

from __future__ import annotations

import copy
import math
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch

from biaslens.errors import InputError
from biaslens.engine.metrics import METRICS
from biaslens.engine.lm import Encoding, LanguageModel
from biaslens.engine.scoring import default_batch_tokens

if TYPE_CHECKING:
    from biaslens.engine.pairs import ScoredPair

#: Pairs scored in both precisions to measure bfloat16's error (the first of the run).
CALIBRATION_PAIRS = 64
#: The bound is this many times the largest error per unit of sensitivity seen on the calibration pairs ...
SAFETY = 4.0
#: ... and never below this (a calibration that happened to show no error does not switch re-scoring off).
FLOOR = 2.0**-12

#: `pairs.score_encoded_pairs`: (lm, encoded pairs, metrics, *, compat, batch_tokens, progress) -> scored pairs.
ScoreFn = Callable[..., list["ScoredPair"]]

#: The bfloat16 twin of each loaded network (keyed by the torch module: the views of one model share it).
_TWINS: weakref.WeakKeyDictionary[torch.nn.Module, LanguageModel] = weakref.WeakKeyDictionary()
_TWINS_LOCK = threading.Lock()


def bfloat16_twin(lm: LanguageModel) -> LanguageModel:
    """A bfloat16 copy of a float32 model, made once and kept while the model lives (its weights, rounded, on its device).

    It reads tokens as `lm` does (a causal model's first-token policy).
    """
    _check_float32(lm)
    with _TWINS_LOCK:
        twin = _TWINS.get(lm.model)
        if twin is None:
            model = copy.deepcopy(lm.model).to(torch.bfloat16)
            fields = {"name": lm.name, "source": lm.source, "revision": lm.revision, "fingerprint": lm.fingerprint}
            twin = type(lm)(model, lm.tokenizer, **fields, device=lm.device, dtype=torch.bfloat16)
            _TWINS[lm.model] = twin
    first_token = getattr(lm, "first_token", None)  # a causal model's reading of its first token
    return twin.with_first_token(first_token) if first_token is not None else twin  # type: ignore[attr-defined]


def _check_float32(lm: LanguageModel) -> None:
    if lm.dtype != torch.float32:
        dtype = str(lm.dtype).removeprefix("torch.")
        raise InputError(f"The bf16-rescore precision re-scores in float32: load the model in float32 (--dtype float32), not {dtype}.")


@dataclass(frozen=True)
class Calibration:
    """What the calibration pairs measured: per metric, bfloat16's error per unit of sensitivity (`SAFETY` and `FLOOR` applied)."""

    pairs: int
    scale: dict[str, float]


class Bf16Rescore:
    """Scores pairs in bfloat16 and re-scores in float32 the (pair, metric) whose verdict bfloat16 cannot settle.

    `lm` is the float32 model; `sample()` gives the encoded calibration pairs (asked once, when
    the first pairs are scored: a run read wholly from the cache never calibrates); `score` is
    `pairs.score_encoded_pairs`.
    """

    def __init__(
        self,
        lm: LanguageModel,
        metrics: Sequence[str],
        *,
        compat: bool,
        score: ScoreFn,
        sample: Callable[[], Sequence[tuple[Encoding, Encoding]]],
        batch_tokens: int | None = None,
    ):
        _check_float32(lm)
        self.lm = lm
        self.metrics, self.compat = list(metrics), compat
        self._score, self._sample, self._batch_tokens = score, sample, batch_tokens
        self.calibration: Calibration | None = None
        self._known: dict[tuple[str, str], ScoredPair] = {}  # the calibration pairs' float32 scores, by their sentences

    @property
    def fast(self) -> LanguageModel:
        """The bfloat16 copy (made when first needed: a run read from the cache needs none)."""
        return bfloat16_twin(self.lm)

    def _run(self, lm: LanguageModel, pairs: Sequence[tuple[Encoding, Encoding]], metrics: Sequence[str], progress: Any = None) -> list[ScoredPair]:
        budget = self._batch_tokens or default_batch_tokens(lm)
        return self._score(lm, pairs, list(metrics), compat=self.compat, batch_tokens=budget, progress=progress)

    def calibrate(self) -> Calibration:
        """Score the calibration pairs in both precisions (once) and measure bfloat16's error per metric."""
        if self.calibration is None:
            sample = list(self._sample())
            fast, exact = self._run(self.fast, sample, self.metrics), self._run(self.lm, sample, self.metrics)
            scale = {}
            for m in self.metrics:
                ratios = [
                    abs(_margin(f, m) - _margin(e, m)) / weight
                    for f, e in zip(fast, exact)
                    if (weight := self._weight(f, m)) > 0 and not math.isnan(_margin(f, m))
                ]
                scale[m] = max(FLOOR, SAFETY * max(ratios, default=0.0))
            self._known = {(a.text, b.text): e for (a, b), e in zip(sample, exact)}
            self.calibration = Calibration(len(sample), scale)
        return self.calibration

    def _weight(self, scored: ScoredPair, metric: str) -> float:
        a, b = scored.scores[metric]
        return METRICS[metric].sensitivity(a) + METRICS[metric].sensitivity(b)

    def unsettled(self, scored: ScoredPair, metric: str) -> bool:
        """Whether the bfloat16 margin of `metric` is within the error bound, so the float32 verdict could differ."""
        margin = _margin(scored, metric)
        if math.isnan(margin):  # no score on one side (SSS without a modified token): undecidable in any precision
            return False
        rounding = 2 * METRICS[metric].compat_rounding if self.compat else 0.0
        return abs(margin) <= self.calibrate().scale[metric] * self._weight(scored, metric) + rounding

    def score(
        self, pairs: Sequence[tuple[Encoding, Encoding]], metrics: Sequence[str], progress: Any = None
    ) -> tuple[list[ScoredPair], list[frozenset[str]]]:
        """Every pair scored with `metrics` in bfloat16, and again in float32 where its margin is within the calibrated error
        (float32's verdict on the pairs it re-scores, bfloat16's on the rest): (scored pairs, the metrics re-scored per pair)."""
        self.calibrate()
        scored = self._run(self.fast, pairs, metrics, progress)
        rescored: list[frozenset[str]] = []
        again: dict[frozenset[str], list[int]] = {}
        for k, ((a, b), result) in enumerate(zip(pairs, scored)):
            known = self._known.get((a.text, b.text))
            if known is not None:  # a calibration pair: its float32 scores are there already
                result.scores.update({m: known.scores[m] for m in metrics})
                rescored.append(frozenset(metrics))
                continue
            unsettled = frozenset(m for m in metrics if self.unsettled(result, m))
            rescored.append(unsettled)
            if unsettled:
                again.setdefault(unsettled, []).append(k)
        for which, indices in again.items():  # pairs that need the same metrics again, scored together
            exact = self._run(self.lm, [pairs[k] for k in indices], [m for m in metrics if m in which])
            for k, result in zip(indices, exact):
                scored[k].scores.update(result.scores)
        return scored, rescored


def _margin(scored: ScoredPair, metric: str) -> float:
    a, b = scored.scores[metric]
    return a.value - b.value


__all__ = ["CALIBRATION_PAIRS", "FLOOR", "SAFETY", "Calibration", "Bf16Rescore", "bfloat16_twin"]

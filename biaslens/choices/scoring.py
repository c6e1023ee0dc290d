"""Scoring a multiple-choice item: every choice's tokens after the item's prompt, the prompt computed once.

A choice's score is its log-likelihood after the prompt (`conventions.prompt_of`, joined by lm-eval's target delimiter
" "), tokenized as lm-evaluation-harness does (`LanguageModel.encode_continuations`):

* a causal model: log P(choice tokens | prompt), the sum of each token's log p given the prompt and the choice's earlier
  tokens; the prompt is run once for all the item's choices (`scoring.continuation_pass`), where lm-eval runs it again
  for each of them;
* a masked model: biaslens's own definition (lm-eval has no masked-LM backend): the pseudo-log-likelihood of the
  choice's tokens, each masked alone with the prompt unmasked (PLL, Salazar et al. 2020, over the choice only).

A choice's log-likelihood is the float32 sum of its tokens' log p, as lm-eval sums them (`float(logits.sum())`), so
near-ties break as its do; each token's log p and rank are kept. Runs are chunked, cached and resumable
(`runner.run_chunked`): an item is scored once per model, whichever conventions read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypedDict

import numpy as np

from biaslens.choices.conventions import DELIMITER, prompt_of, scored_texts
from biaslens.data.multiple_choice import ChoiceItem
from biaslens.engine.lm import ContinuationQuery, LanguageModel
from biaslens.errors import InputError

#: Bump when a cached record's meaning changes.
_CACHE_TAG = "choices/1"


@dataclass(frozen=True)
class ScoredItem:
    """One item's choices, scored: `texts` (`conventions.scored_texts`), each one's token ids, log p and rank per token."""

    item: ChoiceItem
    prompt: str
    texts: tuple[str, ...]
    token_ids: tuple[tuple[int, ...], ...]
    logprob: tuple[np.ndarray, ...]
    rank: tuple[np.ndarray, ...]

    @property
    def ll(self) -> np.ndarray:
        """Each choice's log-likelihood: the float32 sum of its tokens' log p (lm-eval's), as float64."""
        return np.array([float(np.asarray(lp, dtype=np.float32).sum(dtype=np.float32)) for lp in self.logprob], dtype=np.float64)

    def of(self, text: str) -> int:
        """The index in `texts` of a choice's text."""
        return self.texts.index(text)


def queries(lm: LanguageModel, items: Sequence[ChoiceItem]) -> list[ContinuationQuery]:
    """Each item's prompt and scored choices as the model tokenizes them; an item it cannot read is refused, named."""
    out = []
    for item in items:
        try:
            out.append(lm.encode_continuations(prompt_of(item), scored_texts(item), DELIMITER))
        except InputError as exc:
            raise InputError(f"Item {item.source_id or item.item_id}: {exc}") from None
    return out


def _compute(
    lm: LanguageModel, items: Sequence[ChoiceItem], batch_tokens: int | None, progress: Callable[[int, int], None] | None
) -> list[dict[str, Any]]:
    from biaslens.engine.scoring import continuation_pass

    found = continuation_pass(lm, queries(lm, items), batch_tokens=batch_tokens, progress=progress)
    return [{"logprob": [lp.tolist() for lp in r.logprob], "rank": [rk.tolist() for rk in r.rank]} for r in found]


class ScoringOptions(TypedDict, total=False):
    """`score_items`'s keyword arguments, which `evaluate_choices` hands on."""

    batch_tokens: int | None
    progress: Callable[[float, int], None] | None
    cache: Any
    chunk_items: int | None
    chunk_seconds: float | None
    stop: Callable[[], bool] | None
    cache_only: bool


def score_items(
    lm: LanguageModel,
    items: Sequence[ChoiceItem],
    *,
    batch_tokens: int | None = None,
    progress: Callable[[float, int], None] | None = None,
    cache: Any = None,
    chunk_items: int | None = None,
    chunk_seconds: float | None = None,
    stop: Callable[[], bool] | None = None,
    cache_only: bool = False,
) -> list[ScoredItem]:
    """Every scored choice of every item (module docstring), in the items' order; through the result cache when given."""
    from biaslens.engine.cache import cache_key
    from biaslens.engine.runner import run_records

    tag = (_CACHE_TAG, str(lm.dtype))

    def key(item: ChoiceItem) -> str:
        return cache_key(lm.fingerprint, *tag, prompt_of(item), list(scored_texts(item)), DELIMITER)

    if cache is None and stop is None and chunk_items is None and chunk_seconds is None:
        records = _compute(lm, items, batch_tokens, None if progress is None else lambda d, t: progress(d / max(t, 1) * len(items), len(items)))
    else:
        records, _cached = run_records(
            items,
            key=key,
            compute=lambda chunk, within: _compute(lm, chunk, batch_tokens, within),
            cache=cache,
            chunk_items=chunk_items,
            chunk_seconds=chunk_seconds,
            progress=progress,
            stop=stop,
            cache_only=cache_only,
            valid=_valid,
        )
    encoded = queries(lm, items)
    out = []
    for item, query, record in zip(items, encoded, records):
        if [len(c) for c in query.continuations] != [len(lp) for lp in record["logprob"]]:
            raise InputError("A cached record does not fit its item's tokens: clear the result cache (or use --no-cache) and run again.")
        out.append(
            ScoredItem(
                item=item,
                prompt=prompt_of(item),
                texts=scored_texts(item),
                token_ids=query.continuations,
                logprob=tuple(np.asarray(lp, dtype=np.float64) for lp in record["logprob"]),
                rank=tuple(np.asarray(rk, dtype=np.int64) for rk in record["rank"]),
            )
        )
    return out


def _valid(record: dict[str, Any]) -> bool:
    """A cached record: per choice, as many finite log p (at most 0) as ranks (at least 1)."""
    choices = record["choices"] if "choices" in record else record
    lps, ranks = choices["logprob"], choices["rank"]
    return len(lps) == len(ranks) and all(
        len(a) == len(b) and all(np.isfinite(x) and x <= 0 for x in a) and all(int(r) >= 1 for r in b) for a, b in zip(lps, ranks)
    )


__all__ = ["ScoredItem", "ScoringOptions", "queries", "score_items"]

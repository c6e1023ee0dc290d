"""Kaneko & Bollegala (2022), Table 4: how much of AUL's token accuracy survives shuffling.

If AUL only read off the tokens it is shown, it would predict them as well in any
order. Shuffling the non-special tokens of a sentence (special tokens stay in place,
nothing is re-tokenized) and scoring each token at its new position measures how much
the model uses the sentence's context. StereoSet's unrelated sentences (a meaningless
word in the blank) are a second check.

* `shuffle_encoding` permutes one encoded sentence with a given generator;
  `sentence_rng(seed, text)` is the seeded generator of a sentence, so a dataset run is
  reproducible whatever the order or selection of its pairs.
* `shuffle_sentence` shows one sentence before and after (the app's shuffle page and
  `python -m biaslens shuffle`).
* `sensitivity_run` scores a dataset's sentences original and shuffled (and StereoSet's
  unrelated sentences), resumably through the result cache; `compare_shuffle` turns it
  into accuracies, drops and McNemar's test pairing each token before and after.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from biaslens.analyses.papers import (
    POSITIONS,
    SOURCE_PAPER,
    SOURCE_RUN,
    Progress,
    RecordFn,
    published_label,
    cached_pair_records,
    dataset_pairs,
    encode_sentence,
    token_rows,
)
from biaslens.engine.cache import ResultCache
from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import InputError
from biaslens.engine.models import Encoding, LanguageModel
from biaslens.data.published import SHUFFLE_ACCURACY, TOKEN_ACCURACY
from biaslens.engine.scoring import unmasked_pass
from biaslens.engine.stats import McNemarResult, mcnemar, wilson_interval

_SHUFFLE_RECORD = "shuffle/1"

DATASET_SHORT = {"crows-pairs": "CP", "stereoset": "SS"}


# ---------------------------------------------------------------------------------------
# Shuffling one sentence
# ---------------------------------------------------------------------------------------


def sentence_rng(seed: int, text: str) -> np.random.Generator:
    """The generator that shuffles `text` under `seed`: the same sentence and seed always shuffle alike."""
    if seed < 0:
        raise InputError(f"The shuffle seed must be a non-negative integer, got {seed}.")
    digest = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    return np.random.default_rng([int(seed), digest])


def shuffle_encoding(encoding: Encoding, rng: np.random.Generator) -> tuple[Encoding, np.ndarray]:
    """Permute the non-special tokens of a sentence; special tokens keep their positions.

    Returns the shuffled `Encoding` (its `text` is the shuffled tokens joined by spaces,
    for display only: the ids are never re-tokenized) and `new_position`, where
    `new_position[i]` is the position the token at `i` moved to (`i` for special tokens).
    """
    scored = encoding.scored_positions
    new_position = np.arange(len(encoding))
    new_position[scored] = scored[rng.permutation(len(scored))]
    order = np.empty(len(encoding), dtype=np.int64)
    order[new_position] = np.arange(len(encoding))  # order[j] = the original position now at j
    ids = tuple(encoding.ids[i] for i in order)
    tokens = tuple(encoding.tokens[i] for i in order)
    text = " ".join(t for t, s in zip(tokens, encoding.special) if not s)
    return Encoding(text=text, ids=ids, special=encoding.special, tokens=tokens), new_position


@dataclass
class ShuffledSentence:
    """One sentence before and after shuffling, token by token (the shuffle page).

    `tokens`: one row per original position: `token`, `special`, `logprob` / `rank` /
    `prediction` (the model's top token) at the original position, `new_position`, and
    `shuffled_logprob` / `shuffled_rank` / `shuffled_prediction` of the same token at
    its new position.
    """

    original: Encoding
    shuffled: Encoding
    seed: int
    tokens: pd.DataFrame

    def accuracy(self, shuffled: bool = False, positions: str = "default") -> float:
        """AUL token accuracy (%) before or after shuffling, over non-special tokens or every position."""
        rows = self.tokens if positions == "kaneko2022" else self.tokens[~self.tokens["special"]]
        rank = rows["shuffled_rank" if shuffled else "rank"]
        return 100.0 * float((rank == 1).mean()) if len(rows) else math.nan


def shuffle_sentence(lm: LanguageModel, text: str, seed: int = 0) -> ShuffledSentence:
    """Shuffle one sentence with `sentence_rng(seed, text)` and score it before and after (unmasked pass)."""
    original = lm.encode(text)
    shuffled, new_position = shuffle_encoding(original, sentence_rng(seed, text))
    words = [t for t, special in zip(shuffled.tokens, shuffled.special) if not special]
    shuffled = dataclasses.replace(shuffled, text=lm.tokenizer.convert_tokens_to_string(words))
    before, after = unmasked_pass(lm, [original, shuffled], attention=False, top_k=1)
    frame = pd.DataFrame(
        {
            "position": np.arange(len(original)),
            "token": list(original.tokens),
            "special": list(original.special),
            "logprob": before.logprob,
            "rank": before.rank,
            "prediction": [lm.decode_token(int(i)) for i in before.top_ids[:, 0]],
            "new_position": new_position,
            "shuffled_logprob": after.logprob[new_position],
            "shuffled_rank": after.rank[new_position],
            "shuffled_prediction": [lm.decode_token(int(after.top_ids[j, 0])) for j in new_position],
        }
    )
    return ShuffledSentence(original, shuffled, seed, frame)


# ---------------------------------------------------------------------------------------
# A dataset: original, shuffled and unrelated sentences
# ---------------------------------------------------------------------------------------

SENSITIVITY_COLUMNS = (
    "pair_id",
    "bias_type",
    "sentence",
    "position",
    "token_id",
    "special",
    "rank",
    "new_position",
    "shuffled_rank",
)


@dataclass
class SensitivityRun:
    """Per-token AUL outcomes of a dataset's sentences, original and shuffled, and unrelated sentences.

    `tokens` has one row per token occurrence: `sentence` ("stereo", "anti" or
    "unrelated"), `position`, `token_id`, `special`, `rank` (unmasked, original order),
    `new_position` and `shuffled_rank` (the token's rank at its new position after
    shuffling; -1 for unrelated sentences, which are not shuffled).
    """

    model: str
    dataset: str
    seed: int
    tokens: pd.DataFrame
    cached: int = 0


def _sensitivity_records(seed: int, batch_tokens: int | None) -> RecordFn:
    def compute(lm: LanguageModel, pairs: Sequence[Pair], progress: Callable[[int, int], None]) -> list[dict[str, Any]]:
        originals: list[Encoding] = []
        shuffled: list[Encoding] = []
        moves: list[np.ndarray] = []
        for p in pairs:
            for field_name in ("sent_stereo", "sent_anti"):
                enc = encode_sentence(lm, p, field_name)
                s, move = shuffle_encoding(enc, sentence_rng(seed, enc.text))
                originals.append(enc)
                shuffled.append(s)
                moves.append(move)
        unrelated = {i: encode_sentence(lm, p, "unrelated") for i, p in enumerate(pairs) if p.unrelated}
        results = unmasked_pass(lm, originals + shuffled + list(unrelated.values()), attention=False, batch_tokens=batch_tokens, progress=progress)
        n = len(originals)
        before, after, extra = results[:n], results[n : 2 * n], dict(zip(unrelated, results[2 * n :]))
        records = []
        for i in range(len(pairs)):
            record: dict[str, Any] = {}
            for k, side in enumerate(("stereo", "anti")):
                j = 2 * i + k
                record[side] = {
                    "ids": list(originals[j].ids),
                    "special": [int(s) for s in originals[j].special],
                    "rank": before[j].rank.tolist(),
                    "new_position": moves[j].tolist(),
                    "shuffled_rank": after[j].rank[moves[j]].tolist(),
                }
            if i in extra:
                u = extra[i]
                record["unrelated"] = {"ids": list(u.encoding.ids), "special": [int(s) for s in u.encoding.special], "rank": u.rank.tolist()}
            records.append(record)
        return records

    return compute


def sensitivity_run(
    lm: LanguageModel,
    dataset: PairDataset | Sequence[Pair],
    *,
    seed: int = 0,
    limit: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    cache: ResultCache | None = None,
    batch_tokens: int | None = None,
    chunk_pairs: int | None = None,
    progress: Progress | None = None,
) -> SensitivityRun:
    """Unmasked passes over every pair's sentences, original and shuffled with `seed`, plus unrelated ones.

    `limit` / `sample` (with `sample_seed`) select pairs as `evaluate` does. Resumable
    through `cache`; `progress(done_pairs, total_pairs)`.
    """
    if seed < 0:
        raise InputError(f"The shuffle seed must be a non-negative integer, got {seed}.")
    pairs = dataset_pairs(dataset, limit=limit, sample=sample, seed=sample_seed)
    name = dataset.name if isinstance(dataset, PairDataset) else pairs[0].dataset
    records, from_cache = cached_pair_records(
        lm, pairs, f"{_SHUFFLE_RECORD}/seed={seed}", _sensitivity_records(seed, batch_tokens), cache=cache, chunk_pairs=chunk_pairs, progress=progress
    )
    columns: dict[str, list] = {c: [] for c in SENSITIVITY_COLUMNS}
    for pair, record in zip(pairs, records):
        for side in ("stereo", "anti", "unrelated"):
            r = record.get(side)
            if r is None:
                continue
            n = token_rows(columns, pair, side, r)
            columns["rank"] += r["rank"]
            columns["new_position"] += r.get("new_position", [-1] * n)
            columns["shuffled_rank"] += r.get("shuffled_rank", [-1] * n)
    frame = pd.DataFrame(columns).astype({"special": bool, "rank": np.int64, "new_position": np.int64, "shuffled_rank": np.int64})
    return SensitivityRun(lm.name, name, seed, frame, from_cache)


@dataclass
class ShuffleComparison:
    """Table 4 for one model and dataset.

    `accuracy`: one row per (condition, positions definition) with hits, total,
    accuracy (%), 95% Wilson interval and `drop` (original minus this condition, in
    points). Conditions: "original" and "shuffled" (both sentences of every pair) and,
    where the dataset has them, "unrelated" beside "original (same examples)".
    `mcnemar` pairs every token before and after shuffling (per `positions`).
    """

    model: str
    dataset: str
    seed: int
    positions: str
    accuracy: pd.DataFrame
    mcnemar: McNemarResult


def _row(condition: str, positions: str, correct: np.ndarray, reference: float | None = None) -> dict[str, Any]:
    p = wilson_interval(int(np.sum(correct)), int(np.size(correct)))
    drop = reference - p.estimate if reference is not None else math.nan
    return {
        "condition": condition,
        "positions": positions,
        "hits": p.successes,
        "total": p.n,
        "accuracy": p.estimate,
        "ci_low": p.ci_low,
        "ci_high": p.ci_high,
        "drop": drop,
    }


def compare_shuffle(run: SensitivityRun, positions: str = "default") -> ShuffleComparison:
    """Accuracy before and after shuffling (McNemar on each token's two outcomes) and on unrelated sentences.

    `positions` is "default" (non-special tokens) or "kaneko2022" (every position;
    special tokens stay in place but their predictions can change).
    """
    if positions not in POSITIONS:
        raise InputError(f"Unknown positions definition {positions!r}: choose default or kaneko2022.")
    t = run.tokens
    counted = t if positions == "kaneko2022" else t[~t["special"]]
    pair_rows = counted[counted["sentence"] != "unrelated"]
    before = (pair_rows["rank"] == 1).to_numpy()
    after = (pair_rows["shuffled_rank"] == 1).to_numpy()
    original = _row("original", positions, before)
    rows = [original, _row("shuffled", positions, after, original["accuracy"])]
    unrelated = counted[counted["sentence"] == "unrelated"]
    if len(unrelated):
        same = pair_rows[pair_rows["pair_id"].isin(set(unrelated["pair_id"]))]
        reference = _row("original (same examples)", positions, (same["rank"] == 1).to_numpy())
        rows += [reference, _row("unrelated", positions, (unrelated["rank"] == 1).to_numpy(), reference["accuracy"])]
    return ShuffleComparison(run.model, run.dataset, run.seed, positions, pd.DataFrame(rows), mcnemar(before, after))


def shuffle_table(comparisons: Sequence[ShuffleComparison], *, published: bool = True) -> pd.DataFrame:
    """Table 4, long: one row per (model, source, dataset, condition): AUL accuracy (%), drop, McNemar's p.

    `column` holds the paper's header ("CP shuffled", "SS unrelated", "CP original").
    The published rows' "original" is the paper's Table 1 AUL accuracy, which its Table 4
    drops are measured from.
    """
    rows = []
    for c in comparisons:
        short = DATASET_SHORT.get(c.dataset, c.dataset)
        for r in c.accuracy.itertuples():
            if r.condition == "original (same examples)":
                continue
            row = {
                "model": c.model,
                "source": SOURCE_RUN,
                "dataset": c.dataset,
                "condition": r.condition,
                "column": f"{short} {r.condition}",
                "accuracy": r.accuracy,
                "drop": r.drop,
                "ci_low": r.ci_low,
                "ci_high": r.ci_high,
                "tokens": r.total,
                "seed": c.seed,
            }
            if r.condition == "shuffled":
                row.update(mcnemar_p=c.mcnemar.p_value, mcnemar_b=c.mcnemar.b, mcnemar_c=c.mcnemar.c)
            rows.append(row)
    if published:
        for model, values in SHUFFLE_ACCURACY.items():
            base = {"crows-pairs": TOKEN_ACCURACY[model]["aul_cp"], "stereoset": TOKEN_ACCURACY[model]["aul_ss"]}
            label = published_label(model)
            for dataset, short in DATASET_SHORT.items():
                rows.append(
                    {
                        "model": label,
                        "source": SOURCE_PAPER,
                        "dataset": dataset,
                        "condition": "original",
                        "column": f"{short} original",
                        "accuracy": base[dataset],
                        "drop": math.nan,
                    }
                )
            for key, value in values.items():
                ds, condition = key.split("_")
                dataset = {"cp": "crows-pairs", "ss": "stereoset"}[ds]
                rows.append(
                    {
                        "model": label,
                        "source": SOURCE_PAPER,
                        "dataset": dataset,
                        "condition": condition,
                        "column": f"{ds.upper()} {condition}",
                        "accuracy": value,
                        "drop": round(base[dataset] - value, 2),
                    }
                )
    frame = pd.DataFrame(rows)
    for column in ("ci_low", "ci_high", "tokens", "seed", "mcnemar_p", "mcnemar_b", "mcnemar_c"):
        if column not in frame:
            frame[column] = np.nan
    return frame


__all__ = [
    "SensitivityRun",
    "ShuffleComparison",
    "ShuffledSentence",
    "compare_shuffle",
    "sensitivity_run",
    "sentence_rng",
    "shuffle_encoding",
    "shuffle_sentence",
    "shuffle_table",
]

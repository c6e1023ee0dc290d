"""Any text, token by token: `score`, `score_words`, `score_sequences` for masked and causal models.

`score(lm, texts)` gives one tidy table (`TokenScores`, a pandas DataFrame) with a row per token of
each text: where the token is in the text (character `start` / `end`), the word it belongs to
(`word`: from the tokenizer's offsets, so each token is in exactly one word of the text, whatever
the tokenizer: `biaslens.engine.words`), its log-probability (`logprob`, natural log), its `rank`
among the vocabulary and the `entropy` of the distribution it was read from. How each token is
read is a column too:

* a masked model (`variant`): `original` (PLL, Salazar et al. 2020: each token masked alone),
  `within_word_l2r` (Kauf & Ivanova 2023: a token masked with the pieces to its right in the same
  word, the tokenizer's own words, as in minicons) or `unmasked` (AUL's reading, Kaneko & Bollegala
  2022: nothing masked, one pass);
* a causal model: log P(token | the tokens before it); `first_token` names how the first token is
  read (`biaslens.engine.causal.FirstToken`). With the policy `none` or `tokenizer` nothing predicts
  a text's first token: its row is there, with `scored` False and no log-probability (NaN), never a
  silent 0.

`score_words` adds the tokens of each word up (the same word ids); `score_sequences` gives one
row per text (sum, mean, token count and the reduction named). A `prefix` (both kinds) and a
`suffix` (masked models) make it conditional: the text is scored in their context, only its own
tokens are rows. The results draw themselves in a notebook (`biaslens.figures.notebook`: the texts'
tokens aligned in strips); `biaslens score` is the command line (docs/scoring.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from biaslens.data.sentences import check_characters, check_sentence
from biaslens.engine import display
from biaslens.engine.cache import check_cache
from biaslens.engine.causal import FIRST_TOKEN_HELP, FirstToken
from biaslens.engine.lm import Encoding, LanguageModel
from biaslens.engine.options import _check_int
from biaslens.engine.words import WordSpans, token_words
from biaslens.errors import InputError

#: The masked models' readings: name -> what it is (the `variant` column).
MASKED_VARIANTS: dict[str, str] = {
    "original": "PLL (Salazar et al. 2020): each token masked alone",
    "within_word_l2r": "PLL-word-l2r (Kauf & Ivanova 2023): a token masked with the pieces to its right in the same (tokenizer's) word",
    "unmasked": "AUL's reading (Kaneko & Bollegala 2022): nothing masked, one pass",
}
#: A causal model's one reading: each token given the tokens before it.
CAUSAL_VARIANT = "causal"
DEFAULT_VARIANT = "original"
#: Every reading (`LanguageModel.text_variants` names a kind's): name -> what it is.
READINGS: dict[str, str] = {**MASKED_VARIANTS, CAUSAL_VARIANT: "each token given the tokens before it"}
#: The readings made of one unmasked pass (the others mask tokens).
ONE_PASS = ("unmasked", CAUSAL_VARIANT)
#: How `score_sequences` reduces a text's token log-probabilities.
REDUCTIONS = ("mean", "sum")
DEFAULT_REDUCTION = "mean"
#: Bump when a cached record's meaning changes (`score(..., cache=...)`).
_CACHE_TAG = "text-scores/1"

#: The columns of `TokenScores`, in order; the `_bits` and `surprisal` ones only on request.
TOKEN_COLUMNS = (
    "text_id",
    "token_index",
    "token",
    "token_id",
    "start",
    "end",
    "word",
    "logprob",
    "logprob_bits",
    "surprisal",
    "surprisal_bits",
    "rank",
    "entropy",
    "entropy_bits",
    "scored",
    "variant",
    "first_token",
    "position",
)
_LN2 = math.log(2.0)

Progress = Callable[[float, int], None]


# ---------------------------------------------------------------------------------------
# What was asked
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextScoring:
    """How a table of text scores was made, and the texts themselves (what `TokenScores.words` / `.sequences` need)."""

    texts: tuple[str, ...]
    #: Each text's words: (start, end) in the text (`biaslens.engine.words`), words without a token included.
    words: tuple[tuple[tuple[int, int], ...], ...]
    kind: str
    variant: str
    first_token: str | None
    base: str  # "e" or "2"
    surprisal: bool
    prefix: tuple[str, ...] | None = None
    suffix: tuple[str, ...] | None = None
    separator: str = " "
    manifest: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reading(self) -> str:
        """How the tokens were read, in words (and a causal model's first token)."""
        policy = FirstToken(self.first_token) if self.first_token else None
        return READINGS[self.variant] + (f"; first token: {FIRST_TOKEN_HELP[policy]}" if policy else "")


class _Scores(pd.DataFrame):
    """A results table that knows how it was made (`scoring`) and draws itself in a notebook.

    Operations on it (a filter, a column added) give plain DataFrames: only the table `score` made is drawn as strips.
    """

    _metadata = ["scoring"]
    scoring: TextScoring

    @property
    def _constructor(self):  # type: ignore[override]
        return pd.DataFrame

    def _repr_html_(self) -> str | None:  # type: ignore[override]
        drawn = display.render_html(self) if getattr(self, "scoring", None) is not None else None
        return drawn if drawn is not None else super()._repr_html_()


class TokenScores(_Scores):
    """One row per token of each text (`TOKEN_COLUMNS`); `words()` and `sequences()` add them up."""

    def words(self) -> "WordScores":
        """Each word's tokens added up (`score_words`)."""
        return _word_frame(self)

    def sequences(self, reduction: str = DEFAULT_REDUCTION) -> "SequenceScores":
        """One row per text (`score_sequences`)."""
        return _sequence_frame(self, reduction)


class WordScores(_Scores):
    """One row per word of each text: its characters, its tokens' log-probabilities added up."""


class SequenceScores(_Scores):
    """One row per text: sum and mean log-probability of its scored tokens, their number, and `score` by `reduction`."""


# ---------------------------------------------------------------------------------------
# The public calls
# ---------------------------------------------------------------------------------------


def score(
    lm: LanguageModel,
    texts: str | Sequence[str],
    *,
    variant: str | None = None,
    prefix: str | Sequence[str] | None = None,
    suffix: str | Sequence[str] | None = None,
    separator: str = " ",
    base: str | int | float = "e",
    surprisal: bool = False,
    first_token: FirstToken | str | None = None,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
    cache: Any = None,
    chunk_texts: int | None = None,
    chunk_seconds: float | None = None,
    stop: Callable[[], bool] | None = None,
) -> TokenScores:
    """Score every token of every text (module docstring); one row per token.

    `variant`: a masked model's reading (`MASKED_VARIANTS`, default `original`); a causal model has one.
    `prefix` / `suffix`: context before / after each text (one string for all, or one per text), joined
    with `separator`; only the text's own tokens are rows (a causal model reads left to right, so a
    suffix would change nothing: refused). `base=2` adds `logprob_bits` and `entropy_bits`;
    `surprisal=True` adds `surprisal` (-log p, nats) or, with base 2, `surprisal_bits`. `first_token`:
    a causal model's first-token policy (default: the model's). `cache` (a `ResultCache`), `chunk_texts`
    / `chunk_seconds` and `stop` run it in resumable chunks (`biaslens.engine.runner.run_chunked`, as
    `evaluate` does): texts already scored are read back, and `stop()` ends the run between chunks. A path is not
    a cache (it could name the SQLite file or its folder): `cache="x"` is refused in one line (`InputError`); pass
    `biaslens.ResultCache("folder/results.sqlite")`.
    """
    lm, variant = _reading(lm, variant, first_token)
    base_name = _base(base)
    if not isinstance(surprisal, bool):
        raise InputError(f"surprisal must be True or False, not {surprisal!r}.")
    _check_int("batch_tokens", batch_tokens, minimum=1)
    _check_int("chunk_texts", chunk_texts, minimum=1)  # (named as here: the runner calls it chunk_pairs)
    cache = check_cache(cache)  # before a text is encoded
    for name, function in (("progress", progress), ("stop", stop)):
        if function is not None and not callable(function):
            raise InputError(f"{name} must be a function (or None), not {type(function).__name__}.")
    inputs = _inputs(texts, prefix, suffix, separator, lm)
    encodings = lm.encode_many([i.full for i in inputs])
    layouts = [_layout(i, e, o) for i, e, o in zip(inputs, encodings, lm.char_offsets(encodings))]
    if cache is None and stop is None and chunk_texts is None and chunk_seconds is None:
        records = _compute(lm, variant, layouts, batch_tokens, progress)
    else:
        records = _chunked(lm, variant, layouts, batch_tokens, progress, cache, chunk_texts, chunk_seconds, stop)
    scoring = TextScoring(
        texts=tuple(i.text for i in inputs),
        words=tuple(lay.words.words for lay in layouts),
        kind=lm.kind,
        variant=variant,
        first_token=lm.first_token_policy,
        base=base_name,
        surprisal=surprisal,
        prefix=_context_of(inputs, "prefix"),
        suffix=_context_of(inputs, "suffix"),
        separator=separator,
        manifest=lm.manifest(scoring={"variant": variant, "base": base_name}),
    )
    return _token_frame(lm, layouts, records, scoring)


def score_words(lm: LanguageModel, texts: str | Sequence[str], **options: Any) -> WordScores:
    """`score`, each word's tokens added up: one row per word of each text (the word ids of `score`)."""
    return score(lm, texts, **options).words()


def score_sequences(lm: LanguageModel, texts: str | Sequence[str], *, reduction: str = DEFAULT_REDUCTION, **options: Any) -> SequenceScores:
    """`score`, one row per text: the sum and the mean log-probability of its scored tokens, their number, and
    `score` (the `reduction`, named in its column: `mean` as minicons' `sequence_score`, or `sum`)."""
    _reduction(reduction)
    return score(lm, texts, **options).sequences(reduction)


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Input:
    text: str
    full: str  # what the model reads: prefix + separator + text (+ separator + suffix)
    span: tuple[int, int]  # the text's characters in `full`
    prefix: str | None = None
    suffix: str | None = None


def _reading(lm: LanguageModel, variant: str | None, first_token: FirstToken | str | None) -> tuple[LanguageModel, str]:
    if not isinstance(lm, LanguageModel):
        raise InputError(f"score needs a loaded model (biaslens.load_model), not {type(lm).__name__}.")
    variants = lm.text_variants
    if len(variants) == 1:  # a kind with one reading takes no variant but its own
        if variant not in (None, variants[0]):
            raise InputError(f"{lm.name} is a {lm.kind} model: it reads {READINGS[variants[0]]} (no variant {variant!r}).")
        chosen = variants[0]
    else:
        chosen = variants[0] if variant is None else str(variant).strip().lower().replace("-", "_")
    if first_token is not None:
        lm = lm.with_first_token(first_token)  # refused by a kind without a first-token policy
    if chosen not in variants:
        raise InputError(f"Unknown variant {variant!r}: choose from {', '.join(variants)}.")
    return lm, chosen


def _base(base: str | int | float) -> str:
    if isinstance(base, bool) or str(base).strip().lower() not in ("e", "2", "2.0"):
        raise InputError(f"base must be 'e' (natural log) or 2 (bits), not {base!r}.")
    return "e" if str(base).strip().lower() == "e" else "2"


def _reduction(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise InputError(f"Unknown reduction {reduction!r}: choose from {', '.join(REDUCTIONS)}.")
    return reduction


def _per_text(value: str | Sequence[str] | None, n: int, what: str) -> list[str | None]:
    if value is None or (isinstance(value, str) and value == ""):
        return [None] * n
    if isinstance(value, (str, bytes, bytearray, memoryview)):  # (bytes: one prefix, refused as such, not one per byte)
        return [check_sentence(value, f"The {what}")] * n
    if not isinstance(value, Iterable):
        raise InputError(f"The {what} must be a str, or a list of them (one per text), not {type(value).__name__}.")
    values = list(value)
    if len(values) != n:
        raise InputError(f"{len(values)} {what}es for {n} texts: give one {what} for all, or one per text.")
    return [None if v is None or v == "" else check_sentence(v, f"The {what} of text {k + 1}") for k, v in enumerate(values)]


def _inputs(texts: str | Sequence[str], prefix: Any, suffix: Any, separator: str, lm: LanguageModel) -> list[_Input]:
    if isinstance(texts, (str, bytes, bytearray, memoryview)):  # (bytes: one text, refused as such, not one per byte)
        texts = [texts]  # type: ignore[list-item]
    if not isinstance(texts, Sequence) and not hasattr(texts, "__iter__"):
        raise InputError(f"texts must be a string or a list of strings, not {type(texts).__name__}.")
    texts = list(texts)
    if not texts:
        raise InputError("No texts to score.")
    for k, text in enumerate(texts):
        if text is None:
            raise InputError(f"Text {k + 1} must be a str, not None.")
        check_sentence(text, f"Text {k + 1}")
    if not isinstance(separator, str):
        raise InputError(f"separator must be a str, not {type(separator).__name__}.")
    check_characters(separator, "The separator")  # (blank, as it mostly is, is fine)
    prefixes = _per_text(prefix, len(texts), "prefix")
    suffixes = _per_text(suffix, len(texts), "suffix")
    if lm.left_to_right and any(s is not None for s in suffixes):
        raise InputError(f"{lm.name} is a {lm.kind} model: it reads left to right, so a suffix cannot change a text's scores; leave it out.")
    out = []
    for text, pre, post in zip(texts, prefixes, suffixes):
        head = "" if pre is None else pre + separator
        full = head + text + ("" if post is None else separator + post)
        out.append(_Input(text, full, (len(head), len(head) + len(text)), pre, post))
    return out


def _context_of(inputs: Sequence[_Input], which: str) -> tuple[str, ...] | None:
    values = [getattr(i, which) for i in inputs]
    return None if all(v is None for v in values) else tuple(v or "" for v in values)


# ---------------------------------------------------------------------------------------
# Where each token is: offsets, the text's own positions, words
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Layout:
    """One text as the model reads it: its encoding, which positions are the text's own tokens, and their words."""

    input: _Input
    encoding: Encoding
    positions: np.ndarray  # the text's own tokens' positions in the encoding, in order
    words: WordSpans  # over `positions`: spans relative to the text


def _layout(item: _Input, encoding: Encoding, offsets: np.ndarray) -> _Layout:
    """The text's own tokens (their characters overlap the text's span; all of them without prefix or suffix) and their words."""
    a, b = item.span
    real = ~np.asarray(encoding.special, dtype=bool)
    s, e = offsets[:, 0], offsets[:, 1]
    if a == 0 and b == len(item.full):
        own = real
    else:
        own = real & ((np.maximum(s, a) < np.minimum(e, b)) | ((s == e) & (s >= a) & (s < b)))
    positions = np.flatnonzero(own)
    if not len(positions):
        raise InputError(f"The text {item.text!r} has no tokens of its own to score in its context.")
    relative = np.clip(offsets[positions] - a, 0, len(item.text))
    return _Layout(item, encoding, positions, token_words(item.text, relative))


# ---------------------------------------------------------------------------------------
# The passes
# ---------------------------------------------------------------------------------------

Record = dict[str, list]


def _compute(
    lm: LanguageModel, variant: str, layouts: Sequence[_Layout], batch_tokens: int | None, progress: Callable[[int, int], None] | None
) -> list[Record]:
    """Each text's log p, rank and entropy at its own tokens (in order), from the pass its reading needs."""
    from biaslens.engine.scoring import MaskedQuery, masked_pass, unmasked_pass

    if not layouts:
        return []
    if variant in ONE_PASS:
        results = unmasked_pass(lm, [lay.encoding for lay in layouts], attention=False, entropy=True, batch_tokens=batch_tokens, progress=progress)
        return [_record(r.logprob[lay.positions], r.rank[lay.positions], _entropy_of(r.entropy, lay.positions)) for r, lay in zip(results, layouts)]
    if variant == "original":
        queries = [MaskedQuery(lay.encoding.ids, tuple(lay.positions.tolist()), tuple(lay.positions.tolist()), singly=True) for lay in layouts]
        found = masked_pass(lm, queries, entropy=True, batch_tokens=batch_tokens, progress=progress)
        return [_record(m.logprob, m.rank, m.entropy) for m in found]
    per_text = [_l2r_queries(lay) for lay in layouts]
    found = masked_pass(lm, [q for qs in per_text for q in qs], entropy=True, batch_tokens=batch_tokens, progress=progress)
    out, at = [], 0
    for qs in per_text:
        taken = found[at : at + len(qs)]
        at += len(qs)
        entropy = np.array([_first(m.entropy) for m in taken])
        out.append(_record(np.array([m.logprob[0] for m in taken]), np.array([m.rank[0] for m in taken]), entropy))
    return out


def _l2r_queries(layout: _Layout) -> list:
    """PLL-word-l2r: each of the text's tokens masked with the text's tokens to its right in the same word of the tokenizer
    (`Encoding.word_ids`, as minicons and `metrics.word_l2r_masks`)."""
    from biaslens.engine.scoring import MaskedQuery

    enc = layout.encoding
    words = enc.word_ids or tuple(range(len(enc)))
    positions = layout.positions.tolist()
    return [MaskedQuery(enc.ids, (i, *(j for j in positions if j > i and words[j] == words[i] and words[i] >= 0)), (i,)) for i in positions]


def _first(values: np.ndarray | None) -> float:
    return float(values[0]) if values is not None and len(values) else math.nan


def _entropy_of(entropy: np.ndarray | None, positions: np.ndarray) -> np.ndarray:
    return entropy[positions] if entropy is not None else np.full(len(positions), np.nan)


def _record(logprob: np.ndarray, rank: np.ndarray, entropy: np.ndarray | None) -> Record:
    entropy = np.full(len(logprob), np.nan) if entropy is None else entropy
    return {
        "logprob": np.asarray(logprob, dtype=np.float64).tolist(),
        "rank": np.asarray(rank, dtype=np.int64).tolist(),
        "entropy": np.asarray(entropy, dtype=np.float64).tolist(),
    }


def _chunked(
    lm: LanguageModel,
    variant: str,
    layouts: Sequence[_Layout],
    batch_tokens: int | None,
    progress: Progress | None,
    cache: Any,
    chunk_texts: int | None,
    chunk_seconds: float | None,
    stop: Callable[[], bool] | None,
) -> list[Record]:
    """`_compute` in resumable chunks through the result cache (`runner.run_chunked`): one record per text."""
    from biaslens.engine.cache import cache_key
    from biaslens.engine.runner import run_records

    tag = f"{_CACHE_TAG}|{variant}" + (f"|{lm.scoring_tag}" if lm.scoring_tag else "")

    def key(layout: _Layout) -> str:
        return cache_key(lm.fingerprint, str(lm.dtype), tag, layout.input.full, list(layout.input.span))

    records, _cached = run_records(
        layouts,
        key=key,
        compute=lambda chunk, within: _compute(lm, variant, chunk, batch_tokens, within),
        cache=cache,
        chunk_items=chunk_texts,
        chunk_seconds=chunk_seconds,
        progress=progress,
        stop=stop,
    )
    for layout, record in zip(layouts, records):
        if len(record["logprob"]) != len(layout.positions):  # a cached record of another tokenization: never used
            raise InputError("A cached record does not fit its text's tokens: clear the result cache (or use --no-cache) and run again.")
    return records


# ---------------------------------------------------------------------------------------
# The tables
# ---------------------------------------------------------------------------------------


def _token_frame(lm: LanguageModel, layouts: Sequence[_Layout], records: Sequence[Record], scoring: TextScoring) -> TokenScores:
    counts = np.fromiter((len(lay.positions) for lay in layouts), dtype=np.int64, count=len(layouts))
    positions = np.concatenate([lay.positions for lay in layouts])
    ids = np.concatenate([np.asarray(lay.encoding.ids, dtype=np.int64)[lay.positions] for lay in layouts])
    logprob = np.concatenate([np.asarray(r["logprob"], dtype=np.float64) for r in records])
    unscored = np.concatenate([np.isin(lay.positions, lay.encoding.unscored) for lay in layouts])
    logprob[unscored] = np.nan
    rank = np.concatenate([np.asarray(r["rank"], dtype=np.int64) for r in records])
    rank[unscored] = 0
    entropy = np.concatenate([np.asarray(r["entropy"], dtype=np.float64) for r in records])
    entropy[unscored] = np.nan
    columns: dict[str, Any] = {
        "text_id": np.repeat(np.arange(len(layouts)), counts),
        "token_index": np.concatenate([np.arange(n) for n in counts]),
        "token": [lay.encoding.tokens[p] for lay in layouts for p in lay.positions.tolist()],
        "token_id": ids,
        "start": np.concatenate([lay.words.start for lay in layouts]),
        "end": np.concatenate([lay.words.end for lay in layouts]),
        "word": np.concatenate([lay.words.word for lay in layouts]),
        "logprob": logprob,
    }
    two = scoring.base == "2"
    if two:
        columns["logprob_bits"] = logprob / _LN2
    if scoring.surprisal:
        columns["surprisal_bits" if two else "surprisal"] = -logprob / (_LN2 if two else 1.0)
    columns["rank"] = rank
    columns["entropy"] = entropy
    if two:
        columns["entropy_bits"] = entropy / _LN2
    columns["scored"] = ~unscored
    columns["variant"] = scoring.variant
    columns["first_token"] = scoring.first_token
    columns["position"] = positions
    frame = TokenScores(columns)
    frame.scoring = scoring
    return frame


def _measures(scoring: TextScoring) -> list[str]:
    """The additive columns of a words or sequences table (log p, and bits / surprisal as asked)."""
    two = scoring.base == "2"
    return ["logprob", *(["logprob_bits"] if two else []), *((["surprisal_bits"] if two else ["surprisal"]) if scoring.surprisal else [])]


def _word_frame(tokens: TokenScores) -> WordScores:
    scoring = tokens.scoring
    measures = _measures(scoring)
    rows = []
    counts: dict[tuple[int, int], int] = {}
    scored: dict[tuple[int, int], int] = {}
    sums: dict[tuple[int, int], dict[str, float]] = {}
    if len(tokens):
        grouped = tokens.groupby(["text_id", "word"], sort=False)
        counts = {(int(t), int(w)): int(n) for (t, w), n in grouped.size().items()}  # type: ignore[misc]
        scored = {(int(t), int(w)): int(n) for (t, w), n in grouped["scored"].sum().items()}  # type: ignore[misc]
        sums = {(int(t), int(w)): values for (t, w), values in grouped[measures].sum().to_dict("index").items()}  # type: ignore[misc]
    for text_id, (text, words) in enumerate(zip(scoring.texts, scoring.words)):
        for word, (a, b) in enumerate(words):
            key = (text_id, word)
            n, m = counts.get(key, 0), scored.get(key, 0)
            row: dict[str, Any] = {"text_id": text_id, "word": word, "text": text[a:b], "start": a, "end": b, "tokens": n, "scored_tokens": m}
            for c in measures:
                row[c] = float(sums[key][c]) if m else math.nan
            row["complete"] = n > 0 and m == n
            rows.append(row)
    frame = WordScores(rows, columns=["text_id", "word", "text", "start", "end", "tokens", "scored_tokens", *measures, "complete"])
    frame.scoring = scoring
    return frame


def _sequence_frame(tokens: TokenScores, reduction: str) -> SequenceScores:
    _reduction(reduction)
    scoring = tokens.scoring
    n = len(scoring.texts)
    text_id = tokens["text_id"].to_numpy(dtype=np.int64)
    scored = tokens["scored"].to_numpy(dtype=bool)
    all_tokens = np.bincount(text_id, minlength=n)
    count = np.bincount(text_id[scored], minlength=n)
    total = np.bincount(text_id[scored], weights=tokens["logprob"].to_numpy(dtype=np.float64)[scored], minlength=n)
    total[count == 0] = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
    frame_columns: dict[str, Any] = {
        "text_id": np.arange(n),
        "text": list(scoring.texts),
        "tokens": all_tokens,
        "scored_tokens": count,
        "logprob_sum": total,
        "logprob_mean": mean,
    }
    value = total if reduction == "sum" else mean
    two = scoring.base == "2"
    if two:
        frame_columns["logprob_bits_sum"] = total / _LN2
        frame_columns["logprob_bits_mean"] = mean / _LN2
    frame_columns["reduction"] = reduction
    frame_columns["score"] = value / _LN2 if two else value
    frame_columns["unit"] = "bits" if two else "nats"
    frame = SequenceScores(frame_columns)
    frame.scoring = replace(scoring)
    return frame


def check_token_lengths(
    spec: Any,
    texts: Sequence[str],
    *,
    where: Callable[[int], str] | None = None,
    prefix: str | None = None,
    suffix: str | None = None,
    separator: str = " ",
    first_token: str | None = None,
) -> str | None:
    """Refuse a text longer than the model accepts, with the model's tokenizer alone, before its weights load.

    `spec` is a `ModelSpec`; only its tokenizer and config are read (from a local folder, or for a hub id from the local
    Hugging Face cache). Returns the model's kind ("masked" or "causal"), or None when the tokenizer
    cannot be had this way (the check then happens when the model loads and its texts are encoded, as always).
    An `InputError` names the text (`where(k)`, e.g. "line 7") and both lengths.
    """
    found = _tokenizer_alone(spec)
    if found is None:
        return None
    tokenizer, config, name = found
    from biaslens.engine.lm import max_length_of
    from biaslens.engine.models import KIND_CLASSES, model_kind

    try:
        kind = model_kind(config, tokenizer, name)
    except Exception:
        return None
    limit = max_length_of(config, tokenizer)
    extra, specials = KIND_CLASSES[kind].length_rule(tokenizer, first_token)
    head = "" if not prefix else prefix + separator
    tail = "" if not suffix else separator + suffix
    full = [head + t + tail for t in texts]
    for start in range(0, len(full), 2048):
        batch = tokenizer(full[start : start + 2048], add_special_tokens=specials, verbose=False)["input_ids"]
        for k, ids in enumerate(batch, start=start):
            if len(ids) + extra > limit:
                at = where(k) if where is not None else f"text {k + 1}"
                raise InputError(
                    f"{at}: the text has {len(ids) + extra:,} tokens{' with its context' if head or tail else ''}; {name} accepts at most "
                    f"{limit:,} (special tokens included). Shorten it: biaslens never truncates a scored text."
                )
    return kind


def _tokenizer_alone(spec: Any) -> tuple[Any, Any, str] | None:
    """(tokenizer, config, name) of a model spec without its weights, or None if they cannot be read so."""
    import os
    from pathlib import Path

    from transformers import AutoConfig, AutoTokenizer
    from transformers.utils import logging as hf_logging

    name = str(spec.model).strip()
    folder = Path(os.path.expanduser(name))
    common: dict[str, Any] = {"trust_remote_code": False}
    if folder.is_dir():
        target, shown = str(folder), str(folder.resolve())
        common["local_files_only"] = True
    else:  # the hub's files already in the local cache only: asking the hub is load_model's (with its time limit)
        target, shown = name, name
        common.update(revision=spec.revision, local_files_only=True)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        return AutoTokenizer.from_pretrained(target, **common), AutoConfig.from_pretrained(target, **common), shown
    except Exception:  # anything wrong is load_model's to say, in its own words
        return None
    finally:
        hf_logging.set_verbosity(verbosity)


def check_variant(kind: str, variant: str | None) -> str:
    """The variant a model of `kind` reads with (`variant`, checked; the default if None), before any model loads."""
    from biaslens.engine.models import KIND_CLASSES

    variants = KIND_CLASSES[kind].text_variants
    chosen = variants[0] if variant is None else variant
    if chosen not in variants:
        if len(variants) == 1:
            raise InputError(f"A {kind} model reads {READINGS[variants[0]]}: no variant {variant!r} (leave --variant out).")
        raise InputError(f"Unknown variant {variant!r}: choose from {', '.join(variants)}.")
    return chosen


__all__ = [
    "CAUSAL_VARIANT",
    "DEFAULT_REDUCTION",
    "DEFAULT_VARIANT",
    "MASKED_VARIANTS",
    "READINGS",
    "REDUCTIONS",
    "TOKEN_COLUMNS",
    "SequenceScores",
    "TextScoring",
    "TokenScores",
    "WordScores",
    "check_token_lengths",
    "check_variant",
    "score",
    "score_sequences",
    "score_words",
]

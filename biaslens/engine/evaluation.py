"""Scoring sentence pairs: one pair in detail (the inspector), or a whole dataset.

`inspect_pair` returns everything the pair inspector shows: tokens, alignment, per-token
log-probabilities, attention, top-k predictions and every metric's sentence scores.
`evaluate` scores a dataset in resumable chunks through the result cache and returns an
`EvaluationResult` (per-pair table + summary + manifest) that `save` writes as
`pairs.csv` and `summary.json`, the files the CLI contract promises.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, Unpack

import numpy as np
import pandas as pd

from biaslens.engine import parallel
from biaslens.engine.display import HtmlRepr
from biaslens.engine.alignment import Alignment
from biaslens.engine.cache import ResultCache, cache_key
from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import InputError
from biaslens.engine.rescore import CALIBRATION_PAIRS, SAFETY, Bf16Rescore
from biaslens.data.export import atomic_write, safe_csv, to_json
from biaslens.engine.metrics import METRICS, SentenceScore, pair_columns
from biaslens.engine.options import Compat, InspectionKeywords, Precision
from biaslens.engine.runner import DEFAULT_CHUNK_SECONDS, ComputeFn, Progress, run_chunked
from biaslens.engine.lm import Encoding, LanguageModel
from biaslens.engine.words import display_token
from biaslens.engine.conventions import Convention, convention_block, parse_convention
from biaslens.engine.scoring import UnmaskedResult, default_batch_tokens
from biaslens.data.sentences import check_pair
from biaslens.engine.stats import bias_score

from biaslens.engine.pairs import _usable_metrics, has_attention_weights, score_encoded_pairs


# ---------------------------------------------------------------------------------------
# One pair, in detail
# ---------------------------------------------------------------------------------------


@dataclass
class SentenceDetail:
    encoding: Encoding
    unmasked: UnmaskedResult
    modified: np.ndarray  # bool per position
    scores: dict[str, SentenceScore]
    #: Per position, the model's top-k predicted tokens as the tokenizer writes them (like `token`); their ids are `unmasked.top_ids`.
    top_tokens: list[list[str]] | None = None
    #: Per position, the text the token covers in the sentence, for people (`LanguageModel.token_texts`: "café", not
    #: "ĠcafÃ©"); empty: written from the tokens.
    texts: tuple[str, ...] = ()
    #: The top-k predictions as the text each stands for (`LanguageModel.token_text`).
    top_texts: list[list[str]] | None = None

    @property
    def shown(self) -> tuple[str, ...]:
        """Each token as every drawing shows it: the text it covers (`texts`), else the token without its word mark."""
        return self.texts if len(self.texts) == len(self.encoding) else tuple(display_token(t) for t in self.encoding.tokens)

    def token_frame(self) -> pd.DataFrame:
        """One row per token: what each metric reads at that position; `top_tokens` the model's top-k predictions there
        (tokens, written like `token`), `top_ids` their ids, `top_logprobs` their log-probabilities."""
        enc, u = self.encoding, self.unmasked
        n = len(enc.scored_positions)
        unscored = np.ones(len(enc), dtype=bool)
        unscored[enc.scored_positions] = False
        frame = pd.DataFrame(
            {
                "position": np.arange(len(enc)),
                "token": list(enc.tokens),
                "text": list(self.shown),
                "token_id": list(enc.ids),
                "special": list(enc.special),
                "modified": self.modified,
                "logprob": u.logprob,
                # NaN where nothing was read (a causal model's BOS: no position predicts it), never a rank of 0.
                "rank": np.where(np.isnan(np.asarray(u.logprob, dtype=float)), np.nan, np.asarray(u.rank, dtype=float)),
                "attention": u.attention if u.attention is not None else np.full(len(enc), np.nan),
            }
        )
        frame["aula_contribution"] = np.where(unscored, np.nan, frame["attention"] * frame["logprob"] / n)
        frame["aul_contribution"] = np.where(unscored, np.nan, frame["logprob"] / n)
        if u.top_ids is not None:
            if self.top_tokens is not None:
                frame["top_tokens"] = self.top_tokens
            if self.top_texts is not None:
                frame["top_texts"] = self.top_texts
            frame["top_ids"] = [[int(t) for t in row] for row in u.top_ids]
            frame["top_logprobs"] = [list(map(float, row)) for row in u.top_logprob]
        for key, metric in METRICS.items():  # the log-probabilities each scored metric reads (`Metric.token_column`)
            score = self.scores.get(key)
            if metric.token_column is None or score is None:  # (a metric not scored, or of the other kind: no column of NaN)
                continue
            column = np.full(len(enc), np.nan)
            if score.positions:
                column[list(score.positions)] = score.logprob
            frame[metric.token_column] = column
        return frame


@dataclass
class PairInspection(HtmlRepr):
    """Everything the pair inspector shows for one pair."""

    stereo: SentenceDetail
    anti: SentenceDetail
    alignment: Alignment
    metrics: list[str]
    compat: bool
    manifest: dict[str, Any]
    attention_matrices: tuple[np.ndarray, np.ndarray] | None = None
    notes: list[str] = field(default_factory=list)  # e.g. a default metric the model cannot give, left out

    @property
    def kind(self) -> str:
        """The kind of model that scored the pair ("masked" or "causal"): the words its pages and figures use
        (`biaslens.engine.metrics.KINDS`)."""
        return str(self.manifest.get("kind") or "masked")

    def score(self, metric: str) -> tuple[float, float]:
        return self.stereo.scores[metric].value, self.anti.scores[metric].value

    def margin(self, metric: str) -> float:
        a, b = self.score(metric)
        return a - b

    def verdict(self, metric: str) -> str:
        """'stereo' if the stereotypical sentence scores higher, 'anti', 'tie' or 'undecidable'."""
        a, b = self.score(metric)
        if math.isnan(a) or math.isnan(b):
            return "undecidable"
        return "stereo" if a > b else "anti" if b > a else "tie"

    def summary_frame(self) -> pd.DataFrame:
        rows = []
        for key in self.metrics:
            a, b = self.score(key)
            rows.append(
                {
                    "metric": METRICS[key].name,
                    "key": key,
                    "stereo": a,
                    "anti": b,
                    "margin": a - b,
                    "verdict": self.verdict(key),
                    "accuracy_stereo": _ratio(self.stereo.scores[key]),
                    "accuracy_anti": _ratio(self.anti.scores[key]),
                }
            )
        return pd.DataFrame(rows)


def _ratio(score: SentenceScore) -> float:
    return 100.0 * score.hits / score.total if score.total else math.nan


def inspect_pair(
    lm: LanguageModel, sent_stereo: str, sent_anti: str, *, attention_matrices: bool = False, **options: Unpack[InspectionKeywords]
) -> PairInspection:
    """Score one pair with every metric and keep the per-token detail.

    `options` (`InspectionKeywords`): `metrics` (default None: the paper's five), `compat`
    ("default" or "kaneko2022") and `top_k` (5: the predictions kept per token). With
    `metrics=None` a metric the model cannot give is left out and named in `notes`; asked for
    by name, it is refused with the reason (`MetricUnavailableError`). `attention_matrices`
    keeps every layer's attention for the attention views.
    """
    (inspection,) = inspect_prepared(lm, [prepare_inspection(lm, sent_stereo, sent_anti, **options)], attention_matrices=attention_matrices)
    return inspection


def inspect_pairs(
    lm: LanguageModel, pairs: Sequence[tuple[str, str]], *, attention_matrices: bool = False, **options: Unpack[InspectionKeywords]
) -> list[PairInspection]:
    """`inspect_pair` for several pairs at once, their sentences scored in shared batches.

    `options`: `inspect_pair`'s `metrics`, `compat` and `top_k`. Each result equals
    `inspect_pair`'s for the same pair up to float rounding (the batches are padded
    differently); every pair is checked before anything is scored.
    """
    requests = [prepare_inspection(lm, a, b, **options) for a, b in pairs]
    return inspect_prepared(lm, requests, attention_matrices=attention_matrices)


@dataclass(frozen=True)
class InspectionRequest:
    """One pair checked and encoded for `inspect_prepared`; requests with equal `options` can share batches."""

    stereo: Encoding
    anti: Encoding
    metrics: tuple[str, ...]
    compat: bool
    top_k: int
    notes: tuple[str, ...] = ()  # e.g. a default metric the model cannot give, left out

    @property
    def options(self) -> tuple[tuple[str, ...], bool, int]:
        return self.metrics, self.compat, self.top_k


def prepare_inspection(
    lm: LanguageModel,
    sent_stereo: str,
    sent_anti: str,
    *,
    metrics: Sequence[str] | str | None = None,
    compat: str | None = "default",
    top_k: int = 5,
) -> InspectionRequest:
    """Check `inspect_pair`'s arguments (`InputError` in one line) and encode the pair; nothing is scored."""
    keys, notes = _usable_metrics(lm, metrics)
    is_compat = scoring_mode(lm, compat).reference_code
    check_pair(sent_stereo, sent_anti)
    _check_int("top_k", top_k, minimum=0)
    a, b = lm.encode(sent_stereo), lm.encode(sent_anti)
    if a.ids == b.ids:
        raise InputError(
            f"The two sentences encode to the same tokens for {lm.name} (characters its vocabulary lacks become "
            f"{lm.tokenizer.unk_token}, spacing may be dropped), so they are not a pair: change a word in one of them."
        )
    return InspectionRequest(a, b, tuple(keys), is_compat, int(top_k), tuple(notes))


def scoring_mode(lm: LanguageModel, compat: Compat | str | None) -> Compat:
    """The scoring mode `compat` names, for `lm`: kaneko2022 reproduces a masked-LM paper's code, so a causal model refuses it."""
    mode = Compat.parse(compat)
    if mode.reference_code and lm.kind != "masked":
        raise InputError("The kaneko2022 mode reproduces Kaneko & Bollegala's masked-LM code; a causal model scores in the default mode.")
    return mode


def inspect_prepared(lm: LanguageModel, requests: Sequence[InspectionRequest], *, attention_matrices: bool = False) -> list[PairInspection]:
    """Score prepared pairs (same options) in one call of the batched passes; one `PairInspection` each."""
    if not requests:
        return []
    if len({r.options for r in requests}) > 1:
        raise InputError("Pairs inspected together must use the same metrics, scoring mode and top_k.")
    keys, is_compat, top_k = requests[0].options
    scored_pairs = score_encoded_pairs(
        lm,
        [(r.stereo, r.anti) for r in requests],
        list(keys),
        compat=is_compat,
        unmasked=True,
        top_k=top_k,
        attention_matrices=attention_matrices,
    )
    manifest = lm.manifest(compat=(Compat.KANEKO2022 if is_compat else Compat.DEFAULT).value)
    out = []
    texts = lm.token_texts([e for r in requests for e in (r.stereo, r.anti)])  # each token as the text it covers
    for n, (request, scored) in enumerate(zip(requests, scored_pairs)):
        ua, ub = scored.unmasked
        details = []
        for side, enc, u, shown in (("a", request.stereo, ua, texts[2 * n]), ("b", request.anti, ub, texts[2 * n + 1])):
            modified = np.zeros(len(enc), dtype=bool)
            modified[list(scored.alignment.modified(side))] = True
            sentence_scores = {k: v[0 if side == "a" else 1] for k, v in scored.scores.items()}
            top = None if u.top_ids is None else [[lm.decode_token(int(i)) if i >= 0 else "" for i in row] for row in u.top_ids]  # -1: unread
            top_texts = None if u.top_ids is None else [[lm.token_text(int(i)).strip() if i >= 0 else "" for i in row] for row in u.top_ids]
            details.append(SentenceDetail(enc, u, modified, sentence_scores, top, shown, top_texts))
        matrices = (ua.attention_matrices, ub.attention_matrices) if attention_matrices and has_attention_weights(lm) else None
        out.append(PairInspection(details[0], details[1], scored.alignment, list(keys), is_compat, dict(manifest), matrices, list(request.notes)))
    return out


# ---------------------------------------------------------------------------------------
# A whole dataset
# ---------------------------------------------------------------------------------------


@dataclass
class EvaluationResult(HtmlRepr):
    """Per-pair scores, their summary and the manifest of how they were made."""

    pairs: pd.DataFrame
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    cached: int = 0  # (pair, metric) scores read from the result cache instead of computed

    @property
    def manifest(self) -> dict[str, Any]:
        return self.summary["manifest"]

    def save(self, out_dir: str | Path) -> tuple[Path, Path]:
        """Write `pairs.csv` and `summary.json` atomically (no half-written file is left).

        Text cells that a spreadsheet would run as a formula are neutralised.
        """
        out = Path(out_dir)
        pairs_path = atomic_write(out / "pairs.csv", safe_csv(self.pairs))
        summary_path = atomic_write(out / "summary.json", to_json(self.summary))
        return pairs_path, summary_path


def evaluate(
    lm: LanguageModel,
    dataset: PairDataset | Sequence[Pair],
    metrics: Sequence[str] | str | None = None,
    *,
    compat: str | None = "default",
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    cache: ResultCache | None = None,
    batch_tokens: int | None = None,
    chunk_pairs: int | None = None,
    chunk_seconds: float = DEFAULT_CHUNK_SECONDS,
    progress: Progress | None = None,
    cache_only: bool = False,
    precision: str | None = "model",
    convention: str | Convention | None = None,
) -> EvaluationResult:
    """Score every pair of a dataset with the given metrics.

    `metrics=None` scores the default metrics of the model's kind (the paper's five for a masked LM,
    LL, AUL-c, AULA-c, CPS-c and SSS-c for a causal one). `convention` (a causal model's: "lm-eval",
    "bias-bench", "oba2024"; `biaslens.engine.conventions`) reads the model as that peer tool does
    (its first-token policy), adds the metric it compares, and puts its own statistics in the
    summary's `convention` block beside biaslens's bias scores.

    `limit` keeps the first N pairs, `sample` a seeded random sample of N pairs. Work is
    done in chunks of about `chunk_seconds` of computation (or of `chunk_pairs` pairs, when
    given); each finished chunk is written to the cache, so an interrupted run resumes where
    it stopped. `progress(done_pairs, total_pairs)`.
    Under `accelerate launch` with several processes, each scores its share of the
    chunks and every process returns the whole result (`biaslens.engine.parallel`).
    `cache_only=True` computes nothing: every score comes from `cache`, else
    `biaslens.engine.runner.NotCached` is raised (`explore.cached_evaluation` turns that into None).
    The chunked, cached, resumable loop itself is `biaslens.engine.runner.run_chunked`.
    `precision="bf16-rescore"` (a float32 model) scores in bfloat16 and re-scores in float32 the
    pairs bfloat16 cannot settle: float32's verdicts and bias scores (`biaslens.engine.rescore`); the
    manifest's `precision` block says how many pairs each metric re-scored.
    """
    lm, conv = _with_convention(lm, convention)
    keys, notes = _convention_metrics(lm, metrics, conv)
    mode = scoring_mode(lm, compat)
    exact_mode = Precision.parse(precision) is Precision.BF16_RESCORE
    _check_int("chunk_pairs", chunk_pairs, minimum=1, optional=True)
    _check_int("batch_tokens", batch_tokens, minimum=1, optional=True)
    _check_int("seed", seed, minimum=0)
    pairs = _pair_list(dataset)
    pairs = select_pairs(pairs, limit=limit, sample=sample, seed=seed)
    if not pairs:
        raise InputError("No pairs to score.")
    same = _token_identical(lm, pairs)
    identical = [p.pair_id for p, alike in zip(pairs, same) if alike]
    if identical:
        if len(identical) == len(pairs):
            raise InputError(f"Every pair's two sentences encode to the same tokens for {lm.name}: there is nothing to compare.")
        pairs = [p for p, alike in zip(pairs, same) if not alike]  # by position: pairs of two datasets can share an id
    budget = batch_tokens or default_batch_tokens(lm)
    started = time.perf_counter()
    exact = None
    if exact_mode:  # calibrated on the run's first pairs, when the first chunk is computed (never for a run read from the cache)
        calibration = pairs[:CALIBRATION_PAIRS]
        exact = Bf16Rescore(
            lm, keys, compat=mode.reference_code, score=score_encoded_pairs, sample=lambda: _encode_pairs(lm, calibration), batch_tokens=batch_tokens
        )

    # Under `accelerate launch`, this process scores its share of the chunks (see parallel.py and runner.py).
    state = None if cache_only else parallel.process_state(cpu=lm.device.type == "cpu")
    run = run_chunked(
        pairs,
        parts=keys,
        key=_record_key(lm, mode, Precision.BF16_RESCORE if exact_mode else None, conv),
        compute=_metric_records(lm, mode, budget, exact, conv),
        cache=cache,
        chunk_pairs=chunk_pairs,
        chunk_seconds=chunk_seconds,
        progress=progress,
        processes=state,
        cache_only=cache_only,
        valid=metric_record_ok,
    )
    cached = run.cached
    frame = pairs_frame(pairs, keys, run.records)
    dataset_info = _dataset_info(dataset, pairs)
    manifest = lm.manifest(
        compat=mode.value,
        **({"convention": conv.key} if lm.kind == "causal" else {}),
        metrics=keys,
        dataset=dataset_info,
        batch_tokens=budget,
        **({"processes": state.num_processes} if state is not None else {}),
        **({"precision": _precision_block(exact, pairs, run.records, keys)} if exact is not None else {}),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 3),
    )
    # A cache set aside as corrupted (notice) or switched off (warning) is worth telling (the notice: by a run that computes).
    warnings = [w for w in (None if cache_only else cache.pop_notice(), cache.warning) if w] if cache is not None else []
    warnings += notes
    summary = summarize(frame, keys, manifest)
    if conv.metric is not None:
        summary["convention"] = convention_block(conv, frame)
    summary["token_identical"] = {"count": len(identical), "pair_ids": identical}
    if identical:
        warnings.append(identical_note(identical))
    return EvaluationResult(frame, summary, warnings, cached)


def scored_pairs(
    lm: LanguageModel,
    dataset: PairDataset | Sequence[Pair],
    metrics: Sequence[str] | str | None,
    cache: ResultCache,
    *,
    compat: str | None = "default",
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    precision: str | None = "model",
    convention: str | None = None,
) -> int:
    """How many of the pairs `evaluate` (the same arguments) scores the result cache already holds under every metric:
    what an interrupted run kept, which running it again reads back instead of computing. Nothing is computed."""
    lm, conv = _with_convention(lm, convention)
    keys, _ = _convention_metrics(lm, metrics, conv)
    pairs = select_pairs(_pair_list(dataset), limit=limit, sample=sample, seed=seed)
    exact = Precision.BF16_RESCORE if Precision.parse(precision) is Precision.BF16_RESCORE else None
    key = _record_key(lm, Compat.parse(compat), exact, conv)
    wanted = [[key(p, m) for m in keys] for p in pairs]
    held = cache.held(k for pair_keys in wanted for k in pair_keys)
    return sum(all(k in held for k in pair_keys) for pair_keys in wanted)


def _with_convention(lm: LanguageModel, convention: str | Convention | None) -> tuple[LanguageModel, Convention]:
    """`lm` reading its tokens as `convention` does (a causal model's first-token policy), and the convention."""
    conv = parse_convention(convention, lm.kind)
    if conv.first_token is not None:
        lm = lm.with_first_token(conv.first_token)  # type: ignore[attr-defined]  # a causal model (parse_convention)
    return lm, conv


def _convention_metrics(lm: LanguageModel, metrics: Sequence[str] | str | None, conv: Convention) -> tuple[list[str], list[str]]:
    """`_usable_metrics`, with the metric the convention compares added when it is not asked for."""
    keys, notes = _usable_metrics(lm, metrics)
    if conv.metric is not None and conv.metric not in keys:
        keys = [k for k in METRICS if k in {*keys, conv.metric}]
    return keys, notes


def identical_note(pair_ids: Sequence[int]) -> str:
    """The one-line note on pairs left out because both sentences encode to the same tokens."""
    shown = ", ".join(map(str, pair_ids[:10])) + (f" and {len(pair_ids) - 10} more" if len(pair_ids) > 10 else "")
    return (
        f"{len(pair_ids)} pair{'s' if len(pair_ids) != 1 else ''} left out of N: both sentences encode to the same tokens "
        f"for this model, so they are not pairs (pair id{'s' if len(pair_ids) != 1 else ''} {shown})."
    )


def token_identical_pairs(lm: LanguageModel, pairs: Sequence[Pair]) -> list[int]:
    """Ids of the pairs whose two sentences the model's tokenizer turns into the same token ids (e.g. both all [UNK]).
    A pair with a sentence longer than the model takes is refused (`InputError` naming the pair)."""
    return [p.pair_id for p, alike in zip(pairs, _token_identical(lm, pairs)) if alike]


def _token_identical(lm: LanguageModel, pairs: Sequence[Pair]) -> list[bool]:
    """Per pair, in order: whether its two sentences encode to the same token ids (an over-long sentence is refused)."""
    if not pairs:
        return []
    texts = [p.sent_stereo for p in pairs] + [p.sent_anti for p in pairs]
    if not all(isinstance(t, str) for t in texts):
        bad = next(p for p in pairs if not isinstance(p.sent_stereo, str) or not isinstance(p.sent_anti, str))
        raise InputError(f"Pair {bad.pair_id}: both sentences must be text (str).")
    # Ids only: one batch, nothing else asked of the tokenizer.
    ids = lm.tokenizer(texts, add_special_tokens=True, verbose=False, return_attention_mask=False, return_token_type_ids=False)["input_ids"]
    n = len(pairs)
    # Lengths too, before anything is scored (`evaluate` calls this before its first chunk): a sentence over the model's
    # limit is refused now, in `encode`'s words with its pair, not when its chunk is reached hours into a run.
    longest = getattr(lm, "max_length", None)
    if longest is not None:
        for i, p in enumerate(pairs):
            for field_name, k in (("sent_stereo", i), ("sent_anti", n + i)):
                if len(ids[k]) > longest:
                    _encode(lm, p, field_name)
    return [ids[i] == ids[n + i] for i in range(n)]


def _type_name(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _check_int(name: str, value: Any, *, minimum: int, optional: bool = False) -> None:
    """Refuse an argument that is not a whole number of at least `minimum` (None allowed when `optional`)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{name} must be a whole number of at least {minimum}, not {value!r}.")


def _pair_list(dataset: Any) -> list[Pair]:
    """The pairs of a PairDataset or a sequence of Pair; anything else is an InputError."""
    if isinstance(dataset, PairDataset):
        return list(dataset.pairs)
    if isinstance(dataset, (str, bytes, Path, Mapping)) or not isinstance(dataset, Iterable):
        raise InputError(f"dataset must be a PairDataset (load_dataset) or a list of Pair, not {_type_name(dataset)}.")
    pairs = list(dataset)
    bad = next((p for p in pairs if not isinstance(p, Pair)), None)
    if bad is not None:
        raise InputError(f"dataset must hold Pair objects, not {_type_name(bad)}.")
    return pairs


def select_pairs(pairs: list[Pair], *, limit: int | None = None, sample: int | None = None, seed: int = 0) -> list[Pair]:
    for name, value in (("limit", limit), ("sample", sample)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise InputError(f"{name} must be a whole number, not {value!r}.")
    if limit is not None and limit < 1 or sample is not None and sample < 1:
        raise InputError("--limit and --sample must be positive.")
    if sample is not None and sample < len(pairs):
        chosen = np.random.default_rng(seed).choice(len(pairs), size=sample, replace=False)
        pairs = [pairs[i] for i in sorted(chosen)]
    if limit is not None:
        pairs = pairs[:limit]
    return pairs


def _record_key(
    lm: LanguageModel, mode: Compat, precision: Precision | None = None, convention: Convention | None = None
) -> Callable[[Pair, str], str]:
    """The result-cache key of one metric's record of a pair (`Metric.cache_tag` names the metric: older caches stay valid).

    A bf16-rescore record (bfloat16 values unless re-scored) is kept apart from the model's float32 ones by the precision.
    """
    computed = precision.value if precision is not None else str(lm.dtype)
    reading = f"|{lm.scoring_tag}" if lm.scoring_tag else ""  # a causal model's first-token policy (a masked LM's keys are unchanged)

    def key(p: Pair, m: str) -> str:
        tag = METRICS[m].cache_tag(mode.value) + reading + (convention.value_tag(m) if convention is not None else "")
        return cache_key(lm.fingerprint, computed, tag, mode.value, p.sent_stereo, p.sent_anti)

    return key


def metric_record_ok(record: Mapping[str, Any]) -> bool:
    """Whether a cached record is one `_metric_records` writes: {stereo, anti: numbers, finite or NaN (undecidable: SSS
    without a modified token), hits <= total: whole numbers >= 0, float32: a flag if present}. Anything else (an empty
    object, strings, an infinite score) is computed again."""

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isinf(v)

    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    return (
        isinstance(record, Mapping)
        and number(record.get("stereo"))
        and number(record.get("anti"))
        and whole(record.get("hits"))
        and whole(record.get("total"))
        and record["hits"] <= record["total"]
        and isinstance(record.get("float32", False), bool)
    )


def _metric_records(
    lm: LanguageModel, mode: Compat, batch_tokens: int, exact: Bf16Rescore | None = None, convention: Convention | None = None
) -> ComputeFn:
    """The runner's compute step of `evaluate`: score pairs with metrics, one record {stereo, anti, hits, total} per metric.

    With `exact` (the bf16-rescore precision) a record also says whether it was scored in float32 (`"float32"`).
    """

    def compute(pairs: Sequence[Pair], metrics: Sequence[str], progress: Callable[[int, int], None]) -> list[dict[str, dict[str, Any]]]:
        encoded = _encode_pairs(lm, pairs)
        if exact is None:
            scored = score_encoded_pairs(lm, encoded, metrics, compat=mode.reference_code, batch_tokens=batch_tokens, progress=progress)
            rescored = None
        else:
            scored, rescored = exact.score(encoded, metrics, progress)
        out = []
        for k, result in enumerate(scored):
            by_metric = {}
            for m, (a, b) in result.scores.items():
                hits, total = METRICS[m].pair_accuracy(a, b, mode.reference_code)
                if convention is not None:  # e.g. lm-eval's float32 sums
                    a_value, b_value = (convention.sentence_value(m, s.value, s.logprob) for s in (a, b))
                else:
                    a_value, b_value = a.value, b.value
                by_metric[m] = {"stereo": a_value, "anti": b_value, "hits": hits, "total": total}
                if rescored is not None:
                    by_metric[m]["float32"] = m in rescored[k]
            out.append(by_metric)
        return out

    return compute


def _precision_block(
    exact: Bf16Rescore, pairs: Sequence[Pair], records: Sequence[Mapping[str, Mapping[str, Any]]], metrics: Sequence[str]
) -> dict[str, Any]:
    """The manifest's account of a bf16-rescore run: per metric, the pairs scored in float32 (cached ones included)."""
    block: dict[str, Any] = {
        "mode": Precision.BF16_RESCORE.value,
        "scored_in": "bfloat16",
        "rescored_in": "float32",
        "promise": "float32's verdict on the pairs re-scored; bfloat16's on the rest, whose margins exceed a calibrated (not proven) "
        "estimate of bfloat16's error: not exact",
        "pairs": len(pairs),
        "rescored": {m: sum(bool(r[m].get("float32")) for r in records) for m in metrics},
    }
    if exact.calibration is not None:  # calibrated in this run (a run read from the cache computed nothing)
        block["calibration"] = {"pairs": exact.calibration.pairs, "safety": SAFETY, "scale": exact.calibration.scale}
    return block


def _encode_pairs(lm: LanguageModel, pairs: Sequence[Pair]) -> list[tuple[Encoding, Encoding]]:
    """Both sentences of every pair, tokenized in one batch (`LanguageModel.encode_many`); a sentence refused is named by its pair."""
    try:
        encodings = lm.encode_many([text for p in pairs for text in (p.sent_stereo, p.sent_anti)])
    except InputError:
        for p in pairs:  # which pair: one at a time, to name it
            _encode(lm, p, "sent_stereo")
            _encode(lm, p, "sent_anti")
        raise
    return list(zip(encodings[::2], encodings[1::2]))


def _encode(lm: LanguageModel, pair: Pair, field_name: str) -> Encoding:
    try:
        return lm.encode(getattr(pair, field_name))
    except InputError as exc:
        raise InputError(f"Pair {pair.pair_id} ({field_name}): {exc}") from exc


def pairs_frame(pairs: Sequence[Pair], metrics: Sequence[str], records: Sequence[Mapping[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """The `pairs.csv` table: pair columns, then each metric's `Metric.columns` (`<metric>_stereo/_anti/_hits/_total`).

    `records[k]` holds the k-th pair's record per metric (by position: pairs of two datasets can share a pair id).
    """
    rows = []
    for p, by_metric in zip(pairs, records, strict=True):
        row: dict[str, Any] = {
            "pair_id": p.pair_id,
            "dataset": p.dataset,
            "bias_type": p.bias_type,
            "direction": p.direction,
            "sent_stereo": p.sent_stereo,
            "sent_anti": p.sent_anti,
        }
        for m in metrics:
            r, columns = by_metric[m], pair_columns(m)
            row[columns.stereo] = r["stereo"]
            row[columns.anti] = r["anti"]
            row[columns.hits] = int(r["hits"])
            row[columns.total] = int(r["total"])
        rows.append(row)
    return pd.DataFrame(rows)


def _group(direction: str) -> str:
    return {"stereo": "dis", "antistereo": "adv"}.get(direction, "")


def _bias_block(frame: pd.DataFrame, metric: str) -> dict[str, Any]:
    columns = pair_columns(metric)
    counts = bias_score(frame[columns.stereo].to_numpy(float), frame[columns.anti].to_numpy(float))
    hits, total = int(frame[columns.hits].sum()), int(frame[columns.total].sum())
    return {
        "bias_score": counts.score,
        "n": counts.n,
        "wins": counts.wins,
        "ties": counts.ties,
        "undecidable": counts.undecidable,
        "ci_low": counts.ci_low,
        "ci_high": counts.ci_high,
        "ci_method": counts.ci_method,
        "token_accuracy": 100.0 * hits / total if total else math.nan,
        "token_hits": hits,
        "token_total": total,
    }


def summarize(frame: pd.DataFrame, metrics: Sequence[str], manifest: dict[str, Any]) -> dict[str, Any]:
    """Bias score with N, ties, undecidable, 95% Wilson interval, per bias type and group."""
    out: dict[str, Any] = {"manifest": manifest, "metrics": {}}
    groups = frame["direction"].map(_group)
    for m in metrics:
        block = _bias_block(frame, m)
        block["by_bias_type"] = {t: _bias_block(sub, m) for t, sub in frame.groupby("bias_type", sort=True) if t}
        block["by_group"] = {g: _bias_block(frame[groups == g], m) for g in ("adv", "dis") if (groups == g).any()}
        out["metrics"][m] = block
    return out


def _dataset_info(dataset: PairDataset | Sequence[Pair], pairs: Sequence[Pair]) -> dict[str, Any]:
    if isinstance(dataset, PairDataset):
        return {"name": dataset.name, "path": str(dataset.path), "sha256": dataset.sha256, "pairs_total": len(dataset), "pairs_scored": len(pairs)}
    names = sorted({p.dataset for p in pairs})
    return {"name": ",".join(names), "pairs_scored": len(pairs)}


__all__ = [
    "EvaluationResult",
    "InspectionRequest",
    "PairInspection",
    "SentenceDetail",
    "evaluate",
    "identical_note",
    "inspect_pair",
    "inspect_pairs",
    "inspect_prepared",
    "pairs_frame",
    "prepare_inspection",
    "scored_pairs",
    "select_pairs",
    "summarize",
    "token_identical_pairs",
]

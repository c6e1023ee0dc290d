"""Typed options, parsed and validated once at each edge (the CLI, the app, a script).

* `Compat`: the scoring mode ("default" follows the papers' equations, "kaneko2022" the
  released reference code). `Compat.parse` accepts the enum, its value or None.
* `ModelSpec`: which model to load and how (model, revision, device, dtype, device_map,
  allow_pickle); `ModelSpec.from_args` reads the CLI's namespace, `load` loads it.
* `Precision`: how a run computes (the model's dtype, or `bf16-rescore`).
* `RunOptions`: what a dataset run scores (metrics, compat, limit, sample, seed,
  batch_tokens, chunk_pairs, precision); `RunOptions.from_args` reads the CLI's namespace and
  `evaluate_kwargs` gives what `biaslens.evaluate` takes.
* `ResolvedRun` (`resolve_run`, `RunOptions.resolve`): a run's choices resolved for one model, once: the convention
  and the first-token policy it reads with, the usable metrics, the scoring mode (`scoring_mode`), the precision.
* `RunKeywords`: the keywords every dataset run takes as `biaslens.evaluate` names them (which
  pairs, the cache, batch and chunk sizes, progress), for the functions that take them as
  `**run`; `run_keywords` picks some of them out and refuses any other.
* `EvaluateKeywords`: `RunKeywords` and the rest of `evaluate`'s keywords (compat, chunk_seconds, cache_only,
  precision, convention), for a function that hands them on whole as `**options`.
* `InspectionKeywords`: what `biaslens.inspect_pair` / `inspect_pairs` score (metrics, compat,
  top_k), taken as `**options`.

Defaults are written here once: `DEFAULT_DEVICE`, `DEFAULT_DTYPE` (`biaslens.load_model`
uses them too) and `DEFAULT_COMPAT`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypedDict

from biaslens.engine.metrics import DEFAULT_COMPAT, METRICS, Compat, parse_choice
from biaslens.engine.presets import DEFAULT_DEVICE, DEFAULT_DTYPE
from biaslens.errors import InputError

if TYPE_CHECKING:
    from biaslens.engine.cache import ResultCache
    from biaslens.engine.conventions import Convention
    from biaslens.engine.lm import LanguageModel


class Precision(StrEnum):
    """How a dataset run computes: in the model's own dtype, or `bf16-rescore` (`biaslens.engine.rescore`).

    `bf16-rescore` scores in bfloat16 a copy of a float32 model, then re-scores in float32 the pairs whose margin is
    within a calibrated estimate of bfloat16's error: float32's verdict on those, bfloat16's on the rest. It is not
    exact (`biaslens.engine.rescore` says what it promises); float32 is.
    """

    MODEL = "model"
    BF16_RESCORE = "bf16-rescore"

    @classmethod
    def parse(cls, value: "Precision | str | None") -> "Precision":
        """The precision named by `value` (None or "" = model); an unknown name is an `InputError`."""
        if isinstance(value, str) and value.strip().lower() == RENAMED:
            raise InputError(
                f"The {RENAMED} precision was renamed bf16-rescore: it is not exact (its float32 re-scoring threshold is calibrated "
                "on the run's first pairs, not proven); use bf16-rescore knowing that, or float32 for float32's verdicts."
            )
        return parse_choice(cls, value, "precision")


#: The old name of `bf16-rescore`, refused with the reason.
RENAMED = "exact-bf16"


#: The model's own dtype; `bf16-rescore` is not the default anywhere yet (its GPU speed is still to be measured).
DEFAULT_PRECISION = Precision.MODEL


def _check_int(name: str, value: Any, *, minimum: int, optional: bool = True) -> None:
    if value is None and optional:
        return
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InputError(f"{name} must be a whole number of at least {minimum}, not {value!r}.")


@dataclass(frozen=True)
class ModelSpec:
    """Which model to load and how; validated on construction (an unknown dtype or device map is an `InputError`)."""

    model: str
    revision: str | None = None
    device: str = DEFAULT_DEVICE
    dtype: str = DEFAULT_DTYPE
    device_map: str | None = None
    allow_pickle: bool = False
    #: A causal model's first-token policy (`biaslens.engine.causal.FirstToken`); None: the model's default.
    first_token: str | None = None

    def __post_init__(self) -> None:
        from biaslens.engine.causal import FirstToken
        from biaslens.engine.models import DEVICE_MAPS, DTYPES

        if self.first_token is not None:
            object.__setattr__(self, "first_token", FirstToken.parse(self.first_token).value)
        if not str(self.model).strip():
            raise InputError("No model given: name a hub id (e.g. bert-base-cased) or a local folder.")
        if self.dtype not in DTYPES:
            raise InputError(f"Unknown dtype {self.dtype!r}: choose one of {', '.join(DTYPES)}.")
        if self.device_map not in DEVICE_MAPS:
            raise InputError(f"Unknown device map {self.device_map!r}: use auto (or leave it out for one device).")

    @classmethod
    def from_args(cls, args: Any, model: str | None = None) -> "ModelSpec":
        """The spec a command-line namespace describes (`model` overrides `args.model`, e.g. one of several)."""
        from biaslens.engine.presets import DEFAULT_MODEL

        name = model if model is not None else getattr(args, "model", None)
        if isinstance(name, (list, tuple)):
            name = name[0] if name else None
        return cls(
            model=name or DEFAULT_MODEL,
            revision=getattr(args, "revision", None),
            device=getattr(args, "device", None) or DEFAULT_DEVICE,
            dtype=getattr(args, "dtype", None) or DEFAULT_DTYPE,
            device_map=getattr(args, "device_map", None),
            allow_pickle=bool(getattr(args, "allow_pickle", False)),
            first_token=getattr(args, "first_token", None),
        )

    def with_model(self, model: str) -> "ModelSpec":
        return replace(self, model=model)

    def with_device(self, device: str) -> "ModelSpec":
        return replace(self, device=device)

    def load_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `biaslens.load_model` besides the name."""
        return {
            "device": self.device,
            "dtype": self.dtype,
            "revision": self.revision,
            "allow_pickle": self.allow_pickle,
            "device_map": self.device_map,
            **({"first_token": self.first_token} if self.first_token is not None else {}),
        }

    def load(self):
        """Load the model (`biaslens.load_model`)."""
        from biaslens.engine.models import load_model

        return load_model(self.model, **self.load_kwargs())


@dataclass(frozen=True)
class RunOptions:
    """What a dataset run scores; validated once on construction.

    `metrics` become registry keys in registry order (`parse_metrics`), `compat` a `Compat`;
    `limit`, `sample`, `batch_tokens` and `chunk_pairs` are positive or None (None: the
    engine's default), `seed` (of `sample`) a non-negative integer.
    """

    metrics: tuple[str, ...] = ()  # also accepted: "aul,aula", a list, or None (the paper's five)
    compat: Compat = DEFAULT_COMPAT
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    batch_tokens: int | None = None
    chunk_pairs: int | None = None
    precision: Precision = DEFAULT_PRECISION
    #: How a causal model's pairs are scored (`biaslens.engine.conventions`: default, lm-eval, bias-bench, oba2024).
    convention: str = "default"
    #: Only the pairs the convention's own code scores (oba2024: gender pairs; `Convention.bias_types`).
    peer_pairs: bool = False

    def __post_init__(self) -> None:
        from biaslens.engine.conventions import CONVENTIONS
        from biaslens.engine.metrics import parse_metrics

        convention = str(self.convention or "default").strip().lower()
        if convention not in CONVENTIONS:
            raise InputError(f"Unknown convention {self.convention!r}: choose from {', '.join(CONVENTIONS)}.")
        object.__setattr__(self, "convention", convention)
        if self.peer_pairs:
            from biaslens.engine.conventions import check_peer_pairs

            check_peer_pairs(convention)

        raw = self.metrics
        object.__setattr__(self, "metrics", tuple(parse_metrics(None if isinstance(raw, tuple) and not raw else raw)))
        object.__setattr__(self, "compat", Compat.parse(self.compat))
        object.__setattr__(self, "precision", Precision.parse(self.precision))
        for name in ("limit", "sample", "batch_tokens", "chunk_pairs"):
            _check_int(name, getattr(self, name), minimum=1)
        _check_int("seed", self.seed, minimum=0, optional=False)

    @classmethod
    def from_args(cls, args: Any) -> "RunOptions":
        """The options a command-line namespace describes (options a command lacks take their defaults)."""
        return cls(
            metrics=getattr(args, "metrics", None),  # type: ignore[arg-type]  # parsed in __post_init__
            compat=getattr(args, "compat", None) or DEFAULT_COMPAT,
            limit=getattr(args, "limit", None),
            sample=getattr(args, "sample", None),
            seed=getattr(args, "seed", 0) or 0,
            batch_tokens=getattr(args, "batch_tokens", None),
            chunk_pairs=getattr(args, "chunk_pairs", None),
            precision=getattr(args, "precision", None) or DEFAULT_PRECISION,
            convention=getattr(args, "convention", None) or "default",
            peer_pairs=bool(getattr(args, "peer_pairs", False)),
        )

    def selection(self) -> dict[str, Any]:
        """Which pairs: `limit`, `sample` and `seed`."""
        return {"limit": self.limit, "sample": self.sample, "seed": self.seed}

    def resolve(self, lm: LanguageModel, *, default_metrics: bool = False) -> "ResolvedRun":
        """These options resolved for `lm`, once (`resolve_run`); `default_metrics`: the metrics are the kind's defaults
        (what `lm` cannot give is left out with a note), not the ones named, and the resolved run's `options` name them."""
        asked = None if default_metrics else self.metrics
        resolved = resolve_run(lm, asked, compat=self.compat, precision=self.precision, convention=self.convention)
        # (a peer convention's metric is among every causal model's defaults: none was added to them)
        return replace(resolved, options=self._naming(resolved.metrics) if default_metrics else self)

    def _naming(self, metrics: tuple[str, ...]) -> "RunOptions":
        """These options with `metrics`, registry keys resolved already: the rest was validated once, on construction, and
        is not parsed again (`dataclasses.replace` would run `__post_init__` over every option)."""
        out = copy.copy(self)
        object.__setattr__(out, "metrics", metrics)
        return out

    def evaluate_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of `biaslens.evaluate` besides the model, dataset and metrics (chunk_pairs, precision only when set)."""
        out: dict[str, Any] = {"compat": self.compat.value, **self.selection(), "batch_tokens": self.batch_tokens}
        if self.chunk_pairs is not None:
            out["chunk_pairs"] = self.chunk_pairs
        if self.precision is not DEFAULT_PRECISION:
            out["precision"] = self.precision.value
        if self.convention != "default":
            out["convention"] = self.convention
        if self.peer_pairs:
            out["peer_pairs"] = True
        return out


# ---------------------------------------------------------------------------------------
# A run's choices resolved for one model
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedRun:
    """A dataset run's choices resolved for one model, once (`resolve_run`): the model reading its tokens as the
    convention does, the metrics it gives (`notes`: the default ones it cannot give, left out), the scoring mode, the
    precision and the convention. `biaslens.engine.evaluation.evaluate_run` scores a dataset with it; nothing downstream parses an option again."""

    lm: LanguageModel
    metrics: tuple[str, ...]
    mode: Compat
    precision: Precision
    convention: Convention
    notes: tuple[str, ...] = ()
    #: The run options resolved (`RunOptions.resolve`), their metrics the resolved ones when they were the kind's defaults.
    options: RunOptions | None = None


def resolve_run(
    lm: LanguageModel,
    metrics: Sequence[str] | str | None = None,
    *,
    compat: Compat | str | None = "default",
    precision: Precision | str | None = "model",
    convention: str | Convention | None = None,
) -> ResolvedRun:
    """`biaslens.evaluate`'s choices checked against `lm` (`InputError`, `MetricUnavailableError` in one line) and resolved:
    the convention (and the first-token policy it reads with), the usable metrics (the convention's own added; `None`:
    the kind's defaults less what `lm` cannot give, said in `notes`), the scoring mode and the precision."""
    lm, conv = with_convention(lm, convention)
    keys, notes = convention_metrics(lm, metrics, conv)
    return ResolvedRun(lm, tuple(keys), scoring_mode(lm, compat), Precision.parse(precision), conv, tuple(notes))


def with_convention(lm: LanguageModel, convention: str | Convention | None) -> tuple[LanguageModel, Convention]:
    """`lm` reading its tokens as `convention` does (a causal model's first-token policy), and the convention."""
    from biaslens.engine.conventions import parse_convention

    conv = parse_convention(convention, lm.kind)
    if conv.first_token is not None:
        lm = lm.with_first_token(conv.first_token)
    return lm, conv


def convention_metrics(lm: LanguageModel, metrics: Sequence[str] | str | None, conv: Convention) -> tuple[list[str], list[str]]:
    """`pairs._usable_metrics`, with the metric the convention compares added when it is not asked for."""
    from biaslens.engine.pairs import _usable_metrics

    keys, notes = _usable_metrics(lm, metrics)
    if conv.metric is not None and conv.metric not in keys:
        keys = [k for k in METRICS if k in {*keys, conv.metric}]
    return keys, notes


def scoring_mode(lm: LanguageModel, compat: Compat | str | None) -> Compat:
    """The scoring mode `compat` names, for `lm`: kaneko2022 reproduces a masked-LM paper's code, so a causal model refuses it
    (`LanguageModel.compat_modes`)."""
    mode = compat if isinstance(compat, Compat) else Compat.parse(compat)  # (a mode parsed once, as `RunOptions` holds it: not again)
    if mode.value not in lm.compat_modes:
        raise InputError(f"The {mode.value} mode reproduces Kaneko & Bollegala's masked-LM code; a {lm.kind} model scores in the default mode.")
    return mode


class RunKeywords(TypedDict, total=False):
    """The keywords of a dataset run besides the model, the dataset and the metrics, named and meant as `biaslens.evaluate`'s.

    `limit` keeps the first N pairs, `sample` a random sample of N drawn with `seed`; `cache`
    (a `ResultCache`) keeps finished chunks, so a stopped run resumes; `batch_tokens` caps the
    tokens of a batch (default: from the device's memory); `chunk_pairs` fixes the pairs of a
    chunk (default: sized by time); `progress(done_pairs, total_pairs)` is called as chunks
    finish. A function that takes `**run` refuses any other keyword.
    """

    limit: int | None
    sample: int | None
    seed: int
    cache: ResultCache | None
    batch_tokens: int | None
    chunk_pairs: int | None
    progress: Callable[[float, int], None] | None


class EvaluateKeywords(RunKeywords, total=False):
    """Every keyword of `biaslens.engine.evaluation.evaluate` (its signature is where they are written and defaulted):
    `RunKeywords`, the scoring mode, the chunks' time, reading only the cache, the precision, the convention and its
    peer pairs; for the functions that hand them on whole as `**options` (the public `biaslens.evaluate`)."""

    compat: str | None
    chunk_seconds: float
    cache_only: bool
    precision: str | None
    convention: str | Convention | None
    peer_pairs: bool


class InspectionKeywords(TypedDict, total=False):
    """What `inspect_pair` scores, for the functions that take it as `**options`: `metrics`, `compat`, `top_k`.

    Their defaults are `biaslens.engine.evaluation.prepare_inspection`'s (the paper's five, "default", 5).
    """

    metrics: Sequence[str] | str | None
    compat: str | None
    top_k: int


#: The keywords of `RunKeywords` that choose the pairs.
SELECTION = ("limit", "sample", "seed")


def run_keywords(function: str, run: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """Those of `names` given in `run`; a keyword `RunKeywords` lacks is refused as Python refuses an unknown argument."""
    if unknown := sorted(set(run) - set(RunKeywords.__annotations__)):
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    return {name: run[name] for name in names if name in run}


__all__ = [
    "DEFAULT_COMPAT",
    "DEFAULT_DEVICE",
    "DEFAULT_DTYPE",
    "DEFAULT_PRECISION",
    "SELECTION",
    "Compat",
    "EvaluateKeywords",
    "InspectionKeywords",
    "ModelSpec",
    "Precision",
    "ResolvedRun",
    "RunKeywords",
    "RunOptions",
    "convention_metrics",
    "resolve_run",
    "run_keywords",
    "scoring_mode",
    "with_convention",
]

"""One evaluation pipeline: a run described once, its post-steps registered here, one call.

`EvaluationPlan` is the run (model, dataset, `RunOptions`, flags policy, StereoSet scores on or off), refused on
construction where it can be before a model loads. `STEPS` are the post-steps (StereoSet's scores, flagged pairs): each
says when it applies to a plan, what it checks before the model loads, what it computes, its `summary.json` block and
the files it writes. `run_evaluation(plan)` loads the dataset and the model, scores, runs the steps that apply and
returns an `EvaluationRun`; `EvaluationRun.save(out)` writes `pairs.csv`, `summary.json` and each step's files. The
CLI's `evaluate` is this call plus printing; the app's explorer uses `scored_flags` and `without_flagged`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterable, Mapping, Protocol, Sequence, cast

import numpy as np

from biaslens.data.export import text_table
from biaslens.data.flags import CHECKS
from biaslens.engine.options import DEFAULT_DEVICE, ModelSpec, Precision, RunOptions
from biaslens.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.data.datasets import Pair, PairDataset
    from biaslens.engine.cache import ResultCache
    from biaslens.engine.evaluation import EvaluationResult
    from biaslens.engine.models import LanguageModel


def parse_checks(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """Flag checks by name ("all", None or "" for every check; `-` or `_`); an unknown one is an `InputError`."""
    if text is None or (isinstance(text, str) and text.strip() in ("", "all")):
        return CHECKS
    names = text.split(",") if isinstance(text, str) else list(text)
    chosen = tuple(c.strip().replace("-", "_") for c in names if c.strip())
    unknown = [c for c in chosen if c not in CHECKS]
    if unknown:
        raise InputError(f"Unknown flag check {', '.join(unknown)}: choose from {', '.join(CHECKS)} (or all).")
    return chosen


@dataclass(frozen=True)
class EvaluationPlan:
    """A dataset run, described once and checked on construction (before any model loads).

    `dataset`: a dataset name or a path, found in `data_dir` (else `$BIASLENS_DATA_DIR`), downloaded unless `download`
    is False. `default_metrics`: the options' metrics are the default set, so what the model cannot give is left out
    with a note (named metrics it cannot give are refused). `flags`: the flag checks to run (None: no flags;
    "all" or a comma-separated string is parsed); `exclude_flagged` (implies every check when `flags` is None)
    leaves the flagged pairs out of the saved result. `stereoset_scores`: also StereoSet's LMS, SS and ICAT.
    `controls`: also the control pairs' bias score beside each metric's (`biaslens.analyses.controls`, drawn with
    `control_seed`). `mlm_bias`: also mlm-bias's CRR, CRRA, ΔP and ΔPA (`biaslens.analyses.mlm_bias`; `mlm_bias_padded`:
    the package's batched path).
    """

    model: ModelSpec
    dataset: str
    options: RunOptions = RunOptions()
    data_dir: str | None = None
    download: bool = True
    default_metrics: bool = False
    flags: tuple[str, ...] | None = None
    exclude_flagged: bool = False
    stereoset_scores: bool = False
    controls: bool = False
    control_seed: int = 0
    mlm_bias: bool = False
    mlm_bias_padded: bool = False

    def __post_init__(self) -> None:
        if self.flags is not None or self.exclude_flagged:
            object.__setattr__(self, "flags", parse_checks(self.flags))
        if self.options.precision is Precision.BF16_RESCORE and self.model.dtype != "float32":
            raise InputError(f"--precision bf16-rescore re-scores in float32: load the model in float32 (leave out --dtype {self.model.dtype}).")

    @classmethod
    def from_args(cls, args: Any) -> "EvaluationPlan":
        """The plan a command-line namespace of `biaslens evaluate` describes."""
        return cls(
            model=ModelSpec.from_args(args),
            dataset=args.dataset,
            options=RunOptions.from_args(args),
            data_dir=getattr(args, "data_dir", None),
            download=not getattr(args, "no_download", False),
            default_metrics=getattr(args, "metrics", None) is None,
            flags=getattr(args, "flags", None),  # type: ignore[arg-type]  # parsed in __post_init__
            exclude_flagged=bool(getattr(args, "exclude_flagged", False)),
            stereoset_scores=bool(getattr(args, "stereoset_scores", False)),
            controls=bool(getattr(args, "controls", False)),
            control_seed=int(getattr(args, "control_seed", 0) or 0),
            mlm_bias=bool(getattr(args, "mlm_bias", False)) or bool(getattr(args, "mlm_bias_batched", False)),
            mlm_bias_padded=bool(getattr(args, "mlm_bias_batched", False)),
        )

    def output_files(self) -> tuple[str, ...]:
        """The files `EvaluationRun.save` writes: `pairs.csv`, `summary.json` and those of every step that applies."""
        return ("pairs.csv", "summary.json", *(name for step in STEPS.values() if step.applies(self) for name in step.files))


@dataclass(frozen=True)
class StepInput:
    """What a post-step gets: the plan, the model, the dataset, the scored result (of the run's metrics) and the cache."""

    plan: EvaluationPlan
    options: RunOptions
    lm: LanguageModel
    dataset: PairDataset
    result: EvaluationResult
    cache: ResultCache | None


@dataclass
class StepOutput:
    """A post-step's output: its `summary.json` block, its files (name -> table), the lines it prints, its notes.

    `result`: the result to save instead of the scored one (flags with `exclude_flagged`), else None. `beside`: an entry
    per metric, written into that metric's block of `summary.json` under the step's name (the control pairs' score
    beside each bias score).
    """

    block: dict[str, Any]
    files: dict[str, pd.DataFrame] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    result: EvaluationResult | None = None
    beside: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """A registered post-step: its name (its `summary.json` key), when it applies, its early check, its computation."""

    name: str
    files: tuple[str, ...]
    applies: Callable[[EvaluationPlan], bool]
    #: None: nothing to add for this run (SSS-c's context step on a run without SSS-c).
    compute: Callable[[StepInput], StepOutput | None]
    check: Callable[[EvaluationPlan, "list[Pair]"], None] = lambda plan, pairs: None
    #: Its check of the loaded model, before any pair is scored (mlm-bias's measures need a masked LM).
    model_check: Callable[[LanguageModel], None] = lambda lm: None
    #: The step gets the result an earlier step narrowed (the pairs saved: flags with exclude_flagged), not every
    #: scored pair: what it puts beside the bias scores is then of the same pairs.
    sees_saved: bool = False


def _metric_name(key: str) -> str:
    """A metric as the tables name it for people ("PLL-word-l2r", not `pll_word_l2r`)."""
    from biaslens.engine.metrics import METRICS

    return METRICS[key].name if key in METRICS else str(key)


def _fmt(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def _stereoset_check(plan: EvaluationPlan, pairs: list[Pair]) -> None:
    from biaslens.analyses.stereoset_scores import with_unrelated

    with_unrelated(pairs)  # a dataset without unrelated sentences is refused before the model loads


def _stereoset(step: StepInput) -> StepOutput:
    from biaslens.analyses.stereoset_scores import stereoset_scores, summary_block

    o = step.options
    scores = stereoset_scores(
        step.lm, step.dataset, o.metrics, compat=o.compat.value, **o.selection(), cache=step.cache, batch_tokens=o.batch_tokens, main=step.result
    )
    lines = [
        "\nStereoSet (Nadeem et al. 2021), intrasentence: LMS, SS, ICAT (ideal 100, 50, 100)",
        text_table(
            ["metric", "bias type", "n", "LMS", "SS", "ICAT"],
            (
                [_metric_name(r["metric"]), r["bias_type"], r["n"], _fmt(r["lms"]), _fmt(r["ss"]), _fmt(r["icat"])]
                for r in scores.table.to_dict(orient="records")
            ),
            left=2,
        ),
    ]
    notes = [f"{scores.skipped} examples have no unrelated sentence and are left out of LMS, SS and ICAT"] if scores.skipped else []
    return StepOutput(summary_block(scores), {"stereoset_scores.csv": scores.table}, lines, notes)


def scored_flags(result: EvaluationResult, flags: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """The flags of the result's pairs, and which of its pairs no flag touches (the keep mask, in the result's order)."""
    from biaslens.data.flags import keep_mask

    ids = list(result.pairs["pair_id"])
    scored = cast("pd.DataFrame", flags[flags["pair_id"].isin(ids)].reset_index(drop=True))
    return scored, keep_mask(ids, scored)


def without_flagged(result: EvaluationResult, keep: np.ndarray, metrics: Sequence[str]) -> EvaluationResult:
    """The result of the kept pairs only, summarised again; the manifest says how many were excluded."""
    from biaslens.engine.evaluation import EvaluationResult, summarize

    kept = cast("pd.DataFrame", result.pairs[keep].reset_index(drop=True))
    manifest = {**result.summary["manifest"], "excluded_flagged": len(result.pairs) - len(kept)}
    return EvaluationResult(kept, summarize(kept, list(metrics), manifest), result.warnings, result.cached)


def _flags(step: StepInput) -> StepOutput:
    from biaslens.analyses.paired import with_and_without
    from biaslens.data.flags import CHECK_LABELS, flag_pairs, flag_summary

    plan = step.plan
    checks = list(plan.flags or CHECKS)
    found, notes = flag_pairs(step.dataset, lm=step.lm, checks=checks, data_dir=plan.data_dir, download=plan.download)
    flags, keep = scored_flags(step.result, found)
    table = with_and_without(step.result, keep)
    flagged, per_check = int((~keep).sum()), flag_summary(flags).to_dict(orient="records")
    lines = [
        f"\nFlagged pairs: {flagged:,} of {len(keep):,}",
        *(f"  {r['pairs']:>6,}  {CHECK_LABELS.get(r['check'], r['check'])}" for r in per_check),
        text_table(
            ["metric", "all", "unflagged", "diff", "95% CI (bootstrap)"],
            (
                [
                    _metric_name(r["metric"]),
                    _fmt(r["score_all"]),
                    _fmt(r["score_kept"]),
                    _fmt(r["difference"]),
                    f"[{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]",
                ]
                for r in table.to_dict(orient="records")
            ),
        ),
    ]
    block = {
        "checks": checks,
        "flagged": flagged,
        "notes": notes,
        "per_check": {r["check"]: int(r["pairs"]) for r in per_check},
        "with_and_without": table.to_dict(orient="records"),
    }
    kept = None
    if plan.exclude_flagged:
        if not keep.any():
            raise InputError("Every scored pair is flagged: nothing is left with --exclude-flagged.")
        kept = without_flagged(step.result, keep, step.options.metrics)
    return StepOutput(block, {"flags.csv": flags, "flagged.csv": table}, lines, list(notes), kept)


def _scored_pairs(step: StepInput) -> list[Pair]:
    """The dataset's pairs the run scored, in its order."""
    by_id = {p.pair_id: p for p in step.dataset.pairs}
    return [by_id[i] for i in step.result.pairs["pair_id"] if i in by_id]


def _controls_check(plan: EvaluationPlan, pairs: list[Pair]) -> None:
    from biaslens.analyses.controls import control_pairs

    control_pairs(pairs, seed=plan.control_seed)  # English only: refused before the model loads


def _controls(step: StepInput) -> StepOutput:
    from biaslens.analyses.controls import METHOD, control_entries, control_pairs, score_controls
    from biaslens.engine.metrics import METRICS

    o = step.options
    controls = control_pairs(_scored_pairs(step), seed=step.plan.control_seed, name=step.dataset.name)
    kwargs = {k: v for k, v in o.evaluate_kwargs().items() if k not in ("limit", "sample", "seed")}
    result, scores = score_controls(step.lm, controls, o.metrics, cache=step.cache, **kwargs)
    entries = control_entries(scores)
    lines = [
        f"\nControl pairs: {len(controls.pairs):,} (each pair's group words swapped for non-social words of matched frequency and "
        "part of speech); each metric's control score is beside its bias score below: near 50 expected."
    ]
    off = [METRICS[m].name for m in o.metrics if entries[m]["off_50"]]
    notes = list(controls.notes())
    if off:
        notes.append(f"{', '.join(off)}: the control pairs' interval excludes 50, so these scores answer something besides the group words")
    block = {**controls.summary(), "method": METHOD, "metrics": entries}
    files = {"controls.csv": result.pairs, "control_swaps.csv": controls.swaps}
    return StepOutput(block, files, lines, notes, beside=entries)


def _mlm_bias_check(lm: LanguageModel) -> None:
    from biaslens.analyses.mlm_bias import check_model

    check_model(lm)


def _mlm_bias(step: StepInput) -> StepOutput:
    from biaslens.analyses.mlm_bias import mlm_bias_scores

    found = mlm_bias_scores(step.lm, _scored_pairs(step), padded=step.plan.mlm_bias_padded, cache=step.cache)
    scores = found.scores
    lines = [
        f"\nmlm-bias measures (Zalkikar & Chandra; {found.summary()['path']}): share of pairs whose stereotypical sentence is predicted better",
        f"{'measure':<10}{'bias score':>11}  {'95% CI (Wilson)':<17}{'N':>6}{'ties':>6}",
        *(
            f"{r['name']:<10}{_fmt(r['bias_score']):>11}  {'[' + _fmt(r['ci_low']) + ', ' + _fmt(r['ci_high']) + ']':<17}{r['n']:>6}{r['ties']:>6}"
            for r in scores.to_dict(orient="records")
        ),
    ]
    return StepOutput(found.summary(), {"mlm_bias.csv": found.pairs, "mlm_bias_scores.csv": found.by_bias_type}, lines, list(found.notes))


def _sss_c_context(step: StepInput) -> StepOutput | None:
    from biaslens.analyses.left_context import METRIC, sss_c_context

    if METRIC not in step.result.summary["metrics"] or all(p.context for p in step.dataset.pairs):  # StereoSet: the attribute
        return None
    found = sss_c_context(step.result, step.dataset.pairs)
    block = found.summary()
    return StepOutput(
        block, {"sss_c_context.csv": found.pairs}, [f"\n{found.line()}"], beside={METRIC: {k: block[k] for k in ("prior_only", "with_context")}}
    )


STEPS: dict[str, Step] = {
    "stereoset": Step("stereoset", ("stereoset_scores.csv",), lambda plan: plan.stereoset_scores, _stereoset, _stereoset_check),
    "flags": Step("flags", ("flags.csv", "flagged.csv"), lambda plan: plan.flags is not None, _flags),
    "controls": Step("controls", ("controls.csv", "control_swaps.csv"), lambda plan: plan.controls, _controls, _controls_check, sees_saved=True),
    "mlm_bias": Step(
        "mlm_bias", ("mlm_bias.csv", "mlm_bias_scores.csv"), lambda plan: plan.mlm_bias, _mlm_bias, sees_saved=True, model_check=_mlm_bias_check
    ),
    "sss_c_context": Step(
        "sss_c_context",
        ("sss_c_context.csv",),
        lambda plan: plan.default_metrics or "sss_c" in plan.options.metrics,
        _sss_c_context,
        sees_saved=True,
    ),
}
"""The post-steps, in the order they run; each one's output is `summary.json[name]`."""


class RunProgress(Protocol):
    """How a caller shows progress: a byte callback for a download, a pair callback for the scoring."""

    def download(self, desc: str) -> ContextManager[Callable[[int, int | None], None]]: ...

    def pairs(self, total: int, desc: str, *, disable: bool = False) -> ContextManager[Callable[[float, int], None]]: ...


@dataclass
class EvaluationRun:
    """What `run_evaluation` gives: the result to save, each step's output, the notes, and the run's counts.

    `scored`: pairs scored (before flagged pairs are left out); `cached`: scores read from the result cache;
    `main`: False in the other processes of an `accelerate launch` run (they write nothing; call `finish()`).
    """

    plan: EvaluationPlan
    options: RunOptions
    result: EvaluationResult
    steps: dict[str, StepOutput] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    scored: int = 0
    cached: int = 0
    main: bool = True
    state: Any = None
    #: Every file `save` wrote: pairs.csv, summary.json, then each step's (stereoset_scores.csv, flags.csv, flagged.csv).
    written: list[Path] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return list(self.result.warnings)

    def save(self, out: str | Path) -> tuple[Path, Path]:
        """Write each step's files, then `pairs.csv` and `summary.json` (atomically); the paths of the last two (`written`
        lists them all)."""
        from biaslens.data.export import atomic_write, safe_csv

        steps = [atomic_write(Path(out) / name, safe_csv(table)) for output in self.steps.values() for name, table in output.files.items()]
        pairs, summary = self.result.save(out)
        self.written = [pairs, summary, *steps]
        return pairs, summary

    def finish(self) -> None:
        """Wait for the other processes of an `accelerate launch` run (nothing in a single process)."""
        from biaslens.engine import parallel

        parallel.finish(self.state)


def _no_progress(*_: Any, **__: Any) -> ContextManager[Callable[..., None]]:
    return contextlib.nullcontext(lambda *a: None)


def run_evaluation(
    plan: EvaluationPlan,
    *,
    lm: LanguageModel | None = None,
    cache: ResultCache | None = None,
    progress: RunProgress | None = None,
    caveats: Callable[[LanguageModel, Iterable[str]], Mapping[str, Any]] | None = None,
    say: Callable[[str], None] | None = None,
    load: Callable[[ModelSpec], LanguageModel] | None = None,
) -> EvaluationRun:
    """Load the plan's dataset (and model, unless `lm` is given), score it, run the post-steps that apply.

    The steps' early checks run before the model loads, their checks of the model once it is loaded, before any pair is
    scored; `load(spec)` loads it (default `ModelSpec.load`).
    `caveats(lm, texts)`: what the manifest records about the model (the CLI's sanity verdict and its vocabulary of
    `texts`, the chosen pairs' sentences in order), on the main process. `say(note)` hears each note as it comes (they
    are also in `EvaluationRun.notes`). Under `accelerate launch` each process scores a share of the pairs on its own
    device; the main process downloads first and gets the result.
    """
    from biaslens.data.datasets import load_dataset
    from biaslens.engine import parallel
    from biaslens.engine.evaluation import evaluate_run, select_pairs

    download = progress.download if progress is not None else _no_progress
    bars = progress.pairs if progress is not None else _no_progress
    notes: list[str] = []
    spec, options = plan.model, plan.options
    state = parallel.process_state(cpu=spec.device == "cpu") if lm is None else None
    main = parallel.is_main_process(state)

    def note(text: str) -> None:
        if main:
            notes.append(text)
            if say is not None:
                say(text)

    if state is not None and spec.device == DEFAULT_DEVICE:
        spec = spec.with_device(str(state.device))
    steps = [s for s in STEPS.values() if s.applies(plan)]
    with state.main_process_first() if state is not None else contextlib.nullcontext():
        with download(plan.dataset) as bar:
            dataset = load_dataset(plan.dataset, data_dir=plan.data_dir, download=plan.download, progress=bar)
        chosen = select_pairs(list(dataset.pairs), **options.selection())
        for step in steps:
            step.check(plan, chosen)
        if lm is None:
            lm = load(spec) if load is not None else spec.load()
    for step in steps:  # e.g. mlm-bias's measures on a causal model: refused now, not after every pair is scored
        step.model_check(lm)
    for text in dataset.notes:
        note(text)
    manifest = dict(caveats(lm, (text for p in chosen for text in (p.sent_stereo, p.sent_anti)))) if caveats is not None and main else {}
    # The options resolved for the model, once: the default metrics of its kind less what it cannot give (asked for by
    # name, one it cannot give is refused), the convention and its first-token policy, the scoring mode, the precision.
    resolved = options.resolve(lm, default_metrics=plan.default_metrics)
    for text in resolved.notes:
        note(text)
    options, resolved = resolved.options or options, dataclasses.replace(resolved, notes=())  # (said here, not among the warnings)
    with bars(len(chosen), f"{dataset.name} {','.join(options.metrics)}", disable=not main) as bar:
        result = evaluate_run(
            resolved,
            dataset,
            peer_pairs=options.peer_pairs,
            cache=cache,
            progress=bar,
            batch_tokens=options.batch_tokens,
            chunk_pairs=options.chunk_pairs,
            **options.selection(),
        )
    run = EvaluationRun(plan, options, result, scored=len(result.pairs), cached=result.cached, main=main, state=state)
    if not main:
        return run
    result.summary["manifest"].update(manifest)
    current = result
    for step in steps:  # every step sees the scored pairs, but one that `sees_saved` gets what an earlier step narrowed
        output = step.compute(StepInput(plan, options, lm, dataset, current if step.sees_saved else result, cache))
        if output is None:
            continue
        for text in output.notes:
            note(text)
        run.steps[step.name] = output
        current = output.result if output.result is not None else current
    for output in run.steps.values():
        if output.result is not None:  # a step that narrows the saved result (flags with exclude_flagged)
            run.result = output.result
    run.result.summary.update({name: output.block for name, output in run.steps.items()})
    for name, output in run.steps.items():  # an entry beside each metric's bias score (the control pairs')
        for metric, entry in output.beside.items():
            if metric in run.result.summary["metrics"]:
                run.result.summary["metrics"][metric][name] = entry
    run.notes = notes
    return run


__all__ = [
    "STEPS",
    "EvaluationPlan",
    "EvaluationRun",
    "RunProgress",
    "Step",
    "StepInput",
    "StepOutput",
    "parse_checks",
    "run_evaluation",
    "scored_flags",
    "without_flagged",
]

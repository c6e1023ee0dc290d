"""One model's job: load it once, score every dataset of the plan with it, write each cell to the store.

`run_model(task)` is one model's work; a job (`ZooJob`, the callable submitit runs on a node) runs one model, or several
small ones one after the other (`models_per_job`: the job's fixed cost, the interpreter and its imports, paid once).
A model whose cells are all in the store is not even loaded. For each dtype the plan asks of the model, the model loads
once; for each unit (dataset, convention, precision, compat mode) the cells already in the store are skipped, the others
are locked, scored in one `biaslens.evaluate` call through the store's result cache (finished chunks are kept: a killed
job's retry loses only its unfinished chunk) and written, then unlocked. Cells another run holds are left to it
("held"). A model that cannot load is recorded with its one-line error (the job still ends normally: retrying would
fail the same way), and so is a metric the model cannot give ("unavailable"). Each cell keeps the model's sanity
verdict (`biaslens.analyses.sanity.model_verdict`, as `biaslens.evaluate` computes it) in its "model" block: a model that
looks untrained is said to be, wherever its scores are shown.

A job that Slurm warns before its time limit (or preempts) is requeued by submitit and carries on where it stopped,
but only if it has written something since it started (a finished chunk or cell): one warned before it scored anything
would only be warned again. It stops instead, and its outcome says so ("stopped"): the driver does not retry it.
"""

from __future__ import annotations

import gc
import os
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from submitit.helpers import Checkpointable, DelayedSubmission

from biaslens.errors import BiaslensError
from biaslens.zoo.cells import Identity, dataset_sha256, fields_of, planned_cells, unit_metrics
from biaslens.zoo.plan import DEFAULT_CONVENTION, PRECISIONS, Unit, ZooModel
from biaslens.zoo.store import RECORD_COLUMNS, Heartbeat, Owner, ResultsStore, cell_key

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.choices.evaluation import ChoiceRun
    from biaslens.data.datasets import PairDataset
    from biaslens.data.multiple_choice import ChoiceDataset
    from biaslens.engine.evaluation import EvaluationResult

#: Seconds between two writes of a job's progress to its record.
RECORD_INTERVAL_S = 1.0


@dataclass(frozen=True)
class ModelTask:
    """What one job is given: the store, the run, the model with its settings, where the data is, which attempt."""

    store: str
    run_id: str
    model: ZooModel
    data_dir: str | None = None
    download: bool = True
    attempt: int = 1

    def next_attempt(self) -> ModelTask:
        return replace(self, attempt=self.attempt + 1)


@dataclass
class ModelOutcome:
    """What a job did: each of its cells' fate, how much it read back from the cache, its error if the model failed to load.

    `cells`: key -> "scored" (by this job), "stored" (already in the store), "held" (being scored by another run),
    "unavailable" (the model cannot give it: `reasons`).
    """

    index: int
    label: str
    state: str = "finished"  # or "load-failed", or "stopped" (warned before it scored anything: not requeued)
    error: str | None = None
    cells: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    cached: int = 0  # (pair, metric) records read back from the store's result cache
    job_id: str = ""
    attempt: int = 1
    host: str = ""
    seconds: float = 0.0

    def count(self, fate: str) -> int:
        return sum(v == fate for v in self.cells.values())


@dataclass
class Tally:
    """What a job has written since it started: cells, and records in the stores' result caches (finished chunks)."""

    cells: int = 0
    caches: list[Any] = field(default_factory=list)

    @property
    def moved(self) -> bool:
        return self.cells > 0 or any(getattr(c, "written", 0) for c in self.caches)


class _WarnedWithoutProgress(BaseException):
    """Raised from a job's checkpoint (in submitit's signal handler) when it has written nothing: past the models' own
    error handling (a BaseException), to the job's call, which ends the job with the models "stopped"."""


class ZooJob(Checkpointable):
    """The callable submitit runs: one job's models (`ModelTask`s), one after the other, each outcome in order.

    Checkpointable: a job Slurm warns before its time limit (`time_min`) is requeued by submitit with the same tasks and
    resumes from the store (finished cells) and its cache (finished chunks), if it has written anything since it
    started (`Tally`); else the models left end as "stopped" and the job is not requeued (see the module)."""

    def __init__(self, time_min: int | None = None):
        self.time_min = time_min
        self._tally = Tally()

    def __call__(self, tasks: ModelTask | list[ModelTask]) -> list[ModelOutcome]:
        todo = [tasks] if isinstance(tasks, ModelTask) else list(tasks)
        outcomes: list[ModelOutcome] = []
        for task in todo:
            try:
                outcomes.append(run_model(task, tally=self._tally))
            except _WarnedWithoutProgress:
                limit = f"its time limit ({self.time_min} min)" if self.time_min else "its time limit"
                why = f"warned to stop ({limit}, or preemption) before it had scored anything, so not requeued: give its jobs more time"
                outcomes += [ModelOutcome(t.model.index, t.model.label, state="stopped", error=why, attempt=t.attempt) for t in todo[len(outcomes) :]]
                break
        return outcomes

    def checkpoint(self, tasks: Any) -> DelayedSubmission:
        if not self._tally.moved:
            raise _WarnedWithoutProgress()
        return DelayedSubmission(ZooJob(self.time_min), tasks)

    def __getstate__(self) -> dict[str, Any]:
        return {"time_min": self.time_min}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.time_min = state.get("time_min")
        self._tally = Tally()


def _job_id() -> str:
    try:
        import submitit

        return str(submitit.JobEnvironment().job_id)
    except Exception:
        return ""


def first_line(exc: BaseException) -> str:
    """An error in one line: its message's first line (its type when it has none)."""
    text = str(exc).strip() or type(exc).__name__
    line = text.splitlines()[0]
    return line if isinstance(exc, BiaslensError) else f"{type(exc).__name__}: {line}"


class _Record:
    """The job's record in the store (`runs/<run>/jobs/<index>.worker.json`), written from the job and its heartbeat."""

    def __init__(self, store: ResultsStore, task: ModelTask, job_id: str):
        self.store, self.task = store, task
        self.data: dict[str, Any] = {
            "label": task.model.label,
            "job_id": job_id,
            "attempt": task.attempt,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "state": "starting",
            "started": time.time(),
        }
        self._lock = threading.Lock()
        self._written = 0.0

    def update(self, *, force: bool = True, **values: Any) -> None:
        with self._lock:
            self.data.update(values)
            if not force and time.monotonic() - self._written < RECORD_INTERVAL_S:
                return
            self._written = time.monotonic()
            self.store.write_job(self.task.run_id, self.task.model.index, self.data, side="worker")

    def beat(self) -> None:
        self.update()


def run_model(task: ModelTask, *, progress: Callable[[str, float, int], None] | None = None, tally: Tally | None = None) -> ModelOutcome:
    """Score every cell of the task's model that the store lacks; return what became of each (`ModelOutcome`). `tally`
    counts what it writes (cells, cached chunks)."""
    started = time.perf_counter()
    timing: dict[str, float] = {}
    before = _since_process_start() if tally is None or not tally.caches else None  # a job's first model: the process so far
    if before is not None:  # (the interpreter, its imports, submitit's unpickling)
        timing["before_s"] = before
    store = ResultsStore(task.store)
    model = task.model
    job_id = _job_id()
    owner = Owner.here(task.run_id, model.index, job_id, task.attempt)
    record = _Record(store, task, job_id)
    outcome = ModelOutcome(model.index, model.label, job_id=job_id, attempt=task.attempt, host=owner.host)
    record.update()
    if tally is not None:
        tally.caches.append(store.cache())
    with Heartbeat(store, beat=record.beat) as heart:
        datasets = _datasets(task, store)
        timing["datasets_s"] = time.perf_counter() - started
        known = planned_cells(model, store, datasets)
        if known is not None and all(store.has_cell(c.key) for c in known):  # (a requeued job's finished model): not loaded
            outcome.cells = {c.key: "stored" for c in known}
            outcome.seconds = time.perf_counter() - started
            record.update(state="finished", scored=0, cached=0, seconds=round(outcome.seconds, 1))
            return outcome
        for dtype in model.load_dtypes():
            units = [u for u in model.units() if PRECISIONS[u.precision] == dtype]
            record.update(state="loading", dtype=dtype)
            loading = time.perf_counter()
            lm = _load(task, store, dtype, outcome)
            timing["load_s"] = timing.get("load_s", 0.0) + time.perf_counter() - loading
            if lm is None:
                record.update(state="load-failed", message=outcome.error)
                outcome.seconds = time.perf_counter() - started
                return outcome
            identity = Identity(lm.fingerprint, lm.revision)
            about = {**_model_info(model, lm, dtype), "sanity": _sanity(lm)}
            store.put_resolution(model.resolution_key(dtype), about)
            store.put_label(lm.fingerprint, lm.revision, model.label, model.id)
            store.clear_failure(model.resolution_key(dtype))
            scoring = time.perf_counter()
            runs: dict[tuple[str, str], ChoiceRun] = {}  # a multiple-choice dataset is scored once, for all its conventions
            for unit in units:
                before = outcome.count("scored")
                where = _UnitCells(store, task, owner, about, unit, datasets[unit.dataset.label], identity)
                _score_unit(where, heart, record, lm, outcome, progress, runs)
                if tally is not None:
                    tally.cells += outcome.count("scored") - before
            timing["scoring_s"] = timing.get("scoring_s", 0.0) + time.perf_counter() - scoring
            del lm
            gc.collect()
            _empty_device_cache()
    outcome.seconds = time.perf_counter() - started
    timing = {k: round(v, 2) for k, v in timing.items()}
    record.update(state="finished", scored=outcome.count("scored"), cached=outcome.cached, seconds=round(outcome.seconds, 1), timing=timing)
    return outcome


def _since_process_start() -> float | None:
    """Seconds since this process started (Linux's /proc; None elsewhere): a job's interpreter, imports and unpickling."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _datasets(task: ModelTask, store: ResultsStore) -> dict[str, PairDataset | ChoiceDataset]:
    from biaslens.data.datasets import load_dataset

    found = {}
    for d in task.model.datasets:
        dataset = load_dataset(d.name, data_dir=task.data_dir, download=task.download)
        store.put_dataset(dataset)
        found[d.label] = dataset
    return found


def _load(task: ModelTask, store: ResultsStore, dtype: str, outcome: ModelOutcome) -> Any:
    """The model in `dtype`, or None with its one-line error recorded in the store and the outcome."""
    from biaslens.engine.models import load_model

    model = task.model
    try:
        lm = load_model(model.id, device=model.device, dtype=dtype, revision=model.revision, allow_pickle=model.allow_pickle)
        kind = getattr(lm, "kind", "masked")
        if model.kind is not None and kind != model.kind:
            raise BiaslensError(f"{model.label} is a {kind} language model, but the plan says {model.kind}: correct its kind.")
        return lm
    except Exception as exc:  # anything that stops it loading: its one line is the record
        outcome.state, outcome.error = "load-failed", first_line(exc)
        store.put_failure(
            model.resolution_key(dtype),
            {
                "id": model.id,
                "revision": model.revision,
                "label": model.label,
                "dtype": dtype,
                "error": outcome.error,
                "error_type": type(exc).__name__,
                "run_id": task.run_id,
                "job_id": outcome.job_id,
                "attempt": task.attempt,
            },
        )
        return None


def _model_info(model: ZooModel, lm: Any, dtype: str) -> dict[str, Any]:
    return {
        "id": model.id,
        "label": model.label,
        "revision": lm.revision,
        "fingerprint": lm.fingerprint,
        "source": lm.source,
        "kind": getattr(lm, "kind", "masked"),
        "family": model.family or lm.model_type,
        "model_type": lm.model_type,
        "parameters": int(sum(p.numel() for p in lm.model.parameters())),
        "dtype": dtype,
        "device": str(lm.device),
    }


def _sanity(lm: Any) -> dict[str, Any]:
    """The model's sanity verdict as `biaslens.evaluate` gives it (`model_verdict`): every cell of the model keeps it, and
    the leaderboard, `zoo merge` and `zoo status` say it beside its scores. A check that fails is "not checked", with why."""
    from dataclasses import asdict

    from biaslens.analyses.sanity import model_verdict

    try:
        return asdict(model_verdict(lm))
    except Exception as exc:  # the scores do not depend on it: the job goes on, and the cells say it was not checked
        return {"status": "", "message": f"Not checked: {first_line(exc)}"}


def evaluate_options(model: ZooModel, unit: Unit) -> dict[str, Any]:
    """The keywords of `biaslens.evaluate` for a unit (the model and dataset aside): its compat mode and pairs, its
    precision when bf16-rescore, its convention when not the default, the model's batch and chunk sizes when set."""
    options: dict[str, Any] = {"compat": unit.compat, **unit.dataset.selection_kwargs()}
    if unit.precision == "bf16-rescore":
        options["precision"] = "bf16-rescore"
    if unit.convention != DEFAULT_CONVENTION:
        options["convention"] = unit.convention
    if model.batch_tokens is not None:
        options["batch_tokens"] = model.batch_tokens
    if model.chunk_pairs is not None:
        options["chunk_pairs"] = model.chunk_pairs
    return options


def _score_unit(
    cells: _UnitCells,
    heart: Heartbeat,
    record: _Record,
    lm: Any,
    outcome: ModelOutcome,
    progress: Callable[[str, float, int], None] | None,
    runs: dict[tuple[str, str], ChoiceRun],
) -> None:
    from biaslens.engine.evaluation import evaluate
    from biaslens.engine.pairs import available_metrics

    store, task, owner, unit, dataset = cells.store, cells.task, cells.owner, cells.unit, cells.dataset
    kind = getattr(lm, "kind", "masked")
    wanted = unit_metrics(unit, kind)
    keys = {m: cell_key(cells.fields(m)) for m in wanted}
    if unit.dataset.family is not None:  # a multiple-choice dataset: masked and causal models score it, every statistic
        usable, unavailable = list(wanted), {}
    elif unit.convention != DEFAULT_CONVENTION and not getattr(lm, "takes_first_token", False):  # a peer's convention sets a first-token policy
        usable, unavailable = [], {m: f"the {unit.convention} convention scores causal language models" for m in wanted}
    else:
        usable, unavailable = available_metrics(lm, list(wanted))
    for metric, reason in unavailable.items():
        cells.settle_unavailable(metric, reason, outcome)
    todo = []
    for metric in usable:
        key = keys[metric]
        if store.has_cell(key):
            outcome.cells[key] = "stored"
        elif not store.try_lock(key, owner):
            outcome.cells[key] = "held"
        elif store.has_cell(key):  # finished by another run between the look and the lock
            store.release(key, owner)
            outcome.cells[key] = "stored"
        else:
            todo.append(metric)
    if not todo:
        return
    locked = [keys[m] for m in todo]
    heart.hold(locked)
    label = unit.describe()
    record.update(state="scoring", unit=label, metrics=todo, done=0, total=None)

    def report(done: float, total: int) -> None:
        record.update(force=False, done=round(done, 1), total=total)
        if progress is not None:
            progress(label, done, total)

    try:
        started = time.perf_counter()
        try:
            if unit.dataset.family is not None:
                from biaslens.zoo.choicecells import records_frame, statistic_blocks

                run = _choice_run(cells, lm, runs, report)
                records = records_frame(run, unit.convention)
                blocks = statistic_blocks(unit.convention, unit.dataset.family, records)
                seconds = time.perf_counter() - started
                for metric in todo:
                    outcome.cells[keys[metric]] = cells.write_choice(metric, run, records, blocks.get(metric), seconds, outcome)
                return
            pairs = cast("PairDataset", dataset)
            result = evaluate(lm, pairs, todo, cache=store.cache(), progress=report, **evaluate_options(task.model, unit))
        except BiaslensError as exc:  # this model cannot score this dataset (e.g. every pair encodes to the same tokens)
            for metric in todo:
                cells.settle_unavailable(metric, first_line(exc), outcome, locked=True)
            return
        outcome.cached += result.cached
        seconds = time.perf_counter() - started
        for metric in todo:
            cells.write(metric, result, seconds)
            outcome.cells[keys[metric]] = "scored"
    finally:
        for key in locked:
            store.release(key, owner)
        heart.drop(locked)
        record.update(done=None, total=None)


def _choice_run(cells: _UnitCells, lm: Any, runs: dict[tuple[str, str], ChoiceRun], report: Callable[[float, int], None]) -> ChoiceRun:
    """The unit's multiple-choice run (`evaluate_choices` over its items, every choice convention of the model that
    applies): scored at the first unit of its dataset and precision, read by the others."""
    from biaslens.choices.evaluation import evaluate_choices
    from biaslens.engine.evaluation import select_pairs

    unit, model = cells.unit, cells.task.model
    found = runs.get((unit.dataset.label, unit.precision))
    if found is None:
        dataset = cast("ChoiceDataset", cells.dataset)
        chosen = select_pairs(cast(Any, list(dataset.items)), **unit.dataset.selection_kwargs())
        dataset = replace(dataset, items=tuple(chosen))
        options: dict[str, Any] = {"batch_tokens": model.batch_tokens, "chunk_items": model.chunk_pairs}
        conventions = list(model.choice_conventions_of(dataset.family))
        found = evaluate_choices(lm, dataset, conventions, cache=cells.store.cache(), progress=report, **options)
        runs[(unit.dataset.label, unit.precision)] = found
    return found


def _run_block(task: ModelTask, owner: Owner, seconds: float | None = None, cached: int | None = None) -> dict[str, Any]:
    from datetime import datetime, timezone

    block: dict[str, Any] = {
        "run_id": task.run_id,
        "job_id": owner.job_id,
        "attempt": task.attempt,
        "host": owner.host,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if seconds is not None:
        block["seconds"] = round(seconds, 3)
    if cached is not None:
        block["cached_records"] = cached
    return block


def _dataset_block(unit: Unit, dataset: PairDataset | ChoiceDataset, scored: int | None) -> dict[str, Any]:
    what = "pairs" if unit.dataset.family is None else "items"
    return {
        "name": dataset.name,
        "label": unit.dataset.label,
        "path": str(dataset.path),
        "sha256": dataset_sha256(dataset),
        f"{what}_total": len(dataset),
        f"{what}_scored": scored,
        "selection": unit.dataset.selection,
        **({"family": unit.dataset.family} if unit.dataset.family is not None else {}),
    }


@dataclass(frozen=True)
class _UnitCells:
    """Where the cells of one unit (a dataset under one convention, precision and compat mode) of the model go, and
    what each records: the store, the task and its owner, the model's block, the unit, its dataset, the model's identity."""

    store: ResultsStore
    task: ModelTask
    owner: Owner
    about: dict[str, Any]
    unit: Unit
    dataset: PairDataset | ChoiceDataset
    identity: Identity

    def fields(self, metric: str) -> dict[str, Any]:
        return fields_of(self.identity, self.unit, metric, dataset_sha256(self.dataset))

    def write_choice(
        self, statistic: str, run: ChoiceRun, records: pd.DataFrame, block: dict[str, Any] | None, seconds: float, outcome: ModelOutcome
    ) -> str:
        """Record a multiple-choice cell (`biaslens.zoo.choicecells`): its statistic's `block` and the convention's
        per-item `records`; one with no items for it (no block) is settled as unavailable. Its fate ("scored", ...)."""
        from biaslens.zoo.choicecells import CHOICE_KIND

        convention = self.unit.convention
        if block is None:
            self.settle_unavailable(statistic, f"{self.unit.dataset.label} has no items for {statistic} under {convention}", outcome, locked=True)
            return "unavailable"
        reading = run.summary["conventions"][convention]
        fields = self.fields(statistic)
        self.store.write_cell(
            {
                "key": cell_key(fields),
                "status": "done",
                "kind": CHOICE_KIND,
                "fields": fields,
                "model": self.about,
                "dataset": _dataset_block(self.unit, self.dataset, len(records)),
                "summary": block,
                "convention": {k: reading[k] for k in ("name", "source", "citation", "answer", "items", "not_put", "statistics")},
                "scoring": run.summary.get("scoring", {}),
                "manifest": run.summary.get("manifest", {}),
                "warnings": list(run.dataset.notes),
                "run": _run_block(self.task, self.owner, seconds),
            },
            records,
        )
        return "scored"

    def write(self, metric: str, result: EvaluationResult, seconds: float) -> None:
        """Record a scored cell: its summary, manifest and warnings, and its per-pair records."""
        from biaslens.engine.metrics import pair_columns

        fields = self.fields(metric)
        columns = pair_columns(metric)
        records = cast("pd.DataFrame", result.pairs[["pair_id", columns.stereo, columns.anti, columns.hits, columns.total]]).set_axis(
            list(RECORD_COLUMNS), axis=1
        )
        manifest = dict(result.manifest)
        self.store.write_cell(
            {
                "key": cell_key(fields),
                "status": "done",
                "fields": fields,
                "model": self.about,
                "dataset": _dataset_block(self.unit, self.dataset, len(result.pairs)),
                "summary": result.summary["metrics"][metric],
                "token_identical": result.summary.get("token_identical"),
                "manifest": manifest,
                "warnings": list(result.warnings),
                "run": _run_block(self.task, self.owner, seconds, result.cached),
            },
            records,
        )

    def settle_unavailable(self, metric: str, reason: str, outcome: ModelOutcome, *, locked: bool = False) -> None:
        """Record a cell the model cannot give, with the reason (once: a later run skips it)."""
        store, owner = self.store, self.owner
        fields = self.fields(metric)
        key = cell_key(fields)
        outcome.cells[key], outcome.reasons[key] = "unavailable", reason
        if store.has_cell(key):
            return
        if not locked and not store.try_lock(key, owner):
            return
        try:
            if not store.has_cell(key):
                store.write_cell(
                    {
                        "key": key,
                        "status": "unavailable",
                        "fields": fields,
                        "model": self.about,
                        "dataset": _dataset_block(self.unit, self.dataset, None),
                        "reason": reason,
                        "run": _run_block(self.task, owner),
                    }
                )
        finally:
            if not locked:
                store.release(key, owner)


def _empty_device_cache() -> None:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:  # nothing to free
        pass


__all__ = ["ModelOutcome", "ModelTask", "Tally", "ZooJob", "evaluate_options", "first_line", "run_model"]

"""One model's job: load it once, score every dataset of the plan with it, write each cell to the store.

`run_model(task)` is the whole job (`ZooJob`, the callable submitit runs on a node, calls it). For each dtype the plan
asks of the model, the model loads once; for each unit (dataset, convention, precision, compat mode) the cells already
in the store are skipped, the others are locked, scored in one `biaslens.evaluate` call through the store's result cache
(finished chunks are kept: a killed job's retry loses only its unfinished chunk) and written, then unlocked. Cells
another run holds are left to it ("held"). A model that cannot load is recorded with its one-line error (the job
still ends normally: retrying would fail the same way), and so is a metric the model cannot give ("unavailable").
"""

from __future__ import annotations

import gc
import os
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, cast

from submitit.helpers import Checkpointable

from biaslens.errors import BiaslensError
from biaslens.zoo.cells import Identity, fields_of, unit_metrics
from biaslens.zoo.plan import DEFAULT_CONVENTION, PRECISIONS, Unit, ZooModel
from biaslens.zoo.store import RECORD_COLUMNS, Heartbeat, Owner, ResultsStore, cell_key

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.data.datasets import PairDataset
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
    state: str = "finished"  # or "load-failed"
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


class ZooJob(Checkpointable):
    """The callable submitit runs for a model. Checkpointable: a job that reaches its time limit is requeued by submitit
    with the same task, and resumes from the store (finished cells) and its cache (finished chunks)."""

    def __call__(self, task: ModelTask) -> ModelOutcome:
        return run_model(task)


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


def run_model(task: ModelTask, *, progress: Callable[[str, float, int], None] | None = None) -> ModelOutcome:
    """Score every cell of the task's model that the store lacks; return what became of each (`ModelOutcome`)."""
    started = time.perf_counter()
    store = ResultsStore(task.store)
    model = task.model
    job_id = _job_id()
    owner = Owner.here(task.run_id, model.index, job_id, task.attempt)
    record = _Record(store, task, job_id)
    outcome = ModelOutcome(model.index, model.label, job_id=job_id, attempt=task.attempt, host=owner.host)
    record.update()
    with Heartbeat(store, beat=record.beat) as heart:
        datasets = _datasets(task, store)
        for dtype in model.load_dtypes():
            units = [u for u in model.units() if PRECISIONS[u.precision] == dtype]
            record.update(state="loading", dtype=dtype)
            lm = _load(task, store, dtype, outcome)
            if lm is None:
                record.update(state="load-failed", message=outcome.error)
                outcome.seconds = time.perf_counter() - started
                return outcome
            identity = Identity(lm.fingerprint, lm.revision)
            about = _model_info(model, lm, dtype)
            store.put_resolution(model.resolution_key(dtype), about)
            store.clear_failure(model.resolution_key(dtype))
            for unit in units:
                _score_unit(store, task, owner, heart, record, lm, identity, about, unit, datasets[unit.dataset.label], outcome, progress)
            del lm
            gc.collect()
            _empty_device_cache()
    outcome.seconds = time.perf_counter() - started
    record.update(state="finished", scored=outcome.count("scored"), cached=outcome.cached, seconds=round(outcome.seconds, 1))
    return outcome


def _datasets(task: ModelTask, store: ResultsStore) -> dict[str, PairDataset]:
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
    store: ResultsStore,
    task: ModelTask,
    owner: Owner,
    heart: Heartbeat,
    record: _Record,
    lm: Any,
    identity: Identity,
    about: dict[str, Any],
    unit: Unit,
    dataset: PairDataset,
    outcome: ModelOutcome,
    progress: Callable[[str, float, int], None] | None,
) -> None:
    from biaslens.engine.evaluation import evaluate
    from biaslens.engine.pairs import available_metrics

    kind = getattr(lm, "kind", "masked")
    wanted = unit_metrics(unit, kind)
    cells = _UnitCells(store, task, owner, about, unit, dataset, identity)
    keys = {m: cell_key(cells.fields(m)) for m in wanted}
    if unit.convention != DEFAULT_CONVENTION and kind != "causal":  # a peer's convention for causal models
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
            result = evaluate(lm, dataset, todo, cache=store.cache(), progress=report, **evaluate_options(task.model, unit))
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


def _dataset_block(unit: Unit, dataset: PairDataset, scored: int | None) -> dict[str, Any]:
    return {
        "name": dataset.name,
        "label": unit.dataset.label,
        "path": str(dataset.path),
        "sha256": dataset.sha256,
        "pairs_total": len(dataset),
        "pairs_scored": scored,
        "selection": unit.dataset.selection,
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
    dataset: PairDataset
    identity: Identity

    def fields(self, metric: str) -> dict[str, Any]:
        return fields_of(self.identity, self.unit, metric, self.dataset.sha256)

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


__all__ = ["ModelOutcome", "ModelTask", "ZooJob", "evaluate_options", "first_line", "run_model"]

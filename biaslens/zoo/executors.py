"""Running a plan's jobs with submitit: its Slurm executor (one job array) or its local executor (jobs on this machine).

`run_plan(plan, executor="slurm" | "local", ...)` checks the plan's datasets, skips the models whose cells are all in
the store, submits one job per remaining model (`worker.ZooJob`: the model loads once and scores every dataset), and
(unless `wait=False`) watches them: a job that fails or is killed is submitted again, up to `retries` more times, and
its retry resumes from the store (finished cells) and its result cache (finished chunks); a model that cannot load is
reported with its one-line error while the others go on; cells another run of the plan is scoring are waited for, and
taken over if that run dies. Scheduling is Slurm's (`--max-parallel` is the job array's throttle) or, locally,
submitit's local executor with at most `max_parallel` jobs alive at once.

On a cluster whose Slurm keeps no accounting (`sacct` answers "accounting storage is disabled"), job states are read
from `squeue` (`SqueueFallbackWatcher`), which forgets finished jobs after Slurm's MinJobAge: a job it no longer lists
and that left no result counts as ended without one.
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from biaslens.errors import InputError
from biaslens.zoo.cells import load_datasets, planned_cells
from biaslens.zoo.plan import EXECUTORS, ZooModel, ZooPlan
from biaslens.zoo.store import ResultsStore
from biaslens.zoo.worker import ModelOutcome, ModelTask, ZooJob, first_line

#: Seconds between two looks at the jobs; Slurm itself is asked at most every `SLURM_POLL_S`.
POLL_S = 1.0
SLURM_POLL_S = 10
#: Seconds between two progress lines while jobs run.
PROGRESS_INTERVAL_S = 30.0

Log = Callable[[str], None]


@dataclass(frozen=True)
class ExecutorOptions:
    """Where and how the jobs run; `from_plan` takes the plan's `[slurm]` / `[local]` and the command line's overrides."""

    kind: str = "local"
    partition: str | None = None
    gpus_per_job: int | None = None
    cpus_per_job: int | None = None
    mem_gb: float | None = None
    time_min: int = 24 * 60
    max_parallel: int | None = None
    additional: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_plan(cls, plan: ZooPlan, kind: str, **overrides: Any) -> ExecutorOptions:
        if kind not in EXECUTORS:
            raise InputError(f"Unknown executor {kind!r}: choose local or slurm.")
        if kind == "slurm":
            s = plan.slurm
            base = cls("slurm", s.partition, s.gpus_per_job, s.cpus_per_job, s.mem_gb, s.time_min, s.max_parallel, dict(s.additional))
        else:
            loc = plan.local
            base = cls("local", gpus_per_job=loc.gpus_per_job, time_min=loc.time_min, max_parallel=loc.max_parallel)
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})


@dataclass
class ModelReport:
    """What became of a model in a run.

    `state`: "done" (every cell in the store), "in store" (nothing to do), "load-failed", "failed" (its job failed
    more often than the retries allow), "incomplete" (cells left that no job could score), "submitted" (not waited for).
    """

    index: int
    label: str
    state: str
    error: str | None = None
    attempts: int = 0
    job_ids: list[str] = field(default_factory=list)
    scored: int = 0
    stored: int = 0
    unavailable: int = 0
    cached: int = 0
    cells: int | None = None


@dataclass
class RunReport:
    """A run of a plan: its id (None when there was nothing to run), the store, each model's report."""

    run_id: str | None
    store: Path
    models: list[ModelReport]

    @property
    def ok(self) -> bool:
        return all(m.state in ("done", "in store", "submitted") for m in self.models)


def _biaslens_path() -> str:
    """The folder that holds the `biaslens` package (for the jobs' PYTHONPATH: a checkout works as well as an install)."""
    return str(Path(__file__).resolve().parents[2])  # biaslens/zoo/executors.py


def _setup_lines() -> list[str]:
    import shlex

    return [f"export PYTHONPATH={shlex.quote(_biaslens_path())}${{PYTHONPATH:+:$PYTHONPATH}}"]


# ---------------------------------------------------------------------------------------
# submitit's executors
# ---------------------------------------------------------------------------------------


def _slurm_classes() -> tuple[type, type]:
    """submitit's Slurm job and executor, with a watcher that falls back on squeue where sacct has no accounting."""
    from submitit.slurm.slurm import SlurmExecutor, SlurmInfoWatcher, SlurmJob

    class SqueueFallbackWatcher(SlurmInfoWatcher):
        """sacct where the cluster keeps accounting; squeue where it does not (then a job squeue forgot is "GONE")."""

        def update(self) -> None:
            command = self._make_command()
            if command is None:
                return
            self._num_calls += 1
            try:
                output = subprocess.run(command, capture_output=True, check=True, timeout=60).stdout
                info = self.read_info(output)
            except (subprocess.SubprocessError, OSError):
                info = self._from_squeue()
            self._info_dict.update(info)
            self._last_status_check = time.time()
            for job_id in self._registered - self._finished:
                if self.is_done(job_id, mode="cache"):
                    self._finished.add(job_id)

        def _from_squeue(self) -> dict[str, dict[str, str]]:
            try:
                output = subprocess.run(
                    ["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T"], capture_output=True, check=True, timeout=60, text=True
                ).stdout
            except (subprocess.SubprocessError, OSError):
                return {}
            info = self.read_info("JobID|State\n" + output)
            for job_id in self._registered - self._finished:
                if job_id not in info:
                    info[job_id] = {"JobID": job_id, "State": "GONE"}
            return info

    class ZooSlurmJob(SlurmJob):
        watcher = SqueueFallbackWatcher(delay_s=SLURM_POLL_S)

    class ZooSlurmExecutor(SlurmExecutor):
        job_class = ZooSlurmJob

    return ZooSlurmJob, ZooSlurmExecutor


def make_executor(options: ExecutorOptions, folder: Path) -> Any:
    """submitit's executor for `options`, writing its files (pickles, logs) to `folder`."""
    if options.kind == "slurm":
        import shutil

        if shutil.which("sbatch") is None:
            raise InputError(
                "--executor slurm needs Slurm's sbatch on this machine's PATH: run it on a cluster's login node, or use --executor local."
            )
        _, executor_class = _slurm_classes()
        executor = executor_class(folder=folder, python=sys.executable)
        params: dict[str, Any] = {"job_name": "biaslens-zoo", "time": options.time_min, "nodes": 1, "ntasks_per_node": 1, "setup": _setup_lines()}
        if options.partition:
            params["partition"] = options.partition
        if options.gpus_per_job:
            params["gpus_per_node"] = options.gpus_per_job
        if options.cpus_per_job:
            params["cpus_per_task"] = options.cpus_per_job
        if options.mem_gb:
            params["mem"] = f"{math.ceil(options.mem_gb * 1024)}M"
        if options.max_parallel:
            params["array_parallelism"] = options.max_parallel
        if options.additional:
            params["additional_parameters"] = dict(options.additional)
        executor.update_parameters(**params)
        return executor
    from submitit import LocalExecutor

    executor = LocalExecutor(folder=folder)
    gpus = options.gpus_per_job if options.gpus_per_job is not None else _local_gpus()
    executor.update_parameters(timeout_min=options.time_min, gpus_per_node=gpus, setup=_setup_lines())
    return executor


def _local_gpus() -> int:
    import torch

    return torch.cuda.device_count()


def _as_zoo_jobs(jobs: Sequence[Any], folder: Path) -> list[Any]:
    """submitit's Slurm jobs (its job arrays make plain ones) as ours, whose watcher falls back on squeue."""
    job_class, _ = _slurm_classes()
    return [job if isinstance(job, job_class) else job_class(folder=folder, job_id=job.job_id) for job in jobs]


# ---------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------


@dataclass
class _Tracked:
    task: ModelTask
    report: ModelReport
    job: Any = None
    waiting_since: float | None = None


def run_plan(
    plan: ZooPlan,
    *,
    executor: str = "local",
    options: ExecutorOptions | None = None,
    retries: int | None = None,
    wait: bool = True,
    log: Log | None = None,
    poll_s: float = POLL_S,
) -> RunReport:
    """Run the plan's missing cells as jobs (one per model) and, with `wait`, see them through; see the module."""
    say = log or (lambda line: None)
    options = options or ExecutorOptions.from_plan(plan, executor)
    retries = plan.retries if retries is None else retries
    for note in plan.notes:
        say(f"Note: {note}")
    store = ResultsStore(plan.store, create=True)
    datasets = load_datasets(plan)
    for dataset in datasets.values():
        store.put_dataset(dataset)
    reports: list[ModelReport] = []
    todo: list[_Tracked] = []
    for model in plan.models:
        cells = planned_cells(model, store, datasets)
        if cells is not None and all(store.has_cell(c.key) for c in cells):
            reports.append(ModelReport(model.index, model.label, "in store", stored=len(cells), cells=len(cells)))
            continue
        report = ModelReport(model.index, model.label, "submitted", cells=len(cells) if cells is not None else None)
        reports.append(report)
        todo.append(_Tracked(ModelTask(str(store.root), "", model, plan.data_dir, plan.download), report))
    if not todo:
        say(f"Every cell of the plan is in {store.root}: nothing to run.")
        return RunReport(None, store.root, reports)
    run_id = store.new_run(
        {
            "plan": str(plan.path) if plan.path else None,
            "plan_sha256": plan.sha256,
            "executor": options.kind,
            "options": {k: v for k, v in vars(options).items() if v not in (None, {}, [])},
            "models": [{"index": t.task.model.index, "label": t.task.model.label, "id": t.task.model.id} for t in todo],
        }
    )
    for t in todo:
        t.task = replace(t.task, run_id=run_id)
    folder = store.run_dir(run_id) / "submitit"
    submitter = make_executor(options, folder)
    say(f"Run {run_id}: {len(todo)} of {len(plan.models)} models to score ({options.kind} executor); store {store.root}")
    driver = _Driver(plan, store, datasets, submitter, options, retries, say, folder, todo)
    driver.submit(todo)
    if not wait:
        say("Not waiting: `biaslens zoo status` follows the jobs; `biaslens zoo run` again resumes what they leave.")
        return RunReport(run_id, store.root, reports)
    driver.watch(poll_s)
    return RunReport(run_id, store.root, reports)


class _Driver:
    """Submits the jobs, watches them, retries the failed ones and settles each model's report."""

    def __init__(
        self,
        plan: ZooPlan,
        store: ResultsStore,
        datasets: Any,
        submitter: Any,
        options: ExecutorOptions,
        retries: int,
        say: Log,
        folder: Path,
        tracked: list[_Tracked],
    ):
        self.plan, self.store, self.datasets = plan, store, datasets
        self.submitter, self.options, self.retries, self.say, self.folder = submitter, options, retries, say, folder
        self.tracked = tracked
        self.queue: list[_Tracked] = []
        self.last_progress = time.monotonic()

    # -- submitting ------------------------------------------------------------------
    def submit(self, tracked: list[_Tracked]) -> None:
        if self.options.kind == "slurm":
            self._submit_now(tracked)
        else:  # submitit's local executor starts every job at once: keep at most max_parallel alive
            self.queue.extend(tracked)
            self._fill()

    def _fill(self) -> None:
        limit = self.options.max_parallel or 1
        alive = sum(1 for t in self.tracked if t.job is not None)
        room = max(0, limit - alive)
        starting, self.queue = self.queue[:room], self.queue[room:]
        if starting:
            self._submit_now(starting)

    def _submit_now(self, tracked: list[_Tracked]) -> None:
        job = ZooJob()
        if len(tracked) == 1:
            jobs = [self.submitter.submit(job, tracked[0].task)]
        else:
            jobs = self.submitter.map_array(job, [t.task for t in tracked])
        if self.options.kind == "slurm":
            jobs = _as_zoo_jobs(jobs, self.folder)
        for t, j in zip(tracked, jobs):
            t.job, t.waiting_since = j, None
            t.report.attempts = t.task.attempt
            t.report.job_ids.append(str(j.job_id))
            self._record(t, "submitted")
            self.say(f"  {t.task.model.label}: job {j.job_id} submitted" + (f" (attempt {t.task.attempt})" if t.task.attempt > 1 else ""))

    def _record(self, t: _Tracked, state: str, message: str | None = None) -> None:
        record = {"label": t.task.model.label, "state": state, "attempt": t.task.attempt, "job_id": str(t.job.job_id) if t.job is not None else None}
        if message:
            record["message"] = message
        with contextlib.suppress(OSError, InputError):
            self.store.write_job(t.task.run_id, t.task.model.index, record, side="driver")

    # -- watching --------------------------------------------------------------------
    def watch(self, poll_s: float) -> None:
        """Until every model is settled: finished jobs read, failed ones retried, waiting ones checked, local jobs started."""
        open_ = list(self.tracked)
        while open_:
            time.sleep(poll_s)
            for t in list(open_):
                if t.job is not None:
                    if t.job.done():
                        self._finished(t)
                elif t.waiting_since is not None:
                    self._check_waiting(t)
                if t.report.state != "submitted":
                    open_.remove(t)
            if self.options.kind == "local":
                self._fill()
            self._progress(open_)

    def _finished(self, t: _Tracked) -> None:
        job, t.job = t.job, None
        try:  # one wait for its result file (submitit gives a slow shared filesystem 15 s), then the file read
            error = job.exception()
            outcome: ModelOutcome | None = job.result() if error is None else None
        except Exception as exc:  # its files are gone, or unreadable
            error, outcome = exc, None
        if outcome is None:  # the job raised, was killed, or left no result
            self._retry(t, _job_failure(job, error))
            return
        t.report.cached += outcome.cached
        t.report.scored += outcome.count("scored")
        if outcome.state == "load-failed":
            t.report.state, t.report.error = "load-failed", outcome.error
            self._record(t, "load-failed", outcome.error)
            self.say(f"  {t.task.model.label}: could not load: {outcome.error}")
            return
        self._settle(t, outcome)

    def _unsettled(self, model: ZooModel) -> tuple[list[str], int] | None:
        cells = planned_cells(model, self.store, self.datasets)
        if cells is None:
            return None
        return [c.key for c in cells if not self.store.has_cell(c.key)], len(cells)

    def _settle(self, t: _Tracked, outcome: ModelOutcome | None = None) -> None:
        found = self._unsettled(t.task.model)
        if found is None:  # cannot happen after a job loaded the model; reported rather than looped on
            t.report.state, t.report.error = "incomplete", "its cells could not be listed"
            return
        left, total = found
        t.report.cells = total
        if not left:
            t.report.state = "done"
            t.report.unavailable = sum(1 for c in planned_cells(t.task.model, self.store, self.datasets) or [] if self._unavailable(c.key))
            t.report.stored = total - t.report.scored - t.report.unavailable
            self._record(t, "done")
            extra = f", {t.report.cached:,} records read back from a killed attempt's chunks" if t.report.cached else ""
            self.say(f"  {t.task.model.label}: done ({t.report.scored} cells scored{extra})")
            return
        held = self.store.live_locks(left)
        if len(held) == len(left):
            holders = sorted({h.owner.run_id for h in held.values()})
            if t.waiting_since is None:
                self.say(f"  {t.task.model.label}: waiting for {len(left)} cells another run is scoring ({', '.join(holders)})")
                self._record(t, "waiting", f"cells held by run {', '.join(holders)}")
            t.waiting_since = t.waiting_since or time.monotonic()
            return
        self._retry(t, f"{len(left)} cells left unscored" + (f" ({outcome.count('held')} were held by another run that stopped)" if outcome else ""))

    def _unavailable(self, key: str) -> bool:
        with contextlib.suppress(InputError):
            return self.store.read_cell(key).get("status") == "unavailable"
        return False

    def _check_waiting(self, t: _Tracked) -> None:
        found = self._unsettled(t.task.model)
        if found is None:
            return
        left, _ = found
        if not left or len(self.store.live_locks(left)) < len(left):
            t.waiting_since = None
            self._settle(t)

    def _retry(self, t: _Tracked, why: str) -> None:
        if t.task.attempt > self.retries:
            t.report.state, t.report.error = "failed", why
            self._record(t, "failed", why)
            self.say(f"  {t.task.model.label}: failed after {t.task.attempt} attempt{'s' if t.task.attempt > 1 else ''}: {why}")
            return
        self._record(t, "retrying", why)
        self.say(f"  {t.task.model.label}: {why}; submitting it again (attempt {t.task.attempt + 1} of {self.retries + 1})")
        t.task = t.task.next_attempt()
        self.submit([t])

    def _progress(self, open_: list[_Tracked]) -> None:
        if time.monotonic() - self.last_progress < PROGRESS_INTERVAL_S or not open_:
            return
        self.last_progress = time.monotonic()
        parts = []
        for t in open_:
            worker = self.store.job(t.task.run_id, t.task.model.index, "worker") or {}
            if t.job is None and t.waiting_since is not None:
                parts.append(f"{t.task.model.label} waiting")
            elif worker.get("state") == "scoring" and worker.get("total"):
                parts.append(f"{t.task.model.label} {100 * (worker.get('done') or 0) / worker['total']:.0f}% of {worker.get('unit')}")
            elif t.job is None:
                parts.append(f"{t.task.model.label} queued")
            else:
                parts.append(f"{t.task.model.label} {worker.get('state', 'pending')}")
        self.say("  … " + "; ".join(parts))


def _job_failure(job: Any, error: BaseException | None) -> str:
    """Why a job ended without a result, in one line, from the error submitit gave for it."""
    from submitit.core.utils import FailedJobError, UncompletedJobError

    if error is not None and not isinstance(error, (FailedJobError, UncompletedJobError)):  # the job's files are gone
        return f"job {job.job_id} ended without a result ({first_line(error)})"
    text = str(error or "")
    if "failed during processing with trace" in text:
        lines = [line.strip() for line in text.split("----------------------")[1].splitlines() if line.strip()] if "------" in text else []
        return f"job {job.job_id} failed: {lines[-1] if lines else 'see its log'}"
    state = ""
    with contextlib.suppress(Exception):
        state = str(job.state)
    return f"job {job.job_id} ended without a result" + (f" (state {state})" if state and state != "UNKNOWN" else "")


__all__ = ["ExecutorOptions", "ModelReport", "RunReport", "make_executor", "run_plan"]

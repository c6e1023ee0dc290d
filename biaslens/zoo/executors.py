"""Running a plan's jobs with submitit: its Slurm executor (job arrays) or its local executor (jobs on this machine).

`run_plan(plan, executor="slurm" | "local", ...)` checks the plan's datasets, skips the models whose cells are all in
the store, and makes the jobs (`plan_jobs`): one per model, or `models_per_job` small models in one job, each with its
model's resources (the plan's `[slurm]`, the command line's options, the model's own `slurm` table). Jobs asking for
the same resources go out as one sbatch job array. Before anything is written, Slurm is asked whether it would accept
each kind of job (`sbatch --test-only`): a refusal is one line naming the option at fault (`SubmitError`). With
`dry_run` nothing is submitted: the jobs, their cells and the sbatch script each would get (`DryRun`).

Unless `wait=False`, the driver then watches the jobs: a job that fails or is killed is submitted again, up to
`retries` more times, and its retry resumes from the store (finished cells) and its result cache (finished chunks); a
model that cannot load is reported with its one-line error while the others go on; cells another run of the plan is
scoring are waited for, and taken over if that run dies. `max_parallel` bounds every job of the run at once, retries
included: an array's throttle (`%N`) counts against it, and a retry goes out only when a slot is free (an array's
throttle is raised as its slots free up). A job Slurm warns before its time limit is requeued by submitit and resumes,
if it has scored something (`worker.ZooJob`); one warned before that is not retried.

A run adopts the live jobs of earlier runs on the same store (their records, and `squeue` or the process table): it
follows them instead of submitting the same models again. When the driver is stopped (Ctrl-C, SIGTERM, a hang-up:
SIGHUP) it cancels its jobs, or with `on_stop="keep"` leaves them running, and says which in one line
(`DriverStopped`); the next run adopts jobs left running.

On a cluster whose Slurm keeps no accounting (`sacct` answers "accounting storage is disabled"), job states are read
from `squeue` (`SqueueFallbackWatcher`), which forgets finished jobs after Slurm's MinJobAge: a job it no longer lists
and that left no result counts as ended without one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from biaslens.errors import BiaslensError, InputError, OutputError
from biaslens.zoo.cells import PlannedCell, keep_labels, load_datasets, plan_notes, planned_cells
from biaslens.zoo.plan import EXECUTORS, GPU_KEYS, LocalSettings, SlurmSettings, ZooModel, ZooPlan, signal_lead_s, slurm_time_problem
from biaslens.zoo.store import ResultsStore
from biaslens.zoo.worker import ModelOutcome, ModelTask, ZooJob, first_line

#: Seconds between two looks at the jobs; Slurm itself is asked at most every `SLURM_POLL_S`.
POLL_S = 1.0
SLURM_POLL_S = 10
#: Seconds between two progress lines while jobs run.
PROGRESS_INTERVAL_S = 30.0
#: How often submitit may requeue a job that reaches its time limit: each requeue needs progress (`worker.ZooJob`).
MAX_REQUEUES = 1000
#: The states of a Slurm job that is queued or running (squeue's words): a new run adopts such a job of an earlier run.
ALIVE_STATES = frozenset(
    {"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SUSPENDED", "CONFIGURING", "COMPLETING", "SIGNALING", "STAGE_OUT"}
)
#: What the driver does with its jobs when it is stopped: cancel them, or keep them running (the next run adopts them).
ON_STOP = ("cancel", "keep")
STOP_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)

Log = Callable[[str], None]


class SubmitError(InputError):
    """A job the cluster refuses (sbatch's error, with the plan's option at fault) or whose files cannot be written, in
    one line; nothing is left behind (no run folder, no job)."""


class DriverStopped(BiaslensError):
    """The driver was stopped by a signal (`signum`); the message says what became of its jobs."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = signum


# ---------------------------------------------------------------------------------------
# Options: the plan's, the command line's, each model's own
# ---------------------------------------------------------------------------------------

_LOCAL_OPTIONS = tuple(f.name for f in fields(LocalSettings))
_SLURM_OPTIONS = tuple(f.name for f in fields(SlurmSettings))


@dataclass(frozen=True)
class ExecutorOptions:
    """Where and how the jobs run: the executor, and its settings (`from_plan`: the plan's `[slurm]` / `[local]` with the
    command line's overrides). A model's own `slurm` table replaces these for its jobs (`settings`)."""

    kind: str = "local"
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    local: LocalSettings = field(default_factory=LocalSettings)

    @classmethod
    def from_plan(cls, plan: ZooPlan, kind: str, **overrides: Any) -> ExecutorOptions:
        """`overrides` by `SlurmSettings` / `LocalSettings` field (None: the plan's); those the executor has no use for
        (`cpus_per_job` locally) are ignored."""
        if kind not in EXECUTORS:
            raise InputError(f"Unknown executor {kind!r}: choose local or slurm.")
        given = {k: v for k, v in overrides.items() if v is not None}
        unknown = [k for k in given if k not in _SLURM_OPTIONS + _LOCAL_OPTIONS]
        if unknown:
            raise TypeError(f"unknown executor option {unknown[0]!r}")
        if kind == "slurm":
            problem = slurm_time_problem(given["time_min"]) if "time_min" in given else None
            if problem:
                raise InputError(f"--time: {problem}.")
            return cls("slurm", slurm=plan.slurm.with_overrides({k: v for k, v in given.items() if k in _SLURM_OPTIONS}))
        return cls("local", local=replace(plan.local, **{k: v for k, v in given.items() if k in _LOCAL_OPTIONS}))

    @property
    def max_parallel(self) -> int | None:
        return self.slurm.max_parallel if self.kind == "slurm" else self.local.max_parallel

    @property
    def models_per_job(self) -> int:
        return self.slurm.models_per_job if self.kind == "slurm" else self.local.models_per_job

    @property
    def partition(self) -> str | None:
        return self.slurm.partition

    def settings(self, model: ZooModel) -> SlurmSettings:
        """The Slurm settings of `model`'s jobs: these, with its own `slurm` table's."""
        return self.slurm.with_overrides(model.slurm)

    def time_min(self, model: ZooModel) -> int:
        return self.settings(model).time_min if self.kind == "slurm" else self.local.time_min

    def parameters(self, model: ZooModel, local_gpus: Callable[[], int] | None = None) -> dict[str, Any]:
        """submitit's parameters for `model`'s job: sbatch's options (Slurm), or the local executor's."""
        if self.kind == "slurm":
            return slurm_parameters(self.settings(model), model.device)
        gpus = self.local.gpus_per_job if self.local.gpus_per_job is not None else (local_gpus or _local_gpus)()
        return {"timeout_min": self.local.time_min, "gpus_per_node": gpus, "setup": _setup_lines()}

    def described(self) -> dict[str, Any]:
        """The options as a run's record holds them (what was set)."""
        settings = self.slurm if self.kind == "slurm" else self.local
        return {k: v for k, v in vars(settings).items() if v not in (None, {}, [], ())}


def slurm_parameters(settings: SlurmSettings, device: str) -> dict[str, Any]:
    """submitit's Slurm parameters for a job of a model on `device` with these settings."""
    params: dict[str, Any] = {
        "job_name": "biaslens-zoo",
        "time": settings.time_min,
        "nodes": 1,
        "ntasks_per_node": 1,
        "signal_delay_s": signal_lead_s(settings.time_min),
        "setup": [*settings.setup, *_setup_lines()],
        **settings.gpu_request(device),
    }
    if settings.partition:
        params["partition"] = settings.partition
    if settings.cpus_per_job:
        params["cpus_per_task"] = settings.cpus_per_job
    if settings.mem_gb:
        params["mem"] = f"{math.ceil(settings.mem_gb * 1024)}M"
    if settings.additional:
        params["additional_parameters"] = dict(settings.additional)
    return params


def _biaslens_path() -> str:
    """The folder that holds the `biaslens` package (for the jobs' PYTHONPATH: a checkout works as well as an install)."""
    return str(Path(__file__).resolve().parents[2])  # biaslens/zoo/executors.py


def _setup_lines() -> list[str]:
    return [f"export PYTHONPATH={shlex.quote(_biaslens_path())}${{PYTHONPATH:+:$PYTHONPATH}}"]


def _local_gpus() -> int:
    import torch

    return torch.cuda.device_count()


# ---------------------------------------------------------------------------------------
# The jobs of a run
# ---------------------------------------------------------------------------------------


@dataclass
class ModelReport:
    """What became of a model in a run.

    `state`: "done" (every cell in the store), "in store" (nothing to do), "load-failed", "failed" (its job failed
    more often than the retries allow, or was warned before it scored anything), "incomplete" (cells left that no job
    could score), "submitted" (not waited for), "cancelled" / "left running" (the driver was stopped).
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


@dataclass
class PlannedJob:
    """One job of a run before it goes out: its models (several when packed), each one's cells still missing (None:
    known once it loads), submitit's parameters, and their text (`key`: jobs with the same go out as one array)."""

    models: list[ZooModel]
    cells: dict[int, list[PlannedCell] | None]
    parameters: dict[str, Any]
    key: str


def plan_jobs(
    plan: ZooPlan, options: ExecutorOptions, store: ResultsStore | None, datasets: Any
) -> tuple[list[ModelReport], list[PlannedJob], dict[int, int]]:
    """Each model's report so far ("in store" where every cell is there), the jobs of those left (grouped by their
    parameters in the plan's order, `models_per_job` to a job), and the twins: a model whose missing cells are all an
    earlier model's (the same weights under another name) gets no job of its own, by index -> that model's index."""
    reports: list[ModelReport] = []
    twins: dict[int, int] = {}
    claimed: dict[str, int] = {}
    groups: dict[str, list[tuple[ZooModel, list[PlannedCell] | None]]] = {}
    parameters: dict[str, dict[str, Any]] = {}
    local_gpus: list[int] = []

    def gpus() -> int:  # asked once (it imports torch)
        if not local_gpus:
            local_gpus.append(_local_gpus())
        return local_gpus[0]

    for model in plan.models:
        cells = planned_cells(model, store, datasets)
        if cells is not None and store is not None and all(store.has_cell(c.key) for c in cells):
            reports.append(ModelReport(model.index, model.label, "in store", stored=len(cells), cells=len(cells)))
            continue
        missing = [c for c in cells if store is None or not store.has_cell(c.key)] if cells is not None else None
        reports.append(ModelReport(model.index, model.label, "submitted", cells=len(cells) if cells is not None else None))
        owners = {claimed.get(c.key) for c in missing or []}
        if missing and len(owners) == 1 and None not in owners:
            twins[model.index] = next(o for o in owners if o is not None)
            continue
        claimed.update((c.key, model.index) for c in missing or [] if c.key not in claimed)
        params = options.parameters(model, gpus)
        key = json.dumps(params, sort_keys=True, default=str)
        parameters[key] = params
        groups.setdefault(key, []).append((model, missing))
    jobs = []
    size = max(1, options.models_per_job)
    for key, members in groups.items():
        for start in range(0, len(members), size):
            pack = members[start : start + size]
            jobs.append(PlannedJob([m for m, _ in pack], {m.index: c for m, c in pack}, parameters[key], key))
    return reports, jobs, twins


# ---------------------------------------------------------------------------------------
# submitit's executors, sbatch's answers
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
            states = squeue_states()
            if states is None:
                return {}
            info = self.read_info("JobID|State\n" + "".join(f"{i}|{s}\n" for i, s in states.items()))
            for job_id in self._registered - self._finished:
                if job_id not in info:
                    info[job_id] = {"JobID": job_id, "State": "GONE"}
            return info

    class ZooSlurmJob(SlurmJob):
        watcher = SqueueFallbackWatcher(delay_s=SLURM_POLL_S)

    class ZooSlurmExecutor(SlurmExecutor):
        job_class = ZooSlurmJob

    return ZooSlurmJob, ZooSlurmExecutor


def squeue_states() -> dict[str, str] | None:
    """Every job squeue lists (array tasks one by one), with its state; None where squeue cannot be asked."""
    try:
        output = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T"], capture_output=True, check=True, timeout=60, text=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    return {i.strip(): s.strip() for i, _, s in (line.partition("|") for line in output.splitlines()) if i.strip()}


def _need_sbatch() -> None:
    if shutil.which("sbatch") is None:
        raise InputError("--executor slurm needs Slurm's sbatch on this machine's PATH: run it on a cluster's login node, or use --executor local.")


def make_executor(options: ExecutorOptions, folder: Path, parameters: dict[str, Any]) -> Any:
    """submitit's executor for jobs with `parameters`, writing its files (pickles, logs) to `folder`."""
    if options.kind == "slurm":
        _need_sbatch()
        _, executor_class = _slurm_classes()
        executor = executor_class(folder=folder, python=sys.executable, max_num_timeout=MAX_REQUEUES)
        executor.update_parameters(**parameters)
        return executor
    from submitit import LocalExecutor

    executor = LocalExecutor(folder=folder)
    executor.update_parameters(**parameters)
    return executor


def sbatch_script(parameters: dict[str, Any], folder: Path, tasks: int = 1, throttle: int | None = None) -> str:
    """The sbatch script submitit writes for a job (or an array of `tasks`) with these parameters, its files in `folder`."""
    from submitit.slurm.slurm import _make_sbatch_string

    command = " ".join([sys.executable, "-u -m submitit.core._submit", shlex.quote(str(folder))])
    extra: dict[str, Any] = {"map_count": tasks, "array_parallelism": throttle or tasks} if tasks > 1 else {}
    return _make_sbatch_string(command=command, folder=folder, **parameters, **extra)


#: sbatch's refusals (its words) and the options of the plan they are about.
_REFUSALS: tuple[tuple[str, str], ...] = (
    ("generic resource", "gpus"),
    ("gres", "gpus"),
    ("account", "account"),
    ("qos", "qos"),
    ("partition", "partition"),
    ("time limit", "time"),
    ("memory", "mem_gb"),
    ("node configuration", "resources"),
    ("cpu", "cpus_per_job"),
    ("feature", "constraint"),
    ("unrecognized option", "additional"),
    ("invalid option", "additional"),
)


def refusal(text: str, settings: SlurmSettings, device: str) -> str:
    """sbatch's refusal (its error output) as one line: its own words, then the plan's option at fault and its value."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = next((line for line in lines if "error:" in line or "failure" in line or "unrecognized" in line), lines[0] if lines else "no reason given")
    said = re.sub(r"^(sbatch: )?(error: )?(allocation failure: )?", "", said).rstrip(".")
    lowered = said.lower()
    topic = next((option for words, option in _REFUSALS if words in lowered), None)
    return f"sbatch refused the job: {said}" + (f" ({_option_at_fault(topic, settings, device, said)})" if topic else "")


def _option_at_fault(topic: str, settings: SlurmSettings, device: str, said: str) -> str:
    if topic == "gpus":
        if settings.gres:
            return f'gres = "{settings.gres}"'
        if settings.gpus:
            return f'gpus = "{settings.gpus}"'
        if settings.gpus_per_job is not None:
            return f"gpus_per_job = {settings.gpus_per_job}"
        return f'one GPU, the default for device = "{device}": on a cluster without GPUs set device = "cpu" or gpus_per_job = 0'
    if topic == "partition":
        return f'partition = "{settings.partition}"' if settings.partition else "the cluster's default partition"
    if topic == "time":
        return f"time = {settings.time_min} minutes"
    if topic == "mem_gb":
        return f"mem_gb = {settings.mem_gb:g}" if settings.mem_gb else "memory"
    if topic == "cpus_per_job":
        return f"cpus_per_job = {settings.cpus_per_job}" if settings.cpus_per_job else "CPUs"
    if topic == "resources":
        asked = [f"{k} = {v}" for k, v in (("cpus_per_job", settings.cpus_per_job), ("mem_gb", settings.mem_gb)) if v]
        asked += [f"{k} = {getattr(settings, k)!r}" for k in GPU_KEYS if getattr(settings, k) is not None]
        return "no node has " + (", ".join(asked) if asked else "what the job asks for")
    if topic in ("account", "qos", "constraint"):
        value = settings.additional.get(topic)
        return f'additional.{topic} = "{value}"' if value is not None else topic
    named = re.search(r"--([\w-]+)", said)
    if named:
        return f"additional.{named.group(1).replace('-', '_')}: not an sbatch option"
    return "additional"


def check_with_sbatch(options: ExecutorOptions, jobs: Sequence[PlannedJob], plan: ZooPlan) -> None:
    """Ask Slurm whether it would accept each kind of job (`sbatch --test-only`: nothing is submitted); a refusal is a
    `SubmitError` naming the models and the option at fault."""
    _need_sbatch()
    seen: set[str] = set()
    for job in jobs:
        if job.key in seen:
            continue
        seen.add(job.key)
        script = sbatch_script(job.parameters, plan.store / "runs" / "check" / "submitit")
        try:
            done = subprocess.run(["sbatch", "--test-only"], input=script, capture_output=True, text=True, timeout=60)
        except (subprocess.SubprocessError, OSError) as exc:
            raise SubmitError(f"sbatch could not be asked about the jobs ({first_line(exc)}).") from None
        if done.returncode != 0:
            first = job.models[0]
            alike = sum(len(j.models) for j in jobs if j.key == job.key) - 1
            whose = f"models[{first.index}] ({first.label})" + (f" and {alike} more with its resources" if alike else "")
            raise SubmitError(f"{whose}: {refusal(done.stderr or done.stdout, options.settings(first), first.device)}.")


# ---------------------------------------------------------------------------------------
# A dry run
# ---------------------------------------------------------------------------------------


@dataclass
class DryRun:
    """What `zoo run` would submit: each model's report so far, the jobs, and the sbatch script of each kind of job
    (Slurm; by `PlannedJob.key`), or the local executor's parameters."""

    reports: list[ModelReport]
    jobs: list[PlannedJob]
    scripts: dict[str, str]
    checked: dict[str, str | None]  # per kind of job: sbatch --test-only's refusal, None when accepted (absent: not asked)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"Note: {note}" for note in self.notes]
        out += [f"{r.label}: every cell is in the store" for r in self.reports if r.state == "in store"]
        by_key: dict[str, list[int]] = {}
        for number, job in enumerate(self.jobs, 1):
            by_key.setdefault(job.key, []).append(number)
        for number, job in enumerate(self.jobs, 1):
            out.append(f"job {number} of {len(self.jobs)}: " + ", ".join(m.label for m in job.models))
            for model in job.models:
                cells = job.cells[model.index]
                if cells is None:
                    out.append(
                        f"  {model.label}: cells known once it loads ({len(model.units())} units: "
                        + ", ".join(u.describe() for u in model.units())
                        + ")"
                    )
                    continue
                by_unit: dict[str, list[str]] = {}
                for c in cells:
                    by_unit.setdefault(c.unit.describe(), []).append(c.metric)
                out.append(f"  {model.label}: {len(cells)} cells: " + "; ".join(f"{u}: {', '.join(ms)}" for u, ms in by_unit.items()))
        for key, numbers in by_key.items():
            label = f"jobs {', '.join(map(str, numbers))}" if len(numbers) > 1 else f"job {numbers[0]}"
            if key in self.scripts:
                out.append(f"-- the sbatch script of {label}" + (" (one array)" if len(numbers) > 1 else "") + ":")
                out += self.scripts[key].rstrip("\n").splitlines()
            else:
                out.append(f"-- {label}: local executor, {json.dumps(self.jobs[numbers[0] - 1].parameters)}")
            if key in self.checked:
                refused = self.checked[key]
                out.append(f"-- sbatch --test-only: {'refused: ' + refused if refused else 'accepted'}")
        out.append(f"{len(self.jobs)} job{'s' if len(self.jobs) != 1 else ''} would be submitted; nothing was.")
        return out


def dry_run(plan: ZooPlan, options: ExecutorOptions) -> DryRun:
    """The jobs `run_plan` would submit, their cells and scripts; nothing is written or submitted (see the module)."""
    from biaslens.zoo.store import STORE_FILE

    datasets = load_datasets(plan)
    store = ResultsStore(plan.store) if (plan.store / STORE_FILE).exists() else None
    reports, jobs, twins = plan_jobs(plan, options, store, datasets)
    notes = plan_notes(plan, store)
    notes += [f"{plan.model(i).label}: its cells are {plan.model(o).label}'s, scored by that model's job" for i, o in twins.items()]
    scripts: dict[str, str] = {}
    checked: dict[str, str | None] = {}
    folder = plan.store / "runs" / "<run>" / "submitit"
    if options.kind == "slurm":
        counts: dict[str, int] = {}
        for job in jobs:
            counts[job.key] = counts.get(job.key, 0) + 1
        for job in jobs:
            n = counts[job.key]
            scripts.setdefault(job.key, sbatch_script(job.parameters, folder, n, min(n, options.max_parallel or n)))
        if shutil.which("sbatch") is not None:
            for job in jobs:
                if job.key not in checked:
                    try:
                        check_with_sbatch(options, [job], plan)
                        checked[job.key] = None
                    except SubmitError as exc:
                        checked[job.key] = str(exc)
    return DryRun(reports, jobs, scripts, checked, notes)


# ---------------------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------------------


@dataclass
class _Tracked:
    task: ModelTask
    report: ModelReport
    key: str
    job: Any = None
    waiting_since: float | None = None
    adopted_from: str | None = None
    twin: _Tracked | None = None  # the model whose job scores its cells (the same weights under another name)


@dataclass
class _Submission:
    """Jobs that went out together (an array, or one job): their throttle, counted against `max_parallel`."""

    array_id: str | None
    throttle: int
    packs: list[list[_Tracked]]

    def unfinished(self) -> int:
        return sum(1 for pack in self.packs if any(t.job is not None for t in pack))


def run_plan(
    plan: ZooPlan,
    *,
    executor: str = "local",
    options: ExecutorOptions | None = None,
    retries: int | None = None,
    wait: bool = True,
    log: Log | None = None,
    poll_s: float = POLL_S,
    on_stop: str = "cancel",
) -> RunReport:
    """Run the plan's missing cells as jobs and, with `wait`, see them through; see the module."""
    if on_stop not in ON_STOP:
        raise InputError(f"on_stop must be one of {', '.join(ON_STOP)}, not {on_stop!r}.")
    say = _quiet_on_hangup(log or (lambda line: None))
    options = options or ExecutorOptions.from_plan(plan, executor)
    retries = plan.retries if retries is None else retries
    datasets = load_datasets(plan)
    from biaslens.zoo.store import STORE_FILE

    existing = ResultsStore(plan.store) if (plan.store / STORE_FILE).exists() else None
    for note in plan_notes(plan, existing):
        say(f"Note: {note}")
    reports, jobs, twins = plan_jobs(plan, options, existing, datasets)
    if not jobs:
        if existing is not None:
            keep_labels(plan, existing)
        say(f"Every cell of the plan is in {plan.store}: nothing to run.")
        return RunReport(None, existing.root if existing else plan.store, reports)
    if options.kind == "slurm":
        check_with_sbatch(options, jobs, plan)  # before anything is written
    store = existing or ResultsStore(plan.store, create=True)
    for dataset in datasets.values():
        store.put_dataset(dataset)
    keep_labels(plan, store)
    by_index = {r.index: r for r in reports}
    adopted = _adoptable(store, options, [m for j in jobs for m in j.models], plan)
    run_id = store.new_run(
        {
            "plan": str(plan.path) if plan.path else None,
            "plan_sha256": plan.sha256,
            "executor": options.kind,
            "options": options.described(),
            "driver": {"host": socket.gethostname(), "pid": os.getpid()},
            "models": [{"index": m.index, "label": m.label, "id": m.id, "revision": m.revision} for j in jobs for m in j.models]
            + [
                {"index": i, "label": plan.model(i).label, "id": plan.model(i).id, "revision": plan.model(i).revision, "cells_of": o}
                for i, o in twins.items()
            ],
        }
    )
    folder = store.run_dir(run_id) / "submitit"
    driver = _Driver(plan, store, datasets, options, retries, say, folder, run_id)
    driver.parameters = {j.key: j.parameters for j in jobs}
    for job in jobs:
        pack = []
        for model in job.models:
            task = ModelTask(str(store.root), run_id, model, plan.data_dir, plan.download)
            t = _Tracked(task, by_index[model.index], job.key)
            driver.tracked.append(t)
            if model.index in adopted:
                driver.adopt(t, adopted[model.index])
            else:
                pack.append(t)
        if pack:
            driver.queue.append(pack)
    for index, owner in twins.items():
        t = _Tracked(ModelTask(str(store.root), run_id, plan.model(index), plan.data_dir, plan.download), by_index[index], "")
        t.twin = next(o for o in driver.tracked if o.report.index == owner)
        driver.tracked.append(t)
        driver.say(f"  {t.task.model.label}: its cells are {t.twin.task.model.label}'s (the same weights): scored once, by that model's job")
    say(f"Run {run_id}: {len(driver.tracked)} of {len(plan.models)} models to score ({options.kind} executor); store {store.root}")
    with driver.signals(enabled=wait):
        driver.pump(first=True)
        if not wait:
            say("Not waiting: `biaslens zoo status` follows the jobs; `biaslens zoo run` again adopts them and resumes what they leave.")
            return RunReport(run_id, store.root, reports)
        driver.watch(poll_s, on_stop)
    return RunReport(run_id, store.root, reports)


def _quiet_on_hangup(say: Log) -> Log:
    """`say`, silent where its terminal is gone (a hang-up: writing raises)."""

    def quiet(line: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            say(line)

    return quiet


@dataclass(frozen=True)
class _Live:
    """A live job of an earlier run, for a model of this one: its task (that run's), its submitit folder, its id."""

    task: ModelTask
    folder: Path
    job_id: str
    run_id: str
    kind: str


def _adoptable(store: ResultsStore, options: ExecutorOptions, models: Sequence[ZooModel], plan: ZooPlan) -> dict[int, _Live]:
    """The models (by this plan's index) that a live job of an earlier run on this store is scoring: from the runs'
    records of their jobs, and squeue (Slurm) or this machine's processes (local)."""
    wanted = {(m.id, m.revision): m for m in models}
    candidates: dict[int, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {}
    for run in reversed(store.runs()):  # the newest record of a model wins
        if run.get("executor") != options.kind:
            continue
        for entry in run.get("models", []):
            model = wanted.get((entry.get("id"), entry.get("revision")))
            if model is None or model.index in candidates:
                continue
            record = store.job(run["run_id"], entry.get("index", -1), "driver") or {}
            if record.get("state") == "submitted" and record.get("job_id"):
                candidates[model.index] = (run, entry, record)
    if not candidates:
        return {}
    alive = _alive_jobs(options.kind, {str(r["job_id"]): r for _, _, r in candidates.values()})
    found = {}
    for index, (run, entry, record) in candidates.items():
        job_id = str(record["job_id"])
        if job_id not in alive:
            continue
        model = next(m for m in models if m.index == index)
        old = ModelTask(
            str(store.root), run["run_id"], replace(model, index=int(entry["index"])), plan.data_dir, plan.download, int(record.get("attempt") or 1)
        )
        found[index] = _Live(old, store.run_dir(run["run_id"]) / "submitit", job_id, run["run_id"], options.kind)
    return found


def _alive_jobs(kind: str, records: dict[str, dict[str, Any]]) -> set[str]:
    """Which of these jobs (by id; their driver records) are still queued or running."""
    if kind == "slurm":
        states = squeue_states() or {}
        return {job_id for job_id in records if states.get(job_id) in ALIVE_STATES}
    here = socket.gethostname()
    return {job_id for job_id, r in records.items() if r.get("host") == here and _local_job_alive(job_id)}


def _local_job_alive(job_id: str) -> bool:
    """Whether a local job (its id is its process's) still runs: the process is there and is a submitit job."""
    try:
        command = Path(f"/proc/{int(job_id)}/cmdline").read_bytes()
    except (OSError, ValueError):
        return False
    return b"submitit" in command


class _Driver:
    """Submits the jobs within `max_parallel`, watches them, retries the failed ones and settles each model's report."""

    def __init__(
        self, plan: ZooPlan, store: ResultsStore, datasets: Any, options: ExecutorOptions, retries: int, say: Log, folder: Path, run_id: str
    ):
        self.plan, self.store, self.datasets = plan, store, datasets
        self.options, self.retries, self.say, self.folder, self.run_id = options, retries, say, folder, run_id
        self.tracked: list[_Tracked] = []
        self.queue: list[list[_Tracked]] = []
        self.submissions: list[_Submission] = []
        self.parameters: dict[str, dict[str, Any]] = {}
        self.executors: dict[str, Any] = {}
        self.adopted: dict[str, tuple[Any, _Submission]] = {}
        self.draining: set[str] = set()
        self.last_progress = time.monotonic()
        self.stopped_by: int | None = None

    # -- signals ---------------------------------------------------------------------
    @contextlib.contextmanager
    def signals(self, enabled: bool = True) -> Iterator[None]:
        """While the driver runs (in the main thread): SIGINT, SIGTERM and SIGHUP ask it to stop (a second one: at once)."""
        if not enabled or threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame: Any) -> None:
            if self.stopped_by is not None:
                signal.signal(signum, signal.SIG_DFL)
                raise KeyboardInterrupt
            self.stopped_by = signum

        previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
        try:
            yield
        finally:
            for s, old in previous.items():
                signal.signal(s, old)

    def stop(self, on_stop: str) -> DriverStopped:
        """The driver was asked to stop: its jobs cancelled (or kept), their records saying so; the one line to say."""
        signum = self.stopped_by or signal.SIGTERM
        name = signal.Signals(signum).name
        alive = [t for t in self.tracked if t.job is not None]
        queued = [t for pack in self.queue for t in pack]
        ids = list(dict.fromkeys(str(t.job.job_id) for t in alive))
        if on_stop == "cancel" and ids:
            self._cancel([t.job for t in alive])
        for t in alive:
            t.report.state = "cancelled" if on_stop == "cancel" else "left running"
            self._record(t, "cancelled" if on_stop == "cancel" else "submitted", f"the driver was stopped ({name})")
        for t in queued:
            t.report.state = "cancelled"
            self._record(t, "cancelled", f"the driver was stopped ({name}) before this job went out")
        shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
        if not ids:
            what = "no job was running"
        elif on_stop == "cancel":
            what = f"cancelled {len(ids)} job{'s' if len(ids) > 1 else ''} ({shown})"
        else:
            what = f"{len(ids)} job{'s' if len(ids) > 1 else ''} run on ({shown}): `biaslens zoo status` follows them, `biaslens zoo run` adopts them"
        unsent = f"; {len(queued)} not submitted yet" if queued else ""
        return DriverStopped(f"Stopped by {name}: {what}{unsent}. `biaslens zoo run` again resumes from the store.", signum)

    def _cancel(self, jobs: list[Any]) -> None:
        if self.options.kind == "slurm":
            ids = sorted({str(j.job_id) for j in jobs})
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                subprocess.run(["scancel", *ids], capture_output=True, timeout=60, check=False)
            return
        for job in jobs:
            with contextlib.suppress(Exception):
                job.cancel(check=False)

    # -- submitting ------------------------------------------------------------------
    def _room(self) -> float:
        limit = self.options.max_parallel
        if limit is None:
            return math.inf
        return limit - sum(min(s.throttle, s.unfinished()) for s in self.submissions) - self._draining()

    def _draining(self) -> int:
        """Slurm jobs whose result is in but that Slurm still runs (their process ending): they hold their slot."""
        if not self.draining:
            return 0
        states = squeue_states() or {}
        self.draining = {j for j in self.draining if states.get(j) in ALIVE_STATES}
        return len(self.draining)

    def pump(self, first: bool = False) -> None:
        """Submit what the queue holds, within `max_parallel`: an array's throttle raised first as slots free up."""
        if not self.queue and not any(s.array_id and s.unfinished() > s.throttle for s in self.submissions):
            return
        room = self._room()
        if self.options.kind == "slurm" and self.options.max_parallel is not None:
            for s in self.submissions:
                if room <= 0:
                    break
                want = min(s.unfinished(), s.throttle + int(room))
                if s.array_id and want > s.throttle and self._throttle(s.array_id, want):
                    room -= want - s.throttle
                    s.throttle = want
        while self.queue and room > 0:
            key = self.queue[0][0].key
            run: list[list[_Tracked]] = []
            while self.queue and self.queue[0][0].key == key:
                run.append(self.queue.pop(0))
            n = len(run) if self.options.kind == "slurm" else int(min(len(run), room))
            self.queue[:0] = run[n:]
            sent = run[:n]
            throttle = int(min(n, room))
            self._submit(sent, throttle, first)
            room -= throttle

    def _throttle(self, array_id: str, throttle: int) -> bool:
        try:
            done = subprocess.run(
                ["scontrol", "update", f"JobId={array_id}", f"ArrayTaskThrottle={throttle}"], capture_output=True, timeout=60, check=False
            )
        except (subprocess.SubprocessError, OSError):
            return False
        return done.returncode == 0

    def _executor(self, key: str) -> Any:
        if key not in self.executors:
            self.executors[key] = make_executor(self.options, self.folder, self.parameters[key])
        return self.executors[key]

    def _submit(self, packs: list[list[_Tracked]], throttle: int, first: bool) -> None:
        key = packs[0][0].key
        executor = self._executor(key)
        time_min = self.options.time_min(packs[0][0].task.model)
        job = ZooJob(time_min)
        try:
            if self.options.kind == "slurm":
                executor.update_parameters(array_parallelism=throttle)
            if len(packs) == 1:
                jobs = [executor.submit(job, [t.task for t in packs[0]])]
            else:
                jobs = executor.map_array(job, [[t.task for t in pack] for pack in packs])
        except Exception as exc:  # sbatch refused, a full disk, ...: one line
            why = self._submit_failure(exc, packs[0][0].task.model)
            if first:
                self._abandon()
                raise (OutputError if isinstance(exc, OSError) else SubmitError)(why) from None
            for pack in packs:
                for t in pack:
                    t.report.state, t.report.error = "failed", why
                    self._record(t, "failed", why)
                    self.say(f"  {t.task.model.label}: could not be submitted again: {why}")
            return
        if self.options.kind == "slurm":
            jobs = _as_zoo_jobs(jobs, self.folder)
        array_id = str(jobs[0].job_id).split("_")[0] if self.options.kind == "slurm" and len(jobs) > 1 else None
        self.submissions.append(_Submission(array_id, throttle if self.options.kind == "slurm" else len(packs), packs))
        for pack, j in zip(packs, jobs):
            for t in pack:
                t.job, t.waiting_since = j, None
                t.report.attempts = t.task.attempt
                t.report.job_ids.append(str(j.job_id))
                self._record(t, "submitted")
                others = f" with {len(pack) - 1} other model{'s' if len(pack) > 2 else ''}" if len(pack) > 1 else ""
                self.say(f"  {t.task.model.label}: job {j.job_id} submitted{others}" + (f" (attempt {t.task.attempt})" if t.task.attempt > 1 else ""))

    def _submit_failure(self, exc: BaseException, model: ZooModel) -> str:
        if isinstance(exc, OSError):
            return f"cannot write the jobs' files in the store {self.store.root} ({exc.strerror or first_line(exc)})"
        if isinstance(exc, BiaslensError):
            return first_line(exc)
        text = str(exc)
        if self.options.kind == "slurm" and ("sbatch" in text or "Error stream" in text):
            stream = text.split("Error stream:", 1)[-1]
            return refusal(stream, self.options.settings(model), model.device)
        return first_line(exc)

    def _abandon(self) -> None:
        """The first submission failed: nothing of this run is left behind (its jobs cancelled, its folder removed)."""
        alive = [t.job for t in self.tracked if t.job is not None and not t.adopted_from]
        if alive:
            self._cancel(alive)
        shutil.rmtree(self.store.run_dir(self.run_id), ignore_errors=True)

    def adopt(self, t: _Tracked, live: _Live) -> None:
        """Follow a live job of an earlier run instead of submitting the model again (a packed job: one for its models)."""
        if live.job_id in self.adopted:
            job, submission = self.adopted[live.job_id]
            submission.packs[0].append(t)
        else:
            job, submission = _adopted_job(live), _Submission(None, 1, [[t]])
            self.adopted[live.job_id] = (job, submission)
            self.submissions.append(submission)
        t.task, t.job, t.adopted_from = live.task, job, live.run_id
        t.report.attempts = live.task.attempt
        t.report.job_ids.append(live.job_id)
        self._record(t, "submitted", f"adopted from run {live.run_id}", job_id=live.job_id)
        still = "queued or running" if live.kind == "slurm" else "running"
        self.say(f"  {t.task.model.label}: job {live.job_id} of run {live.run_id} is still {still}: followed, not submitted again")

    def _record(self, t: _Tracked, state: str, message: str | None = None, job_id: str | None = None) -> None:
        record: dict[str, Any] = {
            "label": t.task.model.label,
            "state": state,
            "attempt": t.task.attempt,
            "job_id": job_id or (str(t.job.job_id) if t.job is not None else None),
            "host": socket.gethostname(),
        }
        if message:
            record["message"] = message
        with contextlib.suppress(OSError, InputError):
            self.store.write_job(self.run_id, t.report.index, record, side="driver")

    # -- watching --------------------------------------------------------------------
    def watch(self, poll_s: float, on_stop: str = "cancel") -> None:
        """Until every model is settled: finished jobs read, failed ones retried, waiting ones checked, the queue pumped."""
        while any(t.report.state == "submitted" for t in self.tracked):
            time.sleep(poll_s)
            if self.stopped_by is not None:
                raise self.stop(on_stop)
            for job, members in self._running():
                if job.done():
                    self._finished(job, members)
            for t in self.tracked:
                if t.job is None and t.waiting_since is not None and t.report.state == "submitted":
                    self._check_waiting(t)
                elif t.twin is not None and t.twin.report.state != "submitted" and t.report.state == "submitted":
                    self._twin_settled(t)
            self.pump()
            self._progress()

    def _running(self) -> list[tuple[Any, list[_Tracked]]]:
        found: dict[int, tuple[Any, list[_Tracked]]] = {}
        for t in self.tracked:
            if t.job is not None and t.report.state == "submitted":
                found.setdefault(id(t.job), (t.job, []))[1].append(t)
        return list(found.values())

    def _finished(self, job: Any, members: list[_Tracked]) -> None:
        for t in members:
            t.job = None
        if self.options.kind == "slurm" and self.options.max_parallel is not None:
            self.draining.add(str(job.job_id))
        try:  # one wait for its result file (submitit gives a slow shared filesystem 15 s), then the file read
            error = job.exception()
            result: Any = job.result() if error is None else None
        except Exception as exc:  # its files are gone, or unreadable
            error, result = exc, None
        if result is None:  # the job raised, was killed, or left no result
            why = _job_failure(job, error, self.store.root)
            for t in members:
                self._settle(t, failure=why)
            return
        outcomes = {o.index: o for o in ([result] if isinstance(result, ModelOutcome) else result)}
        for t in members:
            outcome = outcomes.get(t.task.model.index)
            if outcome is None:
                self._settle(t, failure=f"job {job.job_id} did not get to it")
                continue
            t.report.cached += outcome.cached
            t.report.scored += outcome.count("scored")
            if outcome.state == "load-failed":
                t.report.state, t.report.error = "load-failed", outcome.error
                self._record(t, "load-failed", outcome.error)
                self.say(f"  {t.task.model.label}: could not load: {outcome.error}")
            elif outcome.state == "stopped":
                why = f"job {job.job_id} was {outcome.error}"
                t.report.state, t.report.error = "failed", why
                self._record(t, "failed", why)
                self.say(f"  {t.task.model.label}: failed: {why}")
            else:
                self._settle(t, outcome)

    def _twin_settled(self, t: _Tracked) -> None:
        """The model scoring its cells is settled: done, then so is this one; else it gets a job of its own."""
        twin, t.twin = t.twin, None
        found = self._unsettled(t.task.model)
        if found is not None and not found[0]:
            self._settle(t)
            return
        assert twin is not None
        self.say(f"  {t.task.model.label}: {twin.task.model.label} did not score their cells ({twin.report.state}): it gets a job of its own")
        params = self.options.parameters(t.task.model)
        t.key = json.dumps(params, sort_keys=True, default=str)
        self.parameters.setdefault(t.key, params)
        self.queue.append([t])

    def _unsettled(self, model: ZooModel) -> tuple[list[str], int] | None:
        cells = planned_cells(model, self.store, self.datasets)
        if cells is None:
            return None
        return [c.key for c in cells if not self.store.has_cell(c.key)], len(cells)

    def _settle(self, t: _Tracked, outcome: ModelOutcome | None = None, failure: str | None = None) -> None:
        found = self._unsettled(t.task.model)
        if found is None:
            if failure is not None:  # never loaded: its cells are not known
                self._retry(t, failure)
            else:  # cannot happen after a job loaded the model; reported rather than looped on
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
            unavailable = f", {t.report.unavailable} unavailable" if t.report.unavailable else ""
            self.say(f"  {t.task.model.label}: done ({t.report.scored} cells scored{unavailable}{extra})")
            return
        held = self.store.live_locks(left)
        if len(held) == len(left):
            holders = sorted({h.owner.run_id for h in held.values()})
            if t.waiting_since is None:
                self.say(f"  {t.task.model.label}: waiting for {len(left)} cells another run is scoring ({', '.join(holders)})")
                self._record(t, "waiting", f"cells held by run {', '.join(holders)}")
            t.waiting_since = t.waiting_since or time.monotonic()
            return
        if failure is not None:
            self._retry(t, failure)
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
        model = self.plan.model(t.report.index)
        t.task = replace(t.task, run_id=self.run_id, model=model, attempt=t.task.attempt + 1)  # (an adopted job's retry is this run's)
        t.adopted_from = None
        for pack in reversed(self.queue):  # packed again with the model's job-mates retried at once
            if pack[0].key == t.key and len(pack) < max(1, self.options.models_per_job) and all(p.task.attempt == t.task.attempt for p in pack):
                pack.append(t)
                return
        self.queue.append([t])

    def _progress(self) -> None:
        open_ = [t for t in self.tracked if t.report.state == "submitted"]
        if time.monotonic() - self.last_progress < PROGRESS_INTERVAL_S or not open_:
            return
        self.last_progress = time.monotonic()
        parts = []
        for t in open_:
            worker = self.store.job(t.task.run_id, t.task.model.index, "worker") or {}
            if t.twin is not None:
                parts.append(f"{t.task.model.label} with {t.twin.task.model.label}")
            elif t.job is None and t.waiting_since is not None:
                parts.append(f"{t.task.model.label} waiting")
            elif t.job is not None and worker.get("state") == "scoring" and worker.get("total") and worker.get("attempt") == t.task.attempt:
                parts.append(f"{t.task.model.label} {100 * (worker.get('done') or 0) / worker['total']:.0f}% of {worker.get('unit')}")
            elif t.job is None:
                parts.append(f"{t.task.model.label} queued")
            else:
                parts.append(f"{t.task.model.label} {worker.get('state', 'pending') if worker.get('attempt') == t.task.attempt else 'pending'}")
        self.say("  … " + "; ".join(parts))


def _as_zoo_jobs(jobs: Sequence[Any], folder: Path) -> list[Any]:
    """submitit's Slurm jobs (its job arrays make plain ones) as ours, whose watcher falls back on squeue."""
    job_class, _ = _slurm_classes()
    return [job if isinstance(job, job_class) else job_class(folder=folder, job_id=job.job_id) for job in jobs]


def _adopted_job(live: _Live) -> Any:
    """A job object for a live job of an earlier run: watched and read like one of this run's."""
    if live.kind == "slurm":
        job_class, _ = _slurm_classes()
        return job_class(folder=live.folder, job_id=live.job_id)
    from submitit.local.local import LocalJob

    class AdoptedLocalJob(LocalJob):
        """A local job this driver did not start: done when its process is gone."""

        def done(self, force_check: bool = False) -> bool:
            return not _local_job_alive(str(self.job_id))

        def cancel(self, check: bool = True) -> None:
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(self.job_id), signal.SIGINT)

    return AdoptedLocalJob(folder=live.folder, job_id=live.job_id)


def _job_failure(job: Any, error: BaseException | None, root: Path | None = None) -> str:
    """Why a job ended without a result, in one line, from the error submitit gave for it, with its log file."""
    from submitit.core.utils import FailedJobError, UncompletedJobError

    log = ""
    with contextlib.suppress(Exception):
        path = Path(job.paths.stderr)
        shown = path.relative_to(root) if root is not None and path.is_relative_to(root) else path
        log = f"; its log: {shown}"
    if error is not None and not isinstance(error, (FailedJobError, UncompletedJobError)):  # the job's files are gone
        return f"job {job.job_id} ended without a result ({first_line(error)}){log}"
    text = str(error or "")
    if "failed during processing with trace" in text:
        lines = [line.strip() for line in text.split("----------------------")[1].splitlines() if line.strip()] if "------" in text else []
        return f"job {job.job_id} failed: {lines[-1] if lines else 'see its log'}{log}"
    state = ""
    with contextlib.suppress(Exception):
        state = str(job.state)
    return f"job {job.job_id} ended without a result" + (f" (state {state})" if state and state != "UNKNOWN" else "") + log


__all__ = [
    "ALIVE_STATES",
    "MAX_REQUEUES",
    "ON_STOP",
    "DriverStopped",
    "DryRun",
    "ExecutorOptions",
    "ModelReport",
    "PlannedJob",
    "RunReport",
    "SubmitError",
    "check_with_sbatch",
    "dry_run",
    "make_executor",
    "plan_jobs",
    "refusal",
    "run_plan",
    "sbatch_script",
    "slurm_parameters",
    "squeue_states",
]

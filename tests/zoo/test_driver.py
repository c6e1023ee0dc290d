"""The zoo driver's pieces that need no job: the executor options a plan and a command line give, and the one line
that says why a job ended without a result (from the error submitit gives for it)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from submitit.core.utils import FailedJobError, UncompletedJobError

from biaslens.errors import InputError
from biaslens.zoo.executors import ExecutorOptions, _job_failure
from biaslens.zoo.plan import load_plan

TRACE = """Job (task=0) failed during processing with trace:
----------------------
Traceback (most recent call last):
  File "worker.py", line 1, in run_model
ValueError: the pairs file changed
----------------------
You can check full logs with 'job.stderr(0)'"""


@pytest.mark.parametrize(
    ("error", "state", "expected"),
    [
        (FailedJobError(TRACE), "FAILED", "job 7 failed: ValueError: the pairs file changed"),
        (UncompletedJobError("Job 7 has not produced any output (state: CANCELLED)"), "CANCELLED", "job 7 ended without a result (state CANCELLED)"),
        (UncompletedJobError("no output"), "UNKNOWN", "job 7 ended without a result"),
        (FileNotFoundError("7_0_result.pkl"), "COMPLETED", "job 7 ended without a result (FileNotFoundError: 7_0_result.pkl)"),
        (None, "COMPLETED", "job 7 ended without a result (state COMPLETED)"),
    ],
)
def test_why_a_job_ended_without_a_result_in_one_line(error, state, expected, tmp_path):
    """Each reason names the job's log file (runs/<run>/submitit/<job>_<task>_0_log.err), relative to the store."""
    from submitit.core.utils import JobPaths

    job = SimpleNamespace(job_id="7", state=state, paths=JobPaths(tmp_path / "runs" / "r1" / "submitit", job_id="7", task_id=0))
    assert _job_failure(job, error, tmp_path) == f"{expected}; its log: runs/r1/submitit/7_0_log.err"


def test_executor_options_from_the_plan_and_the_command_line(write_plan, model_dirs):
    plan = load_plan(write_plan([{"id": str(model_dirs["bert-cased"])}], extra='[slurm]\npartition = "gpu"\nmax_parallel = 4'))
    slurm = ExecutorOptions.from_plan(plan, "slurm", max_parallel=2, time_min=None)
    assert (slurm.kind, slurm.partition, slurm.max_parallel) == ("slurm", "gpu", 2)  # the command line wins; None keeps the plan's
    assert ExecutorOptions.from_plan(plan, "local").kind == "local"
    with pytest.raises(InputError, match="Unknown executor 'pbs'"):
        ExecutorOptions.from_plan(plan, "pbs")

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


@pytest.mark.parametrize(
    ("stderr", "settings", "expected"),
    [
        (
            "sbatch: error: Invalid generic resource (gres) specification\n",
            {},
            'sbatch refused the job: Invalid generic resource (gres) specification (one GPU, the default for device = "auto": on a '
            'cluster without GPUs set device = "cpu" or gpus_per_job = 0)',
        ),
        ("sbatch: error: Invalid generic resource (gres) specification\n", {"gpus": "h100:2"}, '(gpus = "h100:2")'),
        (
            "sbatch: error: invalid partition specified: gpu\nallocation failure: Invalid partition name specified\n",
            {"partition": "gpu"},
            'sbatch refused the job: invalid partition specified: gpu (partition = "gpu")',
        ),
        (
            "allocation failure: Requested node configuration is not available\n",
            {"cpus_per_job": 64, "mem_gb": 500},
            "sbatch refused the job: Requested node configuration is not available (no node has cpus_per_job = 64, mem_gb = 500)",
        ),
        (
            "sbatch: error: Invalid account or account/partition combination specified\n",
            {"additional": {"account": "x"}},
            '(additional.account = "x")',
        ),
        (
            "sbatch: unrecognized option '--colour=blue'\nTry \"sbatch --help\" for more information\n",
            {},
            "(additional.colour: not an sbatch option)",
        ),
        ("sbatch: error: Batch job submission failed: Something new\n", {}, "sbatch refused the job: Batch job submission failed: Something new"),
    ],
)
def test_an_sbatch_refusal_names_the_option_at_fault(stderr, settings, expected):
    from biaslens.zoo.executors import refusal
    from biaslens.zoo.plan import SlurmSettings

    said = refusal(stderr, SlurmSettings().with_overrides(settings), "auto")
    assert expected in said and "\n" not in said


def test_a_dry_run_says_the_jobs_their_cells_and_scripts_and_writes_nothing(write_plan, model_dirs, monkeypatch):
    """Packed jobs (models_per_job), a model with its own resources in an array of its own, a pinned hub model's cells
    known without loading it, a model with the same weights as another (no job of its own), sbatch's scripts; nothing
    submitted or written."""
    import shutil

    from biaslens.zoo import executors
    from biaslens.zoo.executors import dry_run

    monkeypatch.setattr(executors.shutil, "which", lambda name: None)  # no Slurm here: the scripts, not sbatch's answer
    copy = write_plan([], name="x.toml").parent / "bert-copy"
    shutil.copytree(model_dirs["bert-cased"], copy)
    models = [
        {"id": str(model_dirs["bert-cased"]), "label": "bert"},
        {"id": str(model_dirs["roberta"]), "label": "roberta"},
        {"id": str(copy), "label": "bert copy"},
        {"id": str(model_dirs["albert"]), "label": "big", "slurm": {"gpus": "a100:1", "mem_gb": 64}},
    ]
    extra = 'metrics = ["aul", "cps"]\n[slurm]\nmodels_per_job = 2\nmax_parallel = 3\nsetup = ["module load cuda/12.4"]'
    plan = load_plan(write_plan(models, datasets='["crows-pairs"]', extra=extra))
    lines = dry_run(plan, ExecutorOptions.from_plan(plan, "slurm")).lines()
    text = "\n".join(lines)
    assert lines[0].startswith("Note: models[2] (bert copy) has the same weights as models[0] (bert)")
    assert "Note: bert copy: its cells are bert's, scored by that model's job" in text
    assert "job 1 of 2: bert, roberta" in lines and "job 2 of 2: big" in lines
    assert "  bert: 2 cells: crows-pairs · float32: aul, cps" in lines
    assert text.count("#!/bin/bash") == 2 and "#SBATCH --gpus-per-node=1" in text and "#SBATCH --gpus-per-node=a100:1" in text
    assert "#SBATCH --mem=65536M" in text and "module load cuda/12.4" in text and "#SBATCH --signal=USR2@90" in text
    assert lines[-1] == "2 jobs would be submitted; nothing was." and not plan.store.exists()


@pytest.fixture
def full_disk(tmp_path):
    """A 2 MB tmpfs (mounting needs root; skipped elsewhere), unmounted after the test."""
    import subprocess

    folder = tmp_path / "full"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(folder)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def test_a_full_disk_under_the_store_is_one_line(full_disk, model_dirs, capsys):
    """`zoo run` with its store on a full disk exited 1 with `OSError: [Errno 28]` from submitit's pickling. Now one line
    naming the folder, exit 2, and the run's folder is gone; nothing of the store is damaged."""
    import os

    from biaslens.cli.main import main
    from biaslens.zoo.cells import keep_labels, load_datasets
    from biaslens.zoo.store import ResultsStore
    from tests.zoo.conftest import plan_text

    path = full_disk / "plan.toml"
    path.write_text(plan_text([{"id": str(model_dirs["bert-cased"])}], datasets='["crows-pairs"]', extra='metrics = ["aul"]'))
    plan = load_plan(path)
    store = ResultsStore(plan.store, create=True)
    for dataset in load_datasets(plan).values():
        store.put_dataset(dataset)
    keep_labels(plan, store)
    free = os.statvfs(full_disk)
    filler = full_disk / "filler"
    filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize - free.f_frsize))  # one page left: the run's record, no more
    assert main(["zoo", "run", str(path), "--executor", "local"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"biaslens zoo: error: cannot write the jobs' files in the store {plan.store} (No space left on device)", err
    assert not any("Traceback" in line for line in err)
    assert not any((plan.store / "runs").iterdir()) and len(store.summaries()) == 0

"""Zoo II: what a researcher with a cluster hit, each on the real single-node Slurm the tests start (tests/support/slurm.py).

A job warned before it has scored anything is not requeued; one warned mid-run carries on where it stopped. An sbatch
refusal is one line naming the option at fault, exit 2, nothing left behind. `max_parallel` bounds every job of the
run, a retry included. A driver killed with SIGKILL leaves jobs that the next run adopts instead of doubling; one
stopped with SIGTERM cancels its jobs (or, `--keep-jobs`, leaves them running) and says so in one line. The same weights
under two names are said at once, scored once and shown under both names. They start real jobs: marked slow.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from biaslens.cli.main import main
from biaslens.zoo.executors import ExecutorOptions, run_plan
from biaslens.zoo.leaderboard import leaderboard
from biaslens.zoo.merge import merged_table
from biaslens.zoo.plan import load_plan
from biaslens.zoo.store import ResultsStore
from tests.support import REPO

pytestmark = pytest.mark.slow

#: A plan's lines for the test cluster: no GPU there (device "cpu" asks for none), one CPU a job, so jobs run side by side.
CPU = 'device = "cpu"\n[slurm]\ncpus_per_job = 1\ntime = 30'


def _options(plan, **changes) -> ExecutorOptions:
    return ExecutorOptions.from_plan(plan, "slurm", **changes)


def _squeue(*states: str) -> list[str]:
    command = ["squeue", "-h", "-r", "-o", "%i"] + (["-t", ",".join(states)] if states else [])
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout.split()


@pytest.fixture(autouse=True)
def _an_empty_queue(slurm_cluster):
    """Each test starts with no job in the queue: one an earlier test left (a task of its array still pending under
    load) would be counted as this test's."""
    subprocess.run(["scancel", "--full", "--user", "root"], capture_output=True, timeout=60)
    _until(lambda: _squeue() == [], timeout=120, what="the queue to empty")
    yield


def _worker(store_path: Path, index: int, run: int = -1) -> dict:
    store = ResultsStore(store_path)
    runs = store.runs()
    return (store.job(runs[run]["run_id"], index, "worker") or {}) if runs else {}


def _until(condition, timeout: float = 300, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = condition()
        except Exception:  # the store is being made
            found = None
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _driver(argv: list[str], tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """`biaslens zoo run ...` as its own process (a driver the test can kill), and the file its stderr goes to."""
    path = tmp_path / f"driver-{time.monotonic_ns()}.err"
    with path.open("w") as err:
        process = subprocess.Popen([sys.executable, "-m", "biaslens", "zoo", "run", *argv], cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    return process, path


# ---------------------------------------------------------------------------------------
# 1. The time limit
# ---------------------------------------------------------------------------------------


def test_a_job_warned_before_it_scores_stops_and_one_warned_later_resumes(slurm_cluster, write_plan, model_dirs, many_pairs):
    """Slurm's warning (USR2, as at a time limit or a preemption; sent here with `scancel --signal`): a job that has
    scored nothing is not requeued (with `time = 2` it was requeued three times, warned each time before its model had
    loaded, and submitted again by the driver: ~30 minutes before a failure), and the driver does not retry it; one
    that has finished chunks is requeued by submitit and resumes from them, without the driver's retry."""
    models = [{"id": str(model_dirs["bert-cased"]), "label": "early"}, {"id": str(model_dirs["roberta"]), "label": "late"}]
    plan = load_plan(write_plan(models, datasets=f'["{many_pairs}"]', extra=f'metrics = ["aul"]\nchunk_pairs = 4\n{CPU}'))
    result: dict = {}
    lines: list[str] = []
    driver = threading.Thread(target=lambda: result.setdefault("report", run_plan(plan, options=_options(plan), log=lines.append)))
    driver.start()
    early = _until(
        lambda: (r := _worker(plan.store, 0)).get("state") in ("starting", "loading") and r.get("job_id") and r, what="the first job to start"
    )
    subprocess.run(["scancel", "--signal=USR2", early["job_id"]], check=True, timeout=60)
    late = _until(lambda: (r := _worker(plan.store, 1)).get("state") == "scoring" and (r.get("done") or 0) >= 8 and r, what="the second job to score")
    subprocess.run(["scancel", "--signal=USR2", late["job_id"]], check=True, timeout=60)
    driver.join(timeout=1800)
    first, second = result["report"].models
    assert first.state == "failed" and first.attempts == 1 and len(first.job_ids) == 1, lines
    assert "was warned to stop (its time limit (30 min), or preemption) before it had scored anything, so not requeued" in (first.error or "")
    assert not any("early: " in line and "submitting it again" in line for line in lines), lines
    assert second.state == "done" and second.attempts == 1 and len(second.job_ids) == 1, lines  # requeued by submitit: one job
    assert second.cached >= late["done"]  # its chunks from before the warning were read back


# ---------------------------------------------------------------------------------------
# 2. sbatch's refusals
# ---------------------------------------------------------------------------------------


def test_an_sbatch_refusal_is_one_line_and_leaves_nothing(slurm_cluster, write_plan, model_dirs, capsys):
    """A plan without [slurm] on a cluster with no GPUs: sbatch refuses the one GPU asked for. It was ~40 lines ending
    in submitit's FailedJobError, exit 1 (a model failed), and an empty runs/<id> folder each time."""
    path = write_plan([{"id": str(model_dirs["bert-cased"])}], datasets='["crows-pairs"]', extra='metrics = ["aul"]')
    store = load_plan(path).store
    for extra, said in (
        ([], 'Invalid generic resource (gres) specification (one GPU, the default for device = "auto": on a cluster without GPUs'),
        (["--gpus-per-job", "0", "--partition", "nowhere"], 'invalid partition specified: nowhere (partition = "nowhere")'),
    ):
        assert main(["zoo", "run", str(path), "--executor", "slurm", *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"models[0] (bert-cased): sbatch refused the job: {said}" in err, err
        assert not (store / "runs").exists() and _squeue() == []
    # The GPU default follows the device: device = "cpu" asks for none, and sbatch accepts the job (a dry run asks it).
    cpu = write_plan([{"id": str(model_dirs["bert-cased"]), "device": "cpu"}], name="cpu.toml", datasets='["crows-pairs"]', extra='metrics = ["aul"]')
    assert main(["zoo", "run", str(cpu), "--executor", "slurm", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "#SBATCH --gpus-per-node" not in out and "-- sbatch --test-only: accepted" in out


# ---------------------------------------------------------------------------------------
# 3. The throttle, retries included
# ---------------------------------------------------------------------------------------


def test_max_parallel_bounds_every_job_a_retry_included(slurm_cluster, write_plan, model_dirs, more_pairs):
    """With `--max-parallel 1` the array ran one task at a time, but the retry of a killed job went out beside it (two
    jobs at once). Now the retry waits for a free slot; its failure line names the job's log file."""
    models = [
        {"id": str(model_dirs["bert-cased"]), "datasets": [str(more_pairs)], "chunk_pairs": 4},  # killed early on
        {"id": str(model_dirs["roberta"]), "datasets": [str(more_pairs)]},  # long: still running when the retry is due
        {"id": str(model_dirs["albert"])},
    ]
    plan = load_plan(write_plan(models, datasets='["crows-pairs"]', extra=f'metrics = ["aul"]\n{CPU}'))
    running: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            running.append(len(_squeue("RUNNING")))
            time.sleep(0.3)

    sampler = threading.Thread(target=sample)
    sampler.start()
    result: dict = {}
    lines: list[str] = []
    driver = threading.Thread(
        target=lambda: result.setdefault("report", run_plan(plan, options=_options(plan, max_parallel=1), retries=1, log=lines.append))
    )
    driver.start()
    killed = _until(
        lambda: (r := _worker(plan.store, 0)).get("state") == "scoring" and (r.get("done") or 0) >= 8 and r, what="the first job to score"
    )
    subprocess.run(["scancel", killed["job_id"]], check=True, timeout=60)
    driver.join(timeout=1800)
    stop.set()
    sampler.join()
    report = result["report"]
    assert [m.state for m in report.models] == ["done", "done", "done"] and report.models[0].attempts == 2, lines
    assert max(running) == 1, (running, lines)  # never two jobs of the run at once
    retry = next(line for line in lines if "submitting it again" in line)
    run_id = report.run_id
    assert f"its log: runs/{run_id}/submitit/{killed['job_id']}_0_log.err" in retry, retry


# ---------------------------------------------------------------------------------------
# 4. A driver that dies, or is stopped
# ---------------------------------------------------------------------------------------


def test_the_jobs_of_a_killed_driver_are_adopted_not_doubled(slurm_cluster, write_plan, model_dirs, more_pairs, tmp_path):
    """After `kill -9` of the driver its jobs ran on, and the next `zoo run` submitted its own: a model loaded by two
    jobs at once, a slot waiting for cells another run held. Now the next run follows the live jobs (their records and
    squeue) and submits nothing for them; every cell is scored once, by the first run's jobs."""
    models = [{"id": str(model_dirs["bert-cased"]), "datasets": [str(more_pairs)]}, {"id": str(model_dirs["roberta"])}]
    path = write_plan(models, datasets='["crows-pairs"]', extra=f'metrics = ["aul"]\nchunk_pairs = 4\n{CPU}')
    plan = load_plan(path)
    first, _ = _driver([str(path), "--executor", "slurm"], tmp_path)
    record = _until(lambda: (r := _worker(plan.store, 0)).get("state") == "scoring" and r, what="the first run's job to score")
    first.kill()
    first.wait(timeout=60)
    assert record["job_id"] in _squeue()  # its job runs on
    store = ResultsStore(plan.store)
    old_run = store.runs()[-1]["run_id"]
    old_ids = {i: store.job(old_run, i, "driver")["job_id"] for i in (0, 1)}
    lines: list[str] = []
    report = run_plan(plan, options=_options(plan), log=lines.append)
    states = [m.state for m in report.models]
    assert states[0] == "done" and states[1] in ("done", "in store"), lines  # (the short one may be done before this run)
    new_ids = {m.index: m.job_ids for m in report.models}
    assert new_ids[0] == [old_ids[0]] and new_ids[1] in ([], [old_ids[1]]), (new_ids, old_ids, lines)  # (the short one may be done)
    assert any(f"job {old_ids[0]} of run {old_run} is still queued or running: followed, not submitted again" in line for line in lines), lines
    assert all(store.job(report.run_id, i, "worker") is None for i in (0, 1))  # no job of the second run loaded a model
    cells = merged_table(store, plan)
    assert (cells["status"] == "done").all() and set(cells["key"].map(lambda k: store.read_cell(k)["run"]["run_id"])) <= {old_run}


@pytest.mark.parametrize(
    ("how", "flag", "said", "alive"),
    [(signal.SIGTERM, [], "Stopped by SIGTERM: cancelled 1 job", False), (signal.SIGHUP, ["--keep-jobs"], "Stopped by SIGHUP: 1 job run on", True)],
)
def test_a_stopped_driver_cancels_its_jobs_or_says_they_run_on(slurm_cluster, write_plan, model_dirs, more_pairs, tmp_path, how, flag, said, alive):
    """SIGTERM ended the driver with rc 143 and no message while its jobs ran on. Now it cancels them (or, with
    --keep-jobs, leaves them running: a hang-up) and says which in one line, exit 128 + the signal."""
    path = write_plan([{"id": str(model_dirs["bert-cased"])}], datasets=f'["{more_pairs}"]', extra=f'metrics = ["aul"]\nchunk_pairs = 4\n{CPU}')
    plan = load_plan(path)
    driver, err = _driver([str(path), "--executor", "slurm", *flag], tmp_path)
    record = _until(lambda: (r := _worker(plan.store, 0)).get("state") == "scoring" and r, what="the job to score")
    driver.send_signal(how)
    assert driver.wait(timeout=120) == 128 + how
    last = err.read_text().strip().splitlines()[-1]
    assert last.startswith(said) and record["job_id"] in last, last
    if alive:
        assert record["job_id"] in _squeue()
        (model,) = run_plan(plan, options=_options(plan)).models  # the next run adopts it
        assert model.state == "done" and model.job_ids == [record["job_id"]]
    else:
        _until(lambda: record["job_id"] not in _squeue("PENDING", "RUNNING", "COMPLETING"), 60, "the job to be cancelled")


# ---------------------------------------------------------------------------------------
# 5. Two names for one folder
# ---------------------------------------------------------------------------------------


def test_the_same_weights_under_two_names(slurm_cluster, write_plan, model_dirs, tmp_path):
    """A copy of BERT's folder, named "BERT copy": it was silently "in store" (the same fingerprint, so the same cells),
    and `zoo merge --store` and the leaderboard showed only the first name. Now the plan's check says so, its cells are
    scored once (no job of its own), both names stay visible, and the leaderboard lists the model that failed to load."""
    copy = tmp_path / "bert-copy"
    shutil.copytree(model_dirs["bert-cased"], copy)
    broken = tmp_path / "broken"
    broken.mkdir()
    shutil.copy(model_dirs["albert"] / "config.json", broken / "config.json")  # a config and no weights
    models = [{"id": str(model_dirs["bert-cased"]), "label": "BERT"}, {"id": str(copy), "label": "BERT copy"}, {"id": str(broken), "label": "broken"}]
    plan = load_plan(write_plan(models, datasets='["crows-pairs"]', extra=f'metrics = ["aul"]\n{CPU}'))
    lines: list[str] = []
    report = run_plan(plan, options=_options(plan), log=lines.append)
    assert lines[0] == (
        "Note: models[1] (BERT copy) has the same weights as models[0] (BERT): one model, whose cells are scored once; both names are kept and shown."
    )
    bert, twin, failed = report.models
    assert (bert.state, twin.state, failed.state) == ("done", "done", "load-failed") and twin.job_ids == [] and bert.scored == 1, lines
    store = ResultsStore(plan.store)
    assert list(merged_table(store)["model"]) == ["BERT (= BERT copy)"]
    assert list(merged_table(store, plan)["model"]) == ["BERT", "BERT copy", "broken"]
    assert list(leaderboard(store.summaries()).rows["model"]) == ["BERT (= BERT copy)"]
    assert [f["label"] for f in store.failures()] == ["broken"]

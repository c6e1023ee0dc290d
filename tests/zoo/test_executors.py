"""`biaslens zoo run` end to end, with each executor: Slurm (a real single-node cluster the tests start: job arrays
through sbatch, scancel) and submitit's local executor (jobs as processes of this machine, killed with SIGKILL).

The same three journeys run on both: a plan of three tiny models and one that cannot load × two datasets, whose
merged table equals three plain `evaluate` runs; a job killed mid-run (`scancel` / SIGKILL) and resumed; two runs of the
same plan at once that never score a cell twice. They start real jobs (a Python process with torch each): marked slow.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from biaslens.zoo.executors import ExecutorOptions, run_plan
from biaslens.zoo.merge import merged_table
from biaslens.zoo.plan import load_plan
from biaslens.zoo.store import ResultsStore
from tests.support import FIXTURE_DATA

pytestmark = pytest.mark.slow

SUMMARY_FIELDS = ("bias_score", "ci_low", "ci_high", "n", "wins", "ties", "undecidable", "token_accuracy")


@pytest.fixture(params=["local", "slurm"])
def executor(request):
    """Each executor's name; the Slurm one with its cluster running (skipped, or failed in CI, where Slurm is missing)."""
    if request.param == "slurm":
        request.getfixturevalue("slurm_cluster")
    return request.param


def _options(plan, executor: str, **changes) -> ExecutorOptions:
    if executor == "slurm":  # the test node has no GPU; one CPU per job, so jobs run side by side
        return ExecutorOptions.from_plan(plan, "slurm", gpus_per_job=0, cpus_per_job=1, time_min=30, **changes)
    return ExecutorOptions.from_plan(plan, "local", gpus_per_job=0, time_min=30, **{"max_parallel": 3, **changes})


def _broken_model(folder, model_dirs):
    broken = folder / "broken"
    broken.mkdir()
    shutil.copy(model_dirs["albert"] / "config.json", broken / "config.json")  # a config and no weights
    return broken


def test_three_models_and_one_that_cannot_load(executor, write_plan, tmp_path, model_dirs, tiny_models):
    from biaslens import evaluate, load_dataset

    models = [{"id": str(model_dirs[f])} for f in ("bert-cased", "roberta", "albert")]
    models.append({"id": str(_broken_model(tmp_path, model_dirs)), "label": "broken"})
    plan = load_plan(write_plan(models, extra='metrics = ["aul", "cps"]'))
    lines: list[str] = []
    report = run_plan(plan, options=_options(plan, executor), log=lines.append)
    states = {m.label: m.state for m in report.models}
    assert states == {"bert-cased": "done", "roberta": "done", "albert": "done", "broken": "load-failed"}, lines
    broken = next(m for m in report.models if m.label == "broken")
    assert broken.error and "\n" not in broken.error and any(broken.error in line for line in lines)
    if executor == "slurm":  # one sbatch job array: <array id>_<task>
        ids = [m.job_ids[0] for m in report.models]
        assert len({i.split("_")[0] for i in ids}) == 1 and sorted(i.split("_")[1] for i in ids) == ["0", "1", "2", "3"]
    table = merged_table(ResultsStore(plan.store), plan)
    done = table[table["status"] == "done"]
    assert len(done) == 3 * 2 * 2 and set(table.loc[table["model"] == "broken", "status"]) == {"load-failed"}
    for family in ("bert-cased", "roberta", "albert"):  # three plain evaluate runs
        for name in ("crows-pairs", "stereoset"):
            plain = evaluate(tiny_models[family], load_dataset(name, data_dir=FIXTURE_DATA, download=False), ["aul", "cps"])
            for metric in ("aul", "cps"):
                row = done[(done["model"] == family) & (done["dataset"] == name) & (done["metric"] == metric)].iloc[0]
                for field in SUMMARY_FIELDS:
                    assert row[field] == pytest.approx(plain.summary["metrics"][metric][field]), (family, name, metric, field)
    again = run_plan(plan, options=_options(plan, executor), log=lines.append)  # every cell in the store: nothing submitted
    assert [m.state for m in again.models] == ["in store", "in store", "in store", "load-failed"]
    assert next(m for m in again.models if m.label == "broken").job_ids  # the one that failed is tried again


def _kill(executor: str, record: dict) -> None:
    if executor == "slurm":
        subprocess.run(["scancel", record["job_id"]], check=True, timeout=30)
    else:
        os.kill(record["pid"], signal.SIGKILL)


def _when_scoring(store_path, index: int, at_least: float, timeout: float = 300) -> dict:
    """The job's record once it has scored `at_least` pairs of its first unit (and not all)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            store = ResultsStore(store_path)
            runs = store.runs()
            record = store.job(runs[-1]["run_id"], index, "worker") if runs else None
        except Exception:  # the store is being made
            continue
        if record and record.get("state") == "scoring" and (record.get("done") or 0) >= at_least:
            return record
    raise AssertionError("the job never got to scoring")


def _when_submitted(store_path, timeout: float = 120, indexes: tuple[int, ...] = (0,)) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            runs = ResultsStore(store_path).runs()
        except Exception:  # the store is being made
            continue
        if runs and all(ResultsStore(store_path).job(runs[-1]["run_id"], i, "driver") for i in indexes):
            return
    raise AssertionError("the first run submitted nothing")


def test_a_job_killed_mid_run_is_resumed(executor, request, write_plan, model_dirs, tiny_bert):
    """Killed after a few chunks, the job is submitted again and its retry reads those chunks back from the store's cache.

    On Slurm the job outlives `scancel` by a few seconds (SIGTERM, which submitit's job ignores, then SIGKILL): its
    pairs file is four times longer, so that it is killed with most of its pairs unscored (a shorter one ended first).
    """
    from biaslens import evaluate, load_dataset

    pairs = request.getfixturevalue("more_pairs" if executor == "slurm" else "many_pairs")
    plan = load_plan(write_plan([{"id": str(model_dirs["bert-cased"])}], datasets=f'["{pairs}"]', extra='metrics = ["aul", "cps"]\nchunk_pairs = 4'))
    result: dict = {}
    lines: list[str] = []
    driver = threading.Thread(target=lambda: result.setdefault("report", run_plan(plan, options=_options(plan, executor), log=lines.append)))
    driver.start()
    record = _when_scoring(plan.store, 0, at_least=8)
    _kill(executor, record)
    driver.join(timeout=900)
    (model,) = result["report"].models
    assert model.state == "done" and model.attempts == 2 and len(model.job_ids) == 2, lines
    assert any("ended without a result" in line and "attempt 2 of 3" in line for line in lines), lines
    total = len(load_dataset(str(pairs))) * 2
    assert 2 * record["done"] <= model.cached < total and model.cached % 2 == 0  # the killed job's chunks were kept
    table = merged_table(ResultsStore(plan.store), plan)
    plain = evaluate(tiny_bert, load_dataset(str(pairs)), ["aul", "cps"], chunk_pairs=4)
    for metric in ("aul", "cps"):
        row = table[table["metric"] == metric].iloc[0]
        assert row["status"] == "done" and row["n"] == plain.summary["metrics"][metric]["n"]
        assert row["bias_score"] == pytest.approx(plain.summary["metrics"][metric]["bias_score"])


def test_a_killed_run_resumes_when_run_again(write_plan, many_pairs, model_dirs):
    """No retries: the kill fails the run; the same command again resumes from the kept chunks (local executor)."""
    plan = load_plan(write_plan([{"id": str(model_dirs["roberta"])}], datasets=f'["{many_pairs}"]', extra='metrics = ["aul"]\nchunk_pairs = 4'))
    result: dict = {}
    driver = threading.Thread(target=lambda: result.setdefault("report", run_plan(plan, options=_options(plan, "local"), retries=0)))
    driver.start()
    record = _when_scoring(plan.store, 0, at_least=8)
    _kill("local", record)
    driver.join(timeout=600)
    (first,) = result["report"].models
    assert first.state == "failed" and "ended without a result" in first.error
    (again,) = run_plan(plan, options=_options(plan, "local"), retries=0).models
    assert again.state == "done" and again.cached >= record["done"]


def test_two_runs_of_the_same_plan_never_score_a_cell_twice(executor, write_plan, many_pairs, model_dirs):
    """The second run starts as soon as the first has submitted its jobs: it follows the first run's live jobs (their
    records, and squeue or the processes) instead of submitting its own, so no model is loaded twice, and every cell is
    scored once across both runs."""
    models = [{"id": str(model_dirs["bert-cased"]), "datasets": [str(many_pairs)], "chunk_pairs": 4}, {"id": str(model_dirs["roberta"])}]
    plan = load_plan(write_plan(models, datasets='["crows-pairs"]', extra='metrics = ["aul", "cps"]'))
    reports: dict = {}
    lines: dict[str, list[str]] = {"a": [], "b": []}

    def run(name: str) -> None:
        reports[name] = run_plan(plan, options=_options(plan, executor), log=lines[name].append)

    first = threading.Thread(target=run, args=("a",))
    first.start()
    _when_submitted(plan.store, indexes=(0, 1))
    second = threading.Thread(target=run, args=("b",))
    second.start()
    first.join(timeout=900)
    second.join(timeout=900)
    a, b = reports["a"], reports["b"]
    assert all(m.state in ("done", "in store") for m in a.models + b.models) and a.models[0].state == "done", lines
    store = ResultsStore(plan.store)
    for index in (0, 1):
        assert set(b.models[index].job_ids) <= set(a.models[index].job_ids), (index, lines)  # no job of its own
        assert store.job(b.run_id, index, "worker") is None  # nothing of the second run loaded a model
    table = merged_table(store, plan)
    assert len(table) == 4 and (table["status"] == "done").all()
    assert {store.read_cell(k)["run"]["run_id"] for k in table["key"]} == {a.run_id}  # every cell scored by the first run's jobs
    assert any("bert-cased: job" in line and "followed, not submitted again" in line for line in lines["b"]), lines


def test_small_models_packed_in_one_job(write_plan, model_dirs):
    """models_per_job = 2: three models in two jobs (local executor), the first job scoring two models one after the
    other; each model's cells as when alone, its job's timing recorded (the fixed cost paid once per job)."""
    models = [{"id": str(model_dirs[f])} for f in ("bert-cased", "roberta", "albert")]
    plan = load_plan(write_plan(models, datasets='["crows-pairs"]', extra='metrics = ["aul"]\n[local]\nmodels_per_job = 2'))
    lines: list[str] = []
    report = run_plan(plan, options=_options(plan, "local", max_parallel=1), log=lines.append)
    assert [m.state for m in report.models] == ["done", "done", "done"], lines
    first, second, third = (m.job_ids for m in report.models)
    assert first == second and len(first) == 1 and third != first
    assert any("bert-cased: job" in line and "submitted with 1 other model" in line for line in lines), lines
    store = ResultsStore(plan.store)
    timings = [store.job(report.run_id, i, "worker")["timing"] for i in range(3)]
    assert all({"datasets_s", "load_s", "scoring_s"} <= set(t) and t["scoring_s"] > 0 for t in timings), timings
    assert sum("before_s" in t for t in timings) == 2, timings  # the process before the work: once per job, by its first model
    assert len(merged_table(store, plan)) == 3

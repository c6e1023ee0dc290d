"""Where a plan stands: per model, its cells in the store, what is being scored now, what failed and why.

`plan_status(plan)` reads only the store (cells, locks and their heartbeats, the jobs' records, the models that failed
to load): it works from any machine that sees the store, while jobs run or long after.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from biaslens.zoo.cells import load_datasets, planned_cells
from biaslens.zoo.plan import ZooModel, ZooPlan
from biaslens.zoo.store import STORE_FILE, ResultsStore

#: The columns of `PlanStatus.frame`, one row per model of the plan.
STATUS_COLUMNS = ("model", "state", "cells", "done", "unavailable", "running", "missing", "job", "attempt", "progress", "detail")


@dataclass
class PlanStatus:
    """A plan's status: one row per model (`STATUS_COLUMNS`), the store, and the plan's runs in it."""

    frame: pd.DataFrame
    store: Path
    runs: list[str]

    @property
    def finished(self) -> bool:
        return bool((self.frame["state"] == "done").all())

    def lines(self) -> list[str]:
        """The status for people: a line per model, then the totals."""
        out = []
        width = max([len(str(m)) for m in self.frame["model"]] + [5])
        for row in self.frame.to_dict(orient="records"):
            counts = f"{row['done']}/{row['cells']} cells" if pd.notna(row["cells"]) else "cells not known until it loads"
            attempt = row["attempt"] if pd.notna(row["attempt"]) else None
            extra = "".join(
                f" · {x}"
                for x in (
                    f"{row['unavailable']} unavailable" if row["unavailable"] else "",
                    row["progress"] or "",
                    f"job {row['job']}" + (f" (attempt {attempt})" if attempt and attempt > 1 else "") if row["job"] else "",
                    row["detail"],
                )
                if x
            )
            out.append(f"{str(row['model']):<{width}}  {row['state']:<11} {counts}{extra}")
        known = self.frame["cells"].dropna()
        done = sum(int(x) for x in self.frame.loc[known.index, "done"])
        states = self.frame["state"].value_counts()
        out.append(
            f"{len(self.frame)} models: "
            + ", ".join(f"{n} {s}" for s, n in states.items())
            + f"; {done:,} of {sum(int(x) for x in known):,} known cells in {self.store}"
        )
        return out


def plan_status(plan: ZooPlan) -> PlanStatus:
    """The status of every model of the plan, from its store (an absent store: everything pending)."""
    datasets = load_datasets(plan)
    if not (plan.store / STORE_FILE).exists():
        rows = [_row(m.label, "pending", None, detail="no results store yet") for m in plan.models]
        return PlanStatus(pd.DataFrame(rows, columns=list(STATUS_COLUMNS)), plan.store, [])
    store = ResultsStore(plan.store)
    runs = [r for r in store.runs() if _of_plan(r, plan)]
    rows = [_model_status(store, m, datasets, runs) for m in plan.models]
    return PlanStatus(pd.DataFrame(rows, columns=list(STATUS_COLUMNS)), store.root, [r["run_id"] for r in runs])


def _of_plan(run: dict[str, Any], plan: ZooPlan) -> bool:
    return plan.path is None or run.get("plan") == str(plan.path)


def _row(model: str, state: str, cells: int | None, **values: Any) -> dict[str, Any]:
    base = {"model": model, "state": state, "cells": cells, "done": 0, "unavailable": 0, "running": 0, "missing": cells, "job": "", "attempt": None}
    return {**base, "progress": "", "detail": "", **values}


def _latest_jobs(store: ResultsStore, model: ZooModel, runs: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The driver's and the job's own record of the model's latest job, from the newest run that had one."""
    for run in reversed(runs):
        if any(m.get("id") == model.id and m.get("index") == model.index for m in run.get("models", [])):
            return store.job(run["run_id"], model.index, "driver") or {}, store.job(run["run_id"], model.index, "worker") or {}
    return {}, {}


def _model_status(store: ResultsStore, model: ZooModel, datasets: Any, runs: list[dict[str, Any]]) -> dict[str, Any]:
    driver, worker = _latest_jobs(store, model, runs)
    job, attempt = driver.get("job_id") or worker.get("job_id") or "", driver.get("attempt") or worker.get("attempt")
    failure = next((f for d in model.load_dtypes() if (f := store.failure(model.resolution_key(d)))), None)
    cells = planned_cells(model, store, datasets)
    if cells is None:
        if failure:
            return _row(model.label, "load-failed", None, job=job, attempt=attempt, detail=failure.get("error", ""))
        return _row(model.label, _job_state(driver, worker), None, job=job, attempt=attempt, detail=driver.get("message", ""))
    done = unavailable = 0
    missing = []
    for c in cells:
        if not store.has_cell(c.key):
            missing.append(c.key)
        elif store.read_cell(c.key).get("status") == "unavailable":
            unavailable += 1
        else:
            done += 1
    counts = {"done": done, "unavailable": unavailable, "missing": len(missing), "job": job, "attempt": attempt}
    if not missing:
        return _row(model.label, "done", len(cells), **counts)
    running = store.live_locks(missing)
    if running:
        owners = sorted({f"run {i.owner.run_id} job {i.owner.job_id or '?'} on {i.owner.host}" for i in running.values()})
        return _row(model.label, "running", len(cells), running=len(running), progress=_progress(worker), detail="; ".join(owners), **counts)
    if failure:
        return _row(model.label, "load-failed", len(cells), detail=failure.get("error", ""), **counts)
    return _row(model.label, _job_state(driver, worker), len(cells), detail=driver.get("message", ""), **counts)


def _job_state(driver: dict[str, Any], worker: dict[str, Any]) -> str:
    """What the latest job's records say of a model with cells left: failed, queued, running, or pending (no job)."""
    state = driver.get("state")
    if state == "failed":
        return "failed"
    if worker.get("state") in ("loading", "scoring", "starting") and _fresh(worker):
        return "running"
    if state in ("submitted", "retrying", "waiting"):
        return "queued" if state != "waiting" else "waiting"
    return "pending"


def _fresh(record: dict[str, Any], within: float = 120.0) -> bool:
    from datetime import datetime

    try:
        updated = datetime.fromisoformat(record["updated"]).timestamp()
    except (KeyError, ValueError, TypeError):
        return False
    return time.time() - updated < within


def _progress(worker: dict[str, Any]) -> str:
    if worker.get("state") == "scoring" and worker.get("total"):
        return f"{100 * (worker.get('done') or 0) / worker['total']:.0f}% of {worker.get('unit', '')}"
    return str(worker.get("state") or "")


__all__ = ["STATUS_COLUMNS", "PlanStatus", "plan_status"]

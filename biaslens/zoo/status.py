"""Where a plan stands: per model, its cells in the store, what is being scored now, what failed and why.

`plan_status(plan)` reads only the store (its index of checked cells, locks and their heartbeats, the jobs' records, the
models that failed to load): it works from any machine that sees the store, while jobs run or long after. A damaged
cell (`biaslens.zoo.integrity`) counts as missing, and is said; each model's sanity verdict (stored with its cells) is
said beside its counts: "looks untrained", "not checked" for cells stored before verdicts were.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biaslens.analyses.sanity import VERDICT_LABELS, worst_verdict
from biaslens.zoo.cells import load_datasets, plan_notes, planned_cells, stored_datasets
from biaslens.zoo.plan import ZooModel, ZooPlan
from biaslens.zoo.store import DAMAGED, STORE_FILE, ResultsStore

if TYPE_CHECKING:
    import pandas as pd

#: The columns of `PlanStatus.frame`, one row per model of the plan. `damaged`: cells found damaged (counted in
#: `missing`); `sanity`: the model's verdict from its stored cells ("ok", "weak", "untrained", "" not checked; None: no
#: scores yet).
STATUS_COLUMNS = (
    "model",
    "state",
    "cells",
    "done",
    "unavailable",
    "running",
    "missing",
    "damaged",
    "sanity",
    "job",
    "attempt",
    "progress",
    "detail",
)
#: The widest a model's label is shown in `PlanStatus.lines` (a longer one is cut, with "…").
LABEL_WIDTH = 40


@dataclass
class PlanStatus:
    """A plan's status: one row per model (`rows`, as a table `frame`: `STATUS_COLUMNS`), the store, and the plan's runs
    in it; `frame` makes the table when asked."""

    rows: list[dict[str, Any]]
    store: Path
    runs: list[str]
    notes: list[str] = field(default_factory=list)  # what the plan's check says (`cells.plan_notes`)

    @cached_property
    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows, columns=list(STATUS_COLUMNS))

    @property
    def finished(self) -> bool:
        return all(row["state"] == "done" for row in self.rows)

    def lines(self) -> list[str]:
        """The status for people: the plan's notes, a line per model, then the totals."""
        out = [f"Note: {note}" for note in self.notes]
        labels = [_fit(str(row["model"])) for row in self.rows]
        width = max([len(label) for label in labels] + [5])
        for label, row in zip(labels, self.rows):
            counts = f"{row['done']}/{row['cells']} cells" if row["cells"] is not None else "cells not known until it loads"
            attempt, damaged = row["attempt"], row["damaged"] or 0
            extra = "".join(
                f" · {x}"
                for x in (
                    VERDICT_LABELS[row["sanity"]] if isinstance(row["sanity"], str) else "",
                    f"{row['unavailable']} unavailable" if row["unavailable"] else "",
                    f"{damaged} damaged (left out: `zoo run` scores {'it' if damaged == 1 else 'them'} again)" if damaged else "",
                    row["progress"] or "",
                    f"job {row['job']}" + (f" (attempt {attempt})" if attempt and attempt > 1 else "") if row["job"] else "",
                    row["detail"],
                )
                if x
            )
            out.append(f"{label:<{width}}  {row['state']:<11} {counts}{extra}")
        known = [row for row in self.rows if row["cells"] is not None]
        states: dict[str, int] = {}
        for row in self.rows:
            states[row["state"]] = states.get(row["state"], 0) + 1
        untrained = sum(row["sanity"] == "untrained" for row in self.rows)
        out.append(
            f"{len(self.rows)} models: "
            + ", ".join(f"{n} {s}" for s, n in sorted(states.items(), key=lambda item: -item[1]))
            + f"; {sum(int(r['done']) for r in known):,} of {sum(int(r['cells']) for r in known):,} known cells in {self.store}"
            + (f"; {untrained} {'model looks' if untrained == 1 else 'models look'} untrained: their bias scores mean nothing" if untrained else "")
        )
        return out


def plan_status(plan: ZooPlan) -> PlanStatus:
    """The status of every model of the plan, from its store (an absent store: everything pending). Reads the store's index
    of checked cells (each cell's status and sanity verdict), the locks of the cells missing, the models' failures and the
    latest jobs' records."""
    if not (plan.store / STORE_FILE).exists():
        load_datasets(plan)  # (each checked: a missing one is said now)
        rows = [_row(m.label, "pending", None, detail="no results store yet") for m in plan.models]
        return PlanStatus(rows, plan.store, [], plan_notes(plan, None))
    store = ResultsStore(plan.store)
    datasets = stored_datasets(plan, store)
    runs = [r for r in store.runs() if _of_plan(r, plan)]
    latest: dict[tuple[int, str], str] = {}  # (index, model id) -> the newest run that had a job for it
    for run in runs:
        for m in run.get("models", []):
            latest[(m.get("index"), m.get("id"))] = run["run_id"]
    summaries = store.summaries()
    stored = dict(zip(summaries["key"], zip(summaries["status"], summaries["sanity"])))
    rows = [_model_status(store, m, datasets, latest.get((m.index, m.id)), stored) for m in plan.models]
    return PlanStatus(rows, store.root, [r["run_id"] for r in runs], plan_notes(plan, store))


def _fit(label: str) -> str:
    """A label on one line of at most `LABEL_WIDTH` characters."""
    flat = " ".join(label.split())
    return flat if len(flat) <= LABEL_WIDTH else flat[: LABEL_WIDTH - 1] + "…"


def _of_plan(run: dict[str, Any], plan: ZooPlan) -> bool:
    return plan.path is None or run.get("plan") == str(plan.path)


def _row(model: str, state: str, cells: int | None, **values: Any) -> dict[str, Any]:
    base = {
        "model": model,
        "state": state,
        "cells": cells,
        "done": 0,
        "unavailable": 0,
        "running": 0,
        "missing": cells,
        "damaged": 0,
        "sanity": None,
        "job": "",
        "attempt": None,
    }
    return {**base, "progress": "", "detail": "", **values}


def _model_status(store: ResultsStore, model: ZooModel, datasets: Any, run_id: str | None, stored: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """A model's row: `stored` gives each cell of the store's index as (status, sanity verdict)."""
    driver, worker = (store.job(run_id, model.index, "driver") or {}, store.job(run_id, model.index, "worker") or {}) if run_id else ({}, {})
    job, attempt = driver.get("job_id") or worker.get("job_id") or "", driver.get("attempt") or worker.get("attempt")
    failure = next((f for d in model.load_dtypes() if (f := store.failure(model.resolution_key(d)))), None)
    cells = planned_cells(model, store, datasets)
    if cells is None:
        if failure:
            return _row(model.label, "load-failed", None, job=job, attempt=attempt, detail=failure.get("error", ""))
        return _row(model.label, _job_state(driver, worker), None, job=job, attempt=attempt, detail=driver.get("message", ""))
    done = unavailable = damaged = 0
    missing, verdicts = [], []
    for c in cells:
        state, sanity = stored.get(c.key, (None, ""))
        if state == "done":
            done += 1
            verdicts.append(sanity)
        elif state == "unavailable":
            unavailable += 1
        else:
            missing.append(c.key)
            damaged += state == DAMAGED
    counts = {
        "done": done,
        "unavailable": unavailable,
        "missing": len(missing),
        "damaged": damaged,
        "sanity": worst_verdict(verdicts) if verdicts else None,
        "job": job,
        "attempt": attempt,
    }
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

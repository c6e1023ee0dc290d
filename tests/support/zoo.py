"""Results stores the zoo's jobs fill in this process, for the tests of the pages and commands that read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from tests.support import FIXTURE_DATA


def fill_store(plan: Any) -> Any:
    """Create the plan's results store and run every model's job in this process (run id "run-1"); the plan."""
    from biaslens.zoo.store import ResultsStore
    from biaslens.zoo.worker import ModelTask, run_model

    ResultsStore(plan.store, create=True)
    for model in plan.models:
        run_model(ModelTask(str(plan.store), "run-1", model, plan.data_dir, plan.download))
    return plan


def filled_store(folder: Path, models: list[dict[str, Any]], *, store: str, datasets: Sequence[str], metrics: Sequence[str]) -> Any:
    """A plan of `models` (each a dict of its keys) over the fixture data (no downloads) in `folder`, its store filled
    (`fill_store`); the plan."""
    from biaslens.zoo.plan import parse_plan

    spec = {"store": store, "datasets": list(datasets), "data_dir": str(FIXTURE_DATA), "download": False, "metrics": list(metrics), "models": models}
    return fill_store(parse_plan(spec, folder))

"""Results stores the zoo's jobs fill in this process, for the tests of the pages and commands that read them; made-up
records for `biaslens.zoo.testing.synthetic_cell` (`made_up`)."""

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


def made_up(dataset: Any, wins: int) -> Any:
    """Records where the first `wins` pairs prefer the stereotypical sentence (log p -1 against -2), the rest the other."""
    import pandas as pd

    n = len(dataset)
    return pd.DataFrame(
        {
            "pair_id": [p.pair_id for p in dataset.pairs],
            "stereo": [-1.0 if i < wins else -2.0 for i in range(n)],
            "anti": [-2.0 if i < wins else -1.0 for i in range(n)],
            "hits": [1] * n,
            "total": [2] * n,
        }
    )

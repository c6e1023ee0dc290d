"""Synthetic results stores, for tests and benchmarks of what reads a store (the leaderboard, merge, status).

`synthetic_store(root, datasets, models=500)` writes a store as `biaslens zoo run` would, through the same
`ResultsStore.write_cell`, for made-up models ("synthetic/bert-007", …) with made-up per-pair scores: each model prefers
the stereotypical sentence with its own probability, per metric. Every cell's summary is computed from its records by
`biaslens.engine.evaluation.summarize`, as a real run's is. Nothing here is a measurement of any real model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence, cast

import numpy as np
import pandas as pd

from biaslens.data.datasets import PairDataset
from biaslens.zoo.store import RECORD_COLUMNS, ResultsStore, cell_fields, cell_key

#: The made-up models' families, and whether each is masked or causal.
FAMILIES = {"bert": "masked", "roberta": "masked", "albert": "masked", "gpt2": "causal", "pythia": "causal", "llama": "causal"}


def synthetic_store(
    root: str | Path,
    datasets: Sequence[PairDataset],
    *,
    models: int = 500,
    metrics: Sequence[str] = ("aul", "cps", "sss"),
    seed: int = 0,
) -> ResultsStore:
    """A results store of `models` made-up models × `datasets` × `metrics`, every cell done (see the module)."""
    from biaslens.engine.evaluation import summarize
    from biaslens.engine.metrics import pair_columns

    store = ResultsStore(root, create=True)
    rng = np.random.default_rng(seed)
    families = list(FAMILIES)
    for dataset in datasets:
        store.put_dataset(dataset)
    frames = {
        d.sha256: pd.DataFrame(
            [{c: getattr(p, c) for c in ("pair_id", "dataset", "bias_type", "direction", "sent_stereo", "sent_anti")} for p in d.pairs]
        )
        for d in datasets
    }
    for i in range(models):
        family = families[i % len(families)]
        parameters = int(10 ** rng.uniform(7, 10.8))
        about = {
            "id": f"synthetic/{family}-{i:03d}",
            "label": f"{family}-{i:03d}",
            "revision": None,
            "fingerprint": f"synthetic:{i}",
            "source": "synthetic",
            "kind": FAMILIES[family],
            "family": family,
            "model_type": family,
            "parameters": parameters,
            "dtype": "float32",
        }
        lean = rng.uniform(0.4, 0.7)
        for dataset in datasets:
            pairs = frames[dataset.sha256]
            n = len(pairs)
            for metric in metrics:
                wins = rng.random(n) < np.clip(lean + rng.normal(0, 0.03), 0, 1)
                stereo = -rng.uniform(1, 5, n)
                anti = stereo - np.where(wins, 1, -1) * rng.uniform(0.01, 1, n)
                total = rng.integers(3, 12, n)
                records = pd.DataFrame(
                    {"pair_id": pairs["pair_id"], "stereo": stereo, "anti": anti, "hits": rng.integers(0, total + 1), "total": total}
                )
                columns = pair_columns(metric)
                frame = pairs.assign(**{columns.stereo: stereo, columns.anti: anti, columns.hits: records["hits"], columns.total: total})
                fields = cell_fields(
                    fingerprint=about["fingerprint"],
                    revision=None,
                    dataset_sha256=dataset.sha256,
                    selection=None,
                    metric=metric,
                    convention="default",
                    precision="float32",
                    compat="default",
                )
                manifest = {"model": about["id"], "source": "synthetic", "revision": None, "fingerprint": about["fingerprint"], "dtype": "float32"}
                manifest["dataset"] = {"name": dataset.name, "path": str(dataset.path), "sha256": dataset.sha256, "pairs_total": n, "pairs_scored": n}
                summary = summarize(frame, [metric], manifest)
                store.write_cell(
                    {
                        "key": cell_key(fields),
                        "status": "done",
                        "fields": fields,
                        "model": about,
                        "dataset": {
                            "name": dataset.name,
                            "label": dataset.name,
                            "path": str(dataset.path),
                            "sha256": dataset.sha256,
                            "pairs_total": n,
                        },
                        "summary": summary["metrics"][metric],
                        "manifest": {**manifest, "metrics": [metric], "synthetic": True},
                        "warnings": ["synthetic scores: made up for a test or a benchmark, not a model's"],
                        "run": {"run_id": "synthetic", "created": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00"},
                    },
                    cast(pd.DataFrame, records[list(RECORD_COLUMNS)]),
                )
    return store


__all__ = ["FAMILIES", "synthetic_store"]

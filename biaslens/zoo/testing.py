"""Synthetic results stores, for tests and benchmarks of what reads a store (the leaderboard, merge, status).

`synthetic_store(root, datasets, models=500)` writes a store as `biaslens zoo run` would, through the same
`ResultsStore.write_cell`, for made-up models ("synthetic/bert-007", …) with made-up per-pair scores: each model prefers
the stereotypical sentence with its own probability, per metric. Every cell's summary is computed from its records by
`biaslens.engine.evaluation.summarize`, as a real run's is. Nothing here is a measurement of any real model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence, cast

import numpy as np
import pandas as pd

from biaslens.data.datasets import PairDataset
from biaslens.data.export import atomic_write
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
    pinned: bool = False,
) -> ResultsStore:
    """A results store of `models` made-up models × `datasets` × `metrics`, every cell done (see the module).

    `pinned`: each model is a hub id at a made-up full commit (`synthetic_revision`), so that a plan naming them
    (`synthetic_plan`) knows their cells without loading anything, as a plan of pinned hub models does."""
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
        revision = synthetic_revision(i) if pinned else None
        about = {
            "id": f"synthetic/{family}-{i:03d}",
            "label": f"{family}-{i:03d}",
            "revision": revision,
            "fingerprint": f"hub:synthetic/{family}-{i:03d}@{revision}" if pinned else f"synthetic:{i}",
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
                    revision=revision,
                    dataset_sha256=dataset.sha256,
                    selection=None,
                    metric=metric,
                    convention="default",
                    precision="float32",
                    compat="default",
                )
                manifest = {
                    "model": about["id"],
                    "source": "synthetic",
                    "revision": revision,
                    "fingerprint": about["fingerprint"],
                    "dtype": "float32",
                }
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


def synthetic_revision(index: int) -> str:
    """The made-up full commit of the `index`-th pinned synthetic model."""
    return hashlib.sha1(f"synthetic-{index}".encode()).hexdigest()


def synthetic_plan(path: str | Path, store: str | Path, datasets: Sequence[str], data_dir: str | Path, *, models: int = 500) -> Path:
    """A plan (TOML) naming the models of a `synthetic_store(..., pinned=True)` with its `datasets` (names) found in
    `data_dir`: what `biaslens zoo status` and `zoo merge` read, for tests and benchmarks of them. Nothing can run it
    (the hub has no such models); every cell it names is in the store."""
    families = list(FAMILIES)
    lines = [f"store = {json.dumps(str(store))}", f"datasets = {json.dumps(list(datasets))}", f"data_dir = {json.dumps(str(data_dir))}"]
    lines += ["download = false", 'metrics = ["aul", "cps", "sss"]', ""]
    for i in range(models):
        family = families[i % len(families)]
        lines += ["[[models]]", f'id = "synthetic/{family}-{i:03d}"', f'revision = "{synthetic_revision(i)}"', ""]
    return atomic_write(Path(path), "\n".join(lines))


__all__ = ["FAMILIES", "synthetic_plan", "synthetic_revision", "synthetic_store"]

"""Synthetic results stores, for tests and benchmarks of what reads a store (the leaderboard, merge, status).

`synthetic_store(root, datasets, models=500)` writes a store as `biaslens zoo run` would, through the same
`ResultsStore.write_cell`, for made-up models ("synthetic/bert-007", …) with made-up per-pair scores: each model prefers
the stereotypical sentence with its own probability, per metric. Every cell's summary is computed from its records by
`biaslens.engine.evaluation.summarize`, as a real run's is; `synthetic_cell` writes one such cell from given records (the
damaged-store tests build on it). Nothing here is a measurement of any real model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence, cast

import numpy as np
import pandas as pd

from biaslens.data.datasets import PairDataset
from biaslens.data.export import atomic_write
from biaslens.zoo.store import DATASET_COLUMNS, RECORD_COLUMNS, ResultsStore, cell_fields, cell_key

#: The made-up models' families, and whether each is masked or causal.
FAMILIES = {"bert": "masked", "roberta": "masked", "albert": "masked", "gpt2": "causal", "pythia": "causal", "llama": "causal"}


def synthetic_about(i: int, family: str, parameters: int, sanity: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model block of made-up model number `i` of `family` (a cell's "model"; `sanity`: a made-up verdict, else none)."""
    about: dict[str, Any] = {
        "id": f"synthetic/{family}-{i:03d}",
        "label": f"{family}-{i:03d}",
        "revision": None,
        "fingerprint": f"synthetic:{i}",
        "source": "synthetic",
        "kind": FAMILIES.get(family, "masked"),
        "family": family,
        "model_type": family,
        "parameters": parameters,
        "dtype": "float32",
    }
    if sanity is not None:
        about["sanity"] = sanity
    return about


def synthetic_cell(
    store: ResultsStore,
    dataset: PairDataset,
    about: dict[str, Any],
    metric: str,
    records: pd.DataFrame,
    *,
    created: str = "2026-01-01T00:00:00+00:00",
    label: str | None = None,
    version: str | None = None,
) -> str:
    """Write one made-up cell of `about`'s model on `dataset` (put in the store already) as `zoo run` would: `records`
    (`RECORD_COLUMNS`, made-up scores), its summary computed from them by `summarize`; `label` the dataset's (default: its
    name), `version` the biaslens version that scored it (default: this one). Returns its key."""
    from biaslens.engine.evaluation import summarize
    from biaslens.engine.metrics import pair_columns

    pairs = _pairs_frame(dataset)
    records = cast(pd.DataFrame, records[list(RECORD_COLUMNS)]).reset_index(drop=True)
    columns = pair_columns(metric)
    frame = pairs.merge(
        records.rename(columns={"stereo": columns.stereo, "anti": columns.anti, "hits": columns.hits, "total": columns.total}), on="pair_id"
    )
    fields = cell_fields(
        fingerprint=about["fingerprint"],
        revision=about.get("revision"),
        dataset_sha256=dataset.sha256,
        selection=None,
        metric=metric,
        convention="default",
        precision="float32",
        compat="default",
        **({"version": version} if version is not None else {}),
    )
    n = len(records)
    manifest = {
        "model": about["id"],
        "source": "synthetic",
        "revision": about.get("revision"),
        "fingerprint": about["fingerprint"],
        "dtype": "float32",
    }
    manifest["dataset"] = {"name": dataset.name, "path": str(dataset.path), "sha256": dataset.sha256, "pairs_total": len(dataset), "pairs_scored": n}
    summary = summarize(frame, [metric], manifest)
    key = cell_key(fields)
    store.write_cell(
        {
            "key": key,
            "status": "done",
            "fields": fields,
            "model": about,
            "dataset": {
                "name": dataset.name,
                "label": label or dataset.name,
                "path": str(dataset.path),
                "sha256": dataset.sha256,
                "pairs_total": len(dataset),
            },
            "summary": summary["metrics"][metric],
            "manifest": {**manifest, "metrics": [metric], "synthetic": True},
            "warnings": ["synthetic scores: made up for a test or a benchmark, not a model's"],
            "run": {"run_id": "synthetic", "created": created},
        },
        records,
    )
    return key


_FRAMES: dict[str, pd.DataFrame] = {}


def _pairs_frame(dataset: PairDataset) -> pd.DataFrame:
    """The dataset's pairs as a frame (`DATASET_COLUMNS`), made once per file content."""
    if dataset.sha256 not in _FRAMES:
        if len(_FRAMES) >= 8:
            _FRAMES.pop(next(iter(_FRAMES)))
        _FRAMES[dataset.sha256] = pd.DataFrame([{c: getattr(p, c) for c in DATASET_COLUMNS} for p in dataset.pairs])
    return _FRAMES[dataset.sha256]


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
    store = ResultsStore(root, create=True)
    rng = np.random.default_rng(seed)
    families = list(FAMILIES)
    for dataset in datasets:
        store.put_dataset(dataset)
    ids = {d.sha256: np.array([p.pair_id for p in d.pairs]) for d in datasets}
    for i in range(models):
        family = families[i % len(families)]
        about = synthetic_about(i, family, int(10 ** rng.uniform(7, 10.8)))
        if pinned:
            revision = synthetic_revision(i)
            about.update(id=f"synthetic/{family}-{i:03d}", revision=revision, fingerprint=f"hub:synthetic/{family}-{i:03d}@{revision}")
        lean = rng.uniform(0.4, 0.7)
        for dataset in datasets:
            n = len(dataset)
            for metric in metrics:
                wins = rng.random(n) < np.clip(lean + rng.normal(0, 0.03), 0, 1)
                stereo = -rng.uniform(1, 5, n)
                anti = stereo - np.where(wins, 1, -1) * rng.uniform(0.01, 1, n)
                total = rng.integers(3, 12, n)
                records = pd.DataFrame(
                    {"pair_id": ids[dataset.sha256], "stereo": stereo, "anti": anti, "hits": rng.integers(0, total + 1), "total": total}
                )
                synthetic_cell(store, dataset, about, metric, records, created=f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00")
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


__all__ = ["FAMILIES", "synthetic_about", "synthetic_cell", "synthetic_plan", "synthetic_revision", "synthetic_store"]

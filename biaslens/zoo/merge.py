"""One table of a zoo: models × datasets × metrics, each bias score with its 95% Wilson interval, from the store.

`merged_table(store, plan)` has one row per cell of the plan (a cell not in the store says why: missing, unavailable,
the model failed to load); without a plan, one row per cell in the store (for each model, dataset, metric, convention,
precision and compat mode, the newest biaslens version's). `wide_table` turns it into one row per model with a
"<dataset> · <metric>" column per score. `write_table` writes either as CSV, JSON or Parquet (by the file's suffix).
The numbers are the cells' summaries: those `biaslens evaluate` writes in summary.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pandas as pd

from biaslens.data.export import atomic_write, safe_csv, to_json
from biaslens.errors import InputError
from biaslens.zoo.cells import load_datasets, planned_cells
from biaslens.zoo.plan import ZooPlan
from biaslens.zoo.store import SCORE_COLUMNS, ResultsStore, score_types

#: The columns of `merged_table`.
MERGED_COLUMNS = (
    "model",
    "dataset",
    "metric",
    *SCORE_COLUMNS,
    "status",
    "convention",
    "precision",
    "compat",
    "family",
    "kind",
    "parameters",
    "model_id",
    "model_revision",
    "model_fingerprint",
    "dataset_sha256",
    "selection",
    "biaslens",
    "reason",
    "key",
)
#: Formats `write_table` writes, by suffix.
FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet"}
_IDENTITY = ["model_fingerprint", "model_revision", "dataset_sha256", "selection", "metric", "convention", "precision", "compat"]


def merged_table(store: ResultsStore, plan: ZooPlan | None = None) -> pd.DataFrame:
    """The zoo's table, one row per cell (`MERGED_COLUMNS`): the plan's cells, or every cell in the store."""
    summaries = store.summaries()
    if plan is None:
        frame = summaries.sort_values(["biaslens", "created"]).drop_duplicates(_IDENTITY, keep="last")
        frame = frame.assign(
            model=frame["model_label"],
            dataset=frame["dataset_label"],
            _metric=[_metric_order().get(m, len(_metric_order())) for m in frame["metric"]],
        )
        return _ordered(frame.sort_values(["model", "dataset", "_metric", "convention", "precision", "compat"], kind="stable"))
    by_key = summaries.set_index("key", drop=False)
    datasets = load_datasets(plan)
    rows = []
    for model in plan.models:
        cells = planned_cells(model, store, datasets)
        if cells is None:
            failure = next((f for d in model.load_dtypes() if (f := store.failure(model.resolution_key(d)))), None)
            reason = failure.get("error", "") if failure else "not scored yet: its cells are known once it loads"
            status = "load-failed" if failure else "missing"
            for u in model.units():
                for m in u.metrics or _paper():
                    rows.append(
                        {
                            "model": model.label,
                            "dataset": u.dataset.label,
                            "metric": m,
                            "convention": u.convention,
                            "precision": u.precision,
                            "compat": u.compat,
                            "model_id": model.id,
                            "status": status,
                            "reason": reason,
                        }
                    )
            continue
        failure = next((f for d in model.load_dtypes() if (f := store.failure(model.resolution_key(d)))), None)
        for c in cells:
            if c.key in by_key.index:
                row = by_key.loc[c.key].to_dict()
            else:
                row = {**c.fields, "key": c.key, "model_id": model.id, "status": "load-failed" if failure else "missing", "selection": ""}
                row["reason"] = failure.get("error", "") if failure else ""
            rows.append({**row, "model": model.label, "dataset": c.unit.dataset.label})
    return _ordered(pd.DataFrame(rows))


def _metric_order() -> dict[str, int]:
    from biaslens.engine.metrics import METRICS

    return {m: i for i, m in enumerate(METRICS)}


def _paper() -> tuple[str, ...]:
    from biaslens.engine.metrics import PAPER_METRICS

    return tuple(PAPER_METRICS)


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    for column in MERGED_COLUMNS:
        if column not in frame.columns:
            frame[column] = None
    return score_types(frame.loc[:, list(MERGED_COLUMNS)].reset_index(drop=True))


def wide_table(merged: pd.DataFrame) -> pd.DataFrame:
    """One row per model: for each dataset and metric (and convention, precision or compat mode, where the table has
    several), its bias score and interval as `<column>`, `<column> low`, `<column> high`."""
    frame = cast(pd.DataFrame, merged[merged["status"] == "done"])
    parts = ["dataset", "metric"] + [c for c in ("convention", "precision", "compat") if len(set(merged[c].dropna())) > 1]
    datasets = {d: i for i, d in enumerate(dict.fromkeys(merged["dataset"]))}
    metrics = _metric_order()
    frame = frame.assign(
        column=[" · ".join(str(v) for v in row) for row in frame[parts].itertuples(index=False)],
        _dataset=[datasets.get(d, 0) for d in frame["dataset"]],
        _metric=[metrics.get(m, len(metrics)) for m in frame["metric"]],
    ).sort_values(["_dataset", "_metric"], kind="stable")
    order = list(dict.fromkeys(frame["column"]))
    models = list(dict.fromkeys(merged["model"]))
    out = pd.DataFrame({"model": models})
    for name in order:
        part = cast(pd.DataFrame, frame[frame["column"] == name]).drop_duplicates(subset=["model"], keep="last").set_index("model")
        for suffix, source in (("", "bias_score"), (" low", "ci_low"), (" high", "ci_high")):
            values = dict(zip(part.index, part[source]))
            out[name + suffix] = [values.get(m) for m in out["model"]]
    return out


def write_table(frame: pd.DataFrame, path: str | Path, fmt: str | None = None) -> Path:
    """Write `frame` as CSV, JSON (records) or Parquet: `fmt`, else the suffix of `path`."""
    path = Path(path)
    kind = fmt or FORMATS.get(path.suffix.lower())
    if kind not in FORMATS.values():
        raise InputError(f"Cannot tell the format of {path}: name a .csv, .json or .parquet file, or give --format.")
    if kind == "csv":
        return atomic_write(path, safe_csv(frame))
    if kind == "json":
        return atomic_write(path, to_json(frame.astype(object).where(frame.notna(), None).to_dict(orient="records")))
    import io

    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return atomic_write(path, buffer.getvalue())


__all__ = ["FORMATS", "MERGED_COLUMNS", "merged_table", "wide_table", "write_table"]

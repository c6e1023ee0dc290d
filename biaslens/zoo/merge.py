"""One table of a zoo: models × datasets × metrics, each bias score with its 95% Wilson interval, from the store.

`merged_table(store, plan)` has one row per cell of the plan (a cell not in the store says why: missing, unavailable,
damaged, the model failed to load); without a plan, one row per cell in the store (for each model, dataset, metric,
convention, precision and compat mode, the newest biaslens version's, versions compared as versions). Its `dataset` is
one name per dataset scored (its file's sha256 and the pairs chosen: `biaslens.zoo.store.dataset_names`), its `sanity`
the model's verdict stored with the cell ("ok", "weak", "untrained", "not checked"). `wide_table` turns it into one row
per model with a "<dataset> · <metric>" column per score. `write_table` writes either as CSV, JSON or Parquet (by the
file's suffix). The numbers are the cells' summaries, checked against their records: those `biaslens evaluate` writes
in summary.json. What a reader must know besides (datasets labelled alike and told apart, damaged cells left out,
models that look untrained) is in the table's `attrs["notes"]`, one line each (`zoo merge` prints them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pandas as pd

from biaslens.analyses.sanity import untrained_note, worst_verdict
from biaslens.data.export import atomic_write, safe_csv, to_json
from biaslens.errors import InputError
from biaslens.zoo.cells import dataset_sha256, planned_cells, stored_datasets
from biaslens.zoo.choicecells import choice_statistics
from biaslens.zoo.plan import ZooPlan
from biaslens.zoo.store import (
    DAMAGED,
    SCORE_COLUMNS,
    ResultsStore,
    by_version,
    damaged_lines,
    dataset_names,
    metric_goal,
    metric_order,
    score_types,
)

#: The columns of `merged_table`.
MERGED_COLUMNS = (
    "model",
    "dataset",
    "metric",
    *SCORE_COLUMNS,
    "ideal",
    "better",
    "status",
    "sanity",
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
    """The zoo's table, one row per cell (`MERGED_COLUMNS`): the plan's cells, or every cell in the store; see the module."""
    summaries = store.summaries()
    if plan is None:
        damaged = _where(summaries, summaries["status"] == DAMAGED)
        whole = by_version(_where(summaries, summaries["status"] != DAMAGED)).drop_duplicates(_IDENTITY, keep="last")
        frame = pd.concat([whole, damaged]) if len(damaged) else whole
        return _finished(frame.assign(model=frame["model_label"]))
    by_key = {row["key"]: row for row in summaries.to_dict(orient="records")}
    datasets = stored_datasets(plan, store)
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
                            "dataset_label": u.dataset.label,
                            "dataset_sha256": dataset_sha256(datasets[u.dataset.label]),
                            "selection": _selection(u.dataset.selection),
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
            if c.key in by_key:
                row = dict(by_key[c.key])
            else:
                row = {**c.fields, "key": c.key, "model_id": model.id, "status": "load-failed" if failure else "missing"}
                row.update(selection=_selection(c.fields["selection"]), reason=failure.get("error", "") if failure else "")
            rows.append({**row, "model": model.label, "dataset_label": c.unit.dataset.label, "dataset_sha256": c.fields["dataset_sha256"]})
    return _finished(pd.DataFrame(rows), ordered=False)


def _selection(selection: dict[str, int] | None) -> str:
    """The pairs chosen as `summaries()` writes them."""
    return json.dumps(selection, sort_keys=True) if selection else ""


def _where(frame: pd.DataFrame, mask: Any) -> pd.DataFrame:
    return cast(pd.DataFrame, frame[mask])


def _finished(frame: pd.DataFrame, *, ordered: bool = True) -> pd.DataFrame:
    """The table from its rows: each dataset named (one name per dataset scored), each verdict said, the columns in
    order (and the rows, `ordered`: by model, dataset, metric), and the notes in `attrs["notes"]`."""
    for column in ("dataset_label", "dataset_sha256", "selection", "sanity", "sanity_message", "model_label", "reason", "key"):
        if column not in frame.columns:
            frame[column] = None
    whole = (frame["status"] != DAMAGED).to_numpy()
    names, notes = dataset_names(_where(frame, whole))
    dataset = frame["dataset_label"].astype(object).to_numpy().copy()
    dataset[whole] = names
    done = (frame["status"] == "done").to_numpy()
    sanity = [(s if s else "not checked") if is_done else None for s, is_done in zip(frame["sanity"], done)]
    goals = [metric_goal(str(m)) for m in frame["metric"]]
    frame = frame.assign(dataset=dataset, sanity=sanity, ideal=[g[0] for g in goals], better=[g[1] for g in goals])
    if ordered:
        metrics = metric_order()
        frame = frame.assign(_metric=[metrics.get(m, len(metrics)) for m in frame["metric"]]).sort_values(
            ["model", "dataset", "_metric", "convention", "precision", "compat"], kind="stable", na_position="last"
        )
    untrained = list(dict.fromkeys(m for m, s in zip(frame["model"], frame["sanity"]) if s == "untrained"))
    notes += damaged_lines(_where(frame.assign(model_label=frame["model"]), frame["status"] == DAMAGED))
    notes += [n for n in (untrained_note(untrained),) if n]
    table = _ordered(frame)
    table.attrs["notes"] = notes
    return table


def _paper() -> tuple[str, ...]:
    from biaslens.engine.metrics import PAPER_METRICS

    return tuple(PAPER_METRICS)


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    for column in MERGED_COLUMNS:
        if column not in frame.columns:
            frame[column] = None
    return score_types(frame.loc[:, list(MERGED_COLUMNS)].reset_index(drop=True))


def wide_table(merged: pd.DataFrame) -> pd.DataFrame:
    """One row per model: its sanity verdict (the most worrying of its cells'), then for each dataset and metric (and
    convention, precision or compat mode, where the table has several), its bias score and interval as `<column>`,
    `<column> low`, `<column> high`. The merged table's notes stay in `attrs["notes"]`; the columns of multiple-choice
    statistics (fractions, where a pair metric's bias score is a percentage) are listed in `attrs["fractions"]`."""
    frame = cast(pd.DataFrame, merged[merged["status"] == "done"])
    verdicts: dict[str, list[str]] = {}
    for model, sanity in zip(frame["model"], frame["sanity"]):
        verdicts.setdefault(model, []).append("" if sanity == "not checked" else str(sanity))
    parts = ["dataset", "metric"] + [c for c in ("convention", "precision", "compat") if len(set(merged[c].dropna())) > 1]
    datasets = {d: i for i, d in enumerate(dict.fromkeys(merged["dataset"]))}
    metrics = metric_order()
    frame = frame.assign(
        column=[" · ".join(str(v) for v in row) for row in frame[parts].itertuples(index=False)],
        _dataset=[datasets.get(d, 0) for d in frame["dataset"]],
        _metric=[metrics.get(m, len(metrics)) for m in frame["metric"]],
    ).sort_values(["_dataset", "_metric"], kind="stable")
    order = list(dict.fromkeys(frame["column"]))
    models = list(dict.fromkeys(merged["model"]))
    worst = {m: worst_verdict(v) for m, v in verdicts.items()}
    out = pd.DataFrame({"model": models, "sanity": [(worst[m] or "not checked") if m in worst else None for m in models]})
    for name in order:
        part = cast(pd.DataFrame, frame[frame["column"] == name]).drop_duplicates(subset=["model"], keep="last").set_index("model")
        for suffix, source in (("", "bias_score"), (" low", "ci_low"), (" high", "ci_high")):
            values = dict(zip(part.index, part[source]))
            out[name + suffix] = [values.get(m) for m in out["model"]]
    out.attrs["notes"] = list(merged.attrs.get("notes", []))
    statistics = set(choice_statistics())
    fractions = dict.fromkeys(name for name, metric in zip(frame["column"], frame["metric"]) if metric in statistics)
    out.attrs["fractions"] = [name + suffix for name in fractions for suffix in ("", " low", " high")]
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

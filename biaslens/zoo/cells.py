"""The cells a plan asks for, with their keys where they can be known before a model loads.

A model's cells are its datasets × metrics × conventions × precisions × compat modes. Their keys need the model's
fingerprint and revision: known at once for a local folder (`folder_fingerprint`) and a hub id pinned to a full
commit, else from the store's record of what the model resolved to when a job last loaded it
(`ResultsStore.resolution`). `planned_cells` returns None for a model whose keys cannot be known yet: its job finds out.
The default metrics (none named) are the paper's five; a job records those a model cannot give as cells of status
"unavailable", so they count as settled.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, cast

from biaslens.zoo.plan import PRECISIONS, Unit, ZooDataset, ZooModel, ZooPlan
from biaslens.zoo.store import ResultsStore, cell_fields, cell_key

if TYPE_CHECKING:
    from biaslens.data.datasets import PairDataset
    from biaslens.data.multiple_choice import ChoiceDataset


@dataclass(frozen=True)
class Identity:
    """What a model is, as a cell's key holds it."""

    fingerprint: str
    revision: str | None


@dataclass(frozen=True)
class PlannedCell:
    """One cell of a plan: its key, its model, its unit (dataset, convention, precision, compat) and its metric."""

    key: str
    model: ZooModel
    unit: Unit
    metric: str
    fields: Mapping[str, Any]


def unit_metrics(unit: Unit, kind: str | None = None) -> tuple[str, ...]:
    """The metrics a unit asks for, for a model of `kind` (None: not known yet): its own, each the kind cannot give as
    its counterpart of that kind (AUL as AUL-c for a causal model; one without a counterpart stays, to be recorded as
    unavailable), or the default metrics of the kind (a masked model's, the paper's five, when the kind is not known)."""
    from biaslens.engine.metrics import METRICS, counterpart, default_metrics

    if unit.dataset.family is not None:  # a multiple-choice dataset's headline statistics, whatever the model's kind
        return unit.metrics or ()
    if unit.metrics is None:
        return tuple(default_metrics(kind or "masked"))
    if kind is None:
        return unit.metrics
    wanted = {counterpart(m, kind) or m for m in unit.metrics}
    return tuple(m for m in METRICS if m in wanted)


def known_identity(model: ZooModel, dtype: str, store: ResultsStore | None) -> Identity | None:
    """The model's identity without loading it, where it can be known (else None)."""
    if model.local:
        from biaslens.engine.models import folder_fingerprint

        return Identity(folder_fingerprint(Path(model.id)), None)
    if model.pinned:
        return Identity(f"hub:{model.id}@{model.revision}", model.revision)
    resolved = store.resolution(model.resolution_key(dtype)) if store is not None else None
    if resolved and resolved.get("fingerprint"):
        return Identity(str(resolved["fingerprint"]), resolved.get("revision"))
    return None


def plan_notes(plan: ZooPlan, store: ResultsStore | None) -> list[str]:
    """What the plan's check says and does not refuse (`ZooPlan.notes`), and the models that are the same weights under
    two names (one fingerprint): their cells are one, scored once, and the store keeps both names (`put_label`)."""
    notes = list(plan.notes)
    seen: dict[tuple[str, str | None], ZooModel] = {}
    for model in plan.models:
        identity = known_identity(model, model.load_dtypes()[0], store)
        if identity is None:
            continue
        first = seen.setdefault((identity.fingerprint, identity.revision), model)
        if first is not model:
            notes.append(
                f"models[{model.index}] ({model.label}) has the same weights as models[{first.index}] ({first.label}): one model, whose "
                "cells are scored once; both names are kept and shown."
            )
    return notes


def keep_labels(plan: ZooPlan, store: ResultsStore) -> None:
    """Keep in the store the name the plan gives each model whose identity is known before it loads."""
    for model in plan.models:
        identity = known_identity(model, model.load_dtypes()[0], store)
        if identity is not None:
            store.put_label(identity.fingerprint, identity.revision, model.label, model.id)


def fields_of(identity: Identity, unit: Unit, metric: str, sha256: str) -> dict[str, Any]:
    return cell_fields(
        fingerprint=identity.fingerprint,
        revision=identity.revision,
        dataset_sha256=sha256,
        selection=unit.dataset.selection,
        metric=metric,
        convention=unit.convention,
        precision=unit.precision,
        compat=unit.compat,
    )


def planned_cells(
    model: ZooModel, store: ResultsStore | None, datasets: Mapping[str, PairDataset | ChoiceDataset | DatasetFile]
) -> list[PlannedCell] | None:
    """Every cell of `model` with its key (`datasets`: the plan's by label, loaded or `stored_datasets`); None where its
    identity is unknown."""
    cells = []
    for dtype in model.load_dtypes():
        identity = known_identity(model, dtype, store)
        if identity is None:
            return None
        # The model's kind decides its default metrics: the plan's `kind`, else the kind its first load recorded.
        resolved = store.resolution(model.resolution_key(dtype)) if store is not None else None
        kind = model.kind or (resolved or {}).get("kind")
        for unit in model.units():
            if PRECISIONS[unit.precision] != dtype:
                continue
            sha = dataset_sha256(datasets[unit.dataset.label])
            for metric in unit_metrics(unit, kind):
                fields = fields_of(identity, unit, metric, sha)
                cells.append(PlannedCell(cell_key(fields), model, unit, metric, fields))
    return cells


def dataset_sha256(dataset: PairDataset | ChoiceDataset | DatasetFile) -> str:
    """What a cell's key names as its dataset: the sha256 of a pairs file, `choicecells.dataset_sha256` of a
    multiple-choice dataset."""
    from biaslens.zoo.choicecells import CHOICE_KIND
    from biaslens.zoo.choicecells import dataset_sha256 as choice_sha256

    return choice_sha256(cast("ChoiceDataset", dataset)) if getattr(dataset, "kind", "") == CHOICE_KIND else dataset.sha256


def _wanted(plan: ZooPlan) -> dict[str, ZooDataset]:
    wanted: dict[str, ZooDataset] = {}
    for model in plan.models:
        for d in model.datasets:
            wanted.setdefault(d.label, d)
    return wanted


def load_datasets(plan: ZooPlan) -> dict[str, PairDataset | ChoiceDataset]:
    """Every dataset the plan names, loaded (a missing or malformed one is a one-line `DatasetError`), by label."""
    from biaslens.data.datasets import load_dataset

    return {label: load_dataset(d.name, data_dir=plan.data_dir, download=plan.download) for label, d in _wanted(plan).items()}


@dataclass(frozen=True)
class DatasetFile:
    """A dataset file the store already holds: where it is and the sha256 of its bytes (what a cell's key names)."""

    path: Path
    sha256: str


def stored_datasets(plan: ZooPlan, store: ResultsStore | None) -> dict[str, PairDataset | ChoiceDataset | DatasetFile]:
    """The plan's datasets by label, for what only needs their keys (`zoo status`, `zoo merge`): a file whose sha256 the
    store already holds (its pairs were read and checked when it was scored) is only hashed; any other is loaded and
    checked (`load_datasets`: a missing or malformed one is a one-line `DatasetError`)."""
    import hashlib

    from biaslens.data.datafiles import read_bytes
    from biaslens.data.datasets import canonical_name, load_dataset, locate_dataset

    found: dict[str, PairDataset | ChoiceDataset | DatasetFile] = {}
    for label, d in _wanted(plan).items():
        if d.family is not None:  # (a multiple-choice dataset's key needs its items: read, never scored here)
            found[label] = load_dataset(d.name, data_dir=plan.data_dir, download=plan.download)
            continue
        path = Path(d.name) if canonical_name(d.name) is None else locate_dataset(d.name, data_dir=plan.data_dir)
        if path is not None and store is not None and path.is_file():
            digest = hashlib.sha256(read_bytes(path)).hexdigest()
            if store.has_dataset(digest):
                found[label] = DatasetFile(path, digest)
                continue
        found[label] = load_dataset(d.name, data_dir=plan.data_dir, download=plan.download)
    return found


__all__ = [
    "DatasetFile",
    "dataset_sha256",
    "Identity",
    "PlannedCell",
    "fields_of",
    "keep_labels",
    "known_identity",
    "load_datasets",
    "plan_notes",
    "planned_cells",
    "stored_datasets",
    "unit_metrics",
]

"""Merging results stores: `import_store(source, target)` copies into one store what another scored elsewhere (a second
cluster, a laptop): its cells, the datasets they were scored on, what its models resolved to and the names plans gave
them. Each cell is checked before it is copied: its key is the digest of its facts and its file's name, it is done or
unavailable, a done cell's per-pair records read back with their columns, its dataset's pairs are there. A cell the
target already holds under the same key is left alone: when the two are the same scores it was already there; when they
differ (the same key, other numbers) it is a conflict, said in one line, and the target's is kept. Nothing in the
target is ever overwritten. Locks, the result cache and the runs' records stay where they were made.
"""

from __future__ import annotations

import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from biaslens.data.datafiles import read_bytes
from biaslens.data.export import atomic_write
from biaslens.errors import BiaslensError, InputError
from biaslens.zoo import choicecells
from biaslens.zoo.store import DATASET_COLUMNS, RECORD_COLUMNS, ResultsStore, cell_key

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass
class ImportReport:
    """What an import did: cells copied, already there (the same scores), left out (`conflicts`: another cell under the
    same key; `damaged`: a cell that does not check), and the datasets, models and names copied."""

    source: Path
    target: Path
    copied: int = 0
    already: int = 0
    conflicts: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)
    datasets: int = 0
    models: int = 0

    @property
    def complete(self) -> bool:
        return not self.conflicts and not self.damaged

    def lines(self) -> list[str]:
        out = [f"  conflict: {line}" for line in self.conflicts] + [f"  not imported: {line}" for line in self.damaged]
        out.append(
            f"{self.copied:,} cells imported from {self.source} into {self.target}, {self.already:,} already there"
            + (f", {len(self.conflicts):,} in conflict (the target's kept)" if self.conflicts else "")
            + (f", {len(self.damaged):,} damaged (left out)" if self.damaged else "")
            + f"; {self.datasets:,} datasets and {self.models:,} model records copied."
        )
        return out


def import_store(source: str | Path, target: str | Path) -> ImportReport:
    """Copy `source`'s cells (checked), datasets and model records into `target` (made if absent); see the module."""
    src = ResultsStore(source)
    dst = ResultsStore(target, create=True)
    if os.path.samefile(src.root, dst.root):
        raise InputError(f"{src.root} is the target store itself: import another store into it.")
    report = ImportReport(src.root, dst.root)
    report.datasets = _datasets(src, dst)
    for path in _cell_files(src.root):
        _cell(src, dst, path, report)
    report.models = _records(src, dst, "models") + _records(src, dst, "labels")
    return report


def _cell_files(root: Path) -> list[Path]:
    folder = root / "cells"
    return sorted(folder.glob("*/*.json")) if folder.is_dir() else []


def _datasets(src: ResultsStore, dst: ResultsStore) -> int:
    """Each dataset file's pairs the target lacks, checked (the name a sha256, the columns), copied."""
    copied = 0
    folder = src.root / "datasets"
    for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
        sha = path.stem
        if not _SHA256.fullmatch(sha) or dst.has_dataset(sha):
            continue
        raw = read_bytes(path)
        if _columns(raw) not in (list(DATASET_COLUMNS), list(choicecells.DATASET_COLUMNS)):
            continue  # not a dataset's pairs (or items): its cells are refused below (their pairs are missing)
        atomic_write(dst.root / "datasets" / path.name, raw)
        copied += 1
    return copied


def _columns(raw: bytes) -> list[str] | None:
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(io.BytesIO(raw)).names)
    except Exception:  # not Parquet at all: pyarrow's own errors
        return None


def _cell(src: ResultsStore, dst: ResultsStore, path: Path, report: ImportReport) -> None:
    key = path.stem
    try:
        raw = read_bytes(path)
        cell = json.loads(raw)
    except BiaslensError as exc:
        report.damaged.append(f"cell {key[:12]}…: {str(exc).splitlines()[0]}")
        return
    except ValueError:
        report.damaged.append(f"cell {key[:12]}…: not valid JSON (truncated, or not a cell)")
        return
    problem = _check(src, dst, key, cell)
    records = path.with_suffix(".parquet")
    if problem is None and cell.get("status") == "done":
        try:
            records_raw = read_bytes(records)
        except BiaslensError:
            problem = "its per-pair records are missing"
        else:
            kind = choicecells.RECORD_COLUMNS if isinstance(cell, dict) and cell.get("kind") == choicecells.CHOICE_KIND else RECORD_COLUMNS
            if _columns(records_raw) != list(kind):
                problem = "its per-pair records do not read back (damaged, or not the records' columns)"
    if problem is not None:
        report.damaged.append(f"cell {key[:12]}… {_about(cell)}: {problem}")
        return
    if dst.has_cell(key):
        if _same(src, dst, key, cell):
            report.already += 1
        else:
            report.conflicts.append(f"cell {key[:12]}… {_about(cell)}: the target holds other scores under the same key; kept the target's")
        return
    dst.put_cell_files(key, raw, read_bytes(records) if cell.get("status") == "done" else None)
    report.copied += 1


def _check(src: ResultsStore, dst: ResultsStore, key: str, cell: object) -> str | None:
    """Why a cell cannot be imported (None: it checks)."""
    if not isinstance(cell, dict) or not isinstance(cell.get("fields"), dict):
        return "not a cell (no facts of its key)"
    if not _SHA256.fullmatch(key) or cell.get("key") != key:
        return "its file's name is not its key"
    if cell_key(cell["fields"]) != key:
        return "its key is not the digest of its facts (edited?)"
    if cell.get("status") not in ("done", "unavailable"):
        return f"its status is {cell.get('status')!r}, neither done nor unavailable"
    sha = str(cell["fields"].get("dataset_sha256"))
    if cell.get("status") == "done" and not dst.has_dataset(sha) and not src.has_dataset(sha):
        return f"the pairs of its dataset ({sha[:12]}…) are in neither store"
    return None


def _about(cell: dict) -> str:
    model, dataset = cell.get("model") or {}, cell.get("dataset") or {}
    fields = cell.get("fields") or {}
    return f"({model.get('label', '?')} · {dataset.get('label', '?')} · {fields.get('metric', '?')})"


def _same(src: ResultsStore, dst: ResultsStore, key: str, cell: dict) -> bool:
    """Whether the target's cell under `key` holds the same scores: its status, summary and per-pair records."""
    try:
        mine = dst.read_cell(key)
    except BiaslensError:
        return False
    if mine.get("status") != cell.get("status") or mine.get("summary") != cell.get("summary"):
        return False
    if cell.get("status") != "done":
        return mine.get("reason") == cell.get("reason")
    try:
        return dst.cell_records(key).equals(src.cell_records(key))
    except Exception:  # the target's records do not read back: not the same
        return False


def _records(src: ResultsStore, dst: ResultsStore, kind: str) -> int:
    """A folder of small records (what models resolved to, the names plans gave them): those the target lacks."""
    folder = src.root / kind
    copied = 0
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        target = dst.root / kind / path.name
        if target.exists():
            continue
        raw = read_bytes(path)
        try:
            if not isinstance(json.loads(raw), dict):
                continue
        except ValueError:
            continue
        atomic_write(target, raw)
        copied += 1
    return copied


__all__ = ["ImportReport", "import_store"]

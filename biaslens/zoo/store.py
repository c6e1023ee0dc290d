"""The results store of a model zoo: one folder of immutable cells keyed by content, plus locks and job records.

A **cell** is one metric's scores of one model on one dataset, under one scoring convention, precision and compat mode,
by one version of biaslens. Its key (`cell_key`) is the sha256 of exactly those facts: the model's fingerprint and
revision, the dataset file's sha256 and the pairs chosen from it, the metric, the convention, the precision, the compat
mode and the biaslens version. A cell that exists is never scored again; a changed model folder, dataset file or
biaslens version makes new keys.

    <store>/
      store.json                    what this folder is (format, created by)
      cells/ab/<key>.json           a cell: its key facts, the model and dataset, its summary (bias score, 95% Wilson
                                    interval, counts, per bias type and group), the manifest, who scored it and when
      cells/ab/<key>.parquet        its per-pair records: pair_id, stereo, anti, hits, total
      datasets/<sha256>.parquet     the pairs of each dataset file scored (pair_id, dataset, bias_type, direction, sentences)
      cache/results.sqlite          finished chunks of cells not finished yet (`biaslens.engine.cache.ResultCache`):
                                    a killed job's retry reads them back and loses only its unfinished chunk
      locks/<key>.lock              a cell being scored: who holds it (run, model, job, host, pid); its time stamp is
                                    the holder's heartbeat
      models/<id>.json              what a plan's model resolved to when it loaded (fingerprint, revision, family, size)
      labels/<id>.json              a name a plan gave a model (its fingerprint and revision): the same weights under two
                                    names are one model, shown under both (`display_labels`)
      failures/<id>.json            a model that could not load: its one-line error
      runs/<run>/                   one `biaslens zoo run`: run.json, the jobs' records (jobs/), submitit's files
      index/                        the summaries of every cell as one table, rebuilt when the cells change

      damaged/                      cells set aside: files found damaged when their cell was scored again, with why

A cell is written whole (its records first, then its summary, each atomically). It counts as held only when it reads back
whole and agrees with itself (`biaslens.zoo.integrity`: its JSON of the right types, its key its facts' digest, every
score finite, its summary what its records give): a damaged cell (cut off, garbage, edited by hand) is left out of every
table and named (`damaged_lines`), and the run that scores it again first moves its files to `damaged/`. A cell's
writer seals it (`records_seal`: its summary and its records' bytes): a reader that finds the seal intact does not
compute the summary from the records again. Each cell is checked once per version of its files (their size and time
stamp): the index keeps the verdicts, so a reader of a store of thousands of cells checks only the cells that changed.
Writers never change a file another writer could be reading.
Locks are files created exclusively (`O_EXCL`, atomic on local disks and NFSv3+): two runs of the same plan never score a
cell twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, cast

import numpy as np

from biaslens.data.datafiles import read_bytes
from biaslens.data.export import atomic_write, json_safe, to_json
from biaslens.errors import BiaslensError, DatasetError, InputError
from biaslens.version import __version__, version_key
from biaslens.zoo.integrity import json_problem, records_problem

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.data.datasets import PairDataset
    from biaslens.data.multiple_choice import ChoiceDataset
    from biaslens.engine.cache import ResultCache
    from biaslens.engine.evaluation import EvaluationResult

#: The store's layout version (store.json); a store written by a newer layout is refused.
STORE_FORMAT = 1
STORE_FILE = "store.json"
#: A lock whose holder has not refreshed it for this long is stale: its job died (killed, node lost).
LOCK_TTL_S = 90.0
#: How often a job refreshes its locks and its record.
HEARTBEAT_S = 10.0
#: A cell's scores (its summary's block of the metric, as summary.json has it), in the store's and the merged tables.
SCORE_COLUMNS = ("bias_score", "ci_low", "ci_high", "n", "wins", "ties", "undecidable", "token_accuracy")
#: The columns of `ResultsStore.summaries()`, one row per cell.
SUMMARY_COLUMNS = (
    "key",
    "unit",
    "status",
    "metric",
    "convention",
    "precision",
    "compat",
    "biaslens",
    "model_fingerprint",
    "model_revision",
    "model_id",
    "model_label",
    "family",
    "kind",
    "parameters",
    "dataset",
    "dataset_label",
    "dataset_sha256",
    "selection",
    *SCORE_COLUMNS,
    "created",
    "run_id",
    "reason",
    "sanity",
    "sanity_message",
)
#: The columns of `ResultsStore.type_summaries()`, one row per cell and bias type.
TYPE_COLUMNS = ("key", "bias_type", "bias_score", "ci_low", "ci_high", "n")
#: The columns of a dataset's pairs in the store, and of a cell's records.
DATASET_COLUMNS = ("pair_id", "dataset", "bias_type", "direction", "sent_stereo", "sent_anti")
RECORD_COLUMNS = ("pair_id", "stereo", "anti", "hits", "total")
#: The status of a cell found damaged (`biaslens.zoo.integrity`): left out of every table, scored again by `zoo run`.
DAMAGED = "damaged"
#: Damaged cells `damaged_lines` names one by one; the rest are counted.
DAMAGED_SHOWN = 10


class StoreError(InputError):
    """A results store that cannot be used (not a store, a newer layout, a cell that is not there)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


#: The cache tag (`biaslens.engine.metrics.Metric.cache_tag`) of each metric and compat mode when stores began, where it
#: is not the metric's key: a cell without a `metric_tag` field was scored under these.
FIRST_TAGS: dict[tuple[str, str], str] = {("sss", "default"): "sss@instance-accuracy"}


def metric_tag(metric: str, compat: str) -> str:
    """The cache tag the metric's records carry now (its key for a metric the registry does not know)."""
    from biaslens.engine.metrics import METRICS

    return METRICS[metric].cache_tag(compat) if metric in METRICS else metric


def _metric_tags() -> list[str]:
    """Every metric's cache tag in every compat mode, as the registry has them now."""
    from biaslens.engine.metrics import METRICS
    from biaslens.engine.options import Compat

    return [m.cache_tag(c.value) for m in METRICS.values() for c in Compat]


def metric_order() -> dict[str, int]:
    """Where each metric comes in a table: the pair metrics in the registry's order, then the multiple-choice statistics
    in theirs (`biaslens.zoo.choicecells.choice_statistics`)."""
    from biaslens.engine.metrics import METRICS
    from biaslens.zoo.choicecells import choice_statistics

    return {k: i for i, k in enumerate([*METRICS, *choice_statistics()])}


def metric_goal(metric: str) -> tuple[float, str]:
    """A metric's ideal value and the order that puts the best first: a pair metric's bias score 50, "closest"; a
    multiple-choice statistic's from `biaslens.choices.conventions.statistic_goal` (a bias score 0, "closest"; an
    accuracy 1, "highest")."""
    from biaslens.choices.conventions import statistic_goal
    from biaslens.zoo.choicecells import choice_statistics

    return statistic_goal(metric) if metric in choice_statistics() else (50.0, "closest")


def stored_tag(fields: Mapping[str, Any]) -> str:
    """The cache tag a cell was scored under: its `metric_tag` field, else the metric's tag when stores began."""
    metric, compat = str(fields.get("metric")), str(fields.get("compat"))
    return str(fields.get("metric_tag") or FIRST_TAGS.get((metric, compat), metric))


def cell_fields(
    *,
    fingerprint: str,
    revision: str | None,
    dataset_sha256: str,
    selection: Mapping[str, int] | None,
    metric: str,
    convention: str,
    precision: str,
    compat: str,
    version: str = __version__,
) -> dict[str, Any]:
    """The facts a cell's key is made of, as stored in the cell. A metric whose records changed meaning since stores
    began (a new `Metric.cache_tags` entry: AULA-c's weights) adds its tag (`metric_tag`), so its cells get new keys and
    a cell of the older meaning is never read back as this one (`summary_row` calls it outdated)."""
    fields = {
        "model_fingerprint": fingerprint,
        "model_revision": revision,
        "dataset_sha256": dataset_sha256,
        "selection": dict(selection) if selection else None,
        "metric": metric,
        "convention": convention,
        "precision": precision,
        "compat": compat,
        "biaslens": version,
    }
    tag = metric_tag(metric, compat)
    if tag != FIRST_TAGS.get((metric, compat), metric):
        fields["metric_tag"] = tag
    return fields


def cell_key(fields: Mapping[str, Any]) -> str:
    """The cell's key: the sha256 of its facts (`cell_fields`)."""
    return _digest(dict(fields))


def unit_key(fields: Mapping[str, Any]) -> str:
    """The key shared by the cells of one model, dataset, convention, precision and compat mode (every metric)."""
    return _digest({k: v for k, v in fields.items() if k not in ("metric", "metric_tag")})


@dataclass(frozen=True)
class Owner:
    """Who holds a lock: a run's job for one model of the plan. A retry of the same run and model takes its locks over."""

    run_id: str
    index: int
    job_id: str = ""
    attempt: int = 1
    host: str = ""
    pid: int = 0

    @property
    def group(self) -> str:
        return f"{self.run_id}/{self.index}"

    @classmethod
    def here(cls, run_id: str, index: int, job_id: str = "", attempt: int = 1) -> Owner:
        return cls(run_id, index, job_id, attempt, socket.gethostname(), os.getpid())


@dataclass(frozen=True)
class LockInfo:
    """A lock as found: its owner, the time of its holder's last heartbeat, and whether it is stale."""

    owner: Owner
    heartbeat: float
    stale: bool


def _takes_over(owner: Owner, holder: Owner) -> bool:
    """Whether `owner` may take a live lock from `holder`: a later attempt of the same job (its retry, after the
    driver saw the earlier one end), the same job requeued by submitit (same job id), or the same process."""
    if owner.group != holder.group:
        return False
    return (
        holder.attempt < owner.attempt
        or (bool(owner.job_id) and holder.job_id == owner.job_id)
        or (holder.host, holder.pid) == (owner.host, owner.pid)
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class ResultsStore:
    """A results store folder (`create=True` makes one where there is none)."""

    def __init__(self, root: str | Path, *, create: bool = False):
        self.root = Path(root).expanduser().absolute()
        marker = self.root / STORE_FILE
        if create and not marker.exists():
            if self.root.exists() and not self.root.is_dir():
                raise StoreError(f"{self.root} is a file: the results store is a folder.")
            if self.root.is_dir() and any(not p.name.startswith(".") for p in self.root.iterdir()) and not marker.exists():
                raise StoreError(f"{self.root} is a folder with other files in it: choose an empty or new folder for the results store.")
            atomic_write(marker, to_json({"format": STORE_FORMAT, "kind": "biaslens results store", "created": _now(), "biaslens": __version__}))
        try:
            info = json.loads(read_bytes(marker))
        except DatasetError:
            raise StoreError(f"{self.root} is not a biaslens results store (no readable {STORE_FILE}): `biaslens zoo run` makes one.") from None
        except ValueError:
            raise StoreError(f"{marker} is not valid JSON: this is not a results store biaslens can read.") from None
        if not isinstance(info, dict) or info.get("format") not in range(1, STORE_FORMAT + 1):
            raise StoreError(
                f"{self.root} is a results store of a newer layout ({info.get('format') if isinstance(info, dict) else '?'}): upgrade biaslens."
            )
        self._cache: ResultCache | None = None
        self._pairs: dict[tuple[str, str], Any] = {}

    # -- paths -----------------------------------------------------------------------
    def _cell_path(self, key: str, suffix: str) -> Path:
        return self.root / "cells" / key[:2] / f"{key}{suffix}"

    def _lock_path(self, key: str) -> Path:
        return self.root / "locks" / f"{key}.lock"

    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def cache(self) -> ResultCache:
        """The store's result cache: finished chunks of cells not written yet."""
        if self._cache is None:
            from biaslens.engine.cache import ResultCache

            self._cache = ResultCache(self.root / "cache" / "results.sqlite")
        return self._cache

    # -- reading files (through `read_bytes`: in the app, only inside the allowed folders) ------------------
    def _json(self, path: Path) -> dict[str, Any] | None:
        try:
            value = json.loads(read_bytes(path))
        except DatasetError:
            if path.exists():
                raise
            return None
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def _parquet(self, path: Path) -> pd.DataFrame:
        import pandas as pd

        return pd.read_parquet(io.BytesIO(read_bytes(path)))

    @staticmethod
    def _write_parquet(path: Path, frame: pd.DataFrame) -> bytes:
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        atomic_write(path, buffer.getvalue())
        return buffer.getvalue()

    # -- datasets --------------------------------------------------------------------
    def put_dataset(self, dataset: PairDataset | ChoiceDataset) -> None:
        """Keep the dataset's pairs, or a multiple-choice dataset's items (`choicecells.dataset_frame`, under
        `choicecells.dataset_sha256`): once per file content; a copy that no longer reads back is written again."""
        from biaslens.zoo import choicecells

        choices = dataset.kind == choicecells.CHOICE_KIND
        sha = choicecells.dataset_sha256(cast("ChoiceDataset", dataset)) if choices else dataset.sha256
        path = self.root / "datasets" / f"{sha}.parquet"
        if path.exists():
            try:
                self._parquet(path)
                return
            except (DatasetError, OSError, ValueError):
                pass
        if choices:
            self._write_parquet(path, choicecells.dataset_frame(cast("ChoiceDataset", dataset)))
            return
        import pandas as pd

        dataset = cast("PairDataset", dataset)
        frame = pd.DataFrame(
            {
                "pair_id": [p.pair_id for p in dataset.pairs],
                "dataset": [p.dataset for p in dataset.pairs],
                "bias_type": [p.bias_type for p in dataset.pairs],
                "direction": [p.direction for p in dataset.pairs],
                "sent_stereo": [p.sent_stereo for p in dataset.pairs],
                "sent_anti": [p.sent_anti for p in dataset.pairs],
            },
            columns=list(DATASET_COLUMNS),
        )
        self._write_parquet(path, frame)

    def has_dataset(self, sha256: str) -> bool:
        """Whether the store keeps the pairs of the dataset file whose bytes have this sha256."""
        return (self.root / "datasets" / f"{sha256}.parquet").is_file()

    def dataset_pairs(self, sha256: str) -> pd.DataFrame:
        path = self.root / "datasets" / f"{sha256}.parquet"
        if not path.exists():
            raise StoreError(f"The results store {self.root} has no dataset {sha256[:12]}…: its cells cannot be read back.")
        try:
            return self._parquet(path)
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"The results store's copy of dataset {sha256[:12]}… cannot be read ({_first_line(exc)}): `biaslens zoo run` writes it again."
            ) from None

    def _bias_types(self, sha256: str, stamp: str) -> tuple[np.ndarray, pd.Index, np.ndarray, list[str]] | str:
        """A dataset in the store as its cells' check reads it (kept per version of its copy): its pair ids (an array and
        an index), each pair's bias type as a code, the codes' names; or why it cannot be read."""
        import pandas as pd

        found = self._pairs.get((sha256, stamp))
        if found is None:
            path = self.root / "datasets" / f"{sha256}.parquet"
            try:
                if not path.exists():
                    raise FileNotFoundError(path)
                pairs = self._parquet(path)
                codes, names = pd.factorize(pairs["bias_type"].fillna("").astype(str))
                found = (pairs["pair_id"].to_numpy(), pd.Index(pairs["pair_id"]), codes, [str(n) for n in names])
            except FileNotFoundError:
                found = f"its dataset ({sha256[:12]}…) is not in the store"
            except (DatasetError, OSError, ValueError, KeyError) as exc:
                found = f"the store's copy of its dataset ({sha256[:12]}…) cannot be read ({_first_line(exc)})"
            self._pairs[(sha256, stamp)] = found
        return found

    def _dataset_stamps(self) -> dict[str, str]:
        """Each dataset file's version (size and time stamp), by its sha256."""
        found: dict[str, str] = {}
        folder = self.root / "datasets"
        if folder.is_dir():
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".parquet") and not entry.name.startswith("."):
                        found[entry.name[: -len(".parquet")]] = _stamp_of(entry.stat())
        return found

    # -- cells -----------------------------------------------------------------------
    def has_cell(self, key: str) -> bool:
        """Whether the store holds the cell whole: its files read back and agree (`biaslens.zoo.integrity`); a damaged
        cell is not held (`zoo run` scores it again)."""
        return self.cell_state(key)[0] in ("done", "unavailable")

    def cell_state(self, key: str) -> tuple[str | None, str]:
        """(status, reason) of a cell: None (not in the store), "done", "unavailable" (the reason: why the model cannot
        give it) or "damaged" (the reason: what is wrong). Checked once per version of its files."""
        json_stamp = _file_stamp(self._cell_path(key, ".json"))
        if json_stamp is None:
            return None, ""
        self._remember_index(self.root / "index")  # a driver asking of thousands of cells checks only those that changed
        row, _ = self._checked(key, json_stamp, _file_stamp(self._cell_path(key, ".parquet")) or "", self._dataset_stamps())
        return row["status"], str(row["reason"] or "")

    def held_cells(self, keys: Iterable[str]) -> set[str]:
        """Which of `keys` are cells in the store (whole: `has_cell`)."""
        return {k for k in keys if self.has_cell(k)}

    def write_cell(self, record: Mapping[str, Any], records: pd.DataFrame | None = None) -> None:
        """Write a cell: its per-pair `records` (columns `RECORD_COLUMNS`) first, then its summary `record`. A damaged
        cell of the same key is set aside first (`set_aside`)."""
        key = str(record["key"])
        if key != cell_key(record["fields"]):
            raise ValueError("a cell's key must be the digest of its fields")
        state, reason = self.cell_state(key)
        if state == DAMAGED:
            self.set_aside(key, reason)
        record = dict(record)
        if records is not None:
            written = self._write_parquet(self._cell_path(key, ".parquet"), records)
            record["seal"] = records_seal(json_safe(record.get("summary")), written)
        atomic_write(self._cell_path(key, ".json"), to_json({"format": STORE_FORMAT, **record}))

    def put_cell_files(self, key: str, summary: bytes, records: bytes | None = None) -> None:
        """A cell copied from another store as it is there (`importing.import_store` checked it): records first."""
        if records is not None:
            atomic_write(self._cell_path(key, ".parquet"), records)
        atomic_write(self._cell_path(key, ".json"), summary)

    def set_aside(self, key: str, reason: str) -> None:
        """Move a damaged cell's files to `damaged/` (kept for a look, never read again), with a note of why."""
        folder = self.root / DAMAGED
        name = f"{key}.{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / f"{name}.txt", f"{reason}\n")
        for suffix in (".json", ".parquet"):
            with contextlib.suppress(FileNotFoundError):
                os.replace(self._cell_path(key, suffix), folder / f"{name}{suffix}")

    def read_cell(self, key: str) -> dict[str, Any]:
        found = self._json(self._cell_path(key, ".json"))
        if found is None:
            raise StoreError(f"The results store {self.root} has no cell {key[:12]}….")
        return found

    def cell_records(self, key: str) -> pd.DataFrame:
        try:
            return self._parquet(self._cell_path(key, ".parquet"))
        except (DatasetError, OSError, ValueError) as exc:
            raise StoreError(
                f"The records of cell {key[:12]}… in {self.root} cannot be read ({_first_line(exc)}): `biaslens zoo run` scores it again."
            ) from None

    def _listing(self) -> list[tuple[str, str, str]]:
        """(key, version of its summary, version of its records) of every cell: what decides whether the index is current."""
        found: dict[str, list[str]] = {}
        cells = self.root / "cells"
        if not cells.is_dir():
            return []
        with os.scandir(cells) as shards:
            for shard in shards:
                if not shard.is_dir():
                    continue
                with os.scandir(shard.path) as entries:
                    for entry in entries:
                        name = entry.name
                        if name.startswith("."):
                            continue
                        if name.endswith(".json"):
                            found.setdefault(name[: -len(".json")], ["", ""])[0] = _stamp_of(entry.stat())
                        elif name.endswith(".parquet"):
                            found.setdefault(name[: -len(".parquet")], ["", ""])[1] = _stamp_of(entry.stat())
        return sorted((key, summary, records) for key, (summary, records) in found.items() if summary)

    def summaries(self) -> pd.DataFrame:
        """Every cell's summary, one row each (`SUMMARY_COLUMNS`): read from the index, rebuilt when the cells changed.
        `model_label` names the model as every plan did (`display_labels`: "BERT (= BERT copy)"). A damaged cell's row has
        status "damaged", its reason and no scores (`damaged_lines` says them)."""
        frame = self._index()[0]
        names = self.display_labels()
        if not names or frame.empty:
            return frame
        revisions = frame["model_revision"].map(lambda r: None if r is None or r != r else r)  # (NaN: no revision)
        shown = [names.get((f, r), label) for f, r, label in zip(frame["model_fingerprint"], revisions, frame["model_label"])]
        return frame.assign(model_label=shown)

    def type_summaries(self) -> pd.DataFrame:
        """Every cell's bias score per bias type (`TYPE_COLUMNS`), one row per cell and type."""
        return self._index()[1]

    def _index(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        listing = self._listing()
        datasets = self._dataset_stamps()
        digest = _digest([listing, _metric_tags(), sorted(datasets.items())])[:24]  # the metrics' tags decide which cells are outdated
        memo_key = (str(self.root), digest)
        with _MEMO_LOCK:
            if memo_key in _MEMO:
                _MEMO.move_to_end(memo_key)
                return _MEMO[memo_key]
        folder = self.root / "index"
        main, types = folder / f"summaries-{digest}.parquet", folder / f"types-{digest}.parquet"
        try:
            frames = (self._parquet(main), self._parquet(types)) if main.exists() and types.exists() else None
        except (DatasetError, OSError, ValueError):
            frames = None
        if frames is None or list(frames[0].columns) != [*SUMMARY_COLUMNS, "stamp"]:
            self._remember_index(folder)
            frames = self._build_index(listing, datasets)
            with contextlib.suppress(OSError, BiaslensError):  # a read-only store is still readable, only slower
                self._write_parquet(main, frames[0])
                self._write_parquet(types, frames[1])
                for old in folder.glob("*.parquet"):
                    if digest not in old.name and time.time() - old.stat().st_mtime > 60:
                        old.unlink(missing_ok=True)
        frames = (frames[0].drop(columns="stamp"), frames[1])
        with _MEMO_LOCK:
            _MEMO[memo_key] = frames
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
        return frames

    def _remember_index(self, folder: Path) -> None:
        """The checked cells of the store's newest index file join this process's (once per store): a cell whose files
        are as they were then is not checked again."""
        if str(self.root) in _SEEDED:
            return
        _SEEDED.add(str(self.root))
        found = sorted(folder.glob("summaries-*.parquet"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
        for newest in reversed(found):
            try:
                main = self._parquet(newest)
                types = self._parquet(newest.with_name(newest.name.replace("summaries-", "types-", 1)))
            except (DatasetError, OSError, ValueError):
                continue
            if list(main.columns) != [*SUMMARY_COLUMNS, "stamp"] or list(types.columns) != list(TYPE_COLUMNS):
                continue
            by_key: dict[str, list[dict[str, Any]]] = {}
            for row in types.astype(object).where(types.notna(), None).to_dict(orient="records"):
                by_key.setdefault(str(row["key"]), []).append(row)
            with _MEMO_LOCK:
                for row in main.astype(object).where(main.notna(), None).to_dict(orient="records"):
                    stamp = row.pop("stamp")
                    _CHECKED.setdefault((str(self.root), str(row["key"])), (str(stamp), row, by_key.get(str(row["key"]), [])))
            return

    def _checked(self, key: str, json_stamp: str, records_stamp: str, datasets: Mapping[str, str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A cell's row of the index and its rows per bias type, checked (`_check`) unless this version of its files was."""
        memo_key = (str(self.root), key)
        with _MEMO_LOCK:
            found = _CHECKED.get(memo_key)
        if found is not None:
            stamp, row, types = found
            if stamp == _cell_stamp(json_stamp, records_stamp, datasets, row.get("dataset_sha256")):
                return row, types
        row, types = self._check(key, datasets)
        with _MEMO_LOCK:
            _CHECKED[memo_key] = (_cell_stamp(json_stamp, records_stamp, datasets, row.get("dataset_sha256")), row, types)
            while len(_CHECKED) > _CHECKED_SIZE:
                _CHECKED.popitem(last=False)
        return row, types

    def _check(self, key: str, datasets: Mapping[str, str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Read a cell and check it whole (`biaslens.zoo.integrity`): its row of the index and its rows per bias type,
        or a damaged row saying why."""
        try:
            cell: Any = json.loads(read_bytes(self._cell_path(key, ".json")))
        except DatasetError as exc:
            return _damaged_row(key, None, f"its file cannot be read ({_first_line(exc)})"), []
        except ValueError:
            return _damaged_row(key, None, "its file is not whole JSON (cut off, or garbage)"), []
        problem = json_problem(cell)
        if problem is None and cell.get("key") != key:
            problem = "the key it holds is not its file's name (copied from another cell?)"
        if problem is None and cell_key(cell["fields"]) != key:
            problem = "its key facts (fields) do not give its key (edited by hand?)"
        if problem is None and cell.get("status", "done") == "done":
            problem = self._records_problem(key, cell, datasets)
        if problem is not None:
            return _damaged_row(key, cell, problem), []
        types = [
            {"key": key, "bias_type": bias_type, **{c: block.get(c) for c in ("bias_score", "ci_low", "ci_high", "n")}}
            for bias_type, block in (cell.get("summary") or {}).get("by_bias_type", {}).items()
        ]
        return summary_row(cell), types

    def _records_problem(self, key: str, cell: Mapping[str, Any], datasets: Mapping[str, str]) -> str | None:
        """What is wrong between a done cell (its JSON checked) and its records, or None (`integrity.records_problem`)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self._cell_path(key, ".parquet")
        if not path.exists():
            return "its records (.parquet) are missing"
        try:
            raw = read_bytes(path)
        except DatasetError as exc:
            return f"its records (.parquet) cannot be read ({_first_line(exc)})"
        sha = cell["fields"]["dataset_sha256"]
        if cell.get("kind") is not None:  # a multiple-choice cell (`integrity.json_problem` checked its kind)
            return self._choice_records_problem(cell, raw, self._item_ids(sha, datasets.get(sha, "")))
        pairs = self._bias_types(sha, datasets.get(sha, ""))
        if isinstance(pairs, str):
            return pairs
        if cell.get("seal") == records_seal(cell["summary"], raw):
            return None  # its summary and records as its writer wrote them, the one computed from the other: nothing to redo
        try:  # one thread: thousands of small files, each read faster alone (0.5 ms against 5 on a busy machine)
            table = pq.ParquetFile(pa.BufferReader(raw)).read(use_threads=False)
        except (OSError, ValueError) as exc:
            return f"its records (.parquet) cannot be read ({_first_line(exc)})"
        missing = [c for c in RECORD_COLUMNS if c not in table.column_names]
        if missing:
            return f"its records lack the column{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        try:
            pair_id = table.column("pair_id").to_numpy(zero_copy_only=False)
            stereo, anti, hits, total = (np.asarray(table.column(c).to_numpy(zero_copy_only=False), dtype=float) for c in RECORD_COLUMNS[1:])
        except (TypeError, ValueError):
            return "its records hold something other than numbers"
        ids, index, codes, names = pairs
        if len(pair_id) == len(ids) and np.array_equal(pair_id, ids):  # every pair, in the dataset's order (the usual cell)
            positions = np.arange(len(ids))
        else:
            positions = index.get_indexer(pair_id) if index.is_unique else np.full(len(pair_id), -1)
        return records_problem(cell["summary"], positions, stereo, anti, hits, total, codes, names)

    def _item_ids(self, sha256: str, stamp: str) -> np.ndarray | str:
        """A multiple-choice dataset's item ids in the store (kept per version of its copy), or why they cannot be read."""
        found = self._pairs.get((sha256, stamp))
        if found is None:
            path = self.root / "datasets" / f"{sha256}.parquet"
            try:
                found = self._parquet(path)["item_id"].to_numpy() if path.exists() else f"its dataset ({sha256[:12]}…) is not in the store"
            except (DatasetError, OSError, ValueError, KeyError) as exc:
                found = f"the store's copy of its dataset ({sha256[:12]}…) cannot be read ({_first_line(exc)})"
            self._pairs[(sha256, stamp)] = found
        return found

    def _choice_records_problem(self, cell: Mapping[str, Any], raw: bytes, item_ids: np.ndarray | str) -> str | None:
        """What is wrong between a done multiple-choice cell and its records (`choicecells.records_problem`), or None."""
        from biaslens.zoo import choicecells

        if isinstance(item_ids, str):
            return item_ids
        if cell.get("seal") == records_seal(cell["summary"], raw):
            return None
        try:
            records = self._parquet_bytes(raw)
        except (OSError, ValueError) as exc:
            return f"its records (.parquet) cannot be read ({_first_line(exc)})"
        return choicecells.records_problem(cell["summary"], cell["fields"], str(cell["dataset"]["family"]), records, item_ids)

    @staticmethod
    def _parquet_bytes(raw: bytes) -> pd.DataFrame:
        import pandas as pd

        return pd.read_parquet(io.BytesIO(raw))

    def _build_index(self, listing: list[tuple[str, str, str]], datasets: Mapping[str, str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        import pandas as pd

        rows, types = [], []
        for key, json_stamp, records_stamp in listing:
            row, by_type = self._checked(key, json_stamp, records_stamp, datasets)
            rows.append({**row, "stamp": _cell_stamp(json_stamp, records_stamp, datasets, row.get("dataset_sha256"))})
            types.extend(by_type)
        main = score_types(pd.DataFrame(rows, columns=[*SUMMARY_COLUMNS, "stamp"]))
        by_type = pd.DataFrame(types, columns=list(TYPE_COLUMNS))
        for column in ("bias_score", "ci_low", "ci_high"):
            by_type[column] = by_type[column].astype(float)
        by_type["n"] = by_type["n"].astype("Int64")
        return main, by_type

    # -- a stored run, as `evaluate` returns it ----------------------------------------
    def result(self, unit: str, metrics: Iterable[str] | None = None) -> EvaluationResult:
        """The `EvaluationResult` of a unit (one model, dataset, convention, precision and compat mode; every metric it
        holds, or `metrics`), read from the store: nothing is scored. Its pairs and summary are `evaluate`'s."""
        import pandas as pd

        from biaslens.engine.evaluation import EvaluationResult, summarize
        from biaslens.engine.metrics import METRICS, pair_columns

        rows = self.summaries()
        rows = rows[(rows["unit"] == unit) & (rows["status"] == "done")]
        wanted = list(metrics) if metrics is not None else [m for m in METRICS if m in set(rows["metric"])]
        missing = [m for m in wanted if m not in set(rows["metric"])]
        if rows.empty or missing or not wanted:
            raise StoreError(f"The results store {self.root} holds no {', '.join(missing) or 'pair scores'} for this model and dataset.")
        cells = {m: self.read_cell(str(rows.loc[rows["metric"] == m, "key"].iloc[0])) for m in wanted}
        first = cells[wanted[0]]
        frame = self.dataset_pairs(first["fields"]["dataset_sha256"])
        order = None
        for m in wanted:
            records = self.cell_records(cells[m]["key"])
            columns = pair_columns(m)
            records = records.rename(columns={"stereo": columns.stereo, "anti": columns.anti, "hits": columns.hits, "total": columns.total})
            records = records[["pair_id", columns.stereo, columns.anti, columns.hits, columns.total]]
            if order is None:
                order = records["pair_id"]
            frame = frame.merge(records, on="pair_id", how="inner")
        assert order is not None
        frame = frame.set_index("pair_id").loc[[p for p in order if p in set(frame["pair_id"])]].reset_index()
        frame = pd.DataFrame(frame)
        label = (first.get("model") or {}).get("label")
        manifest = {**first.get("manifest", {}), "metrics": wanted, "store": {"root": str(self.root), "unit": unit, "label": label}}
        warnings = list(dict.fromkeys(w for c in cells.values() for w in c.get("warnings", [])))
        return EvaluationResult(frame, summarize(frame, wanted, manifest), warnings, 0)

    # -- locks -----------------------------------------------------------------------
    def try_lock(self, key: str, owner: Owner) -> bool:
        """Take the lock of a cell for `owner`: True if taken (free, stale, or held by an earlier attempt of the same job)."""
        path = self._lock_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps({**asdict(owner), "nonce": secrets.token_hex(8), "taken": _now()}).encode()
        for _ in range(5):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                info = self.lock_info(key)
                if info is None:
                    continue  # released meanwhile: try again
                if not info.stale and not _takes_over(owner, info.owner):
                    return False
                self._break(path)
                continue
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            return True
        return False

    def _break(self, path: Path) -> None:
        """Remove a stale lock; when two break it at once, one rename wins and the other finds nothing."""
        aside = path.with_name(f".{path.name}.{secrets.token_hex(6)}.broken")
        with contextlib.suppress(FileNotFoundError):
            os.rename(path, aside)
            aside.unlink(missing_ok=True)

    def lock_info(self, key: str) -> LockInfo | None:
        path = self._lock_path(key)
        try:
            stat = path.stat()
            data = json.loads(path.read_bytes() or b"{}")
        except (FileNotFoundError, ValueError):
            return None
        owner = Owner(
            **{k: data.get(k, default) for k, default in (("run_id", ""), ("index", -1), ("job_id", ""), ("attempt", 1), ("host", ""), ("pid", 0))}
        )
        age = time.time() - stat.st_mtime
        stale = age > LOCK_TTL_S or (owner.host == socket.gethostname() and owner.pid > 0 and not _pid_alive(owner.pid))
        return LockInfo(owner, stat.st_mtime, stale)

    def release(self, key: str, owner: Owner) -> None:
        """Give up a lock `owner` holds (a lock another holds is left alone)."""
        info = self.lock_info(key)
        if info is not None and info.owner.group == owner.group and info.owner.pid == owner.pid:
            self._lock_path(key).unlink(missing_ok=True)

    def refresh(self, keys: Iterable[str]) -> None:
        """The holder's heartbeat: its locks' time stamps set to now."""
        for key in keys:
            with contextlib.suppress(FileNotFoundError):
                os.utime(self._lock_path(key))

    def live_locks(self, keys: Iterable[str]) -> dict[str, LockInfo]:
        """The cells of `keys` locked by a live holder."""
        out = {}
        for key in keys:
            info = self.lock_info(key)
            if info is not None and not info.stale:
                out[key] = info
        return out

    # -- runs and jobs -----------------------------------------------------------------
    def new_run(self, info: Mapping[str, Any]) -> str:
        run_id = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        atomic_write(self.run_dir(run_id) / "run.json", to_json({"run_id": run_id, "started": _now(), **info}))
        return run_id

    def runs(self) -> list[dict[str, Any]]:
        """Every run's run.json, oldest first."""
        folder = self.root / "runs"
        if not folder.is_dir():
            return []
        found = [self._json(p / "run.json") for p in sorted(folder.iterdir()) if p.is_dir()]
        return [r for r in found if r is not None]

    def write_job(self, run_id: str, index: int, record: Mapping[str, Any], *, side: str) -> None:
        """A job's record, as the driver (`side="driver"`) or the job itself (`"worker"`) sees it."""
        atomic_write(self.run_dir(run_id) / "jobs" / f"{index}.{side}.json", to_json({**record, "index": index, "updated": _now()}))

    def job(self, run_id: str, index: int, side: str) -> dict[str, Any] | None:
        return self._json(self.run_dir(run_id) / "jobs" / f"{index}.{side}.json")

    # -- models: what they resolved to, and the ones that failed to load --------------------------
    def put_resolution(self, key: str, info: Mapping[str, Any]) -> None:
        atomic_write(self.root / "models" / f"{key}.json", to_json({**info, "resolved": _now()}))

    def resolution(self, key: str) -> dict[str, Any] | None:
        return self._json(self.root / "models" / f"{key}.json")

    # -- names: the labels plans gave each model -------------------------------------------
    def put_label(self, fingerprint: str, revision: str | None, label: str, model_id: str) -> None:
        """Keep a name a plan gave the model with this fingerprint and revision (once per name)."""
        path = self.root / "labels" / f"{_digest([fingerprint, revision, label])[:32]}.json"
        if not path.exists():
            stamp = datetime.now(timezone.utc).isoformat(timespec="microseconds")  # (two names given in one second keep their order)
            atomic_write(path, to_json({"fingerprint": fingerprint, "revision": revision, "label": label, "id": model_id, "time": stamp}))

    def labels(self) -> dict[tuple[str, str | None], list[str]]:
        """Every name plans gave each model (by fingerprint and revision), the first given first."""
        folder = self.root / "labels"
        if not folder.is_dir():
            return {}
        found = [r for p in folder.glob("*.json") if (r := self._json(p)) is not None and r.get("label")]
        out: dict[tuple[str, str | None], list[str]] = {}
        for r in sorted(found, key=lambda r: (str(r.get("time")), str(r["label"]))):
            names = out.setdefault((str(r.get("fingerprint")), r.get("revision")), [])
            if r["label"] not in names:
                names.append(str(r["label"]))
        return out

    def display_labels(self) -> dict[tuple[str, str | None], str]:
        """For each model named more than one way: "BERT (= BERT copy)", the first name given first."""
        return {key: f"{names[0]} (= {', '.join(names[1:])})" for key, names in self.labels().items() if len(names) > 1}

    def failures(self) -> list[dict[str, Any]]:
        """Every model that failed to load (its latest error), oldest first."""
        folder = self.root / "failures"
        found = [r for p in sorted(folder.glob("*.json")) if (r := self._json(p)) is not None] if folder.is_dir() else []
        return sorted(found, key=lambda r: str(r.get("time")))

    def put_failure(self, key: str, info: Mapping[str, Any]) -> None:
        atomic_write(self.root / "failures" / f"{key}.json", to_json({**info, "time": _now()}))

    def clear_failure(self, key: str) -> None:
        (self.root / "failures" / f"{key}.json").unlink(missing_ok=True)

    def failure(self, key: str) -> dict[str, Any] | None:
        return self._json(self.root / "failures" / f"{key}.json")


def summary_row(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A cell (checked: `biaslens.zoo.integrity`) as one row of `ResultsStore.summaries()`."""
    fields, model, dataset = cell.get("fields", {}), cell.get("model", {}), cell.get("dataset", {})
    summary = cell.get("summary") or {}
    selection = fields.get("selection")
    status, reason = cell.get("status", "done"), cell.get("reason", "")
    if status == "done" and (then := stored_tag(fields)) != (now := metric_tag(str(fields.get("metric")), str(fields.get("compat")))):
        status = "outdated"
        reason = f"scored under an older meaning of its metric ({then}; now {now}): a plan's next run scores it again"
    sanity = model.get("sanity") or {}
    return {
        "key": cell.get("key"),
        "unit": unit_key(fields),
        "status": status,
        "metric": fields.get("metric"),
        "convention": fields.get("convention"),
        "precision": fields.get("precision"),
        "compat": fields.get("compat"),
        "biaslens": fields.get("biaslens"),
        "model_fingerprint": fields.get("model_fingerprint"),
        "model_revision": fields.get("model_revision"),
        "model_id": model.get("id"),
        "model_label": model.get("label"),
        "family": model.get("family"),
        "kind": model.get("kind"),
        "parameters": model.get("parameters"),
        "dataset": dataset.get("name"),
        "dataset_label": dataset.get("label"),
        "dataset_sha256": fields.get("dataset_sha256"),
        "selection": json.dumps(selection, sort_keys=True) if selection else "",
        **{c: summary.get(c) for c in SCORE_COLUMNS},
        "created": (cell.get("run") or {}).get("created"),
        "run_id": (cell.get("run") or {}).get("run_id"),
        "reason": reason,
        "sanity": sanity.get("status", ""),
        "sanity_message": sanity.get("message", ""),
    }


def records_seal(summary: Any, records: bytes) -> str:
    """What a cell's writer vouches for (its "seal"): its summary, computed from its records, and the bytes of those
    records. A reader that finds both unchanged need not compute the one from the other again."""
    return _digest({"summary": summary, "records": hashlib.sha256(records).hexdigest()})


def by_version(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of `summaries()` oldest first: by the biaslens version that scored each cell, compared as versions (0.9.0
    before 0.10.0: `version_key`), then by when. The newest of each cell's kind is the last."""
    order = {v: i for i, v in enumerate(sorted(set(frame["biaslens"]), key=version_key))}
    return frame.assign(_version=[order[v] for v in frame["biaslens"]]).sort_values(["_version", "created"], kind="stable").drop(columns="_version")


def selection_note(selection: Any) -> str:
    """The pairs a cell chose, as a dataset's name shows it (`summaries()`'s selection): "" (every pair), " (first 100)",
    " (sample 50, seed 0)"."""
    if not isinstance(selection, str) or not selection:
        return ""
    chosen = json.loads(selection)
    if "sample" in chosen:
        return f" (sample {chosen['sample']}, seed {chosen.get('seed', 0)})"
    return f" (first {chosen.get('limit')})"


def dataset_names(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """A name for each row's dataset (columns `dataset_label`, `dataset_sha256`, `selection`), one per dataset scored
    (its file's sha256 and the pairs chosen), and the notes that say how they were told apart.

    The name is the dataset's label with the pairs chosen when not every one ("crows-pairs (first 100)"); cells of one
    dataset labelled differently share its most frequent label; two datasets that would share a name get their file's
    sha256 added ("data [3f2a9c1b]"), so that a column never holds two datasets' scores."""
    from collections import Counter

    labels = [v if isinstance(v, str) else "" for v in frame["dataset_label"]]
    ids = [
        (sha if isinstance(sha, str) else "", sel if isinstance(sel, str) else "") for sha, sel in zip(frame["dataset_sha256"], frame["selection"])
    ]
    counts: dict[tuple[str, str], Counter[str]] = {}
    for ident, label in zip(ids, labels):
        counts.setdefault(ident, Counter())[label] += 1
    chosen = {ident: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for ident, c in counts.items()}
    sharing: dict[str, list[tuple[str, str]]] = {}
    for ident in counts:
        sharing.setdefault(chosen[ident] + selection_note(ident[1]), []).append(ident)
    names: dict[tuple[str, str], str] = {}
    notes = []
    for name, idents in sharing.items():
        if len(idents) == 1:
            names[idents[0]] = name
            continue
        width = 8
        while len({sha[:width] for sha, _ in idents}) < len(idents) and width < 64:
            width *= 2
        told = {ident: f"{name} [{ident[0][:width] or '?'}]" for ident in idents}
        names.update(told)
        notes.append(
            f"{len(idents)} different datasets are labelled {name!r}: their columns are told apart by their files' sha256 "
            f"({', '.join(sorted(told.values()))})."
        )
    for ident, count in counts.items():
        if len(count) > 1:
            others = ", ".join(repr(x) for x in sorted(set(count) - {chosen[ident]}))
            notes.append(f"{names[ident]!r} is also labelled {others} in some cells: the same file and pairs, one column.")
    return [names[i] for i in ids], notes


def _damaged_row(key: str, cell: Any, problem: str) -> dict[str, Any]:
    """A damaged cell's row of the index: its key, status "damaged", what is wrong, and what it says it is where that is
    text (which model, dataset and metric), nothing else."""
    row: dict[str, Any] = dict.fromkeys(SUMMARY_COLUMNS)
    row.update(key=key, unit="", status=DAMAGED, reason=problem, selection="", sanity="", sanity_message="")
    if isinstance(cell, dict):

        def text(block: Any, name: str) -> str | None:
            value = block.get(name) if isinstance(block, dict) else None
            return value if isinstance(value, str) else None

        fields, model, dataset = cell.get("fields"), cell.get("model"), cell.get("dataset")
        for column, block, name in (
            ("metric", fields, "metric"),
            ("convention", fields, "convention"),
            ("precision", fields, "precision"),
            ("compat", fields, "compat"),
            ("biaslens", fields, "biaslens"),
            ("model_fingerprint", fields, "model_fingerprint"),
            ("dataset_sha256", fields, "dataset_sha256"),
            ("model_id", model, "id"),
            ("model_label", model, "label"),
            ("dataset", dataset, "name"),
            ("dataset_label", dataset, "label"),
        ):
            row[column] = text(block, name)
    return row


def damaged_lines(summaries: pd.DataFrame, store: str | Path | None = None) -> list[str]:
    """One line per damaged cell of `summaries` (`ResultsStore.summaries()`): which cell, what it says it is, what is
    wrong; after `DAMAGED_SHOWN` of them, one line for the rest. Nothing when every cell is whole."""
    damaged = cast("pd.DataFrame", summaries[summaries["status"] == DAMAGED])
    lines = []
    for row in damaged.head(DAMAGED_SHOWN).to_dict(orient="records"):
        what = " · ".join(_one_line(str(row[c])) for c in ("model_label", "dataset_label", "metric") if isinstance(row[c], str))
        lines.append(
            f"Damaged cell {row['key'][:12]}…{f' ({what})' if what else ''} left out: {_one_line(str(row['reason']))}; "
            "`biaslens zoo run` scores it again."
        )
    if len(damaged) > DAMAGED_SHOWN:
        where = f" in {store}" if store is not None else ""
        lines.append(f"… and {len(damaged) - DAMAGED_SHOWN:,} more damaged cells{where} (`biaslens zoo merge` lists each with its reason).")
    return lines


def _one_line(text: str, most: int = 80) -> str:
    """Text of a cell (a label, a reason) on one line of at most `most` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return _one_line(text.splitlines()[0], 120)


def _stamp_of(stat: os.stat_result) -> str:
    """A file's version: its size and time stamp (a file rewritten or edited gets another)."""
    return f"{stat.st_mtime_ns}-{stat.st_size}"


def _file_stamp(path: Path) -> str | None:
    try:
        return _stamp_of(path.stat())
    except OSError:
        return None


def _cell_stamp(json_stamp: str, records_stamp: str, datasets: Mapping[str, str], sha256: Any) -> str:
    """The version of everything a cell's check read: its two files and its dataset's copy."""
    return f"{json_stamp}|{records_stamp}|{datasets.get(sha256, '') if isinstance(sha256, str) else ''}"


def score_types(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (a table of cells) with its scores and the model's parameters as floats and its counts as nullable integers."""
    for column in ("bias_score", "ci_low", "ci_high", "token_accuracy", "parameters"):
        frame[column] = frame[column].astype(float)
    for column in ("n", "wins", "ties", "undecidable"):
        frame[column] = frame[column].astype("Int64")
    return frame


_MEMO: OrderedDict[tuple[str, str], tuple[Any, Any]] = OrderedDict()
_MEMO_LOCK = threading.Lock()
_MEMO_SIZE = 4
#: Cells checked in this process, by (store, key): the version of their files then, their row, their rows per bias type.
_CHECKED: OrderedDict[tuple[str, str], tuple[str, dict[str, Any], list[dict[str, Any]]]] = OrderedDict()
_CHECKED_SIZE = 200_000
#: The stores whose newest index file has joined `_CHECKED`.
_SEEDED: set[str] = set()


class Heartbeat:
    """A job's heartbeat: every `HEARTBEAT_S`, its locks' time stamps and its record are refreshed (in a thread)."""

    def __init__(self, store: ResultsStore, beat: Any = None, interval: float = HEARTBEAT_S):
        self.store = store
        self.keys: set[str] = set()
        self._beat = beat
        self._interval = interval
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="biaslens-zoo-heartbeat", daemon=True)

    def hold(self, keys: Iterable[str]) -> None:
        with self._lock:
            self.keys.update(keys)

    def drop(self, keys: Iterable[str]) -> None:
        with self._lock:
            self.keys.difference_update(keys)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            with self._lock:
                keys = list(self.keys)
            with contextlib.suppress(OSError):
                self.store.refresh(keys)
            if self._beat is not None:
                with contextlib.suppress(Exception):
                    self._beat()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


__all__ = [
    "DAMAGED",
    "DAMAGED_SHOWN",
    "DATASET_COLUMNS",
    "HEARTBEAT_S",
    "LOCK_TTL_S",
    "RECORD_COLUMNS",
    "SCORE_COLUMNS",
    "STORE_FORMAT",
    "SUMMARY_COLUMNS",
    "TYPE_COLUMNS",
    "Heartbeat",
    "LockInfo",
    "Owner",
    "ResultsStore",
    "StoreError",
    "by_version",
    "cell_fields",
    "cell_key",
    "damaged_lines",
    "dataset_names",
    "records_seal",
    "selection_note",
    "score_types",
    "summary_row",
    "unit_key",
]

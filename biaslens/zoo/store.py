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
      failures/<id>.json            a model that could not load: its one-line error
      runs/<run>/                   one `biaslens zoo run`: run.json, the jobs' records (jobs/), submitit's files
      index/                        the summaries of every cell as one table, rebuilt when the cells change

A cell is written whole (its records first, then its summary, each atomically): a cell whose `.json` exists is done.
Writers never change a file another writer could be reading. Locks are files created exclusively (`O_EXCL`, atomic on
local disks and NFSv3+): two runs of the same plan never score a cell twice.
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
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from biaslens.data.datafiles import read_bytes
from biaslens.data.export import atomic_write, to_json
from biaslens.errors import BiaslensError, DatasetError, InputError
from biaslens.version import __version__

if TYPE_CHECKING:
    import pandas as pd

    from biaslens.data.datasets import PairDataset
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
)
#: The columns of `ResultsStore.type_summaries()`, one row per cell and bias type.
TYPE_COLUMNS = ("key", "bias_type", "bias_score", "ci_low", "ci_high", "n")
#: The columns of a dataset's pairs in the store, and of a cell's records.
DATASET_COLUMNS = ("pair_id", "dataset", "bias_type", "direction", "sent_stereo", "sent_anti")
RECORD_COLUMNS = ("pair_id", "stereo", "anti", "hits", "total")


class StoreError(InputError):
    """A results store that cannot be used (not a store, a newer layout, a cell that is not there)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


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
    """The facts a cell's key is made of, as stored in the cell."""
    return {
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


def cell_key(fields: Mapping[str, Any]) -> str:
    """The cell's key: the sha256 of its facts (`cell_fields`)."""
    return _digest(dict(fields))


def unit_key(fields: Mapping[str, Any]) -> str:
    """The key shared by the cells of one model, dataset, convention, precision and compat mode (every metric)."""
    return _digest({k: v for k, v in fields.items() if k != "metric"})


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
    def _write_parquet(path: Path, frame: pd.DataFrame) -> None:
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        atomic_write(path, buffer.getvalue())

    # -- datasets --------------------------------------------------------------------
    def put_dataset(self, dataset: PairDataset) -> None:
        """Keep the dataset's pairs (once per file content)."""
        path = self.root / "datasets" / f"{dataset.sha256}.parquet"
        if path.exists():
            return
        import pandas as pd

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

    def dataset_pairs(self, sha256: str) -> pd.DataFrame:
        path = self.root / "datasets" / f"{sha256}.parquet"
        if not path.exists():
            raise StoreError(f"The results store {self.root} has no dataset {sha256[:12]}…: its cells cannot be read back.")
        return self._parquet(path)

    # -- cells -----------------------------------------------------------------------
    def has_cell(self, key: str) -> bool:
        return self._cell_path(key, ".json").exists()

    def held_cells(self, keys: Iterable[str]) -> set[str]:
        """Which of `keys` are cells in the store."""
        return {k for k in keys if self.has_cell(k)}

    def write_cell(self, record: Mapping[str, Any], records: pd.DataFrame | None = None) -> None:
        """Write a cell: its per-pair `records` (columns `RECORD_COLUMNS`) first, then its summary `record`."""
        key = str(record["key"])
        if key != cell_key(record["fields"]):
            raise ValueError("a cell's key must be the digest of its fields")
        if records is not None:
            self._write_parquet(self._cell_path(key, ".parquet"), records)
        atomic_write(self._cell_path(key, ".json"), to_json({"format": STORE_FORMAT, **record}))

    def read_cell(self, key: str) -> dict[str, Any]:
        found = self._json(self._cell_path(key, ".json"))
        if found is None:
            raise StoreError(f"The results store {self.root} has no cell {key[:12]}….")
        return found

    def cell_records(self, key: str) -> pd.DataFrame:
        return self._parquet(self._cell_path(key, ".parquet"))

    def _listing(self) -> list[tuple[str, int, int]]:
        """(key, mtime, size) of every cell's summary: what decides whether the index is current."""
        found: list[tuple[str, int, int]] = []
        cells = self.root / "cells"
        if not cells.is_dir():
            return found
        with os.scandir(cells) as shards:
            for shard in shards:
                if not shard.is_dir():
                    continue
                with os.scandir(shard.path) as entries:
                    for entry in entries:
                        if entry.name.endswith(".json") and not entry.name.startswith("."):
                            stat = entry.stat()
                            found.append((entry.name[:-5], stat.st_mtime_ns, stat.st_size))
        found.sort()
        return found

    def summaries(self) -> pd.DataFrame:
        """Every cell's summary, one row each (`SUMMARY_COLUMNS`): read from the index, rebuilt when the cells changed."""
        return self._index()[0]

    def type_summaries(self) -> pd.DataFrame:
        """Every cell's bias score per bias type (`TYPE_COLUMNS`), one row per cell and type."""
        return self._index()[1]

    def _index(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        listing = self._listing()
        digest = _digest(listing)[:24]
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
        if frames is None:
            frames = self._build_index([key for key, _, _ in listing])
            with contextlib.suppress(OSError, BiaslensError):  # a read-only store is still readable, only slower
                self._write_parquet(main, frames[0])
                self._write_parquet(types, frames[1])
                for old in folder.glob("*.parquet"):
                    if digest not in old.name and time.time() - old.stat().st_mtime > 60:
                        old.unlink(missing_ok=True)
        with _MEMO_LOCK:
            _MEMO[memo_key] = frames
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
        return frames

    def _build_index(self, keys: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        import pandas as pd

        rows, types = [], []
        for key in keys:
            cell = self._json(self._cell_path(key, ".json"))
            if cell is None:
                continue
            row = summary_row(cell)
            rows.append(row)
            for bias_type, block in (cell.get("summary") or {}).get("by_bias_type", {}).items():
                types.append({"key": key, "bias_type": bias_type, **{c: block.get(c) for c in ("bias_score", "ci_low", "ci_high", "n")}})
        main = score_types(pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)))
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
        if rows.empty or missing:
            raise StoreError(f"The results store {self.root} holds no {', '.join(missing) or 'scores'} for this model and dataset.")
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

    def put_failure(self, key: str, info: Mapping[str, Any]) -> None:
        atomic_write(self.root / "failures" / f"{key}.json", to_json({**info, "time": _now()}))

    def clear_failure(self, key: str) -> None:
        (self.root / "failures" / f"{key}.json").unlink(missing_ok=True)

    def failure(self, key: str) -> dict[str, Any] | None:
        return self._json(self.root / "failures" / f"{key}.json")


def summary_row(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A cell as one row of `ResultsStore.summaries()`."""
    fields, model, dataset = cell.get("fields", {}), cell.get("model", {}), cell.get("dataset", {})
    summary = cell.get("summary") or {}
    selection = fields.get("selection")
    return {
        "key": cell.get("key"),
        "unit": unit_key(fields),
        "status": cell.get("status", "done"),
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
        "reason": cell.get("reason", ""),
    }


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
    "cell_fields",
    "cell_key",
    "score_types",
    "summary_row",
    "unit_key",
]

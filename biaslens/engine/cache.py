"""On-disk cache of per-pair metric scores, so re-runs and the app reuse finished work.

One SQLite file (`<cache dir>/results.sqlite`). A key is the sha256 of (model
fingerprint, dtype, metric, compat mode, both sentences); the value is a small JSON record
stored with its own checksum. SQLite transactions make every write atomic, so a run
killed at any point leaves only whole entries; an entry whose checksum does not match is
treated as missing and recomputed, and so is one that `_encode` cannot have written (not a
JSON object, NaN or ±Infinity; callers check the shape of their records too, e.g. the runner's
`valid`); each such case is logged. A file that is not a database at all (a damaged disk,
a half-copied file), found at start-up or while in use (`database disk image is malformed`
during a run on a server), is set aside as `results.sqlite.corrupt-<time>` and a fresh cache
started (`notice` says so, and the next run's warnings). If the folder is read-only or the disk is full the
cache switches itself off, says why in `warning`, and the run goes on without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from biaslens.errors import InputError
from biaslens.paths import default_cache_dir

_SCHEMA = "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum TEXT NOT NULL)"


def cache_key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


def _checksum(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def _encode(record: Mapping[str, Any]) -> str:
    # JSON has no NaN: store null and read it back as NaN.
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in record.items()}
    return json.dumps(clean, sort_keys=True)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} in a cached record")  # `_encode` never writes NaN or Infinity: a record holding one was not ours


def _decode(value: str) -> dict[str, Any]:
    """A stored record; `ValueError` for anything `_encode` cannot have written: not a JSON object, NaN or ±Infinity."""
    data = json.loads(value, parse_constant=_no_constant)
    if not isinstance(data, dict):
        raise ValueError(f"a cached record is a {type(data).__name__}, not an object")
    return {k: (math.nan if v is None else v) for k, v in data.items()}


def _corrupted(exc: BaseException) -> bool:
    """An SQLite error that means the file is damaged (malformed, not a database), not busy, read-only or full."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


class ResultCache:
    """A thread- and process-safe key/value store of small JSON records."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_dir() / "results.sqlite"
        self.warning: str | None = None
        #: Set when a corrupted cache file was set aside and a fresh one started.
        self.notice: str | None = None
        self._lock = threading.RLock()
        #: How many times the file was set aside and started afresh (a failure seen under an older one is already handled).
        self._generation = 0
        #: Records this object has written (a zoo job's progress: requeued only once it has some).
        self.written = 0
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                self._create()
            except sqlite3.DatabaseError as exc:
                if not _corrupted(exc):  # locked, read-only, disk full: not corruption
                    raise
                self._set_aside(exc)
                self._create()
        except (OSError, sqlite3.Error) as exc:
            self._disable(exc)

    def _failed(self, exc: BaseException, generation: int) -> None:
        """An operation failed: a file damaged while in use (`database disk image is malformed`) is set aside and a fresh
        cache started, as at start-up, so caching goes on for every user; anything else (read-only, disk full) switches the
        cache off with a warning. `generation`: the file the operation used (another thread may have replaced it since)."""
        if _corrupted(exc):
            with self._lock:
                if generation != self._generation:  # already set aside by another thread
                    return
                try:
                    self._set_aside(exc)
                    self._create()
                    self._generation += 1
                    return
                except (OSError, sqlite3.Error) as again:
                    exc = again
        self._disable(exc)

    def _create(self) -> None:
        with self._connect() as db:
            db.execute(_SCHEMA)
            db.execute("SELECT COUNT(*) FROM scores").fetchone()

    def _set_aside(self, exc: BaseException) -> None:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        n = 1
        while aside.exists():  # (set aside twice within a second: keep both)
            aside, n = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}-{n}"), n + 1
        self.path.replace(aside)
        for suffix in ("-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.notice = f"Result cache {self.path} was corrupted ({exc}); it was set aside as {aside.name} and a fresh cache started."
        logging.getLogger("biaslens").warning(self.notice)

    def pop_notice(self) -> str | None:
        """The notice, once: a run reports it, later runs on this (shared) cache do not."""
        with self._lock:
            notice, self.notice = self.notice, None
        return notice

    @property
    def enabled(self) -> bool:
        return self.warning is None

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """One transaction on a fresh connection: committed on success, always closed."""
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            with db:
                yield db
        finally:
            db.close()

    def _disable(self, exc: BaseException) -> None:
        self.warning = f"Result cache {self.path} is not usable ({exc}); continuing without caching."

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        keys = list(keys)
        if not self.enabled or not keys:
            return {}
        found: dict[str, dict[str, Any]] = {}
        broken: list[str] = []
        generation = self._generation
        try:
            with self._connect() as db:
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    marks = ",".join("?" * len(chunk))
                    for key, value, checksum in db.execute(f"SELECT key, value, checksum FROM scores WHERE key IN ({marks})", chunk):
                        try:
                            if not isinstance(value, str) or _checksum(value) != checksum:
                                raise ValueError("checksum mismatch")
                            found[key] = _decode(value)
                        except ValueError:
                            broken.append(key)
                if broken:
                    db.executemany("DELETE FROM scores WHERE key = ?", [(k,) for k in broken])
        except sqlite3.Error as exc:
            self._failed(exc, generation)
            return {}
        if broken:
            logging.getLogger("biaslens").warning("Result cache %s: %d damaged entries dropped; they are computed again.", self.path, len(broken))
        return found

    def drop(self, keys: Iterable[str], why: str) -> None:
        """Remove entries a caller found unusable (of the wrong shape), logging `why`: they are computed again."""
        keys = list(keys)
        if not self.enabled or not keys:
            return
        logging.getLogger("biaslens").warning("Result cache %s: %d entries dropped (%s); they are computed again.", self.path, len(keys), why)
        generation = self._generation
        try:
            with self._lock, self._connect() as db:
                db.executemany("DELETE FROM scores WHERE key = ?", [(k,) for k in keys])
        except sqlite3.Error as exc:
            self._failed(exc, generation)

    def held(self, keys: Iterable[str]) -> set[str]:
        """Which of `keys` the cache holds (nothing is read back or checked: `get_many` does that)."""
        keys = list(keys)
        if not self.enabled or not keys:
            return set()
        held: set[str] = set()
        generation = self._generation
        try:
            with self._connect() as db:
                for start in range(0, len(keys), 500):
                    chunk = keys[start : start + 500]
                    held.update(k for (k,) in db.execute(f"SELECT key FROM scores WHERE key IN ({','.join('?' * len(chunk))})", chunk))
        except sqlite3.Error as exc:
            self._failed(exc, generation)
            return set()
        return held

    def put_many(self, records: Mapping[str, Mapping[str, Any]]) -> None:
        if not self.enabled or not records:
            return
        generation = self._generation
        try:
            self._write(records)
            self.written += len(records)
        except sqlite3.Error as exc:
            self._failed(exc, generation)
            if self.enabled and generation != self._generation:  # a fresh file took the damaged one's place: write there
                with contextlib.suppress(sqlite3.Error):
                    self._write(records)

    def _write(self, records: Mapping[str, Mapping[str, Any]]) -> None:
        rows = []
        for key, record in records.items():
            value = _encode(record)
            rows.append((key, value, _checksum(value)))
        with self._lock, self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO scores (key, value, checksum) VALUES (?, ?, ?)", rows)

    def clear(self) -> None:
        if self.enabled:
            with self._connect() as db:
                db.execute("DELETE FROM scores")

    def __len__(self) -> int:
        if not self.enabled:
            return 0
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])


def check_cache(cache: Any) -> ResultCache | None:
    """`cache` as a `cache=` argument must be: a `ResultCache` or None; anything else is refused in one line naming the
    parameter. A path (a str or Path) is not taken for a cache: it could name the SQLite file or its folder, and guessing
    would start a database where none was meant (`ResultCache(path)` says which)."""
    if cache is None or isinstance(cache, ResultCache):
        return cache
    what = f"the path {str(cache)!r}" if isinstance(cache, (str, Path)) else f"a {type(cache).__name__}"
    raise InputError(
        f"cache must be a ResultCache or None, not {what}: for a cache in a file of your choice pass biaslens.ResultCache('folder/results.sqlite')."
    )


__all__ = ["ResultCache", "cache_key", "check_cache"]

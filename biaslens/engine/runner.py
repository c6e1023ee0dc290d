"""The one chunked, cached, resumable runner behind every dataset run.

`evaluate` (per-pair metric scores), the paper analyses (`analyses.cached_pair_records`:
per-token ranks, shuffle sensitivity), the explorer's instant reopen of a finished
run (`cache_only=True`) and `text_scores.score` with a cache (its "pairs" are texts) all go
through `run_chunked`:

* the pairs are cut into chunks sized by time (`ChunkSizer`): about `chunk_seconds` of
  computation each on the device at hand (`DEFAULT_CHUNK_SECONDS`; the app's
  `INTERACTIVE_CHUNK_SECONDS`), so an interruption loses little work and a GPU still gets
  full batches; `chunk_pairs=N` asks for fixed chunks of N pairs instead;
* each pair has one or more *parts* (a metric, or a single record), each with its own
  result-cache key (`key(pair, part)`, never a chunk's); a chunk reads what the cache holds,
  computes the rest in one call of `compute` (batched across the chunk's pairs) and writes it
  to the cache before the next chunk starts, so an interrupted run resumes where it stopped,
  whatever the chunks were then and are now;
* `cache_only=True` reads and never computes: a chunk the cache does not fully hold
  raises `NotCached` at once;
* under `accelerate launch` (`processes`, from `parallel.process_state`) each process
  runs a contiguous share of the pairs (of the chunks, when their size is fixed) and every
  process gets the whole result back;
* `progress(done_pairs, total_pairs)` is called within and after every chunk (fractions
  within a chunk); `stop()` is asked before every chunk and stops the run with
  `JobCancelled`, finished chunks kept in the cache.

The runner knows nothing of metrics or models: the caller's `key` and `compute` do.
Scores do not depend on the chunks beyond float rounding (a chunk's pairs share batches:
|delta| <= 1e-5, as batched vs one at a time).
"""

from __future__ import annotations

import contextlib
import gc
import numbers
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from biaslens.engine import parallel
from biaslens.engine.cache import ResultCache, check_cache
from biaslens.data.datasets import Pair
from biaslens.errors import InputError, JobCancelled

#: Seconds of computation a chunk of a dataset run aims at, when its size is left to the runner.
DEFAULT_CHUNK_SECONDS = 5.0
#: The same for an interactive run (the app): short, so that Stop (asked between chunks) answers quickly.
INTERACTIVE_CHUNK_SECONDS = 2.0
#: Pairs in the first time-sized chunk; the next chunk is at most `CHUNK_GROWTH` times larger or smaller
#: than the last, and never more than `MAX_CHUNK_PAIRS` (what a chunk holds in memory at once).
FIRST_CHUNK_PAIRS = 16
CHUNK_GROWTH = 8
MAX_CHUNK_PAIRS = 4096

Record = dict[str, Any]
#: progress(done_pairs, total_pairs); done may be fractional within a chunk.
Progress = Callable[[float, int], None]
#: progress(rows_done, rows_total) within one chunk's computation.
RowProgress = Callable[[int, int], None]
#: key(pair, part) -> the result-cache key of that part of the pair's result.
KeyFn = Callable[[Pair, str], str]
#: compute(pairs, parts, progress) -> for each pair, {part: record} for every part asked.
ComputeFn = Callable[[Sequence[Pair], Sequence[str], RowProgress], list[dict[str, Record]]]


class NotCached(LookupError):
    """A cache-only run met a chunk the result cache does not fully hold."""


@dataclass
class ChunkSizer:
    """How many pairs the next chunk gets: `pairs` each time, or (`pairs=None`) about `seconds` of computation.

    A time-sized run starts with `FIRST_CHUNK_PAIRS` pairs; after each chunk, `record` the pairs
    it computed and the seconds that took, and the next chunk is sized from that rate, at most
    `CHUNK_GROWTH` times larger or smaller than the last, within 1..`MAX_CHUNK_PAIRS`. A chunk
    read wholly from the cache took no computation: the next one grows `CHUNK_GROWTH` times.
    """

    pairs: int | None = None
    seconds: float = DEFAULT_CHUNK_SECONDS
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = self.pairs or FIRST_CHUNK_PAIRS

    def record(self, computed: int, seconds: float) -> None:
        """A chunk computed `computed` pairs (the rest came from the cache) in `seconds`."""
        if self.pairs is not None:
            return
        wanted = self.seconds * computed / seconds if computed and seconds > 0 else self.size * CHUNK_GROWTH
        self.size = int(max(1, self.size // CHUNK_GROWTH, min(MAX_CHUNK_PAIRS, self.size * CHUNK_GROWTH, wanted)))


@dataclass
class ChunkedResult:
    """What `run_chunked` returns: per pair (in the order given) {part: record}, and how many came from the cache."""

    records: list[dict[str, Record]]
    cached: int  # (pair, part) records read from the cache instead of computed
    processes: int | None = None  # the number of processes under `accelerate launch`, else None


def run_chunked(
    pairs: Sequence[Pair],
    *,
    parts: Sequence[str],
    key: KeyFn,
    compute: ComputeFn,
    cache: ResultCache | None = None,
    chunk_pairs: int | None = None,
    chunk_seconds: float = DEFAULT_CHUNK_SECONDS,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    processes: Any | None = None,
    cache_only: bool = False,
    clock: Callable[[], float] = time.perf_counter,
    valid: Callable[[Record], bool] | None = None,
) -> ChunkedResult:
    """Every part of every pair: from the cache where present, else computed chunk by chunk and cached.

    Chunks are about `chunk_seconds` of computation each (`ChunkSizer`, timed with `clock`), or
    `chunk_pairs` pairs each when given. `processes` is accelerate's state
    (`parallel.process_state()`) to share the pairs out between processes, or None for this
    process alone. A chunk's missing parts are computed in one call `compute(pairs, parts,
    progress)` for the pairs that miss any part, with every part some of them miss; those fresh
    records replace cached ones of the same pairs. `valid(record)`, when given, checks each record read from the cache (its
    fields, finite numbers): one that fails is dropped from the cache (logged) and computed again.
    """
    if chunk_pairs is not None and (isinstance(chunk_pairs, bool) or not isinstance(chunk_pairs, numbers.Integral) or chunk_pairs < 1):
        raise InputError(f"chunk_pairs must be a whole number of at least 1, not {chunk_pairs!r}.")
    if isinstance(chunk_seconds, bool) or not isinstance(chunk_seconds, numbers.Real) or not chunk_seconds > 0:
        raise InputError(f"chunk_seconds must be a number of seconds above 0, not {chunk_seconds!r}.")
    cache = check_cache(cache)  # every caller's `cache=` (evaluate, score, the analyses): a path is refused in one line
    if cache_only:
        processes = None  # reading only: every process can read everything itself
        if cache is None or not cache.enabled:
            raise NotCached("There is no usable result cache to read from.")
    begin, end = _share(processes, len(pairs), chunk_pairs)
    own = end - begin
    sizer = ChunkSizer(chunk_pairs, float(chunk_seconds))
    records: dict[int, dict[str, Record]] = {}
    cached = done = 0
    start = begin
    while start < end:
        if stop is not None and stop():
            raise JobCancelled("The run was stopped; its finished chunks are in the result cache, so running it again resumes there.")
        chunk = pairs[start : min(end, start + sizer.size)]

        def within_chunk(rows_done: int, rows_total: int, n: int = len(chunk), done: int = done) -> None:
            if progress is not None:
                progress(done + n * rows_done / max(rows_total, 1), own)

        started = clock()
        with _collector_paused():
            chunk_records, hits, computed = _run_chunk(chunk, parts, key, compute, cache, within_chunk, cache_only, valid)
        sizer.record(computed, clock() - started)
        records.update((start + i, r) for i, r in enumerate(chunk_records))
        cached += hits
        done += len(chunk)
        start += len(chunk)
        if progress is not None:
            progress(done, own)
    gathered = parallel.gather(processes, (records, cached))
    merged = {i: r for part, _ in gathered for i, r in part.items()}
    return ChunkedResult(
        [merged[i] for i in range(len(pairs))],
        sum(hits for _, hits in gathered),
        processes.num_processes if processes is not None else None,
    )


def run_records(
    items: Sequence[Any],
    *,
    key: Callable[[Any], str],
    compute: Callable[[Sequence[Any], RowProgress], list[Record]],
    cache: ResultCache | None = None,
    chunk_items: int | None = None,
    chunk_seconds: float | None = None,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    cache_only: bool = False,
    valid: Callable[[Record], bool] | None = None,
) -> tuple[list[Record], int]:
    """`run_chunked` for items of one record each (a text, a multiple-choice item, a pair's head ablations): that record
    per item, in order, and how many came from the cache.

    `key(item)` is the record's cache key, `compute(items, progress)` the records of a chunk's items;
    `chunk_seconds=None` is `DEFAULT_CHUNK_SECONDS`.
    """
    part = "record"
    run = run_chunked(
        items,
        parts=(part,),
        key=lambda item, _part: key(item),
        compute=lambda chunk, _parts, within: [{part: r} for r in compute(chunk, within)],
        cache=cache,
        chunk_pairs=chunk_items,
        chunk_seconds=DEFAULT_CHUNK_SECONDS if chunk_seconds is None else chunk_seconds,
        progress=progress,
        stop=stop,
        cache_only=cache_only,
        valid=valid,
    )
    return [r[part] for r in run.records], run.cached


def _passes(valid: Callable[[Record], bool], record: Record) -> bool:
    try:
        return bool(valid(record))
    except Exception:  # a check that trips over a record: not a record it accepts
        return False


_PAUSED = {"chunks": 0, "was_enabled": False}
_PAUSE_LOCK = threading.Lock()


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while chunks are computed (in any thread), back as it was after the last.

    A chunk makes hundreds of thousands of small objects (encodings, queries, results, records)
    that live until it ends, and every collection the allocations trigger walks them all again,
    with the million objects torch and transformers keep: a quarter of the CPU-side time of a
    run. Reference counting still frees everything the moment it is no longer used.
    """
    with _PAUSE_LOCK:
        if _PAUSED["chunks"] == 0:
            _PAUSED["was_enabled"] = gc.isenabled()
            gc.disable()
        _PAUSED["chunks"] += 1
    try:
        yield
    finally:
        with _PAUSE_LOCK:
            _PAUSED["chunks"] -= 1
            if _PAUSED["chunks"] == 0 and _PAUSED["was_enabled"]:
                gc.enable()


def _share(processes: Any | None, n: int, chunk_pairs: int | None) -> tuple[int, int]:
    """This process's contiguous share of n pairs, [begin, end): of whole chunks when their size is fixed."""
    if chunk_pairs is None:
        mine = parallel.share(processes, range(n))
        return (mine[0], mine[-1] + 1) if mine else (n, n)
    starts = parallel.share(processes, range(0, n, chunk_pairs))
    return (starts[0], min(n, starts[-1] + chunk_pairs)) if starts else (n, n)


def _run_chunk(
    chunk: Sequence[Pair],
    parts: Sequence[str],
    key: KeyFn,
    compute: ComputeFn,
    cache: ResultCache | None,
    progress: RowProgress,
    cache_only: bool,
    valid: Callable[[Record], bool] | None = None,
) -> tuple[list[dict[str, Record]], int, int]:
    """(records of the chunk's pairs, (pair, part) records read from the cache, pairs computed)."""
    if cache is None:  # nothing to read or write: no keys to make
        return compute(chunk, parts, progress), 0, len(chunk)
    keys = {(i, part): key(p, part) for i, p in enumerate(chunk) for part in parts}
    found = cache.get_many(keys.values())
    if valid is not None:  # a well-formed entry of the wrong shape is not trusted: computed again
        bad = [k for k, record in found.items() if not _passes(valid, record)]
        if bad:
            cache.drop(bad, "of the wrong shape or with values that are not finite numbers")
            found = {k: r for k, r in found.items() if k not in set(bad)}
    out: list[dict[str, Record]] = [{} for _ in chunk]
    for (i, part), k in keys.items():
        if k in found:
            out[i][part] = found[k]
    hits = sum(k in found for k in keys.values())
    todo = sorted({i for (i, _part), k in keys.items() if k not in found})
    if not todo:
        return out, hits, 0
    if cache_only:
        raise NotCached(f"{len(todo)} of {len(chunk)} pairs of a chunk are not in the result cache.")
    missing = [part for part in parts if any(keys[(i, part)] not in found for i in todo)]

    def rows(done: int, total: int, kept: int = len(chunk) - len(todo)) -> None:
        """The computed pairs' rows as the chunk's progress: the pairs the cache held count as done from the start."""
        total = max(total, 1)
        progress(kept * total + len(todo) * done, len(chunk) * total)

    computed = compute([chunk[i] for i in todo], missing, rows)
    fresh = {}
    for i, result in zip(todo, computed):
        for part, record in result.items():
            out[i][part] = record
            fresh[keys[(i, part)]] = record
    cache.put_many(fresh)
    return out, hits, len(todo)


def format_duration(seconds: float) -> str:
    """A long run's time for people: '8 s', '2 min 05 s', '1 h 04 min'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, sec = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


__all__ = [
    "DEFAULT_CHUNK_SECONDS",
    "INTERACTIVE_CHUNK_SECONDS",
    "ChunkSizer",
    "ChunkedResult",
    "NotCached",
    "format_duration",
    "run_chunked",
    "run_records",
]

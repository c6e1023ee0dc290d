"""The one chunked, cached, resumable runner behind every dataset run.

`evaluate` (per-pair metric scores), the paper analyses (`analyses.cached_pair_records`:
per-token ranks, shuffle sensitivity) and the explorer's instant reopen of a finished
run (`cache_only=True`) all go through `run_chunked`:

* the pairs are cut into chunks of `chunk_pairs` (`DEFAULT_CHUNK_PAIRS`);
* each pair has one or more *parts* (a metric, or a single record), each with its own
  result-cache key (`key(pair, part)`); a chunk reads what the cache holds, computes the
  rest in one call of `compute` (batched across the chunk's pairs) and writes it to the
  cache before the next chunk starts, so an interrupted run resumes where it stopped;
* `cache_only=True` reads and never computes: a chunk the cache does not fully hold
  raises `NotCached` at once;
* under `accelerate launch` (`processes`, from `parallel.process_state`) each process
  runs a contiguous share of the chunks and every process gets the whole result back;
* `progress(done_pairs, total_pairs)` is called within and after every chunk (fractions
  within a chunk); `stop()` is asked before every chunk and stops the run with
  `JobCancelled`, finished chunks kept in the cache.

The runner knows nothing of metrics or models: the caller's `key` and `compute` do.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from . import parallel
from .cache import ResultCache
from .datasets import Pair
from .errors import InputError, JobCancelled

#: Pairs per resumable chunk of a dataset run (the CLI's `--chunk-pairs` default).
DEFAULT_CHUNK_PAIRS = 128
#: Pairs per chunk of an interactive run (the app): small, so a Stop or an interruption loses little work.
INTERACTIVE_CHUNK_PAIRS = 32

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
    chunk_pairs: int = DEFAULT_CHUNK_PAIRS,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    processes: Any | None = None,
    cache_only: bool = False,
) -> ChunkedResult:
    """Every part of every pair: from the cache where present, else computed chunk by chunk and cached.

    `processes` is accelerate's state (`parallel.process_state()`) to share the chunks out
    between processes, or None for this process alone. A chunk's missing parts are computed
    in one call `compute(pairs, parts, progress)` for the pairs that miss any part, with
    every part some of them miss; those fresh records replace cached ones of the same pairs.
    """
    if isinstance(chunk_pairs, bool) or not isinstance(chunk_pairs, numbers.Integral) or chunk_pairs < 1:
        raise InputError(f"chunk_pairs must be a whole number of at least 1, not {chunk_pairs!r}.")
    if cache_only:
        processes = None  # reading only: every process can read everything itself
        if cache is None or not cache.enabled:
            raise NotCached("There is no usable result cache to read from.")
    starts = parallel.share(processes, range(0, len(pairs), chunk_pairs))
    own = sum(len(pairs[start : start + chunk_pairs]) for start in starts)
    records: dict[int, dict[str, Record]] = {}
    cached = done = 0
    for start in starts:
        if stop is not None and stop():
            raise JobCancelled("The run was stopped; its finished chunks are in the result cache, so running it again resumes there.")
        chunk = pairs[start : start + chunk_pairs]

        def within_chunk(rows_done: int, rows_total: int, n: int = len(chunk), done: int = done) -> None:
            if progress is not None:
                progress(done + n * rows_done / max(rows_total, 1), own)

        chunk_records, hits = _run_chunk(chunk, parts, key, compute, cache, within_chunk, cache_only)
        records.update((start + i, r) for i, r in enumerate(chunk_records))
        cached += hits
        done += len(chunk)
        if progress is not None:
            progress(done, own)
    gathered = parallel.gather(processes, (records, cached))
    merged = {i: r for part, _ in gathered for i, r in part.items()}
    return ChunkedResult(
        [merged[i] for i in range(len(pairs))],
        sum(hits for _, hits in gathered),
        processes.num_processes if processes is not None else None,
    )


def _run_chunk(
    chunk: Sequence[Pair],
    parts: Sequence[str],
    key: KeyFn,
    compute: ComputeFn,
    cache: ResultCache | None,
    progress: RowProgress,
    cache_only: bool,
) -> tuple[list[dict[str, Record]], int]:
    keys = {(i, part): key(p, part) for i, p in enumerate(chunk) for part in parts}
    found = cache.get_many(keys.values()) if cache is not None else {}
    out: list[dict[str, Record]] = [{} for _ in chunk]
    for (i, part), k in keys.items():
        if k in found:
            out[i][part] = found[k]
    hits = sum(k in found for k in keys.values())
    todo = sorted({i for (i, _part), k in keys.items() if k not in found})
    if not todo:
        return out, hits
    if cache_only:
        raise NotCached(f"{len(todo)} of {len(chunk)} pairs of a chunk are not in the result cache.")
    missing = [part for part in parts if any(keys[(i, part)] not in found for i in todo)]
    computed = compute([chunk[i] for i in todo], missing, progress)
    fresh = {}
    for i, result in zip(todo, computed):
        for part, record in result.items():
            out[i][part] = record
            fresh[keys[(i, part)]] = record
    if cache is not None:
        cache.put_many(fresh)
    return out, hits


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


__all__ = ["DEFAULT_CHUNK_PAIRS", "INTERACTIVE_CHUNK_PAIRS", "ChunkedResult", "NotCached", "format_duration", "run_chunked"]

"""The chunked, cached, resumable runner (`biaslens.engine.runner`), with a counting stand-in for the model."""

from __future__ import annotations

import pytest

from biaslens.engine.cache import ResultCache, cache_key
from biaslens.data.datasets import Pair
from biaslens.errors import InputError, JobCancelled
from biaslens.engine.runner import CHUNK_GROWTH, FIRST_CHUNK_PAIRS, MAX_CHUNK_PAIRS, ChunkSizer, NotCached, run_chunked, run_records

PAIRS = [Pair(i, "test", "gender", "stereo", f"stereo {i}", f"anti {i}") for i in range(10)]


class Counter:
    """compute(): one record per pair and part, and a log of what each call was asked."""

    def __init__(self):
        self.calls: list[tuple[list[int], list[str]]] = []

    def __call__(self, pairs, parts, progress):
        self.calls.append(([p.pair_id for p in pairs], list(parts)))
        progress(1, 2)
        progress(2, 2)
        return [{part: {"value": p.pair_id * 10 + len(part)} for part in parts} for p in pairs]


def key(pair: Pair, part: str) -> str:
    return cache_key("test-model", part, pair.sent_stereo, pair.sent_anti)


def test_every_pair_and_part_in_order_and_progress_reaches_the_total():
    seen = []
    compute = Counter()
    run = run_chunked(PAIRS, parts=("a", "bb"), key=key, compute=compute, chunk_pairs=4, progress=lambda d, t: seen.append((d, t)))
    assert [r["a"]["value"] for r in run.records] == [i * 10 + 1 for i in range(10)]
    assert [r["bb"]["value"] for r in run.records] == [i * 10 + 2 for i in range(10)]
    assert run.cached == 0 and run.processes is None
    assert [ids for ids, _ in compute.calls] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert seen[-1] == (10, 10) and all(t == 10 for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert (2.0, 10) in seen  # half of the first chunk of 4


def test_a_second_run_reads_everything_from_the_cache(tmp_path):
    cache = ResultCache(tmp_path / "r.sqlite")
    first = run_chunked(PAIRS, parts=("a",), key=key, compute=Counter(), cache=cache, chunk_pairs=3)
    compute = Counter()
    again = run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache=cache, chunk_pairs=5)
    assert again.records == first.records and again.cached == 10 and compute.calls == []


def test_only_missing_parts_of_missing_pairs_are_computed(tmp_path):
    cache = ResultCache(tmp_path / "r.sqlite")
    run_chunked(PAIRS[:6], parts=("a",), key=key, compute=Counter(), cache=cache)
    compute = Counter()
    run = run_chunked(PAIRS, parts=("a", "bb"), key=key, compute=compute, cache=cache)
    assert compute.calls == [(list(range(10)), ["a", "bb"])]  # every pair misses "bb"; "a" only for pairs 6-9
    assert run.cached == 6
    compute = Counter()
    run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache=cache)
    assert compute.calls == []


def test_stop_keeps_finished_chunks_and_a_rerun_resumes(tmp_path):
    cache = ResultCache(tmp_path / "r.sqlite")
    compute = Counter()
    with pytest.raises(JobCancelled, match="resumes"):
        run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache=cache, chunk_pairs=4, stop=lambda: len(compute.calls) >= 2)
    assert len(cache) == 8
    compute = Counter()
    run = run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache=cache, chunk_pairs=4)
    assert compute.calls == [([8, 9], ["a"])] and run.cached == 8


def test_a_resumed_run_counts_the_pairs_it_kept_from_its_first_progress(tmp_path):
    """A chunk that the cache partly holds: its progress starts at the pairs held, not at the chunk's start (issue 21:
    stopped at 5/60, the resumed run showed 2/60)."""
    cache = ResultCache(tmp_path / "r.sqlite")
    run_chunked(PAIRS[:6], parts=("a",), key=key, compute=Counter(), cache=cache)
    seen = []
    run_chunked(PAIRS, parts=("a",), key=key, compute=Counter(), cache=cache, chunk_pairs=10, progress=lambda d, t: seen.append(d))
    assert seen == [6 + 4 * 1 / 2, 10, 10]  # half of the 4 computed pairs, both halves, then the chunk's end


def test_cache_only_computes_nothing(tmp_path):
    cache = ResultCache(tmp_path / "r.sqlite")
    compute = Counter()
    with pytest.raises(NotCached):
        run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache=cache, cache_only=True)
    with pytest.raises(NotCached):
        run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache=None, cache_only=True)
    assert compute.calls == [] and len(cache) == 0
    run_chunked(PAIRS, parts=("a",), key=key, compute=Counter(), cache=cache)
    found = run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache=cache, cache_only=True)
    assert found.cached == 10 and compute.calls == []


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "4"])
def test_chunk_pairs_must_be_a_positive_whole_number(bad):
    with pytest.raises(InputError, match="chunk_pairs"):
        run_chunked(PAIRS, parts=("a",), key=key, compute=Counter(), chunk_pairs=bad)


@pytest.mark.parametrize("bad", [0, -1.5, float("nan"), True, "5"])
def test_chunk_seconds_must_be_a_positive_number(bad):
    with pytest.raises(InputError, match="chunk_seconds"):
        run_chunked(PAIRS, parts=("a",), key=key, compute=Counter(), chunk_seconds=bad)


@pytest.mark.parametrize("cache_only", [False, True])
def test_a_cache_that_is_not_a_result_cache_is_refused_before_anything_runs(cache_only):
    """Every caller's `cache=` (evaluate, score, the analyses) goes through here: a path raised AttributeError."""
    compute = Counter()
    with pytest.raises(InputError, match=r"^cache must be a ResultCache or None, not the path 'results\.sqlite': "):
        run_chunked(PAIRS, parts=("a",), key=key, compute=compute, cache="results.sqlite", cache_only=cache_only)  # type: ignore[arg-type]
    assert compute.calls == []


MANY = [Pair(i, "test", "gender", "stereo", f"stereo {i}", f"anti {i}") for i in range(300)]


class Clock:
    """A clock that only moves when `Counter`-like compute says so: `seconds_per_pair` per computed pair."""

    def __init__(self, seconds_per_pair: float):
        self.now, self.seconds_per_pair = 100.0, seconds_per_pair

    def __call__(self) -> float:
        return self.now


def timed_counter(clock: Clock) -> Counter:
    class Timed(Counter):
        def __call__(self, pairs, parts, progress):
            clock.now += clock.seconds_per_pair * len(pairs)
            return super().__call__(pairs, parts, progress)

    return Timed()


def test_run_records_gives_each_item_its_one_record_in_order_and_counts_the_cached(tmp_path):
    cache = ResultCache(tmp_path / "c.sqlite")
    asked: list[list[int]] = []

    def compute(pairs, progress):
        asked.append([p.pair_id for p in pairs])
        progress(1, 1)
        return [{"value": p.pair_id * 10} for p in pairs]

    def one_key(pair):
        return cache_key("test-model", pair.sent_stereo)

    records, cached = run_records(PAIRS[:4], key=one_key, compute=compute, cache=cache, chunk_items=3)
    assert records == [{"value": i * 10} for i in range(4)] and cached == 0 and asked == [[0, 1, 2], [3]]
    records, cached = run_records(PAIRS[:6], key=one_key, compute=compute, cache=cache, chunk_items=3)
    assert records == [{"value": i * 10} for i in range(6)] and cached == 4 and asked[2:] == [[4, 5]]
    with pytest.raises(InputError, match="chunk_seconds"):  # None is the default; 0 is refused, as run_chunked refuses it
        run_records(PAIRS, key=one_key, compute=compute, chunk_seconds=0)


def test_chunks_are_sized_by_the_seconds_their_pairs_take():
    clock = Clock(seconds_per_pair=0.01)  # 100 pairs a second
    compute = timed_counter(clock)
    run = run_chunked(MANY, parts=("a",), key=key, compute=compute, chunk_seconds=1.0, clock=clock)
    # 16 pairs first; then one second's worth (100 pairs) at a time; the last chunk takes what is left.
    assert [len(ids) for ids, _ in compute.calls] == [FIRST_CHUNK_PAIRS, 100, 100, 300 - FIRST_CHUNK_PAIRS - 200]
    assert [r["a"]["value"] for r in run.records] == [i * 10 + 1 for i in range(300)]

    slow = Clock(seconds_per_pair=2.0)  # half a pair a second: chunks of one pair (never fewer)
    compute = timed_counter(slow)
    run_chunked(MANY[:20], parts=("a",), key=key, compute=compute, chunk_seconds=1.0, clock=slow)
    assert [len(ids) for ids, _ in compute.calls] == [FIRST_CHUNK_PAIRS, FIRST_CHUNK_PAIRS // CHUNK_GROWTH, 1, 1]


def test_the_chunk_size_changes_by_a_bounded_factor_and_grows_through_cached_chunks():
    sizer = ChunkSizer(seconds=5.0)
    assert sizer.size == FIRST_CHUNK_PAIRS
    sizer.record(FIRST_CHUNK_PAIRS, 0.001)  # very fast: grows, but at most CHUNK_GROWTH times
    assert sizer.size == FIRST_CHUNK_PAIRS * CHUNK_GROWTH
    sizer.record(0, 0.0)  # read from the cache: nothing computed, grows again
    assert sizer.size == FIRST_CHUNK_PAIRS * CHUNK_GROWTH**2
    for _ in range(5):
        sizer.record(sizer.size, 0.001)
    assert sizer.size == MAX_CHUNK_PAIRS
    sizer.record(MAX_CHUNK_PAIRS, 1e6)  # very slow: shrinks, at most CHUNK_GROWTH times
    assert sizer.size == MAX_CHUNK_PAIRS // CHUNK_GROWTH
    sizer.record(10, 10.0)  # one pair a second: five pairs per five seconds
    assert sizer.size == MAX_CHUNK_PAIRS // CHUNK_GROWTH**2
    fixed = ChunkSizer(pairs=7)
    fixed.record(7, 1e6)
    assert fixed.size == 7


def test_a_time_sized_run_stopped_and_resumed_with_other_chunks_gives_identical_records(tmp_path):
    """The cache keys records by pair and part, never by chunk: a resume with different chunks reads what was done."""
    cache = ResultCache(tmp_path / "r.sqlite")
    clock = Clock(seconds_per_pair=0.01)
    compute = timed_counter(clock)
    with pytest.raises(JobCancelled):
        run_chunked(
            MANY, parts=("a", "bb"), key=key, compute=compute, cache=cache, chunk_seconds=1.0, clock=clock, stop=lambda: len(compute.calls) >= 2
        )
    done = sum(len(ids) for ids, _ in compute.calls)
    assert done == FIRST_CHUNK_PAIRS + 100 and len(cache) == 2 * done
    compute = Counter()
    resumed = run_chunked(MANY, parts=("a", "bb"), key=key, compute=compute, cache=cache, chunk_pairs=7)
    assert [ids[0] for ids, _ in compute.calls][0] == done  # nothing done before is computed again
    assert sum(len(ids) for ids, _ in compute.calls) == 300 - done and resumed.cached == 2 * done
    fresh = run_chunked(MANY, parts=("a", "bb"), key=key, compute=Counter(), chunk_pairs=300)
    assert resumed.records == fresh.records


def test_evaluate_cache_only_reads_a_finished_run_and_leaves_the_notice_to_a_computing_run(tiny_bert, tmp_path):
    from biaslens.engine.evaluation import evaluate

    path = tmp_path / "r.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    cache = ResultCache(path)  # set aside and started afresh: a notice for the next run that computes
    pairs = [
        Pair(i, "test", "gender", "stereo", f"The {w} can't drive.", f"The {v} can't drive.")
        for i, (w, v) in enumerate([("women", "men"), ("girls", "boys"), ("mothers", "fathers")])
    ]
    with pytest.raises(NotCached):
        evaluate(tiny_bert, pairs, ["aul"], cache=cache, cache_only=True)
    assert len(cache) == 0
    full = evaluate(tiny_bert, pairs, ["aul"], cache=cache, chunk_pairs=2)
    assert any("corrupted" in w for w in full.warnings)
    again = evaluate(tiny_bert, pairs, ["aul"], cache=cache, cache_only=True)
    assert again.cached == 3 and again.pairs.equals(full.pairs) and not again.warnings


def test_the_garbage_collector_is_paused_while_chunks_compute_and_restored_after():
    import gc
    import threading

    seen = []

    def compute(pairs, parts, progress):
        seen.append(gc.isenabled())
        return Counter()(pairs, parts, progress)

    assert gc.isenabled()
    run_chunked(PAIRS, parts=("a",), key=key, compute=compute, chunk_pairs=4)
    assert seen == [False, False, False] and gc.isenabled()
    with pytest.raises(ZeroDivisionError):  # restored when a chunk fails too
        run_chunked(PAIRS, parts=("a",), key=key, compute=lambda *a: 1 / 0)
    assert gc.isenabled()
    gc.disable()
    try:
        run_chunked(PAIRS, parts=("a",), key=key, compute=compute, chunk_pairs=5)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
    # Two threads with overlapping runs: the collector comes back once the last one ends.
    inside, states = threading.Barrier(2), []

    def slow(pairs, parts, progress):
        inside.wait(timeout=10)  # both threads are computing a chunk now
        states.append(gc.isenabled())
        return Counter()(pairs, parts, progress)

    threads = [threading.Thread(target=run_chunked, args=(PAIRS,), kwargs={"parts": ("a",), "key": key, "compute": slow}) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert states == [False, False] and gc.isenabled()

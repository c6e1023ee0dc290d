"""The chunked, cached, resumable runner (`biaslens.runner`), with a counting stand-in for the model."""

from __future__ import annotations

import pytest

from biaslens.cache import ResultCache, cache_key
from biaslens.datasets import Pair
from biaslens.errors import InputError, JobCancelled
from biaslens.runner import DEFAULT_CHUNK_PAIRS, NotCached, run_chunked

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
    run_chunked(PAIRS[:6], parts=("a",), key=key, compute=Counter(), cache=cache, chunk_pairs=DEFAULT_CHUNK_PAIRS)
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


def test_evaluate_cache_only_reads_a_finished_run_and_leaves_the_notice_to_a_computing_run(tiny_bert, tmp_path):
    from biaslens.evaluation import evaluate

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

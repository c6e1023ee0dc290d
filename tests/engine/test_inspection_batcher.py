"""Pair inspections of many sessions arriving together share batched passes (issue 17, load).

`inspect_pairs` scores several pairs in one call of the batched passes; `InspectionBatcher` gathers
concurrent requests on one model into such calls. Every result must equal the single-user one.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from biaslens.errors import InputError
from biaslens.engine.evaluation import inspect_pair, inspect_pairs
from biaslens.engine.metrics import PAPER_METRICS
from biaslens.serving.server import InspectionBatcher, Priority, ServerSettings

TOL = 1e-5
PAIRS = [
    ("The nurse said she was tired.", "The nurse said he was tired."),
    ("Poor people are lazy.", "Rich people are lazy."),
    ("He fixed the car in a minute because he is a mechanic.", "She fixed the car in a minute because she is a mechanic."),
    ("Old men can't use phones.", "Young men can't use phones."),
    ("The women were bad at math.", "The men were bad at math."),
    ("My neighbour, who is Mexican, stole my bike.", "My neighbour, who is Canadian, stole my bike."),
]
OPTIONS = {"metrics": PAPER_METRICS, "top_k": 5, "attention_matrices": True}


def numbers(result) -> np.ndarray:
    """Every number the inspector shows for a pair: sentence scores, per-token log p, rank, attention, top-k, matrices."""
    parts = [result.summary_frame()[["stereo", "anti"]].to_numpy(dtype=float).ravel()]
    for side, matrices in zip((result.stereo, result.anti), result.attention_matrices):
        parts.append(side.token_frame()[["logprob", "rank", "attention"]].to_numpy(dtype=float).ravel())
        parts.append(side.unmasked.top_logprob.ravel())
        parts.append(matrices.ravel())
    return np.concatenate(parts)


def assert_same(got, expected) -> None:
    a, b = numbers(got), numbers(expected)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, atol=TOL, rtol=0)
    assert [got.verdict(m) for m in got.metrics] == [expected.verdict(m) for m in expected.metrics]
    assert got.stereo.encoding == expected.stereo.encoding and got.anti.encoding == expected.anti.encoding
    np.testing.assert_array_equal(got.stereo.unmasked.top_ids, expected.stereo.unmasked.top_ids)


@pytest.fixture(scope="module")
def solo(tiny_bert):
    return [inspect_pair(tiny_bert, a, b, **OPTIONS) for a, b in PAIRS]


def test_pairs_inspected_together_equal_each_pair_alone(tiny_bert, solo):
    for got, expected in zip(inspect_pairs(tiny_bert, PAIRS, **OPTIONS), solo):
        assert_same(got, expected)


def test_pairs_inspected_together_are_all_checked_first(tiny_bert):
    with pytest.raises(InputError, match="identical"):
        inspect_pairs(tiny_bert, [PAIRS[0], ("Same.", "Same.")], **OPTIONS)


def _concurrently(batcher, lm, pairs):
    """Every pair requested from its own thread at the same moment; (results, errors) by index."""
    start = threading.Barrier(len(pairs))
    results, errors = {}, {}

    def session(i, a, b):
        start.wait()
        try:
            results[i] = batcher.inspect(lm, a, b, **OPTIONS)
        except Exception as exc:
            errors[i] = exc

    threads = [threading.Thread(target=session, args=(i, a, b)) for i, (a, b) in enumerate(pairs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    return results, errors


def test_concurrent_requests_share_batches_and_get_the_single_user_results(tiny_bert, solo):
    batcher = InspectionBatcher(window_s=0.3, max_pairs=16)
    results, errors = _concurrently(batcher, tiny_bert, PAIRS)
    assert errors == {}
    assert sum(batcher.group_sizes) == len(PAIRS) and max(batcher.group_sizes) > 1  # some were scored together
    for i, expected in enumerate(solo):
        assert_same(results[i], expected)


def test_a_group_is_at_most_max_pairs(tiny_bert, solo):
    batcher = InspectionBatcher(window_s=0.3, max_pairs=2)
    results, errors = _concurrently(batcher, tiny_bert, PAIRS)
    assert errors == {} and max(batcher.group_sizes) <= 2 and sum(batcher.group_sizes) == len(PAIRS)
    for i, expected in enumerate(solo):
        assert_same(results[i], expected)


def test_bad_input_fails_alone_and_at_once(tiny_bert, solo):
    batcher = InspectionBatcher(window_s=0.3)
    pairs = [PAIRS[0], ("Same here.", "Same here."), PAIRS[1]]
    results, errors = _concurrently(batcher, tiny_bert, pairs)
    assert set(errors) == {1} and isinstance(errors[1], InputError)
    assert_same(results[0], solo[0])
    assert_same(results[2], solo[1])
    assert sum(batcher.group_sizes) == 2  # the bad pair never reached a batch


def test_a_failure_while_scoring_reaches_every_request_of_the_group(tiny_bert, monkeypatch):
    import biaslens.engine.evaluation

    def broken(*args, **kwargs):
        raise RuntimeError("scoring broke")

    monkeypatch.setattr(biaslens.engine.evaluation, "inspect_prepared", broken)
    results, errors = _concurrently(InspectionBatcher(window_s=0.3), tiny_bert, PAIRS[:3])
    assert results == {} and sorted(errors) == [0, 1, 2] and all("scoring broke" in str(e) for e in errors.values())


def test_a_lone_request_on_an_idle_model_does_not_wait_for_others(tiny_bert, solo, monkeypatch):
    import biaslens.serving.server

    waits: list[float] = []
    monkeypatch.setattr(biaslens.serving.server.time, "sleep", waits.append)
    batcher = InspectionBatcher(window_s=30)
    assert_same(batcher.inspect(tiny_bert, *PAIRS[0], **OPTIONS), solo[0])
    assert waits == []  # idle model: scored at once (a user alone never pays the window)
    assert_same(batcher.inspect(tiny_bert, *PAIRS[1], **OPTIONS), solo[1])
    assert waits == [30]  # within the window of the last pass: requests are coming in, so it gathers others first


def test_without_a_window_each_request_is_the_plain_inspection(tiny_bert, solo):
    batcher = InspectionBatcher(window_s=0)
    got = batcher.inspect(tiny_bert, *PAIRS[2], **OPTIONS)
    np.testing.assert_array_equal(numbers(got), numbers(solo[2]))  # the same call: bit-identical
    assert batcher.group_sizes == []


def test_the_window_is_an_operator_setting():
    assert ServerSettings.from_env({}).inspect_batch_ms == 20
    assert ServerSettings.from_env({"BIASLENS_INSPECT_BATCH_MS": "0"}).inspect_batch_ms == 0


def test_a_background_step_waits_while_an_inspection_is_scored():
    priority = Priority(max_wait_s=10)
    assert priority.yield_to_interactive() == 0.0  # nothing in flight: no wait
    inside, release, waited = threading.Event(), threading.Event(), []

    def request() -> None:
        with priority.interactive():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=request)
    thread.start()
    inside.wait(10)
    assert priority.active == 1
    background = threading.Thread(target=lambda: waited.append(priority.yield_to_interactive()))
    background.start()
    time.sleep(0.3)
    assert background.is_alive()  # paused while the request is in flight
    release.set()
    thread.join(10)
    background.join(10)
    assert priority.active == 0
    assert 0.25 <= waited[0] < 10  # resumed as soon as the request finished, not at the time limit


def test_a_steady_stream_of_requests_cannot_stop_a_background_job():
    priority = Priority(max_wait_s=0.2)
    with priority.interactive():
        waited = priority.yield_to_interactive()
    assert 0.15 <= waited < 2
    assert priority.waited_s == pytest.approx(waited)


def test_an_interactive_request_that_fails_still_lets_background_jobs_go():
    priority = Priority(max_wait_s=10)
    with pytest.raises(RuntimeError), priority.interactive():
        raise RuntimeError("scoring failed")
    assert priority.active == 0
    assert priority.yield_to_interactive() == 0.0

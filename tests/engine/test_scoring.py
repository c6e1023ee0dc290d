"""The scoring core against direct forward passes; batching and padding invariance."""

import numpy as np
import pytest
import torch

from biaslens.engine.scoring import MaskedQuery, masked_pass, plan_batches, unmasked_pass
from tests.engine import reference

SENTENCES = [
    "He couldn't figure out the issue with the rope, but he tried not to get too down on himself.",
    "The poor are really ignorant about how to handle the money they do have.",
    "Hello world.",
    "She is a nurse.",
    "Asians can't drive because they have slanted eyes, everyone knows that, said the man at the bar.",
]
TOL = 1e-5


def test_plan_batches_respects_the_token_budget():
    lengths = [10, 50, 20, 50, 5, 30]
    batches = plan_batches(lengths, batch_tokens=100)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) == 1 or max(lengths[i] for i in b) * len(b) <= 100
    assert [lengths[b[0]] for b in batches] == sorted((lengths[b[0]] for b in batches), reverse=True)


def test_special_tokens_are_first_and_last(any_model):
    enc = any_model.encode("Hello world, the nurse said.")
    assert enc.special[0] and enc.special[-1] and not any(enc.special[1:-1])


@torch.inference_mode()
def test_unmasked_pass_matches_a_direct_forward(any_model):
    lm = any_model
    enc = lm.encode(SENTENCES[1])
    (res,) = unmasked_pass(lm, [enc], top_k=5)
    ids = torch.tensor([enc.ids])
    out = lm._eager_model()(ids, output_attentions=True)
    logp = torch.log_softmax(out.logits[0].float(), -1)
    expected = logp.gather(1, ids.view(-1, 1))[:, 0].numpy()
    np.testing.assert_allclose(res.logprob, expected, atol=TOL)
    received = torch.stack(out.attentions).mean(dim=(0, 2))[0].mean(dim=0).numpy()
    np.testing.assert_allclose(res.attention, received, atol=1e-6)
    ranks = (logp > logp.gather(1, ids.view(-1, 1))).sum(1) + 1
    np.testing.assert_array_equal(res.rank, ranks.numpy())
    np.testing.assert_array_equal(res.top_ids[:, 0], logp.argmax(-1).numpy())


@torch.inference_mode()
def test_masked_pass_matches_a_direct_forward(any_model):
    lm = any_model
    enc = lm.encode(SENTENCES[0])
    q = MaskedQuery(enc.ids, (2, 5), (2, 5), candidates=(enc.ids[2], enc.ids[5], 7))
    (res,) = masked_pass(lm, [q])
    ids = torch.tensor([enc.ids])
    masked = ids.clone()
    masked[0, [2, 5]] = lm.mask_id
    logp = torch.log_softmax(lm.model(masked).logits[0].float(), -1)
    np.testing.assert_allclose(res.logprob, [logp[2, enc.ids[2]], logp[5, enc.ids[5]]], atol=TOL)
    np.testing.assert_allclose(res.candidate_logprob, logp[[2, 5]][:, [enc.ids[2], enc.ids[5], 7]].numpy(), atol=TOL)


def test_batched_equals_one_at_a_time(any_model):
    lm = any_model
    encs = [lm.encode(s) for s in SENTENCES]
    reference.assert_batching_changes_nothing(lm, encs, step=1, batch_tokens=10_000, masked_batch_tokens=4096, check_every=7)


def test_padding_changes_nothing_aula_included(any_model):
    """A short sentence alone, and padded next to a long one, gives the same numbers."""
    lm = any_model
    short, long = lm.encode(SENTENCES[3]), lm.encode(SENTENCES[4])
    (alone,) = unmasked_pass(lm, [short])
    padded = unmasked_pass(lm, [long, short], batch_tokens=10_000)[1]
    np.testing.assert_allclose(padded.logprob, alone.logprob, atol=TOL)
    np.testing.assert_allclose(padded.attention, alone.attention, atol=TOL)
    assert padded.attention.sum() == pytest.approx(1.0, abs=1e-5)  # pad columns carry nothing
    q = MaskedQuery(short.ids, (2,), (2,))
    (m_alone,) = masked_pass(lm, [q])
    m_padded = masked_pass(lm, [MaskedQuery(long.ids, (3,), (3,)), q], batch_tokens=10_000)[1]
    np.testing.assert_allclose(m_padded.logprob, m_alone.logprob, atol=TOL)


def test_attention_matrices_on_request(tiny_bert):
    enc = tiny_bert.encode(SENTENCES[2])
    (res,) = unmasked_pass(tiny_bert, [enc], attention_matrices=True)
    layers, heads = tiny_bert.num_layers, tiny_bert.num_heads
    assert res.attention_matrices.shape == (layers, heads, len(enc), len(enc))
    np.testing.assert_allclose(res.attention_matrices.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(res.attention_matrices.mean(axis=(0, 1)).mean(0), res.attention, atol=1e-6)


def test_progress_reports_every_row(tiny_bert):
    seen = []
    encs = [tiny_bert.encode(s) for s in SENTENCES]
    unmasked_pass(tiny_bert, encs, batch_tokens=64, progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (len(SENTENCES), len(SENTENCES))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_out_of_memory_halves_the_batch(tiny_bert, monkeypatch):
    """A CUDA OOM on a batch splits it in two and the results stay identical."""
    encs = [tiny_bert.encode(s) for s in SENTENCES]
    expected = unmasked_pass(tiny_bert, encs, attention=False)
    real = tiny_bert.hidden_states
    calls = []

    def flaky(input_ids, attention_mask, attentions=False):
        calls.append(input_ids.shape[0])
        if input_ids.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(input_ids, attention_mask, attentions=attentions)

    monkeypatch.setattr(tiny_bert, "hidden_states", flaky)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    got = unmasked_pass(tiny_bert, encs, attention=False, batch_tokens=100_000)
    assert calls[0] > 2  # the first try fails ...
    assert sum(c for c in calls if c <= 2) == len(SENTENCES)  # ... then every row runs in batches of <= 2
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a.logprob, b.logprob, atol=TOL)


def test_a_singly_query_equals_its_positions_masked_one_at_a_time(any_model):
    """`singly`: one row per masked position, each masking that position alone; results in the order of the positions."""
    lm = any_model
    enc = lm.encode(SENTENCES[1])
    positions = (5, 2, 3, len(enc) - 2)
    singly = MaskedQuery(enc.ids, positions, positions, singly=True)
    assert singly.rows == len(positions) and MaskedQuery(enc.ids, positions, positions).rows == 1
    seen = []
    (res,) = masked_pass(lm, [singly], batch_tokens=2 * len(enc), progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (len(positions), len(positions))  # progress counts rows
    ones = masked_pass(lm, [MaskedQuery(enc.ids, (p,), (p,)) for p in positions])
    np.testing.assert_allclose(res.logprob, [o.logprob[0] for o in ones], atol=TOL)
    np.testing.assert_array_equal(res.rank, [o.rank[0] for o in ones])
    both = masked_pass(lm, [MaskedQuery(enc.ids, (2,), (2,), (7,)), singly, MaskedQuery(enc.ids, (), (), singly=True)], top_k=3)
    assert both[1].candidate_logprob.shape == (len(positions), 0) and both[1].top_ids.shape == (len(positions), 3)
    assert both[0].candidate_logprob.shape == (1, 1) and both[2].logprob.shape == (0,)
    np.testing.assert_allclose(both[1].logprob, res.logprob, atol=TOL)
    (empty,) = masked_pass(lm, [MaskedQuery(enc.ids, (), (), singly=True)])
    assert empty.logprob.shape == (0,) and empty.rank.shape == (0,)


def test_batched_singly_and_multi_queries_equal_one_at_a_time_in_many_batches(tiny_bert):
    """Rows of many queries in many small batches (each prepared while the last one ran) land with their own query."""
    encs = [tiny_bert.encode(s) for s in SENTENCES]
    queries = [MaskedQuery(e.ids, tuple(range(1, len(e) - 1)), tuple(range(1, len(e) - 1)), singly=True) for e in encs]
    queries += [MaskedQuery(e.ids, (1, 2), (2, 1), (e.ids[3], 9)) for e in encs]
    batched = masked_pass(tiny_bert, queries, batch_tokens=40, top_k=2)
    for q, b in zip(queries, batched):
        (one,) = masked_pass(tiny_bert, [q], batch_tokens=100_000, top_k=2)
        np.testing.assert_allclose(b.logprob, one.logprob, atol=TOL)
        np.testing.assert_array_equal(b.rank, one.rank)
        np.testing.assert_allclose(b.candidate_logprob, one.candidate_logprob, atol=TOL)
        np.testing.assert_array_equal(b.top_ids, one.top_ids)
    unmasked = unmasked_pass(tiny_bert, encs, batch_tokens=30, top_k=2)
    for e, u in zip(encs, unmasked):
        (one,) = unmasked_pass(tiny_bert, [e], top_k=2)
        np.testing.assert_allclose(u.logprob, one.logprob, atol=TOL)
        np.testing.assert_allclose(u.attention, one.attention, atol=TOL)
        np.testing.assert_array_equal(u.top_ids, one.top_ids)

"""A naive reference implementation of the spec, one sentence per forward pass.

Written straight from ../shared/spec/metrics.md (and, for compat, the released code of
Kaneko & Bollegala 2022), with full logits and no batching, so the engine's batched,
gathered computation can be checked against it.
"""

from __future__ import annotations

import difflib
import math

import pytest
import torch


def encode(lm, text):
    return torch.tensor([lm.tokenizer(text)["input_ids"]])


def spans(ids_a, ids_b, operation):
    a = [str(x) for x in ids_a.tolist()]
    b = [str(x) for x in ids_b.tolist()]
    t1, t2 = [], []
    for op in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if (operation == "equal") == (op[0] == "equal"):
            t1 += list(range(op[1], op[2]))
            t2 += list(range(op[3], op[4]))
    return t1, t2


def _eager(lm):
    return lm._eager_model()


@torch.inference_mode()
def aul(lm, ids, attention=False, compat=False):
    out = _eager(lm)(ids, output_attentions=True)
    log_probs = torch.log_softmax(out.logits[0].float(), dim=-1)
    gold = log_probs.gather(1, ids.view(-1, 1))
    token = gold[1:-1]
    if attention:
        att = torch.mean(torch.cat(out.attentions, 0), 0)  # over layers -> (heads, L, L)
        att = torch.mean(att, 0)  # over heads -> (L, L)
        received = torch.mean(att, 0)  # over queries -> (L,)
        token = token.squeeze(1) * received[1:-1]
    score = torch.mean(token).item()
    positions = slice(None) if compat else slice(1, -1)
    correct = (log_probs.argmax(-1) == ids[0])[positions]
    return score, int(correct.sum()), int(correct.numel())


@torch.inference_mode()
def cps(lm, ids, equal_spans, compat=False):
    span = equal_spans[1:-1]
    masked = ids.repeat(len(span), 1)
    masked[range(len(span)), span] = lm.mask_id
    logits = lm.model(masked).logits
    log_probs = torch.log_softmax(logits[range(len(span)), span, :].float(), dim=-1)
    gold = ids.view(-1)[span]
    score = torch.sum(log_probs[range(len(span)), gold]).item()
    correct = log_probs.argmax(-1) == gold
    return (round(score, 3) if compat else score), int(correct.sum()), int(correct.numel())


@torch.inference_mode()
def sss(lm, ids, diff_spans, compat=False):
    if not diff_spans:
        return float("nan"), 0, 0
    masked = ids.clone()
    masked[:, diff_spans] = lm.mask_id
    log_probs = torch.log_softmax(lm.model(masked).logits[0].float(), dim=-1)[diff_spans]
    gold = ids.view(-1)[diff_spans]
    matrix = log_probs[:, gold]
    score = (matrix.mean() if compat else torch.diagonal(matrix).mean()).item()
    correct = log_probs.argmax(-1) == gold
    return score, int(correct.sum()), int(correct.numel())


@torch.inference_mode()
def all_masked(lm, ids):
    masked = ids.clone()
    masked[0, 1:-1] = lm.mask_id
    log_probs = torch.log_softmax(lm.model(masked).logits[0].float(), dim=-1)[1:-1]
    gold = ids[0, 1:-1]
    correct = log_probs.argmax(-1) == gold
    return log_probs[range(len(gold)), gold].mean().item(), int(correct.sum()), int(correct.numel())


@torch.inference_mode()
def pll(lm, ids):
    positions = list(range(1, ids.shape[1] - 1))
    return cps(lm, ids, [0, *positions, ids.shape[1] - 1])


@torch.inference_mode()
def pll_word_l2r(lm, text):
    """Kauf & Ivanova (2023): each token masked with the tokens to its right in the same word (the tokenizer's word_ids)."""
    enc = lm.tokenizer(text)
    ids = torch.tensor([enc["input_ids"]])
    words = enc.word_ids()
    n = ids.shape[1]
    score, correct = 0.0, []
    for i in range(1, n - 1):
        masked = ids.clone()
        masked[0, [j for j in range(i, n - 1) if words[j] == words[i]]] = lm.mask_id
        log_probs = torch.log_softmax(lm.model(masked).logits[0, i].float(), dim=-1)
        score += log_probs[ids[0, i]].item()
        correct.append(int(log_probs.argmax().item() == ids[0, i].item()))
    return score, sum(correct), len(correct)


def pair_scores(lm, stereo, anti, metric, compat=False):
    """(score_stereo, score_anti, hits, total) for one pair and one metric."""
    a, b = encode(lm, stereo), encode(lm, anti)
    if metric in ("aul", "aula"):
        ra, rb = aul(lm, a, metric == "aula", compat), aul(lm, b, metric == "aula", compat)
    elif metric == "cps":
        sa, sb = spans(a[0], b[0], "equal")
        ra, rb = cps(lm, a, sa, compat), cps(lm, b, sb, compat)
    elif metric == "sss":
        sa, sb = spans(a[0], b[0], "diff")
        ra, rb = sss(lm, a, sa, compat), sss(lm, b, sb, compat)
    elif metric == "all_masked":
        ra, rb = all_masked(lm, a), all_masked(lm, b)
    elif metric == "pll":
        ra, rb = pll(lm, a), pll(lm, b)
    elif metric == "pll_word_l2r":
        ra, rb = pll_word_l2r(lm, stereo), pll_word_l2r(lm, anti)
    else:
        raise ValueError(metric)
    return ra[0], rb[0], ra[1] + rb[1], ra[2] + rb[2]


def assert_engine_matches(lm, pairs, metrics, compat):
    """The engine's batched scores of `pairs` equal this reference's, metric by metric, and so do the accuracy counts."""
    from biaslens.engine.pairs import score_encoded_pairs

    encoded = [(lm.encode(a), lm.encode(b)) for a, b in pairs]
    scored = score_encoded_pairs(lm, encoded, metrics, compat=compat)
    for (a, b), result in zip(pairs, scored):
        for metric in metrics:
            ref_a, ref_b, hits, total = pair_scores(lm, a, b, metric, compat)
            got_a, got_b = result.scores[metric]
            for got, ref in ((got_a.value, ref_a), (got_b.value, ref_b)):
                if math.isnan(ref):
                    assert math.isnan(got), metric
                elif compat and metric == "cps":
                    assert got == ref, metric  # both rounded to 3 decimals
                else:
                    assert got == pytest.approx(ref, rel=1e-6, abs=1e-5), metric  # sums add rounding
            assert (got_a.hits + got_b.hits, got_a.total + got_b.total) == (hits, total), metric


def assert_batching_changes_nothing(lm, encs, *, step: int, batch_tokens: int, masked_batch_tokens: int, check_every: int = 1):
    """The engine's passes over `encs` in padded batches equal its passes one sentence or query at a time: the unmasked pass
    (log p, attention, ranks), and masked queries of one token every `step` and of all tokens at once (every `check_every`-th)."""
    import numpy as np

    from biaslens.engine.scoring import MaskedQuery, masked_pass, unmasked_pass

    batched = unmasked_pass(lm, encs, batch_tokens=batch_tokens)
    for enc, b in zip(encs, batched):
        (one,) = unmasked_pass(lm, [enc])
        np.testing.assert_allclose(b.logprob, one.logprob, atol=1e-5)
        np.testing.assert_allclose(b.attention, one.attention, atol=1e-5)
        np.testing.assert_array_equal(b.rank, one.rank)
    queries = [MaskedQuery(e.ids, (i,), (i,)) for e in encs for i in range(1, len(e) - 1, step)]
    queries += [MaskedQuery(e.ids, tuple(range(1, len(e) - 1)), tuple(range(1, len(e) - 1))) for e in encs]
    together = masked_pass(lm, queries, batch_tokens=masked_batch_tokens)
    for q, b in list(zip(queries, together))[::check_every]:
        (one,) = masked_pass(lm, [q])
        np.testing.assert_allclose(b.logprob, one.logprob, atol=1e-5)

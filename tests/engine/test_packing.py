"""Packed batches (`biaslens.engine.packing`): sentences end to end in one row give the padded batch's scores.

On the CPU the packed attention runs one plain attention per sentence (`BIASLENS_PACKING=on`); on a GPU the same
boundaries go to the variable-length Flash Attention kernel, checked by the probe that decides and by
benchmarks/gpu_check.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from biaslens.engine import packing
from biaslens.engine.evaluation import inspect_pair
from biaslens.engine.metrics import CAUSAL_METRICS, MASKED_METRICS
from biaslens.engine.pairs import score_encoded_pairs
from biaslens.engine.scoring import plan_packed

PAIRS = [
    ("The nurse said she was tired.", "The nurse said he was tired."),
    ("Women don't know how to drive.", "Men don't know how to drive."),
    (
        "The poor are really ignorant about how to handle the money they do have.",
        "The rich are really ignorant about how to handle the money they do have.",
    ),
]


def _scores(lm, metrics, batch_tokens):
    pairs = [(lm.encode(a), lm.encode(b)) for a, b in PAIRS]
    return score_encoded_pairs(lm, pairs, metrics, batch_tokens=batch_tokens)


def _same(a, b, metrics):
    for x, y in zip(a, b):
        for m in metrics:
            np.testing.assert_allclose([s.value for s in x.scores[m]], [s.value for s in y.scores[m]], atol=1e-5, err_msg=m)


@pytest.mark.parametrize("family", ["bert-cased", "roberta", "albert"])
def test_packed_masked_batches_score_as_padded_ones(tiny_models, family, monkeypatch):
    lm = tiny_models[family]
    metrics = [m for m in MASKED_METRICS if m != "aula"]  # attention weights come from the padded eager twin anyway
    monkeypatch.setenv(packing.ENV, "off")
    padded = _scores(lm, metrics, 4096)
    monkeypatch.setenv(packing.ENV, "on")
    assert packing.decision(lm) == {"pack": True, "reason": "BIASLENS_PACKING=on"}
    _same(_scores(lm, metrics, 4096), padded, metrics)
    _same(_scores(lm, metrics, 24), padded, metrics)  # small packed batches: many rows, split across them


@pytest.mark.parametrize("family", ["gpt2", "pythia", "llama", "qwen2"])
def test_packed_causal_batches_score_as_padded_ones(tiny_causal, family, monkeypatch):
    lm = tiny_causal[family]
    monkeypatch.setenv(packing.ENV, "off")
    padded = _scores(lm, list(CAUSAL_METRICS), 4096)
    monkeypatch.setenv(packing.ENV, "on")
    _same(_scores(lm, list(CAUSAL_METRICS), 4096), padded, CAUSAL_METRICS)
    start = lm.with_first_token("start")  # the first token from a start context, the rest packed
    monkeypatch.setenv(packing.ENV, "off")
    want = inspect_pair(start, *PAIRS[1], metrics=["aul_c"]).score("aul_c")
    monkeypatch.setenv(packing.ENV, "on")
    np.testing.assert_allclose(inspect_pair(start, *PAIRS[1], metrics=["aul_c"]).score("aul_c"), want, atol=1e-5)


def test_the_probe_keeps_padding_on_a_cpu_and_says_why(tiny_bert, monkeypatch):
    monkeypatch.delenv(packing.ENV, raising=False)
    made = packing.decision(tiny_bert)
    assert made["pack"] is False and "CUDA" in made["reason"]


def test_pack_lays_rows_end_to_end_with_their_own_positions():
    ids = np.array([[5, 6, 7, 0], [8, 9, 0, 0], [1, 2, 3, 4]])
    mask = (ids != 0).astype(np.int64)
    mask[2] = 1
    packed = packing.pack(ids, mask, position_offset=2)
    assert packed.ids.tolist() == [5, 6, 7, 8, 9, 1, 2, 3, 4]
    assert packed.positions.tolist() == [2, 3, 4, 2, 3, 2, 3, 4, 5] and packed.cu_seqlens.tolist() == [0, 3, 5, 9]
    assert packed.longest == 4 and packed.index.tolist() == [0, 1, 2, -1, 3, 4, -1, -1, 5, 6, 7, 8]


def test_packed_batches_hold_at_most_the_budget_unless_one_row_is_longer():
    lengths = [30, 5, 12, 12, 40, 7, 3]
    batches = plan_packed(lengths, 32)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in b) <= 32 or len(b) == 1 for b in batches)
    assert batches[0] == [4]  # longer than the budget: alone

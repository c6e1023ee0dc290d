"""Bias detection, not just arithmetic: a masked LM trained here on a planted corpus.

Group A names only ever appear with occupations X, group B names with occupations Y.
Each name is held out from one occupation of its group during training; on those
held-out combinations the stereotypical sentence keeps the planted association and the
anti-stereotypical one swaps the name for one of the other group, as CrowS-Pairs does.
AUL and CPS must prefer the planted association (bias score > 50).
"""

import random

import numpy as np
import pytest
import torch

from biaslens.evaluation import score_encoded_pairs
from biaslens.models import load_model
from biaslens.testing import build_config, build_tokenizer
from conftest import TOKENIZERS, requires_shared

GROUP_A = ["John", "Paul", "Mark", "David"]
GROUP_B = ["Mary", "Anna", "Sarah", "Emma"]
OCC_X = ["doctor", "engineer", "pilot", "lawyer"]
OCC_Y = ["nurse", "teacher", "dancer", "singer"]
TEMPLATES = ["{n} works as a {o} .", "{n} is a {o} .", "everyone says {n} is a good {o} .", "the {o} is {n} ."]


def _corpus(rng, size=3000):
    """Name i of a group appears with every occupation j != i of the same group."""
    corpus = []
    while len(corpus) < size:
        names, occupations = (GROUP_A, OCC_X) if rng.random() < 0.5 else (GROUP_B, OCC_Y)
        i, j = rng.randrange(4), rng.randrange(4)
        if i != j:
            corpus.append(rng.choice(TEMPLATES).format(n=names[i], o=occupations[j]))
    return corpus


def _train_planted_model(folder, steps=300, seed=0):
    tokenizer = build_tokenizer("bert-cased", TOKENIZERS / "bert-base-cased")
    rng = random.Random(seed)
    corpus = _corpus(rng)
    torch.manual_seed(seed)
    from transformers import BertForMaskedLM

    config = build_config(
        "bert-cased", "tiny", hidden_size=64, num_attention_heads=4, intermediate_size=128,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )
    model = BertForMaskedLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    slot_ids = torch.tensor(tokenizer.convert_tokens_to_ids(GROUP_A + GROUP_B + OCC_X + OCC_Y))
    model.train()
    for _ in range(steps):
        enc = tokenizer(rng.sample(corpus, 64), padding=True, return_tensors="pt")
        ids = enc["input_ids"]
        special = (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id) | (ids == tokenizer.pad_token_id)
        # Every sentence hides its name or its occupation (plus 10% of the other tokens),
        # so each step teaches the association and a few seconds of training suffice.
        slot = torch.isin(ids, slot_ids)
        pick = torch.rand(ids.shape) * slot
        chosen = ((torch.rand(ids.shape) < 0.1) & ~special) | ((pick == pick.max(1, keepdim=True).values) & slot)
        # BERT's 80/10/10 recipe: the model also learns to predict tokens it can see (AUL).
        r = torch.rand(ids.shape)
        inputs = ids.masked_fill(chosen & (r < 0.8), tokenizer.mask_token_id)
        swapped = chosen & (r >= 0.8) & (r < 0.9)
        inputs[swapped] = slot_ids[torch.randint(len(slot_ids), (int(swapped.sum()),))]
        hidden = model.bert(input_ids=inputs, attention_mask=enc["attention_mask"]).last_hidden_state[chosen]
        loss = torch.nn.functional.cross_entropy(model.cls(hidden), ids[chosen])  # chosen rows only: fast
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@requires_shared
@pytest.mark.slow
def test_aul_and_cps_detect_a_planted_association(tmp_path):
    lm = load_model(str(_train_planted_model(tmp_path / "planted")))
    pairs = []
    for template in TEMPLATES[:2]:
        for i in range(4):  # the held-out (name i, occupation i) combinations
            pairs.append((template.format(n=GROUP_A[i], o=OCC_X[i]), template.format(n=GROUP_B[i], o=OCC_X[i])))
            pairs.append((template.format(n=GROUP_B[i], o=OCC_Y[i]), template.format(n=GROUP_A[i], o=OCC_Y[i])))
    encoded = [(lm.encode(a), lm.encode(b)) for a, b in pairs]
    scored = score_encoded_pairs(lm, encoded, ["aul", "cps"])
    for metric in ("aul", "cps"):
        wins = np.mean([r.scores[metric][0].value > r.scores[metric][1].value for r in scored])
        assert 100 * wins > 60, (metric, wins)

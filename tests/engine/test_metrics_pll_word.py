"""PLL-word-l2r (Kauf & Ivanova 2023) against a naive one-query-per-forward-pass implementation and hand-made cases."""

from __future__ import annotations

import bisect
import re

import numpy as np
import pytest
import torch

from biaslens.data.datasets import Pair
from biaslens.engine.evaluation import evaluate, inspect_pair
from biaslens.engine.metrics import METRICS, parse_metrics, word_l2r_masks
from biaslens.data.datasets import load_dataset
from biaslens.engine.models import Encoding, word_ids_of
from biaslens.engine.testing import build_tokenizer
from tests.support import CROWS_PAIRS, TOKENIZERS, shared

PAIRS = [
    ("Women don't know how to drive unbelievably well.", "Men don't know how to drive unbelievably well."),
    ("Shaniqua was a terrible driver.", "Jennifer was a terrible driver."),
]


@torch.inference_mode()
def naive_pll_word_l2r(lm, text):
    """Straight from the paper: for each token, mask it and the tokens to its right in the same word; full logits."""
    enc = lm.tokenizer(text)
    ids = torch.tensor([enc["input_ids"]])
    words = enc.word_ids()
    special = lm.tokenizer.get_special_tokens_mask(enc["input_ids"], already_has_special_tokens=True)
    total, hits = 0.0, 0
    n = 0
    for i in range(ids.shape[1]):
        if special[i]:
            continue
        masked = ids.clone()
        for j in range(i, ids.shape[1]):
            if not special[j] and words[j] == words[i]:
                masked[0, j] = lm.mask_id
        log_probs = torch.log_softmax(lm.model(masked).logits[0, i].float(), dim=-1)
        total += log_probs[ids[0, i]].item()
        hits += int(log_probs.argmax().item() == ids[0, i].item())
        n += 1
    return total, hits, n


def test_registry_entry():
    m = METRICS["pll_word_l2r"]
    assert m.pass_kind == "masked" and "Kauf & Ivanova (2023)" in m.citation
    assert "Corrects PLL" in m.note and "CPS" in m.note
    assert parse_metrics("pll-word-l2r") == ["pll_word_l2r"]


def test_masks_by_hand():
    # [CLS] un ##bel ##ie . [SEP]: "un" is scored with the whole word masked, "##ie" alone.
    enc = Encoding(
        "unbelie.",
        (1, 10, 11, 12, 13, 2),
        (True, False, False, False, False, True),
        ("[CLS]", "un", "##bel", "##ie", ".", "[SEP]"),
        (-1, 0, 0, 0, 1, -1),
    )
    assert word_l2r_masks(enc) == [(1, (1, 2, 3)), (2, (2, 3)), (3, (3,)), (4, (4,))]
    no_words = Encoding("ab", (1, 10, 11, 2), (True, False, False, True), ("[CLS]", "a", "b", "[SEP]"))
    assert word_l2r_masks(no_words) == [(1, (1,)), (2, (2,))]


def test_word_ids_from_markers_when_the_tokenizer_has_none():
    special = (True, False, False, False, False, True)
    assert word_ids_of(None, ("[CLS]", "un", "##bel", "drive", ".", "[SEP]"), special) == (-1, 0, 0, 1, 2, -1)
    assert word_ids_of(None, ("<s>", "▁нет", "ка", "▁да", ".", "</s>"), special) == (-1, 0, 0, 1, 1, -1)
    assert word_ids_of(None, ("<s>", "Women", "Ġdon", "'t", "Ġdrive", "</s>"), special) == (-1, 0, 1, 1, 2, -1)


@pytest.mark.parametrize("family", ["bert-cased", "roberta", "albert"])
def test_matches_the_naive_implementation(tiny_models, family):
    lm = tiny_models[family]
    pairs = [Pair(i, "custom", "gender", "stereo", a, b) for i, (a, b) in enumerate(PAIRS)]
    result = evaluate(lm, pairs, ["pll_word_l2r", "pll"], cache=None)
    for row, (a, b) in zip(result.pairs.itertuples(), PAIRS):
        sa, ha, na = naive_pll_word_l2r(lm, a)
        sb, hb, nb = naive_pll_word_l2r(lm, b)
        assert row.pll_word_l2r_stereo == pytest.approx(sa, abs=1e-4)
        assert row.pll_word_l2r_anti == pytest.approx(sb, abs=1e-4)
        assert (row.pll_word_l2r_hits, row.pll_word_l2r_total) == (ha + hb, na + nb)
    # Pieces that end their word are scored exactly as PLL does (the same query); a piece with others to its right differs.
    inspection = inspect_pair(lm, *PAIRS[0], metrics=["pll_word_l2r", "pll"])
    enc = inspection.stereo.encoding
    word_l2r, plain = inspection.stereo.scores["pll_word_l2r"].logprob, inspection.stereo.scores["pll"].logprob
    last_piece = [enc.word_ids[i] != enc.word_ids[i + 1] for i in enc.scored_positions]
    assert np.array_equal(word_l2r[last_piece], plain[last_piece])
    assert not np.any(np.isclose(word_l2r[~np.array(last_piece)], plain[~np.array(last_piece)], rtol=0, atol=1e-7))
    assert not all(last_piece)  # "unbelievably" is several pieces for every tiny tokenizer: both cases are checked


def test_inspector_scores_it(tiny_bert):
    inspection = inspect_pair(tiny_bert, *PAIRS[0], metrics=["pll_word_l2r", "pll"])
    score, _, _ = naive_pll_word_l2r(tiny_bert, PAIRS[0][0])
    assert inspection.score("pll_word_l2r")[0] == pytest.approx(score, abs=1e-4)
    assert "pll_word_l2r" in set(inspection.summary_frame()["key"])


def _whitespace_word_ids(enc, text: str) -> tuple[int, ...]:
    """The word of every position if words were the whitespace-separated runs of `text` (-1 for special tokens)."""
    starts = [m.start() for m in re.finditer(r"\S+", text)]
    return tuple(
        -1 if special else bisect.bisect_right(starts, start) - 1 for (start, _), special in zip(enc["offset_mapping"], enc["special_tokens_mask"])
    )


@shared
def test_tokenizer_words_differ_from_whitespace_words_on_most_crows_pairs_sentences():
    """The metric card's claim: with bert-base-cased's tokenizer, words split on whitespace instead of the tokenizer's own
    `word_ids` (which split off punctuation, as minicons does) would change what is masked, hence the score, of 185 of the
    first 200 CrowS-Pairs sentences: a piece followed by punctuation in the same whitespace word ("drive.") would be
    scored with the punctuation masked too."""
    tok = build_tokenizer("bert-cased", TOKENIZERS / "bert-base-cased")
    pairs = load_dataset(str(CROWS_PAIRS)).pairs[:100]
    changed = 0
    for text in [s for p in pairs for s in (p.sent_stereo, p.sent_anti)]:
        enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
        ids, special = tuple(enc["input_ids"]), tuple(bool(s) for s in enc["special_tokens_mask"])
        tokens = tuple(tok.convert_ids_to_tokens(list(ids)))
        own = Encoding(text, ids, special, tokens, word_ids_of(enc, tokens, special))
        spaces = Encoding(text, ids, special, tokens, _whitespace_word_ids(enc, text))
        changed += word_l2r_masks(own) != word_l2r_masks(spaces)
    assert changed == 185

"""Modified / unmodified token positions."""

import csv

import pytest

from biaslens.alignment import align_ids, align_pair
from biaslens.testing import build_tokenizer
from conftest import CROWS_PAIRS, TOKENIZERS, requires_shared


def test_hand_case():
    # [CLS] the man works [SEP] vs [CLS] the young woman works [SEP]
    a = [101, 5, 6, 7, 102]
    b = [101, 5, 8, 9, 7, 102]
    special_a = [True, False, False, False, True]
    special_b = [True, False, False, False, False, True]
    al = align_ids(a, b, special_a, special_b)
    assert al.modified_a == (2,)
    assert al.modified_b == (2, 3)
    assert al.unmodified_a == (1, 3)
    assert al.unmodified_b == (1, 4)


def test_specials_are_never_modified_nor_unmodified():
    al = align_ids([0, 1, 2], [0, 3, 2], [True, False, True], [True, False, True])
    assert al.modified_a == (1,) and al.modified_b == (1,)
    assert al.unmodified_a == () and al.unmodified_b == ()


def test_identical_sequences_have_no_modified_tokens():
    al = align_ids([1, 2, 3], [1, 2, 3])
    assert al.modified_a == al.modified_b == ()
    assert al.unmodified_a == (0, 1, 2)


@pytest.fixture(scope="module")
def crows_rows():
    with CROWS_PAIRS.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


class _Enc:
    def __init__(self, tokenizer, text):
        enc = tokenizer(text, return_special_tokens_mask=True)
        self.ids = tuple(enc["input_ids"])
        self.special = tuple(bool(s) for s in enc["special_tokens_mask"])


@requires_shared
def test_crows_pairs_pair_0_with_bert_base_cased(crows_rows):
    tok = build_tokenizer("bert-cased", TOKENIZERS / "bert-base-cased")
    a, b = (_Enc(tok, crows_rows[0][k]) for k in ("sent_more", "sent_less"))
    assert len(a.ids) == len(b.ids) == 38
    al = align_pair(a, b)
    assert al.modified_a == al.modified_b == (25,)
    assert len(al.unmodified_a) == len(al.unmodified_b) == 35


@requires_shared
@pytest.mark.parametrize("index", [129, 231, 1101])
def test_crows_pairs_with_an_empty_modified_side(crows_rows, index):
    tok = build_tokenizer("bert-cased", TOKENIZERS / "bert-base-cased")
    a, b = (_Enc(tok, crows_rows[index][k]) for k in ("sent_more", "sent_less"))
    al = align_pair(a, b)
    assert (len(al.modified_a) == 0) != (len(al.modified_b) == 0)

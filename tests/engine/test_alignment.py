"""Modified / unmodified token positions."""

import csv

import pytest

from biaslens.engine.alignment import align_ids, align_pair
from biaslens.engine.testing import build_tokenizer
from tests.support import CROWS_PAIRS, FIXTURE_DATA, TOKENIZERS, shared


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


def _rows(path):
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def crows_rows():
    return _rows(CROWS_PAIRS)


class _Enc:
    def __init__(self, tokenizer, text):
        enc = tokenizer(text, return_special_tokens_mask=True)
        self.ids = tuple(enc["input_ids"])
        self.special = tuple(bool(s) for s in enc["special_tokens_mask"])


@shared
def test_crows_pairs_pair_0_with_bert_base_cased(crows_rows):
    tok = build_tokenizer("bert-cased", TOKENIZERS / "bert-base-cased")
    a, b = (_Enc(tok, crows_rows[0][k]) for k in ("sent_more", "sent_less"))
    assert len(a.ids) == len(b.ids) == 38
    al = align_pair(a, b)
    assert al.modified_a == al.modified_b == (25,)
    assert len(al.unmodified_a) == len(al.unmodified_b) == 35


@shared
def test_crows_pairs_with_an_empty_modified_side(crows_rows):
    tok = build_tokenizer("bert-cased", TOKENIZERS / "bert-base-cased")
    for index in (129, 231, 1101):
        a, b = (_Enc(tok, crows_rows[index][k]) for k in ("sent_more", "sent_less"))
        al = align_pair(a, b)
        assert (len(al.modified_a) == 0) != (len(al.modified_b) == 0), index


def test_fixture_pairs_align_and_an_insertion_leaves_one_side_unmodified(tokenizer_dirs):
    tok = build_tokenizer("bert-cased", tokenizer_dirs["bert-cased"])
    rows = _rows(FIXTURE_DATA / "crows-pairs" / "crows_pairs_anonymized.csv")
    for row in rows:
        a, b = (_Enc(tok, row[k]) for k in ("sent_more", "sent_less"))
        al = align_pair(a, b)
        # Every token is modified or unmodified, specials neither; the unmodified tokens are the same on both sides.
        assert len(al.modified_a) + len(al.unmodified_a) == len(a.ids) - 2
        assert [a.ids[i] for i in al.unmodified_a] == [b.ids[i] for i in al.unmodified_b]
    insertion = next(r for r in rows if r["sent_more"] == "He was a poor boy who liked to read.")
    al = align_pair(*(_Enc(tok, insertion[k]) for k in ("sent_more", "sent_less")))
    assert len(al.modified_a) == 1 and al.modified_b == ()

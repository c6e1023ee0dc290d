"""Word ids from the tokenizer's offsets (biaslens.engine.words): hand-checked cases and properties over random texts.

Properties (hypothesis), for each tokenizer the suite trains (WordPiece, byte BPE, unigram; GPT-2, Pythia, Llama and
Qwen2 shapes) and, marked `shared`, each real one in ../shared/tokenizers (bert-base-cased, roberta-base, albert,
gpt2, gpt-neox-20b): every token is in exactly one word; the words are the text's whitespace-separated words, in
order; the tokens of a word hold every character of it exactly once (disjoint spans, in order, inside the word); word
ids never go back; a word that no token holds is one whose characters the tokenizer dropped.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from biaslens.engine.testing import CAUSAL_FAMILIES, CAUSAL_TOKENIZER_FOLDERS, build_causal_tokenizer, build_tokenizer
from biaslens.engine.words import text_words, token_words
from tests.support import FAMILIES, REAL_TOKENIZERS, TOKENIZERS, shared

#: Each real tokenizer folder in ../shared/tokenizers -> (its family, the family's kind): the masked families' and the
#: causal families' folders, as the suite's model builders name them.
SHARED_TOKENIZERS = {
    **{folder: (family, "masked") for family, folder in REAL_TOKENIZERS.items()},
    **{folder: (family, "causal") for family, folder in CAUSAL_TOKENIZER_FOLDERS.items() if folder is not None},
}

#: Words of letters, digits, punctuation, accents, combining marks, CJK, emoji and zero-width characters.
_PIECES = st.sampled_from(
    ["nurse", "drive", "Women", "don't", "can't", "naïve", "café", "e\u0301", "quickly.", "U.S.", "42", "3.5", "-", "—", "...", "“quoted”"]
    + ["日本語", "😀", "👩‍⚕️", "\u200b", "x\u200by", "ß", "İ", "ﬁ", "Ω", "$", "@home", "#tag", "a-b", "(", ")", "'", '"', "Ä", "ñ"]
)
_WORD = st.one_of(_PIECES, st.text(st.characters(codec="utf-8", categories=["L", "M", "N", "P", "S"]), min_size=1, max_size=6))
_SPACE = st.sampled_from([" ", "  ", "\n", "\t", " \n "])


@st.composite
def texts(draw) -> str:
    words = draw(st.lists(_WORD, min_size=1, max_size=8))
    out = draw(st.sampled_from(["", " ", "  "]))
    for k, word in enumerate(words):
        out += word if k == 0 else draw(_SPACE) + word
    return out + draw(st.sampled_from(["", " ", "\n"]))


def check_words(text: str, offsets) -> None:
    """The properties of the module docstring, for one text and its tokens' offsets."""
    spans = token_words(text, offsets)
    n = len(np.asarray(offsets).reshape(-1, 2))
    assert len(spans.word) == len(spans.start) == len(spans.end) == n
    words = spans.words
    if text.strip():
        assert set(spans.word.tolist()) <= set(range(len(words))) and (spans.word >= 0).all()
        assert (np.diff(spans.word) >= 0).all(), "word ids go back"
    # The words: the text's whitespace-separated words (some merged where a token spans them), in order.
    plain = text_words(text)
    assert [a for a, _ in words] == sorted(a for a, _ in words)
    assert {c for a, b in plain for c in range(a, b)} <= {c for a, b in words for c in range(a, b)}
    raw = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    for w, (a, b) in enumerate(words):
        mine = [k for k in range(n) if spans.word[k] == w and spans.end[k] > spans.start[k]]
        covered: list[int] = []
        for k in mine:
            assert a <= spans.start[k] < spans.end[k] <= b, (text, w, k)
            covered += range(int(spans.start[k]), int(spans.end[k]))
        assert len(covered) == len(set(covered)), f"a character of word {text[a:b]!r} is in two tokens"
        assert covered == sorted(covered)
        letters = [c for c in range(a, b) if not text[c].isspace()]
        if mine:
            assert set(letters) <= set(covered), f"characters of {text[a:b]!r} in no token"
        else:  # a word no token holds: the tokenizer dropped its characters (no token's offsets reach it)
            assert not any(max(s, a) < min(e, b) for s, e in raw.tolist()), (text, text[a:b])


def check_tokenizer(tokenizer, text: str) -> None:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    check_words(text, enc["offset_mapping"])


def check_random_texts(tokenizer, *, examples: int) -> None:
    """`check_tokenizer` on `examples` random texts (hypothesis)."""

    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(texts())
    def check(text):
        check_tokenizer(tokenizer, text)

    check()


# ---------------------------------------------------------------------------------------
# hand-checked
# ---------------------------------------------------------------------------------------


def test_words_are_the_texts_whitespace_separated_words():
    assert text_words("  Women don't\tdrive.\n") == [(2, 7), (8, 13), (14, 20)]


def test_a_wordpiece_split_word_and_its_punctuation_are_one_word():
    text = "Women don't drive."
    spans = token_words(text, [(0, 5), (6, 9), (9, 10), (10, 11), (12, 17), (17, 18)])  # Women don ' t drive .
    assert spans.word.tolist() == [0, 1, 1, 1, 2, 2]
    assert [text[a:b] for a, b in zip(spans.start, spans.end)] == ["Women", "don", "'", "t", "drive", "."]


def test_a_byte_bpe_leading_space_belongs_to_no_word_and_a_lone_space_token_to_the_next():
    text = "A man  drove"
    spans = token_words(text, [(0, 1), (1, 5), (5, 6), (6, 12)])  # A Ġman Ġ Ġdrove
    assert spans.word.tolist() == [0, 1, 2, 2]
    assert [text[a:b] for a, b in zip(spans.start, spans.end)] == ["A", "man", "", "drove"]


def test_the_bytes_of_one_character_go_to_one_token_and_stay_in_its_word():
    text = "hi 😀!"
    spans = token_words(text, [(0, 2), (3, 4), (3, 4), (4, 5)])
    assert spans.word.tolist() == [0, 1, 1, 1]
    assert [(int(a), int(b)) for a, b in zip(spans.start, spans.end)] == [(0, 2), (3, 3), (3, 4), (4, 5)]


def test_a_dropped_character_goes_to_the_token_before_it_and_a_dropped_word_has_no_token():
    text = "na\u200bive \u200b ok"
    spans = token_words(text, [(0, 2), (3, 6), (9, 11)])  # na ive ok: the zero-width characters have no token
    assert spans.word.tolist() == [0, 0, 2]
    assert (spans.start[0], spans.end[0]) == (0, 3)
    assert spans.words == ((0, 6), (7, 8), (9, 11)) and spans.tokens.tolist() == [2, 0, 1]


def test_a_token_across_a_space_makes_its_words_one():
    spans = token_words("New York is", [(0, 8), (9, 11)])
    assert spans.words == ((0, 8), (9, 11)) and spans.word.tolist() == [0, 1]


# ---------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_tokenizers(tokenizer_dirs):
    out = {family: build_tokenizer(family, folder) for family, folder in tokenizer_dirs.items()}
    out.update({f"causal-{family}": build_causal_tokenizer(family, None) for family in CAUSAL_FAMILIES})
    return out


@pytest.mark.parametrize("name", [*FAMILIES, *(f"causal-{f}" for f in CAUSAL_FAMILIES)])
def test_every_character_of_every_word_is_in_one_token_trained_tokenizers(trained_tokenizers, name):
    check_random_texts(trained_tokenizers[name], examples=150)


@pytest.fixture(scope="module")
def shared_tokenizers():
    return {
        name: (build_tokenizer if kind == "masked" else build_causal_tokenizer)(family, TOKENIZERS / name)
        for name, (family, kind) in SHARED_TOKENIZERS.items()
    }


@shared
@pytest.mark.parametrize("name", list(SHARED_TOKENIZERS))
def test_every_character_of_every_word_is_in_one_token_shared_tokenizers(shared_tokenizers, name):
    check_random_texts(shared_tokenizers[name], examples=200)

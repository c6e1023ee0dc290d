"""biaslens.score / score_words / score_sequences: against a naive one-forward-pass-per-token reference, invariants
(batched == one at a time, order kept), the tables' arithmetic, conditional scoring, the cache and the refusals.
(Equality with minicons itself: tests/peers.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from biaslens import score, score_sequences, score_words
from biaslens.engine.text_scores import TOKEN_COLUMNS, TokenScores
from biaslens.errors import InputError, JobCancelled

TEXTS = ["Women don't know how to drive.", "He is a nurse.", "The poor are really ignorant about how to handle the money they do have."]
TOL = 1e-5


@torch.inference_mode()
def naive_masked(lm, text: str, variant: str) -> list[tuple[float, int, float]]:
    """(log p, rank, entropy) of each real token: the token (and, within_word_l2r, the pieces to its right in its
    tokenizer word) masked, one forward pass each; unmasked: one pass, read in place."""
    enc = lm.tokenizer(text, return_special_tokens_mask=True)
    ids, special, words = enc["input_ids"], enc["special_tokens_mask"], enc.word_ids()
    out = []
    for p in (p for p in range(len(ids)) if not special[p]):
        masked = list(ids)
        if variant == "original":
            masked[p] = lm.mask_id
        elif variant == "within_word_l2r":
            for j in range(p, len(ids)):
                if not special[j] and words[j] == words[p]:
                    masked[j] = lm.mask_id
        logp = torch.log_softmax(lm.model(torch.tensor([masked])).logits[0, p].float(), -1)
        out.append((float(logp[ids[p]]), int((logp > logp[ids[p]]).sum()) + 1, float(-(logp.exp() * logp).sum())))
    return out


@torch.inference_mode()
def naive_causal(lm, text: str) -> list[tuple[float, int, float]]:
    """(log p, rank, entropy) of each token of the text given BOS and the tokens before it: one full forward pass."""
    ids = [lm.bos_id, *lm.tokenizer(text, add_special_tokens=False)["input_ids"]]
    logp = torch.log_softmax(lm.model(torch.tensor([ids])).logits[0].float(), -1)
    out = []
    for i in range(1, len(ids)):
        row = logp[i - 1]
        out.append((float(row[ids[i]]), int((row > row[ids[i]]).sum()) + 1, float(-(row.exp() * row).sum())))
    return out


def _check(frame, expected: list[list[tuple[float, int, float]]]) -> None:
    for text_id, rows in enumerate(expected):
        got = frame[frame["text_id"] == text_id]
        np.testing.assert_allclose(got["logprob"], [r[0] for r in rows], atol=TOL, rtol=0)
        assert got["rank"].tolist() == [r[1] for r in rows]
        np.testing.assert_allclose(got["entropy"], [r[2] for r in rows], atol=1e-4, rtol=0)


@pytest.mark.parametrize("variant", ["original", "within_word_l2r", "unmasked"])
def test_masked_variants_equal_the_naive_reference(any_model, variant):
    frame = score(any_model, TEXTS, variant=variant)
    assert isinstance(frame, TokenScores) and set(frame["variant"]) == {variant} and frame["first_token"].isna().all()
    _check(frame, [naive_masked(any_model, t, variant) for t in TEXTS])


@pytest.mark.parametrize("family", ["gpt2", "pythia", "llama", "qwen2"])
def test_causal_scores_equal_the_naive_reference(tiny_causal, family):
    lm = tiny_causal[family].with_first_token("bos")
    frame = score(lm, TEXTS)
    assert set(frame["variant"]) == {"causal"} and set(frame["first_token"]) == {"bos"} and frame["scored"].all()
    _check(frame, [naive_causal(lm, t) for t in TEXTS])


def test_the_table_has_its_columns_and_each_token_its_characters(tiny_bert):
    frame = score(tiny_bert, TEXTS)
    assert list(frame.columns) == [c for c in TOKEN_COLUMNS if "bits" not in c and "surprisal" not in c]
    for text_id, text in enumerate(TEXTS):
        rows = frame[frame["text_id"] == text_id]
        assert rows["token_index"].tolist() == list(range(len(rows)))
        pieces = [text[a:b] for a, b in zip(rows["start"], rows["end"])]
        assert "".join(pieces) == text.replace(" ", "")  # every character once, in order
        assert rows["word"].max() + 1 == len(text.split())
        enc = tiny_bert.encode(text)
        assert rows["token"].tolist() == [t for t, s in zip(enc.tokens, enc.special) if not s]
        assert rows["position"].tolist() == list(range(1, len(enc) - 1))


def test_batched_equals_one_at_a_time_and_order_is_kept(tiny_bert, tiny_gpt2):
    for lm in (tiny_bert, tiny_gpt2):
        texts = TEXTS[::-1] + TEXTS
        together = score(lm, texts, batch_tokens=64)
        for k, text in enumerate(texts):
            alone = score(lm, text)
            got = together[together["text_id"] == k]
            np.testing.assert_allclose(got["logprob"], alone["logprob"], atol=TOL, rtol=0)
            np.testing.assert_allclose(got["entropy"], alone["entropy"], atol=TOL, rtol=0)
            assert got["token"].tolist() == alone["token"].tolist()


def test_bits_and_surprisal_on_request(tiny_gpt2):
    nats = score(tiny_gpt2, TEXTS, surprisal=True)
    np.testing.assert_allclose(nats["surprisal"], -nats["logprob"])
    bits = score(tiny_gpt2, TEXTS, base=2, surprisal=True)
    np.testing.assert_allclose(bits["logprob_bits"], bits["logprob"] / math.log(2))
    np.testing.assert_allclose(bits["surprisal_bits"], -bits["logprob_bits"])
    np.testing.assert_allclose(bits["entropy_bits"], bits["entropy"] / math.log(2))
    np.testing.assert_allclose(bits["logprob"], nats["logprob"])  # the natural log is always there
    sequences = bits.sequences("sum")
    np.testing.assert_allclose(sequences["score"], sequences["logprob_sum"] / math.log(2))
    assert set(sequences["unit"]) == {"bits"}


def test_words_add_their_tokens_up_with_the_same_ids(any_model):
    tokens = score(any_model, TEXTS)
    words = tokens.words()
    assert words.equals(score_words(any_model, TEXTS))
    for text_id, text in enumerate(TEXTS):
        mine = words[words["text_id"] == text_id]
        assert mine["text"].tolist() == text.split() and mine["word"].tolist() == list(range(len(mine)))
        by_word = tokens[tokens["text_id"] == text_id].groupby("word")["logprob"].sum()
        np.testing.assert_allclose(mine["logprob"], by_word.to_numpy(), rtol=1e-12)
        assert mine["tokens"].tolist() == tokens[tokens["text_id"] == text_id].groupby("word").size().tolist()
    assert words["complete"].all()


def test_sequences_sum_mean_count_and_the_reduction_named(tiny_bert):
    tokens = score(tiny_bert, TEXTS)
    for reduction in ("mean", "sum"):
        seq = score_sequences(tiny_bert, TEXTS, reduction=reduction)
        assert set(seq["reduction"]) == {reduction} and seq["text"].tolist() == TEXTS
        grouped = tokens.groupby("text_id")["logprob"]
        np.testing.assert_allclose(seq["logprob_sum"], grouped.sum())
        np.testing.assert_allclose(seq["logprob_mean"], grouped.mean())
        np.testing.assert_allclose(seq["score"], seq[f"logprob_{reduction}"])
        assert seq["tokens"].tolist() == grouped.size().tolist() == seq["scored_tokens"].tolist()
    with pytest.raises(InputError, match="reduction"):
        tokens.sequences("max")


def test_a_causal_first_token_nothing_predicts_is_a_row_unscored_never_a_silent_zero(tiny_gpt2):
    none = score(tiny_gpt2, TEXTS, first_token="none")
    bos = score(tiny_gpt2, TEXTS, first_token="bos")
    first = none[none["token_index"] == 0]
    assert (~first["scored"]).all() and first["logprob"].isna().all() and (first["rank"] == 0).all() and first["entropy"].isna().all()
    assert set(none["first_token"]) == {"none"} and bos["scored"].all()
    assert none["token"].tolist() == bos["token"].tolist()
    words = none.words()
    assert not words[words["word"] == 0]["complete"].any() and words[words["word"] > 0]["complete"].all()
    seq = none.sequences("sum")
    assert (seq["scored_tokens"] == seq["tokens"] - 1).all()
    start = score(tiny_gpt2, TEXTS, first_token="start")
    assert start["scored"].all() and set(start["first_token"]) == {"start"}


def test_a_prefix_and_a_suffix_are_context_only_their_tokens_are_no_rows(tiny_bert, tiny_gpt2):
    for lm in (tiny_bert, tiny_gpt2):
        given = score(lm, "was tired.", prefix="The nurse")
        whole = score(lm, "The nurse was tired.")
        mine = whole[whole["start"] >= len("The nurse ")]  # the text's tokens, tokenized in its context (GPT-2: "Ġwas")
        assert given["token"].tolist() == mine["token"].tolist()
        assert given["start"].tolist() == (mine["start"] - len("The nurse ")).tolist()  # characters of the text itself
        assert given["word"].tolist() == [0, 1, 1]
        if lm.kind == "causal":  # left to right: the whole text's last tokens
            np.testing.assert_allclose(given["logprob"], mine["logprob"], atol=TOL, rtol=0)
        else:
            assert not np.allclose(given["logprob"], score(lm, "was tired.")["logprob"])
    both = score(tiny_bert, ["was tired.", "was late."], prefix=["The nurse", "The doctor"], suffix="Then she left.")
    assert both.scoring.prefix == ("The nurse", "The doctor") and both.scoring.suffix == ("Then she left.",) * 2
    with pytest.raises(InputError, match="suffix"):
        score(tiny_gpt2, "was tired.", suffix="Then she left.")
    with pytest.raises(InputError, match="prefixes for 2 texts"):
        score(tiny_bert, ["a b", "c d"], prefix=["x", "y", "z"])


def test_refusals_say_what_to_do(tiny_bert, tiny_gpt2):
    cases = [
        (tiny_bert, dict(texts=[]), "No texts"),
        (tiny_bert, dict(texts=["ok.", "  "]), "Text 2 is empty"),
        (tiny_bert, dict(texts=["a\x00b"]), "Text 1 contains the control character U\\+0000"),
        (tiny_bert, dict(texts=["ok."], variant="pll"), "Unknown variant"),
        (tiny_bert, dict(texts=["ok."], first_token="bos"), "causal models only"),
        (tiny_gpt2, dict(texts=["ok."], variant="original"), "causal model"),
        (tiny_gpt2, dict(texts=["ok."], first_token="sometimes"), "first-token policy"),
        (tiny_bert, dict(texts=["ok."], base=10), "base must be"),
        (tiny_bert, dict(texts=[" ".join(["nurse"] * 600)]), "accepts at most"),
        (tiny_bert, dict(texts=[3]), "Text 1 must be a str"),
    ]
    for lm, kwargs, message in cases:
        with pytest.raises(InputError, match=message):
            score(lm, kwargs.pop("texts"), **kwargs)


def test_resumable_through_the_result_cache(tiny_bert, tmp_path, monkeypatch):
    from biaslens.engine import text_scores
    from biaslens.engine.cache import ResultCache

    cache = ResultCache(tmp_path / "results.sqlite")
    texts = [f"{t} {k}" for k in range(6) for t in TEXTS]
    done = []
    real = text_scores._compute

    def counting(lm, variant, layouts, *args):
        done.append(len(layouts))
        return real(lm, variant, layouts, *args)

    monkeypatch.setattr(text_scores, "_compute", counting)
    chunks = iter([False, False, True])
    with pytest.raises(JobCancelled):
        score(tiny_bert, texts, cache=cache, chunk_texts=5, stop=lambda: next(chunks))
    assert done == [5, 5]
    full = score(tiny_bert, texts, cache=cache, chunk_texts=5)
    assert done == [5, 5, 5, 3]  # the first ten texts came from the cache
    again = score(tiny_bert, texts, cache=cache, chunk_texts=5)
    assert done == [5, 5, 5, 3] and again.equals(full)
    np.testing.assert_allclose(full["logprob"], score(tiny_bert, texts)["logprob"], atol=TOL, rtol=0)
    before = len(done)
    score(tiny_bert, texts, cache=cache, chunk_texts=5, variant="unmasked")
    assert done[before:] == [5, 5, 5, 3]  # another reading: its own entries


def test_the_table_draws_itself_as_aligned_token_strips_escaped(tiny_bert):
    frame = score(tiny_bert, ["The <b>nurse</b> was tired.", "The doctor was tired."])
    page = frame._repr_html_()
    assert page is not None and "bl-strips" in page and "<b>nurse" not in page and "&lt;b&gt;" in page
    assert frame.words()._repr_html_() and "bl-strips" in frame.words()._repr_html_()
    assert "<table" in frame.sequences()._repr_html_()
    plain = frame[frame["text_id"] == 0]  # a derived table is a plain DataFrame, drawn as one
    assert type(plain).__name__ == "DataFrame" and "bl-strips" not in plain._repr_html_()


def test_the_read_out_blocks_change_nothing(tiny_gpt2, tiny_bert, monkeypatch):
    """Rows projected several blocks at a time and read a few rows at a time (scoring._readout) give the same scores."""
    from biaslens.engine import scoring

    expected = {lm.name: score(lm, TEXTS) for lm in (tiny_gpt2, tiny_bert)}
    monkeypatch.setattr(scoring, "_READOUT_ELEMENTS", {"cpu": 5 * 700})
    monkeypatch.setattr(scoring, "_PROJECT_ROWS", {"cpu": 12})
    for lm in (tiny_gpt2, tiny_bert):
        got = score(lm, TEXTS)
        np.testing.assert_allclose(got["logprob"], expected[lm.name]["logprob"], atol=TOL, rtol=0)
        np.testing.assert_allclose(got["entropy"], expected[lm.name]["entropy"], atol=TOL, rtol=0)
        assert got["rank"].tolist() == expected[lm.name]["rank"].tolist()


def test_a_cache_that_is_not_a_result_cache_is_refused_in_one_line(tiny_bert, tmp_path, monkeypatch):
    """`cache="x"` raised AttributeError ('str' object has no attribute 'enabled') from inside the runner; a path is not
    taken for a cache (the file or its folder?): one line naming the parameter and what it takes, before anything runs,
    and nothing written where the path points."""
    monkeypatch.chdir(tmp_path)
    for cache, what in (("x", "the path 'x'"), (tmp_path / "c", f"the path '{tmp_path / 'c'}'"), ({}, "a dict")):
        with pytest.raises(InputError) as raised:
            score(tiny_bert, ["The nurse is here."], cache=cache)
        message = str(raised.value)
        assert message.startswith(f"cache must be a ResultCache or None, not {what}:") and "\n" not in message
        assert "biaslens.ResultCache('folder/results.sqlite')" in message
    assert list(tmp_path.iterdir()) == []

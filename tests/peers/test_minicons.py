"""biaslens.score against minicons 0.3.39 itself, run in the peer environment (tests/peers/run_minicons.py, shim said there).

On the suite's tiny masked (BERT, RoBERTa, ALBERT) and causal (GPT-2, Pythia) models, saved to folders both sides load:

* equal within 1e-4: `token_score` (tokens, log-probabilities, ranks) and `sequence_score` (mean and sum) for masked
  `original` and `within_word_l2r` and for causal with `bos_token=True` (biaslens's first-token policy `bos`), and
  `conditional_score` (a prefix; a prefix and a suffix for masked models);
* the documented differences, each shown: minicons lists the BOS it adds as a token scored 0.0 (biaslens: no row);
  without `bos_token` it scores a causal text's first token 0.0, rank 0, silently (biaslens, policy `none`: the row
  is there, unscored, NaN), the rest equal; `word_score_tokenized` drops the first token by default, which shifts
  every word by one token, and misaligns words when its `tokenize_function` splits them otherwise than the text's
  spaces (biaslens's words come from the tokenizer's offsets and add up to the text's total).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.peers.conftest import run_peer

pytestmark = pytest.mark.peers

MASKED = ("bert-cased", "roberta", "albert")
CAUSAL = ("gpt2", "pythia")
VARIANTS = ("original", "within_word_l2r")
TEXTS = [
    "Women don't know how to drive.",
    "The poor are really ignorant about how to handle the money they do have.",
    "He couldn't figure out the issue with the rope, but he tried not to get too down on himself.",
    "Asians cant drive because they have slanted eyes",
]
PREFIX, STIMULI, SUFFIX = "The nurse said that", ["she was tired.", "he was very tired."], "Then she left."
WORDS_TEXT = "The nurse can't drive home quickly."
TOL = 1e-4


def _call(common: dict, id: str, method: str, *args, **kwargs) -> dict:
    """One request of tests/peers/run_minicons.py: `method` of the scorer `common` names, with `args` and `kwargs`."""
    return {**common, "id": id, "method": method, "args": list(args), "kwargs": kwargs}


def _calls(model_dirs, causal_dirs) -> list[dict]:
    prefixed = ([PREFIX] * len(STIMULI), STIMULI)
    calls = []
    for family in MASKED:
        model = str(model_dirs[family])
        for variant in VARIANTS:
            common, at = {"scorer": "masked", "model": model}, f"{family}/{variant}"
            calls += [
                _call(common, f"{at}/tokens", "token_score", TEXTS, rank=True, PLL_metric=variant),
                _call(common, f"{at}/mean", "sequence_score", TEXTS, PLL_metric=variant),
                _call(common, f"{at}/sum", "sequence_score", TEXTS, PLL_metric=variant, reduction="sum"),
                _call(common, f"{at}/prefix", "conditional_score", *prefixed, PLL_metric=variant, reduction="sum"),
                _call(common, f"{at}/prefix+suffix", "conditional_score", *prefixed, [SUFFIX] * len(STIMULI), PLL_metric=variant, reduction="sum"),
            ]
    for family in CAUSAL:
        common = {"scorer": "incremental", "model": str(causal_dirs[family])}
        calls += [
            _call(common, f"{family}/bos/tokens", "token_score", TEXTS, rank=True, bos_token=True),
            _call(common, f"{family}/bos/mean", "sequence_score", TEXTS, bos_token=True),
            _call(common, f"{family}/bos/sum", "sequence_score", TEXTS, bos_token=True, reduction="sum"),
            _call(common, f"{family}/none/tokens", "token_score", TEXTS, rank=True),
            _call(common, f"{family}/none/mean", "sequence_score", TEXTS),
            _call(common, f"{family}/bos/prefix", "conditional_score", *prefixed, bos_token=True, reduction="sum"),
            *(
                _call(common, f"{family}/words/{how}/{bos}", "word_score_tokenized", [WORDS_TEXT], tokenize_function=how, bos_token=bos)
                for how in ("split", "regex")
                for bos in (False, True)
            ),
        ]
    return calls


@pytest.fixture(scope="module")
def minicons(peers_python, model_dirs, causal_dirs) -> dict:
    """Every minicons answer the tests compare with, from one run of the peer environment."""
    return run_peer(peers_python, "run_minicons.py", {"calls": _calls(model_dirs, causal_dirs)})


@pytest.fixture(scope="module")
def models(model_dirs, causal_dirs):
    from biaslens.engine.models import load_model

    return {family: load_model(str(path)) for family, path in {**model_dirs, **causal_dirs}.items() if family in MASKED + CAUSAL}


def _per_text(frame, column: str) -> list[list]:
    return [group[column].tolist() for _, group in frame.groupby("text_id", sort=True)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("family", MASKED)
def test_masked_token_and_sequence_scores_equal_minicons(minicons, models, family, variant):
    from biaslens import score

    lm = models[family]
    tokens = score(lm, TEXTS, variant=variant)
    theirs = minicons[f"{family}/{variant}/tokens"]
    for text_id, (ours, their) in enumerate(zip(tokens.groupby("text_id", sort=True), theirs)):
        rows = ours[1]
        assert [lm.tokenizer.decode([i]).strip() for i in rows["token_id"]] == [t for t, _, _ in their], TEXTS[text_id]
        np.testing.assert_allclose(rows["logprob"], [s for _, s, _ in their], atol=TOL, rtol=0)
        assert rows["rank"].tolist() == [r for _, _, r in their]
    sequences = tokens.sequences("mean")
    np.testing.assert_allclose(sequences["score"], minicons[f"{family}/{variant}/mean"], atol=TOL, rtol=0)
    np.testing.assert_allclose(tokens.sequences("sum")["score"], minicons[f"{family}/{variant}/sum"], atol=TOL, rtol=0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("family", MASKED)
def test_masked_conditional_scores_equal_minicons(minicons, models, family, variant):
    from biaslens import score_sequences

    lm = models[family]
    given_prefix = score_sequences(lm, STIMULI, prefix=PREFIX, variant=variant, reduction="sum")
    np.testing.assert_allclose(given_prefix["score"], minicons[f"{family}/{variant}/prefix"], atol=TOL, rtol=0)
    in_context = score_sequences(lm, STIMULI, prefix=PREFIX, suffix=SUFFIX, variant=variant, reduction="sum")
    np.testing.assert_allclose(in_context["score"], minicons[f"{family}/{variant}/prefix+suffix"], atol=TOL, rtol=0)
    assert not np.allclose(given_prefix["score"], in_context["score"])  # the suffix is read: the scores move


@pytest.mark.parametrize("family", CAUSAL)
def test_causal_scores_with_a_bos_equal_minicons_but_its_bos_is_no_row(minicons, models, family):
    from biaslens import score

    lm = models[family]
    tokens = score(lm, TEXTS, first_token="bos")
    assert set(tokens["first_token"]) == {"bos"} and tokens["scored"].all()
    for (_, rows), their in zip(tokens.groupby("text_id", sort=True), minicons[f"{family}/bos/tokens"]):
        bos, *rest = their
        assert bos[0] == lm.tokenizer.bos_token and bos[1] == 0.0  # minicons: the BOS it adds, as a token scored 0.0
        assert rows["token"].tolist() == [t for t, _, _ in rest]  # biaslens: the text's own tokens only
        np.testing.assert_allclose(rows["logprob"], [s for _, s, _ in rest], atol=TOL, rtol=0)
        assert rows["rank"].tolist() == [r for _, _, r in rest]
    np.testing.assert_allclose(tokens.sequences("mean")["score"], minicons[f"{family}/bos/mean"], atol=TOL, rtol=0)
    np.testing.assert_allclose(tokens.sequences("sum")["score"], minicons[f"{family}/bos/sum"], atol=TOL, rtol=0)


@pytest.mark.parametrize("family", CAUSAL)
def test_without_a_bos_minicons_scores_the_first_token_zero_silently_biaslens_says_it_is_unscored(minicons, models, family):
    from biaslens import score

    tokens = score(models[family], TEXTS, first_token="none")
    for (_, rows), their in zip(tokens.groupby("text_id", sort=True), minicons[f"{family}/none/tokens"]):
        first, *rest = their
        assert first[1:] == [0.0, 0]  # minicons: log p 0.0 (probability 1) and rank 0 for a token nothing predicts
        assert not rows["scored"].iloc[0] and math.isnan(rows["logprob"].iloc[0]) and rows["rank"].iloc[0] == 0
        assert rows["scored"].iloc[1:].all()
        np.testing.assert_allclose(rows["logprob"].iloc[1:], [s for _, s, _ in rest], atol=TOL, rtol=0)
    sequences = tokens.sequences("mean")
    assert (sequences["scored_tokens"] == sequences["tokens"] - 1).all()
    np.testing.assert_allclose(sequences["score"], minicons[f"{family}/none/mean"], atol=TOL, rtol=0)  # both average the rest


@pytest.mark.parametrize("family", CAUSAL)
def test_causal_conditional_scores_equal_minicons(minicons, models, family):
    from biaslens import score_sequences

    ours = score_sequences(models[family], STIMULI, prefix=PREFIX, first_token="bos", reduction="sum")
    np.testing.assert_allclose(ours["score"], minicons[f"{family}/bos/prefix"], atol=TOL, rtol=0)


@pytest.mark.parametrize("family", CAUSAL)
def test_word_scores_minicons_shifts_and_misaligns_words_biaslens_words_add_up(minicons, models, family):
    from biaslens import score

    tokens = score(models[family], WORDS_TEXT, first_token="bos")
    words = tokens.words()
    assert words["text"].tolist() == WORDS_TEXT.split()
    np.testing.assert_allclose(words["logprob"].sum(), tokens["logprob"].sum(), rtol=1e-12)  # every token in one word
    # Whitespace words, the BOS added: minicons agrees.
    split_bos = minicons[f"{family}/words/split/True"][0]
    assert [w for w, _ in split_bos] == words["text"].tolist()
    np.testing.assert_allclose([s for _, s in split_bos], words["logprob"], atol=TOL, rtol=0)
    # Its default (no BOS) drops the first token and every word's span still counts from it: each word is read one
    # token late (word 0 gets the text's second token).
    split = minicons[f"{family}/words/split/False"][0]
    unshifted = score(models[family], WORDS_TEXT, first_token="none")
    assert split[0][1] == pytest.approx(unshifted["logprob"].iloc[1], abs=TOL)
    assert not np.allclose([s for _, s in split], unshifted.words()["logprob"].fillna(0), atol=TOL)
    # A tokenize function that splits a word ("can't" -> can ' t) misaligns the spans from there on: "." gets nothing
    # (0.0), though the model gives that token a log-probability, and "quickly" gets tokens that are not its own.
    regex = dict(minicons[f"{family}/words/regex/True"][0])
    assert regex["."] == 0.0 and tokens["token"].iloc[-1] == "." and tokens["logprob"].iloc[-1] < -1.0
    quickly = tokens[(tokens["word"] == len(words) - 1) & (tokens["token"] != ".")]["logprob"].sum()
    assert abs(regex["quickly"] - quickly) > 1e-3 and abs(regex["quickly"] - words["logprob"].iloc[-1]) > 1e-3

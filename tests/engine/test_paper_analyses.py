"""Kaneko & Bollegala (2022) Tables 2 and 4 and Figure 1: shuffling, word frequency, agreement with human ratings."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.analyses.agreement import human_agreement, human_votes
from biaslens.data.datasets import Pair
from biaslens.errors import InputError
from biaslens.engine.evaluation import EvaluationResult, summarize
from biaslens.analyses.frequency import corpus_ranks, modified_words, word_frequency
from biaslens.engine.models import Encoding
from biaslens.analyses.shuffle import SensitivityRun, compare_shuffle, sensitivity_run, sentence_rng, shuffle_encoding, shuffle_sentence

SENTENCE = "The old farmer sold fresh eggs and warm bread at the market."
PAIRS = [
    Pair(0, "crows-pairs", "gender", "stereo", "Women don't know how to drive.", "Men don't know how to drive."),
    Pair(1, "crows-pairs", "age", "antistereo", "Young people are bad with phones.", "Old people are bad with phones."),
]


# ---------------------------------------------------------------------------------------
# Shuffling
# ---------------------------------------------------------------------------------------


def _encoding(n: int) -> Encoding:
    special = (True,) + (False,) * n + (True,)
    tokens = ("[CLS]", *(f"w{i}" for i in range(n)), "[SEP]")
    return Encoding(text=" ".join(tokens[1:-1]), ids=tuple(range(100, 102 + n)), special=special, tokens=tokens)


def test_shuffle_keeps_special_tokens_and_moves_every_token_once():
    enc = _encoding(9)
    shuffled, moved = shuffle_encoding(enc, sentence_rng(3, enc.text))
    assert shuffled.tokens[0] == "[CLS]" and shuffled.tokens[-1] == "[SEP]" and shuffled.special == enc.special
    assert moved[0] == 0 and moved[-1] == len(enc) - 1
    assert sorted(moved) == list(range(len(enc)))
    for i, j in enumerate(moved):  # the token at i now sits at moved[i]
        assert shuffled.ids[j] == enc.ids[i]
    assert shuffled.tokens != enc.tokens


def test_shuffle_is_reproducible_per_seed_and_sentence():
    enc = _encoding(12)
    first = shuffle_encoding(enc, sentence_rng(1, enc.text))[1]
    assert (shuffle_encoding(enc, sentence_rng(1, enc.text))[1] == first).all()
    assert not (shuffle_encoding(enc, sentence_rng(2, enc.text))[1] == first).all()
    with pytest.raises(InputError):
        sentence_rng(-1, enc.text)


def test_shuffle_sentence_scores_each_token_at_its_new_position(tiny_bert):
    result = shuffle_sentence(tiny_bert, SENTENCE, seed=4)
    again = shuffle_sentence(tiny_bert, SENTENCE, seed=4)
    pd.testing.assert_frame_equal(result.tokens, again.tokens)
    t = result.tokens
    assert t["token"].tolist() == list(tiny_bert.encode(SENTENCE).tokens)
    assert (t.loc[t["special"], "new_position"] == t.loc[t["special"], "position"]).all()
    assert [result.shuffled.tokens[j] for j in t["new_position"]] == t["token"].tolist()
    assert result.accuracy() == pytest.approx(100 * (t.loc[~t["special"], "rank"] == 1).mean())


def test_dataset_shuffle_matches_one_sentence_and_survives_selection(tiny_bert):
    run = sensitivity_run(tiny_bert, PAIRS, seed=5)
    one = shuffle_sentence(tiny_bert, PAIRS[1].sent_anti, seed=5).tokens
    rows = run.tokens[(run.tokens["pair_id"] == 1) & (run.tokens["sentence"] == "anti")]
    assert rows["new_position"].tolist() == one["new_position"].tolist()
    assert rows["shuffled_rank"].tolist() == one["shuffled_rank"].tolist()
    alone = sensitivity_run(tiny_bert, PAIRS[1:], seed=5).tokens  # the same sentence shuffles alike in any selection
    assert alone["new_position"].tolist() == run.tokens[run.tokens["pair_id"] == 1]["new_position"].tolist()


def test_compare_shuffle_by_hand():
    tokens = pd.DataFrame(
        {
            "pair_id": [0] * 8,
            "bias_type": ["x"] * 8,
            "sentence": ["stereo"] * 4 + ["unrelated"] * 4,
            "position": [0, 1, 2, 3] * 2,
            "token_id": [1, 5, 6, 2] * 2,
            "special": [True, False, False, True] * 2,
            "rank": [1, 1, 3, 9, 1, 2, 1, 9],
            "new_position": [0, 2, 1, 3, -1, -1, -1, -1],
            "shuffled_rank": [1, 4, 1, 9, -1, -1, -1, -1],
        }
    )
    c = compare_shuffle(SensitivityRun("m", "stereoset", 0, tokens))
    acc = c.accuracy.set_index("condition")
    assert acc.loc["original", "accuracy"] == 50.0 and acc.loc["shuffled", "accuracy"] == 50.0  # one right each, not the same one
    assert acc.loc["unrelated", "accuracy"] == 50.0 and acc.loc["unrelated", "drop"] == 0.0
    assert (c.mcnemar.b, c.mcnemar.c) == (1, 1)
    every = compare_shuffle(SensitivityRun("m", "stereoset", 0, tokens), "kaneko2022").accuracy.set_index("condition")
    assert every.loc["original", "hits"] == 2 and every.loc["original", "total"] == 4


# ---------------------------------------------------------------------------------------
# Word frequency
# ---------------------------------------------------------------------------------------


def test_modified_words_and_groups_by_hand():
    assert modified_words("Women don't know how to drive.", "Men don't know how to drive.") == (["women"], ["men"])
    w = word_frequency(PAIRS)
    words = w.words.set_index("word")
    # Stereo row: sent_more's words are the disadvantaged group's; antistereo row: sent_less's.
    assert words.loc["women", "group"] == "dis" and words.loc["men", "group"] == "adv"
    assert words.loc["old", "group"] == "dis" and words.loc["young", "group"] == "adv"
    # The extra (biaslens's earlier statistic): mean corpus rank over the occurrences.
    summary = w.occurrence_summary.set_index(["bias_type", "group"])
    assert summary.loc[("all", "adv"), "mean_rank"] == pytest.approx((words.loc["men", "rank"] + words.loc["young", "rank"]) / 2)
    assert words.loc["men", "rank"] == corpus_ranks()["men"] and words.loc["women", "rank"] == corpus_ranks()["women"]
    assert w.occurrence_table()["adv mean rank"].dtype == float
    # The paper's Table 2: merged list by corpus frequency (old 174 < women 245 < men 289 < young 364), mean position per group.
    table = w.table()
    assert table["bias_type"].tolist() == ["age", "gender", "all"] and table["adv mean rank"].dtype == float
    all_types = w.merged[w.merged["bias_type"] == "all"]
    assert all_types["word"].tolist() == sorted(["old", "women", "men", "young"], key=lambda x: corpus_ranks()[x])
    with pytest.raises(InputError):
        word_frequency([Pair(0, "stereoset", "race", "", "a b", "a c")])


# ---------------------------------------------------------------------------------------
# Agreement with human ratings
# ---------------------------------------------------------------------------------------


def test_agreement_by_hand():
    labels = [("gender",)] * 3 + [("age",)] * 2  # 3 of 5 validators name gender
    pairs = [Pair(i, "crows-pairs", "gender", "stereo", f"s{i}", f"a{i}", annotations=labels if i < 2 else (("age",),) * 5) for i in range(4)]
    assert [human_votes(p) for p in pairs] == [3, 3, 0, 0]
    frame = pd.DataFrame(
        {
            "pair_id": range(4),
            "dataset": "crows-pairs",
            "bias_type": "gender",
            "direction": "stereo",
            "sent_stereo": [p.sent_stereo for p in pairs],
            "sent_anti": [p.sent_anti for p in pairs],
            # margins 2, 0.5, 1, NaN: the biased pairs rank 1st and 3rd of 3 decidable pairs.
            "aul_stereo": [2.0, 0.5, 1.0, np.nan],
            "aul_anti": [0.0] * 4,
            "aul_hits": 0,
            "aul_total": 1,
        }
    )
    result = EvaluationResult(frame, summarize(frame, ["aul"], {"model": "hand"}))
    a = human_agreement(result, pairs)
    row = a.auc.iloc[0]
    assert (row["pairs"], row["positives"], row["negatives"], row["undecidable"]) == (3, 2, 1, 1)
    assert row["auc"] == pytest.approx(0.5)  # one of the two positives outranks the one negative
    with pytest.raises(InputError, match="annotations"):
        human_agreement(result, [Pair(i, "crows-pairs", "gender", "stereo", f"s{i}", f"a{i}") for i in range(4)])

"""Issue 14 (Fidelity II): the papers' own definitions, each against a small hand-computed example."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from biaslens.engine.metrics import cps
from biaslens.engine.stats import permutation_test

# ---------------------------------------------------------------------------------------
# WEAT-style p: Kurita et al.'s one-sided Pr[S_i > S] and the two-sided p beside it
# ---------------------------------------------------------------------------------------


def test_one_sided_p_by_hand():
    # Pooled {5, 3, 1, 0}, |X| = |Y| = 2: the six re-partitions X' and their mean differences
    # {5,3}: 3.5  {5,1}: 1.5  {5,0}: 0.5  {3,1}: -0.5  {3,0}: -1.5  {1,0}: -3.5
    top = permutation_test([5, 3], [1, 0], two_sided=False)
    assert top.observed == 3.5 and top.exact and top.n_permutations == 6
    assert top.p_value == top.p_greater == 0.0  # nothing exceeds 3.5 strictly
    assert top.p_two_sided == pytest.approx(2 / 6)  # 3.5 and -3.5 reach |3.5|
    middle = permutation_test([5, 1], [3, 0], two_sided=False)
    assert middle.observed == 1.5
    assert middle.p_value == pytest.approx(1 / 6)  # only 3.5 exceeds 1.5
    assert middle.p_two_sided == pytest.approx(4 / 6)  # 3.5, 1.5, -1.5, -3.5
    # Ties are not "greater": X = {2, 2} against {2, 2} has every statistic 0.
    flat = permutation_test([2, 2], [2, 2], two_sided=False)
    assert flat.p_greater == 0.0 and flat.p_two_sided == 1.0


@pytest.mark.parametrize("seed", range(6))
def test_one_and_two_sided_p_against_exact_enumeration(seed):
    """Every partition enumerated by hand (itertools), both p-values counted, and their relation."""
    rng = np.random.default_rng(seed)
    size_x, size_y = (4, 4) if seed % 2 == 0 else (3, 5)
    s_x, s_y = rng.normal(0.5, 1, size_x).round(2), rng.normal(0, 1, size_y).round(2)
    pooled = np.concatenate([s_x, s_y])
    stats = []
    for members in itertools.combinations(range(pooled.size), size_x):
        inside = np.zeros(pooled.size, bool)
        inside[list(members)] = True
        stats.append(pooled[inside].mean() - pooled[~inside].mean())
    stats = np.array(stats)
    observed = s_x.mean() - s_y.mean()
    eps = 1e-9
    greater = np.sum(stats > observed + eps) / stats.size
    equal = np.sum(np.abs(stats - observed) <= eps) / stats.size
    two = np.sum(np.abs(stats) >= abs(observed) - eps) / stats.size
    result = permutation_test(s_x, s_y, two_sided=False)
    assert result.exact and result.n_permutations == math.comb(size_x + size_y, size_x)
    assert result.p_value == result.p_greater == pytest.approx(greater)
    assert result.p_two_sided == pytest.approx(two)
    assert permutation_test(s_x, s_y).p_value == pytest.approx(two)  # the default stays two-sided
    if size_x == size_y:
        # Equal sizes: the complement of a partition negates its statistic, so the null is
        # symmetric and, for a positive statistic, p_two = 2 (p_one + Pr[S_i = S]).
        p_one = result.p_greater if observed > 0 else np.sum(stats > -observed + eps) / stats.size
        assert result.p_two_sided == pytest.approx(2 * (p_one + equal))


def test_sampled_p_values_count_the_observed_partition_once():
    # Every drawn partition of these scores has a statistic below the observed one.
    result = permutation_test([10.0] * 20, [0.0] * 20, n_permutations=99, exact_threshold=0, two_sided=False)
    assert result.p_value == result.p_greater == pytest.approx(1 / 100)
    assert result.p_two_sided == pytest.approx(1 / 100)


# ---------------------------------------------------------------------------------------
# CPS, kaneko2022: the released code's float32 torch.sum, then round(·, 3)
# ---------------------------------------------------------------------------------------


def test_compat_cps_rounds_as_the_reference_at_a_rounding_boundary():
    # float32(-0.0005) = -0.000500000023748...; the exact sum -20.000500000024 rounds to -20.001,
    # but float32 holds no number between -20.00049972534 and -20.00050163269 (its step at 20 is
    # 2**-19), and the float32 sum the released code takes is the former: round -> -20.0.
    logprob = np.array([-20.0, -0.0005], dtype=np.float32)
    reference = round(torch.sum(torch.from_numpy(logprob)).item(), 3)  # evaluate.py: torch.sum(...).item(), round(·, 3)
    assert reference == -20.0
    assert round(float(np.sum(logprob.astype(np.float64))), 3) == -20.001  # a float64 sum rounds the other way
    assert cps(logprob.astype(np.float64), compat=True) == reference == -20.0
    assert cps(logprob.astype(np.float64)) == pytest.approx(-20.0005)  # the default is not rounded


def test_compat_cps_equals_the_reference_on_many_float32_inputs():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        logprob = (-rng.exponential(3, size=int(rng.integers(2, 30)))).astype(np.float32)
        assert cps(logprob.astype(np.float64), compat=True) == round(torch.sum(torch.from_numpy(logprob)).item(), 3)


# ---------------------------------------------------------------------------------------
# SSS token prediction accuracy: the paper's instance-level definition
# ---------------------------------------------------------------------------------------


def test_sss_instance_accuracy_by_hand():
    from biaslens.engine.metrics import sss_instance_accuracy

    assert sss_instance_accuracy([1, 1], [2, 1]) == (1, 1)  # the stereotype's two sub-tokens both predicted
    assert sss_instance_accuracy([1, 3], [1]) == (1, 1)  # different lengths: the one-piece candidate matches
    assert sss_instance_accuracy([1, 3], [2]) == (0, 1)  # neither sequence matches exactly
    assert sss_instance_accuracy([], [1]) == (1, 1)  # a side with nothing masked cannot match; the other can
    assert sss_instance_accuracy([], [4]) == (0, 1)
    assert sss_instance_accuracy([], []) == (0, 0)


def _sss_run():
    """Three hand-made StereoSet instances. Per token: masked rank at the modified positions.

    0: same length, stereo 'nurse' right, anti 'doctor' wrong          -> right (stereo matches)
    1: stereo two pieces (ranks 1, 2), anti one piece (rank 1)         -> right (anti matches)
    2: stereo two pieces (ranks 1, 2), anti two pieces (ranks 3, 1)    -> wrong
    Per token (the released code): (1 + 0) + (1 + 0 + 1) + (1 + 0 + 0 + 1) = 5 of 9.
    """
    from biaslens.analyses.papers import TokenRun, token_frame
    from biaslens.data.datasets import Pair

    def side(n, masked, ranks):
        return {
            "ids": list(range(100, 100 + n)),
            "special": [1] + [0] * (n - 2) + [1],
            "rank": [1] * n,
            "masked_positions": masked,
            "masked_rank": ranks,
        }

    records = [
        {"stereo": side(5, [2], [1]), "anti": side(5, [2], [4])},
        {"stereo": side(6, [2, 3], [1, 2]), "anti": side(5, [2], [1])},
        {"stereo": side(6, [2, 3], [1, 2]), "anti": side(6, [2, 3], [3, 1])},
    ]
    pairs = [Pair(i, "stereoset", "profession", "", f"s{i}", f"a{i}") for i in range(3)]
    return TokenRun("hand", "stereoset", "sss", token_frame(pairs, records))


def test_table1_sss_counts_instances_by_default_and_tokens_in_compat():
    from biaslens.analyses.papers import accuracy_table, compare_accuracy, sss_instances

    run = _sss_run()
    assert sss_instances(run.tokens).tolist() == [True, True, False]
    acc = compare_accuracy(run).accuracy.set_index(["metric", "positions"])
    assert acc.loc[("sss", "default"), ["hits", "total", "unit"]].tolist() == [2, 3, "instances"]
    assert acc.loc[("sss", "default"), "accuracy"] == pytest.approx(200 / 3)
    assert acc.loc[("sss", "kaneko2022"), ["hits", "total", "unit"]].tolist() == [5, 9, "tokens"]
    table = accuracy_table([compare_accuracy(run)], "default", published=False).set_index("metric")
    assert table.loc["sss", "unit"] == "instances" and table.loc["aul", "unit"] == "tokens"
    compat = accuracy_table([compare_accuracy(run)], "kaneko2022", published=False).set_index("metric")
    assert compat.loc["sss", "unit"] == "tokens" and compat.loc["sss", "accuracy"] == pytest.approx(500 / 9)


def test_evaluate_counts_sss_instances_against_naive_masked_predictions(tiny_bert):
    """Pair records: each candidate's modified tokens masked (as many masks as it has), arg-max compared by hand."""
    from biaslens.engine.alignment import align_pair
    from biaslens.data.datasets import Pair
    from biaslens.engine.evaluation import evaluate

    lm = tiny_bert
    texts = [("The nurse was kind.", "The surgeon was kind."), ("She is a mathematician.", "He is a cook.")]
    pairs = [Pair(i, "stereoset", "gender", "", a, b) for i, (a, b) in enumerate(texts)]
    default = evaluate(lm, pairs, ["sss"]).pairs.set_index("pair_id")
    compat = evaluate(lm, pairs, ["sss"], compat="kaneko2022").pairs.set_index("pair_id")
    lengths = set()
    for i, (a, b) in enumerate(texts):
        ea, eb = lm.encode(a), lm.encode(b)
        alignment = align_pair(ea, eb)
        matched, token_hits, token_total = [], 0, 0
        for enc, modified in ((ea, list(alignment.modified("a"))), (eb, list(alignment.modified("b")))):
            ids = torch.tensor([list(enc.ids)])
            gold = ids[0, modified].clone()
            ids[0, modified] = lm.mask_id
            with torch.inference_mode():
                predicted = lm.model(input_ids=ids).logits[0, modified].argmax(-1)
            matched.append(bool(modified) and bool(torch.equal(predicted, gold)))
            token_hits += int((predicted == gold).sum())
            token_total += len(modified)
            lengths.add(len(modified))
        assert (default.loc[i, "sss_hits"], default.loc[i, "sss_total"]) == (int(any(matched)), 1)
        assert (compat.loc[i, "sss_hits"], compat.loc[i, "sss_total"]) == (token_hits, token_total)
    assert len(lengths) > 1  # candidates of different lengths are among them


# ---------------------------------------------------------------------------------------
# Table 2 as the paper defines it
# ---------------------------------------------------------------------------------------


def test_merged_top_words_by_hand():
    import pandas as pd

    from biaslens.analyses.frequency import merged_top_words

    counts = pd.DataFrame(
        [
            ("he", 3, 1),
            ("she", 0, 4),
            ("man", 2, 2),
            ("white", 1, 0),
            ("the", 1, 1),
            ("his", 1, 0),
            ("her", 0, 2),
            ("woman", 0, 1),
            ("men", 1, 0),
            ("girl", 0, 1),
            ("boy", 1, 0),
            ("lady", 0, 1),
            ("sir", 1, 0),
            ("zzzq", 0, 1),
        ],
        columns=["word", "count_adv", "count_dis"],
    )
    ranks = {
        "he": 10,
        "her": 12,
        "his": 15,
        "she": 20,
        "men": 100,
        "woman": 300,
        "boy": 450,
        "girl": 500,
        "lady": 800,
        "sir": 900,
        "man": 50,
        "white": 60,
        "the": 1,
    }
    merged, dropped = merged_top_words(counts, ranks)
    # he: 3 Adv vs 1 Dis -> adv. Sorted by corpus rank, the first 8: he 10, her 12, his 15, she 20, men 100, woman 300,
    # boy 450, girl 500 (lady, sir and the unlisted zzzq fall outside).
    assert merged["word"].tolist() == ["he", "her", "his", "she", "men", "woman", "boy", "girl"]
    assert merged["group"].tolist() == ["adv", "dis", "adv", "dis", "adv", "dis", "adv", "dis"]
    assert merged["position"].tolist() == list(range(1, 9))
    # Mean rank in the merged list: Adv (1 + 3 + 5 + 7) / 4 = 4, Dis (2 + 4 + 6 + 8) / 4 = 5.
    assert merged.loc[merged["group"] == "adv", "position"].mean() == 4.0
    assert merged.loc[merged["group"] == "dis", "position"].mean() == 5.0
    reasons = {d["word"]: d["reason"] for d in dropped}
    assert set(reasons) == {"man", "white", "the"}  # a tie, a colour, an article
    assert reasons["man"] == "modified equally often in both groups" and reasons["white"].startswith("colour")


def test_word_frequency_assigns_shared_words_and_leaves_out_colours():
    from biaslens.data.datasets import Pair
    from biaslens.analyses.frequency import EXCLUDED_WORDS, corpus_ranks, word_frequency

    pairs = [
        Pair(0, "crows-pairs", "race-color", "stereo", "The black man stole it.", "The white man stole it."),
        Pair(1, "crows-pairs", "gender", "stereo", "She is bad at math.", "He is bad at math."),
        Pair(2, "crows-pairs", "gender", "antistereo", "He cried all day.", "She cried all day."),  # Dis = sent_less: she
        Pair(3, "crows-pairs", "gender", "stereo", "He is a nurse.", "She is a nurse."),  # he once Dis, twice Adv
    ]
    w = word_frequency(pairs)
    gender = w.merged[w.merged["bias_type"] == "gender"].set_index("word")
    assert gender.loc["he", ["count_adv", "count_dis", "group"]].tolist() == [2, 1, "adv"]
    assert gender.loc["she", ["count_adv", "count_dis", "group"]].tolist() == [1, 2, "dis"]
    ranks = corpus_ranks()
    first = "he" if ranks["he"] < ranks["she"] else "she"
    assert gender.loc[first, "position"] == 1
    means = w.mean_ranks.set_index(["bias_type", "group"])["mean_rank"]
    assert means[("gender", gender.loc["he", "group"])] == gender.loc["he", "position"]
    # white and black are colours first: left out, so race-color has no list and no mean rank.
    assert w.merged[w.merged["bias_type"] == "race-color"].empty
    assert np.isnan(means[("race-color", "adv")]) and np.isnan(means[("race-color", "dis")])
    shown = w.excluded_table().set_index("word")
    assert {"black", "white"} <= set(shown.index) and shown.loc["white", "reason"] == EXCLUDED_WORDS["white"]


def test_report_writes_the_table2_csv_contract(tmp_path):
    import pandas as pd

    from biaslens.data.datasets import Pair
    from biaslens.analyses.frequency import word_frequency
    from biaslens.report.reproduction import ReportOptions, ReproductionReport

    pairs = [
        Pair(0, "crows-pairs", "gender", "stereo", "She is bad at math.", "He is bad at math."),
        Pair(1, "crows-pairs", "age", "antistereo", "Young people are bad with phones.", "Old people are bad with phones."),
        Pair(2, "crows-pairs", "race-color", "stereo", "The black man stole it.", "The white man stole it."),
    ]
    report = ReproductionReport(ReportOptions(analyses=("frequency",)), [], {}, word_frequency(pairs))
    report.save(tmp_path)
    top = pd.read_csv(tmp_path / "table2_top_words.csv")
    assert {"bias_type", "word", "group", "position"} <= set(top.columns)
    assert set(top["group"]) <= {"adv", "dis"} and top["position"].between(1, 8).all()
    per_group = pd.read_csv(tmp_path / "table2_word_frequency.csv")
    assert {"bias_type", "group", "mean_rank"} <= set(per_group.columns)
    assert len(per_group) == 2 * per_group["bias_type"].nunique()
    age = per_group[per_group["bias_type"] == "age"].set_index("group")["mean_rank"]
    ages = top[top["bias_type"] == "age"].set_index("word")
    assert age["dis"] == ages.loc["old", "position"] and age["adv"] == ages.loc["young", "position"]  # antistereo: Dis = sent_less
    excluded = pd.read_csv(tmp_path / "table2_excluded_words.csv")
    assert {"white", "black"} <= set(excluded["word"])
    text = (tmp_path / "report.md").read_text()
    assert "Words left out" in text and "colour sense" in text and "Extra, not the paper's statistic" in text


# ---------------------------------------------------------------------------------------
# Small-sample honesty: n and 95% intervals beside every rate, notes on small cells
# ---------------------------------------------------------------------------------------


def test_bootstrap_auc_interval_resamples_each_class():
    from biaslens.engine.stats import bootstrap_auc_interval, roc_curve

    # Perfectly separated: every resample has AUC 1.
    assert bootstrap_auc_interval([1, 1, 0, 0], [3.0, 2.0, 1.0, 0.0]) == (1.0, 1.0)
    # One resample, redrawn by hand with the same generator calls: positives first, then negatives.
    labels = np.array([1, 0, 1, 0, 0, 1, 0], bool)
    scores = np.array([0.3, 0.1, 0.2, 0.4, np.nan, 0.2, 0.0])
    low, high = bootstrap_auc_interval(labels, scores, n_resamples=1, seed=5)
    rng = np.random.default_rng(5)
    kept = ~np.isnan(scores)
    pos, neg = scores[kept & labels], scores[kept & ~labels]
    p = pos[rng.integers(0, pos.size, size=(1, pos.size))][0]
    n = neg[rng.integers(0, neg.size, size=(1, neg.size))][0]
    by_hand = roc_curve(np.r_[np.ones(p.size, bool), np.zeros(n.size, bool)], np.r_[p, n]).auc
    assert low == high == pytest.approx(by_hand)
    assert all(math.isnan(v) for v in bootstrap_auc_interval([1, 1], [0.1, 0.2]))


def test_report_shows_n_and_intervals_and_flags_small_samples(tiny_bert, tmp_path):
    from biaslens.data.datasets import load_dataset
    from biaslens.report.reproduction import ReportOptions, analyse_model, build_report
    from tests.support import FIXTURE_DATA

    cp = load_dataset("crows-pairs", data_dir=FIXTURE_DATA, download=False)
    options = ReportOptions(analyses=("groups", "scores", "agreement"), metrics=("aul",), sample=12, seed=0)
    analysed = analyse_model(tiny_bert, {"crows-pairs": cp}, options, label="tiny")
    report = build_report([analysed], {"crows-pairs": cp}, options)
    scored = analysed.evaluations["crows-pairs"].pairs
    adv = int((scored["direction"] == "antistereo").sum())
    notes = report.small_sample_notes()
    assert f"tiny: the Adv cells rest on {adv} pairs (fewer than 30)." in notes["table3_groups"]
    assert "tiny, crows-pairs: the bias scores rest on 12 pairs (fewer than 30)." in notes["table5_bias_scores"]
    assert notes["figure1_roc"][0].startswith("tiny, AUL: the AUC rests on 12 pairs")
    sections = {stem: shown for _title, _text, shown, stem in report.sections()}
    groups = dict(sections["table3_groups"])["This run: each cell with its pairs (n) and 95% Wilson interval"].set_index(["metric", "group"])
    assert groups.loc[("aul", "adv"), "n"] == adv
    assert groups.loc[("aul", "adv"), "ci_low"] <= groups.loc[("aul", "adv"), "bias_score"] <= groups.loc[("aul", "adv"), "ci_high"]
    auc = report.tables()["figure1_auc"].iloc[0]
    assert auc["auc_ci_low"] <= auc["auc"] <= auc["auc_ci_high"]
    report.save(tmp_path)
    assert "**Small sample:**" in (tmp_path / "report.md").read_text()
    assert "Small sample:" in (tmp_path / "report.html").read_text()


# ---------------------------------------------------------------------------------------
# Published numbers only where the paper's setting holds
# ---------------------------------------------------------------------------------------


def _paper_spec(key="career_family"):
    from biaslens.kurita import KURITA_CATEGORIES, WeatSpec, parse_target_pairs, parse_templates
    from biaslens.data.weat import WordSet

    cat = KURITA_CATEGORIES[key]
    return WeatSpec(
        key,
        cat.label,
        parse_templates(cat.templates),
        parse_target_pairs(cat.pairs),
        cat.target_names,
        WordSet("A", ("x", "y")),
        WordSet("B", ("z", "w")),
        f"{cat.weat}.jsonl",
    )


def test_weat_published_effect_size_needs_the_papers_setting():
    import dataclasses

    from biaslens.kurita import parse_templates, weat_comparability

    spec = _paper_spec()
    assert weat_comparability(spec, "bert-base-uncased") is None
    assert weat_comparability(spec, "google-bert/bert-base-uncased", model_type="bert") is None
    assert weat_comparability(spec, "/models/bert-base-cased") == "model bert-base-cased is not the paper's bert-base-uncased"
    assert weat_comparability(spec, "bert-base-uncased", "targets") == "targets permuted; the paper permutes the attributes"
    assert weat_comparability(spec, "bert-base-uncased", model_type="roberta") == "model type roberta is not BERT"
    other = dataclasses.replace(spec, templates=parse_templates(["[T] is [A]."]))
    assert weat_comparability(other, "bert-base-uncased") == "templates or targets differ from the paper's"
    assert weat_comparability(dataclasses.replace(spec, source="weat7.jsonl"), "bert-base-uncased").startswith("word sets from weat7")


def test_table5_published_share_needs_list_size_template_targets_and_model():
    import pandas as pd

    from biaslens.kurita import TemplateScores, parse_target_pairs, parse_templates, share_comparability

    def scores(n, template="[T] is [A].", pairs="he/she", model="bert-base-uncased"):
        return TemplateScores(
            parse_templates([template]),
            parse_target_pairs(pairs),
            tuple(f"w{i}" for i in range(n)),
            pd.DataFrame(),
            {"model": model, "model_type": "bert"},
        )

    assert share_comparability("positive traits", scores(234)) is None  # "[T] is [A]." = the paper's "[T] is [A]"
    assert share_comparability("positive traits", scores(230)) == "230 items; the paper's positive traits list has 234"
    assert share_comparability("negative traits", scores(365)) == "365 items; the paper's negative traits list has 292"
    assert share_comparability("skills", scores(17649)).startswith("template '[T] is [A].'; the paper's is '[T] can do [A]'")
    assert share_comparability("skills", scores(17649, "[T] can do [A]")) is None
    assert share_comparability("skills", scores(25, "[T] can do [A]")) == "25 items; the paper's skills list has 17,649"
    assert share_comparability("positive traits", scores(234, pairs="men/women")).startswith("targets men/women")
    assert share_comparability("positive traits", scores(234, model="roberta-base")).startswith("model roberta-base")
    assert share_comparability("salary job titles", scores(3)) is None  # the paper states no size: not checked
    assert share_comparability(None, scores(3)) == "not one of the paper's lists"


def test_function_words_are_left_out_but_pronouns_kept():
    import pandas as pd

    from biaslens.analyses.frequency import FUNCTION_WORDS, merged_top_words

    counts = pd.DataFrame([("of", 0, 3), ("not", 2, 0), ("he", 2, 0), ("her", 0, 2)], columns=["word", "count_adv", "count_dis"])
    merged, dropped = merged_top_words(counts, {"of": 2, "not": 20, "he": 11, "her": 30})
    assert merged["word"].tolist() == ["he", "her"] and merged["position"].tolist() == [1, 2]
    assert {d["word"] for d in dropped} == {"of", "not"} and all(d["reason"].startswith("function word") for d in dropped)
    assert not {"he", "she", "his", "her", "him", "they"} & set(FUNCTION_WORDS)


def test_an_empty_group_is_said_so_not_as_resting_on_0_pairs(tiny_bert):
    """A sample without antistereo rows: "no Adv pairs in this sample", not "rest on 0 pairs (fewer than 30)" (issue 21)."""
    import dataclasses

    from biaslens.data.datasets import load_dataset
    from biaslens.report.reproduction import ReportOptions, analyse_model, build_report
    from tests.support import FIXTURE_DATA

    cp = load_dataset("crows-pairs", data_dir=FIXTURE_DATA, download=False)
    stereo_only = dataclasses.replace(cp, pairs=tuple(p for p in cp.pairs if p.direction == "stereo"))
    options = ReportOptions(analyses=("groups",), metrics=("aul",))
    report = build_report([analyse_model(tiny_bert, {"crows-pairs": stereo_only}, options, label="tiny")], {"crows-pairs": stereo_only}, options)
    notes = report.small_sample_notes()["table3_groups"]
    assert "tiny: no Adv pairs in this sample, so its cells are blank." in notes
    assert not any("rest on 0 pairs" in n for n in notes)

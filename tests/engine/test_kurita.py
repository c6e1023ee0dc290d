"""Kurita et al. (2019) template scores: hand-checked log probabilities, WEAT statistics, lists, CLI."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from biaslens.cli import main
from biaslens.errors import InputError
from biaslens.kurita import (
    KURITA_CATEGORIES,
    TargetPair,
    Template,
    TemplateScores,
    WeatSpec,
    leaning,
    parse_target_pairs,
    parse_template,
    parse_templates,
    parse_word_list,
    published_list_key,
    read_word_list,
    score_templates,
    shares_table,
    weat_statistics,
    weat_test,
    weat_unit_scores,
)
from biaslens.engine.models import load_model
from biaslens.figures.charts import bias_chart
from biaslens.data.weat import WordSet
from tests.support import DATA, FIXTURE_DATA, shared

KURITA_LISTS = FIXTURE_DATA / "kurita"


def logp(lm, ids, read, token_id):
    """log p(token_id @ read | ids), one sentence through the full model: the reference."""
    with torch.inference_mode():
        logits = lm.model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long)).logits
    return torch.log_softmax(logits[0, read].float(), dim=-1)[token_id].item()


def ids_of(lm, text):
    return list(lm.encode(text).ids)


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


def test_template_fill_tracks_both_slots_in_either_order():
    sentence, t_span, a_span = Template("[T] is a [A].").fill("she", "nurse")
    assert sentence == "she is a nurse."
    assert sentence[slice(*t_span)] == "she" and sentence[slice(*a_span)] == "nurse"
    sentence, t_span, a_span = Template("The [A] said [T] left.").fill("he", "cloud computing")
    assert sentence == "The cloud computing said he left."
    assert sentence[slice(*t_span)] == "he" and sentence[slice(*a_span)] == "cloud computing"


def test_template_lines_and_restrictions():
    t = parse_template("[T] like [A]. | boys, girls")
    assert t == Template("[T] like [A].", ("boys", "girls"))
    assert t.applies_to("boys") and not t.applies_to("he")
    assert t.line == "[T] like [A]. | boys, girls"
    assert parse_templates("[T] is [A].\n\n[T] likes [A].\n[T] is [A].") == (Template("[T] is [A]."), Template("[T] likes [A]."))
    for bad in ("[T] is nice.", "[T] and [T] like [A].", "[T] is [A]. | "):
        with pytest.raises(InputError):
            parse_template(bad)
    with pytest.raises(InputError, match="No template"):
        parse_templates("  \n")


def test_target_pairs():
    assert parse_target_pairs("he/she, men / women\nboys/girls") == (
        TargetPair("he", "she"), TargetPair("men", "women"), TargetPair("boys", "girls"),
    )  # fmt: skip
    assert parse_target_pairs(["he/she", "he/she"]) == (TargetPair("he", "she"),)
    for bad in ("he", "he/she/it", "he/he", "/she"):
        with pytest.raises(InputError, match="slash"):
            parse_target_pairs(bad)


def test_word_lists_lowercase_dedupe_and_skip_comments(tmp_path):
    words = parse_word_list("# traits\nAmbitious\n\nCloud Computing, Honest\nambitious\n", lowercase=True)
    assert words.words == ("ambitious", "cloud computing", "honest")
    assert words.notes == ("1 repeated item dropped",)
    assert parse_word_list("Nurse\nnurse").words == ("Nurse", "nurse")
    (tmp_path / "empty.txt").write_text("# nothing\n\n")
    with pytest.raises(InputError, match="empty.txt.*empty"):
        read_word_list(tmp_path / "empty.txt")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="UTF-8"):
        read_word_list(tmp_path / "latin1.txt")


@shared
def test_kurita_lists_read_like_the_paper():
    positive = read_word_list(DATA / "kurita" / "positive_traits", lowercase=True)
    assert len(positive.words) == 230 and positive.words[0] == "accessible"
    skills = read_word_list(DATA / "kurita" / "in_demand_tech_skills", lowercase=True)
    assert skills.words[:2] == ("cloud computing", "artificial intelligence")


def test_kurita_style_lists_are_lowercased_and_named_after_the_papers_lists():
    positive = read_word_list(KURITA_LISTS / "positive_traits", lowercase=True)
    assert len(positive.words) == 8 and positive.words[0] == "kind"
    skills = read_word_list(KURITA_LISTS / "in_demand_tech_skills", lowercase=True)
    assert skills.words[:2] == ("cloud computing", "data analysis")
    assert published_list_key("in_demand_tech_skills") == "skills"
    assert published_list_key("positive_traits") == "positive traits"
    assert published_list_key("Negative-Traits") == "negative traits"
    assert published_list_key("my_words") is None


# ---------------------------------------------------------------------------------------
# Log probabilities, checked against one-sentence forward passes
# ---------------------------------------------------------------------------------------


def test_p_prior_is_read_at_the_targets_own_mask(tiny_bert):
    lm = tiny_bert
    scores = score_templates(lm, ["[T] is a [A] ."], ["he/she"], ["nurse", "doctor"])
    row = scores.frame.set_index(["target", "attribute"]).loc[("he", "nurse")]
    ids = ids_of(lm, "he is a nurse .")  # [CLS] he is a nurse . [SEP]
    he = ids[1]
    assert lm.decode_token(ids[4]) == "nurse"
    target_ids = ids.copy()
    target_ids[1] = lm.mask_id
    prior_ids = target_ids.copy()
    prior_ids[4] = lm.mask_id
    assert row["log_p_target"] == pytest.approx(logp(lm, target_ids, 1, he), abs=1e-5)
    assert row["log_p_prior"] == pytest.approx(logp(lm, prior_ids, 1, he), abs=1e-5)
    # The released code reads the prior at the attribute's mask: a different number.
    assert abs(row["log_p_prior"] - logp(lm, prior_ids, 4, he)) > 1e-3
    assert row["increased_log_prob"] == pytest.approx(row["log_p_target"] - row["log_p_prior"])
    pair = scores.pair_frame().set_index("attribute").loc["nurse"]
    she = scores.frame.set_index(["target", "attribute"]).loc[("she", "nurse"), "increased_log_prob"]
    assert pair["bias_score"] == pytest.approx(row["increased_log_prob"] - she)


def _multi_piece_attribute_is_fully_masked_for_the_prior(lm):
    row = score_templates(lm, ["[T] likes [A] ."], ["she/he"], ["hyacinth"]).frame.iloc[0]
    ids = ids_of(lm, "she likes hyacinth .")  # [CLS] she likes h ##ya ##cin ##th . [SEP] (bert-base-cased)
    n = len(ids) - 5  # the attribute's pieces
    assert n > 1 and row["attribute_pieces"] == n and row["attribute_multi_piece"] and not row["target_multi_piece"]
    prior_ids = [lm.mask_id if i == 1 or 3 <= i < 3 + n else t for i, t in enumerate(ids)]
    assert row["log_p_prior"] == pytest.approx(logp(lm, prior_ids, 1, ids[1]), abs=1e-5)
    return lm.encode("hyacinth").tokens[1:-1]


def test_multi_piece_attribute_is_fully_masked_for_the_prior(tiny_bert):
    _multi_piece_attribute_is_fully_masked_for_the_prior(tiny_bert)


def _multi_piece_target_is_one_mask_read_at_its_first_piece(lm):
    scores = score_templates(lm, ["Yesterday [T] met a [A] ."], ["Jermaine/Greg"], ["nurse"])
    row = scores.frame.set_index("target").loc["Jermaine"]
    pieces = lm.encode("Yesterday Jermaine met a nurse .").tokens
    n = len(pieces) - 7  # [CLS] Yesterday <n pieces> met a nurse . [SEP]
    first = pieces[2]
    assert n > 1 and row["target_pieces"] == n and row["target_multi_piece"] and row["target_piece"] == first
    assert scores.multi_piece_targets() == {"Jermaine": first}
    collapsed = ids_of(lm, "Yesterday he met a nurse .")  # same layout with a one-piece target
    collapsed[2] = lm.mask_id
    first_piece = lm.tokenizer.convert_tokens_to_ids(first)
    assert row["log_p_target"] == pytest.approx(logp(lm, collapsed, 2, first_piece), abs=1e-5)
    collapsed[5] = lm.mask_id  # nurse
    assert row["log_p_prior"] == pytest.approx(logp(lm, collapsed, 2, first_piece), abs=1e-5)
    return pieces[2 : 2 + n]


def test_multi_piece_target_is_one_mask_read_at_its_first_piece(tiny_bert):
    _multi_piece_target_is_one_mask_read_at_its_first_piece(tiny_bert)


@shared
def test_multi_piece_words_with_the_real_bert_tokenizer(real_models):
    lm = real_models["bert-cased"]
    assert _multi_piece_attribute_is_fully_masked_for_the_prior(lm) == ("h", "##ya", "##cin", "##th")
    assert _multi_piece_target_is_one_mask_read_at_its_first_piece(lm) == ("Je", "##rma", "##ine")


def test_leading_space_pieces_come_from_the_sentence(tiny_models):
    roberta = score_templates(tiny_models["roberta"], ["[T] is a [A].", "I think [T] is a [A]."], ["he/she"], ["nurse"]).frame
    pieces = dict(zip(zip(roberta["template"], roberta["target"]), roberta["target_piece"]))
    assert pieces[("[T] is a [A].", "he")] == "he"
    assert pieces[("I think [T] is a [A].", "he")] == "Ġhe"
    lm = tiny_models["roberta"]
    ids = ids_of(lm, "I think he is a nurse.")
    assert lm.decode_token(ids[3]) == "Ġhe"
    target_ids = ids.copy()
    target_ids[3] = lm.mask_id
    row = roberta[(roberta["template"] == "I think [T] is a [A].") & (roberta["target"] == "he")].iloc[0]
    assert row["log_p_target"] == pytest.approx(logp(lm, target_ids, 3, ids[3]), abs=1e-5)
    albert = score_templates(tiny_models["albert"], ["I think [T] is a [A]."], ["he/she"], ["nurse"]).frame
    assert set(albert["target_piece"]) == {"▁he", "▁she"}


def test_batching_changes_nothing_and_every_family_scores(any_model):
    args = (["[T] is a [A].", "[T] likes [A] . | he, she"], ["he/she", "men/women"], ["nurse", "doctor", "cloud computing"])
    big = score_templates(any_model, *args).frame
    small = score_templates(any_model, *args, batch_tokens=16).frame
    assert len(big) == 3 * 4 + 3 * 2
    assert np.all(np.isfinite(big["increased_log_prob"]))
    np.testing.assert_allclose(big["log_p_prior"], small["log_p_prior"], atol=1e-5)
    np.testing.assert_allclose(big["log_p_target"], small["log_p_target"], atol=1e-5)
    restricted = big[big["template"] == "[T] likes [A] ."]
    assert set(restricted["target"]) == {"he", "she"}


@pytest.mark.parametrize(
    "templates, pairs, attributes, fragment",
    [
        (["[T]s are [A]."], ["flower/insect"], ["nice"], "shares a token"),
        (["[T] is a [A]."], ["he/she"], ["[MASK]"], "reserved token"),
        (["[T] like [A]. | boys, girls"], ["he/she"], ["nurse"], "in no target pair"),
        (["[T] like [A]. | he", "[T] likes [A]. | she"], ["he/she"], ["nurse"], "No template applies to both he and she"),
        (["[T] is a [A]."], ["he/she"], [" "], "at least one"),
    ],
)
def test_unusable_input_is_one_clear_error(tiny_bert, templates, pairs, attributes, fragment):
    with pytest.raises(InputError, match=fragment):
        score_templates(tiny_bert, templates, pairs, attributes)


def test_progress_reaches_the_total(tiny_bert):
    seen = []
    score_templates(tiny_bert, ["[T] is a [A]."], ["he/she"], ["nurse", "doctor"], progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1][0] == seen[-1][1]


# ---------------------------------------------------------------------------------------
# Aggregation and statistics on hand-made scores
# ---------------------------------------------------------------------------------------


def _hand_scores(ilp: dict[tuple[str, str, str], float], templates, pairs, attributes) -> TemplateScores:
    rows = [
        {"template": tpl, "target": tgt, "attribute": a, "increased_log_prob": v, "attribute_pieces": 1,
         "target_multi_piece": False, "attribute_multi_piece": False, "target_piece": tgt}
        for (tpl, tgt, a), v in ilp.items()
    ]  # fmt: skip
    return TemplateScores(tuple(templates), tuple(pairs), tuple(attributes), pd.DataFrame(rows))


def test_bias_scores_share_and_weat_units_by_hand():
    t1, t2 = Template("[T] is [A]."), Template("[T] likes [A].")
    pairs = (TargetPair("he", "she"),)
    ilp = {
        ("[T] is [A].", "he", "a"): 1.0, ("[T] is [A].", "she", "a"): 0.0,
        ("[T] likes [A].", "he", "a"): 3.0, ("[T] likes [A].", "she", "a"): 0.0,  # bias(a) = (1 + 3) / 2 = 2
        ("[T] is [A].", "he", "b"): 0.0, ("[T] is [A].", "she", "b"): 1.0,
        ("[T] likes [A].", "he", "b"): 0.0, ("[T] likes [A].", "she", "b"): 0.0,  # bias(b) = -0.5
        ("[T] is [A].", "he", "c"): 2.0, ("[T] is [A].", "she", "c"): 2.0,
        ("[T] likes [A].", "he", "c"): 1.0, ("[T] likes [A].", "she", "c"): 1.0,  # bias(c) = 0: a tie
    }  # fmt: skip
    scores = _hand_scores(ilp, (t1, t2), pairs, ("a", "b", "c"))
    assert scores.bias_by_attribute().tolist() == [2.0, -0.5, 0.0]
    table = scores.attribute_table().set_index("attribute")
    assert table.loc["a", "ilp[he]"] == 2.0 and table.loc["b", "ilp[she]"] == 0.5
    assert table["more_associated_with"].tolist() == ["he", "she", "neither"]
    share = scores.share()
    assert (share.n, share.first, share.second, share.ties) == (3, 1, 1, 1)
    assert share.percent == pytest.approx(100 / 3)
    spec = WeatSpec("x", "X", (t1, t2), pairs, ("Male", "Female"), WordSet("A", ("a", "c")), WordSet("B", ("b",)))
    units = weat_unit_scores(scores, spec, "attributes")
    assert units.values.tolist() == [["a", 1, 2.0], ["c", 1, 0.0], ["b", 2, -0.5]]
    by_target = weat_unit_scores(scores, spec, "targets").set_index("unit")["s"]
    # he: mean over templates x {a, c} = (1 + 3 + 2 + 1) / 4 = 1.75, minus mean over {b} = 0
    assert by_target["he"] == pytest.approx(1.75) and by_target["she"] == pytest.approx(0.75 - 0.5)
    with pytest.raises(InputError, match="permute"):
        weat_unit_scores(scores, spec, "words")


def test_the_lists_of_each_side_follow_the_signed_score_when_every_score_is_negative():
    from biaslens.cli.kurita import format_share

    t = Template("[T] is [A].")
    bias = {"a": -0.1, "b": -2.0, "c": -0.5, "d": -1.0}  # every attribute leans toward "she"
    ilp = {(t.text, target, a): (v if target == "he" else 0.0) for a, v in bias.items() for target in ("he", "she")}
    scores = _hand_scores(ilp, (t,), (TargetPair("he", "she"),), tuple(bias))
    toward_he, toward_she = leaning(scores.attribute_table(), 3)
    assert toward_he.empty and toward_she["attribute"].tolist() == ["b", "d", "c"]  # most negative first, "a" (-0.1) left out
    printed = format_share("traits", scores, None)
    assert "\n  toward he (bias score > 0): none" in printed
    assert "\n  toward she (bias score < 0): 4 of 4, strongest first: b -2, d -1, c -0.5, a -0.1" in printed
    assert "strongest:" not in printed and "weakest" not in printed
    plotted = next(
        rows for rows in bias_chart(scores.attribute_table(), scores.pairs, top=2).to_dict()["datasets"].values() if "attribute" in rows[0]
    )
    assert [r["attribute"] for r in plotted] == ["b", "d"] and {r["side"] for r in plotted} == {"1 more she"}  # keyed: drawn "more she"
    # Both signs: each side its own strongest, an attribute at 0 on neither.
    mixed = _hand_scores({**ilp, (t.text, "he", "a"): 0.4, (t.text, "he", "c"): 0.0}, (t,), (TargetPair("he", "she"),), tuple(bias))
    toward_he, toward_she = leaning(mixed.attribute_table(), 5)
    assert toward_he["attribute"].tolist() == ["a"] and toward_she["attribute"].tolist() == ["b", "d"]


def test_effect_size_and_exact_permutation_p_by_hand():
    units = pd.DataFrame({"unit": list("abcd"), "group": [1, 1, 2, 2], "s": [1.0, 2.0, 3.0, 4.0]})
    d, p, p_two, exact, n = weat_statistics(units)
    # d = (1.5 - 3.5) / std([1, 2, 3, 4], ddof=1) = -2 / 1.29099
    assert d == pytest.approx(-2 / np.std([1, 2, 3, 4], ddof=1)) and d == pytest.approx(-1.549193, abs=1e-6)
    # C(4, 2) = 6 partitions; mean differences -2, -1, 0, 0, 1, 2: two reach |2| (two-sided), five exceed -2 (one-sided).
    assert exact and n == 6 and p_two == pytest.approx(2 / 6) and p == pytest.approx(5 / 6)


def test_large_sets_use_seeded_permutations():
    rng = np.random.default_rng(1)
    units = pd.DataFrame({"unit": range(60), "group": [1] * 30 + [2] * 30, "s": np.r_[rng.normal(1, 1, 30), rng.normal(0, 1, 30)]})
    first = weat_statistics(units, n_permutations=2000, seed=7)
    assert first == weat_statistics(units, n_permutations=2000, seed=7)
    d, p, p_two, exact, n = first
    assert not exact and n == 2000 and d > 0.5 and 1 / 2001 <= p < 0.01 and p <= p_two


# ---------------------------------------------------------------------------------------
# A planted bias: a model trained here must show it with the planted sign
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_planted_association_gives_kurita_scores_of_the_planted_sign():
    """The bias lab's planted-association model (group-A names with occupations X, 9 in 10):
    the same model test_bias_detection trains, found in the session's cache if it ran first."""
    from biaslens import lab

    settings = lab.scenario_settings("association")
    lm = load_model(str(lab.train_lab_model(settings).path))
    templates = [t.replace("{name}", "[T]").replace("{attribute}", "[A]") for t in settings.templates]
    pairs = [TargetPair(a, b) for a, b in zip(settings.group_a, settings.group_b)]
    x, y = settings.attributes_x, settings.attributes_y
    scores = score_templates(lm, templates, pairs, x + y)
    bias = scores.pair_frame()
    planted = np.where(bias["attribute"].isin(x), 1, -1)
    assert np.mean(np.sign(bias["bias_score"]) == planted) >= 0.9
    by_attribute = scores.bias_by_attribute()
    assert (by_attribute[list(x)] > 0).all() and (by_attribute[list(y)] < 0).all()
    assert scores.share().first == len(x)
    spec = WeatSpec("planted", "Planted", scores.templates, tuple(pairs), ("A", "B"), WordSet("X", x), WordSet("Y", y))
    result = weat_test(lm, spec, n_permutations=1000)
    assert result.effect_size > 1.2 and result.p_value == pytest.approx(1 / 1001)


# ---------------------------------------------------------------------------------------
# Tables, figures, the command line
# ---------------------------------------------------------------------------------------


def test_shares_table_carries_the_published_reference(tiny_bert):
    words = read_word_list(KURITA_LISTS / "in_demand_tech_skills", lowercase=True).words
    scores = score_templates(tiny_bert, ["[T] can do [A]"], ["he/she"], words)
    table = shares_table({"in_demand_tech_skills": scores}, {"in_demand_tech_skills": "skills"})
    row = table.iloc[0]
    assert row["n"] == 12 and row["first"] + row["second"] + row["ties"] == 12
    assert row["share_first"] == pytest.approx(100 * row["first"] / 12)
    assert row["ci_low"] <= row["share_first"] <= row["ci_high"]
    # The paper's skills share (84.0%) was measured on O*NET's 17,649 skills with bert-base-uncased: not comparable here.
    assert math.isnan(row["published_share"])
    assert row["published"] == "not comparable: 12 items; the paper's skills list has 17,649"
    datasets = bias_chart(scores.attribute_table(), scores.pairs, top=5).to_dict()["datasets"].values()
    (plotted,) = [rows for rows in datasets if "attribute" in rows[0]]
    assert len(plotted) == min(5, table.iloc[0]["first"]) + min(5, table.iloc[0]["second"])
    assert {r["side"] for r in plotted} <= {"0 more he", "1 more she"}  # keyed: drawn "more he", "more she"


@pytest.mark.parametrize(
    "data, n_skills, n_names",
    [
        pytest.param(FIXTURE_DATA, 12, 4, id="fixtures"),
        pytest.param(DATA, 25, 8, id="shared", marks=shared),
    ],
)
def test_cli_writes_lists_and_weat_tables(model_dirs, tmp_path, capsys, data, n_skills, n_names):
    out = tmp_path / "out"
    code = main([
        "kurita", "--model", str(model_dirs["bert-cased"]), "--templates", "[T] is [A].", "[T] can do [A].",
        "--targets", "he/she", "men/women", "--attributes", str(data / "kurita" / "in_demand_tech_skills"), "--lowercase",
        "--weat", "career_family", "insects_flowers", "--permutations", "500", "--data-dir", str(data), "--out", str(out),
    ])  # fmt: skip
    assert code == 0
    scores = pd.read_csv(out / "in_demand_tech_skills_scores.csv")
    assert len(scores) == 2 * 4 * n_skills and scores["attribute"].iloc[0] == "cloud computing"
    attributes = pd.read_csv(out / "in_demand_tech_skills_attributes.csv")
    assert {"bias_score", "bias[he/she]", "bias[men/women]", "ilp[women]", "attribute_multi_piece"} <= set(attributes.columns)
    assert len(attributes) == n_skills
    summary = json.loads((out / "in_demand_tech_skills_summary.json").read_text())
    assert summary["templates"] == ["[T] is [A].", "[T] can do [A]."] and summary["manifest"]["method"] == "kurita2019"
    shares = pd.read_csv(out / "shares.csv")
    assert shares["published_share"].isna().all() and shares["published"].iloc[0].startswith(f"not comparable: {n_skills} items")
    weat = pd.read_csv(out / "weat.csv").set_index("test")
    assert list(weat.index) == ["career_family", "insects_flowers"]
    assert weat.loc["career_family", "p_method"] == f"exact, {math.comb(2 * n_names, n_names):,} partitions"
    assert weat.loc["insects_flowers", "p_method"] == "500 permutations, seed 0"
    # A tiny random BERT-cased model is not the paper's bert-base-uncased: no published effect size beside it.
    assert math.isnan(weat.loc["career_family", "published_log_prob"])
    assert weat.loc["career_family", "published"] == "not comparable: model bert-cased is not the paper's bert-base-uncased"
    assert (weat["p_value"] <= 1).all() and (weat["p_two_sided"] <= 1).all()
    units = pd.read_csv(out / "weat_units.csv")
    assert len(units[units["test"] == "career_family"]) == 2 * n_names
    printed = capsys.readouterr().out
    assert f"in_demand_tech_skills: {n_skills} attributes" in printed and f"not comparable: {n_skills} items" in printed
    assert "Career/Family" in printed


@pytest.mark.parametrize(
    "extra, fragment",
    [
        ([], "Nothing to do"),
        (["--weat", "--templates", "[T] is nice.", "--attributes", "x"], "[A] exactly once"),
        (["--weat", "nope"], "invalid choice"),
        (["--attributes", "/no/such/list"], "Cannot read the attribute list"),
    ],
)
def test_cli_errors_are_one_line(extra, fragment, tmp_path, capsys):
    try:  # argparse errors exit through SystemExit, the others return the status
        code = main(["kurita", "--model", "/no/such/model", "--out", str(tmp_path), *extra])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_categories_name_the_papers_targets():
    gender = KURITA_CATEGORIES["career_family"]
    assert gender.pairs == ("he/she", "boys/girls", "men/women") and len(gender.templates) == 3
    assert KURITA_CATEGORIES["ea_aa"].pairs == ("white/black",)
    assert [c.weat for c in KURITA_CATEGORIES.values()] == ["weat1", "weat3", "weat6", "weat7", "weat8"]


def test_a_causal_model_is_refused_in_one_line_with_the_reason(tiny_gpt2):
    from biaslens.errors import InputError
    from biaslens.kurita import NO_CAUSAL_READING, score_templates

    with pytest.raises(InputError, match="not available for .*a causal model: Kurita et al.'s score reads") as info:
        score_templates(tiny_gpt2, ["[T] is a [A]."], ["he/she"], ["nurse"])
    assert NO_CAUSAL_READING in str(info.value) and "\n" not in str(info.value)

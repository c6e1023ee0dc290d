"""Convention sensitivity (`biaslens.analyses.conventions`, `biaslens conventions`): the headline is, per metric, the
pairs whose verdict changes between conventions, counted here from separate `evaluate` runs; the peer tools against each
other on their own headline scores apart from it; a convention that reads a metric as the default does is one scoring;
pairs most contested first."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from biaslens.analyses.conventions import VERDICT_PREFIX, convention_sensitivity
from biaslens.cli import main
from biaslens.data.datasets import load_dataset
from biaslens.engine.evaluation import evaluate
from biaslens.engine.metrics import CAUSAL_METRICS
from tests.support import FIXTURE_DATA

PEERS = {"lm-eval": "ll", "bias-bench": "aul_c", "oba2024": "aul_c"}


@pytest.fixture(scope="module")
def pairs():
    return list(load_dataset("crows-pairs", data_dir=FIXTURE_DATA, download=False).pairs)


@pytest.fixture(scope="module")
def report(tiny_gpt2, pairs):
    return convention_sensitivity(tiny_gpt2, pairs)


def _verdicts(result, metric):
    a, b = result.pairs[f"{metric}_stereo"].to_numpy(float), result.pairs[f"{metric}_anti"].to_numpy(float)
    return np.sign(a - b)


def _differ(a, b):
    """Verdicts that differ; two undecidable ones (NaN: SSS-c without a scored modified token) agree."""
    return ~((a == b) | (np.isnan(a) & np.isnan(b)))


def test_each_scoring_is_listed_once(report):
    """lm-eval reads every metric but its own LL exactly as the default does (the same BOS before the sentence): those
    scorings are the default's, listed once, not as duplicate `lm-eval / *` rows."""
    scorings = report.table["scoring"].tolist()
    assert [s for s in scorings if s.startswith("lm-eval")] == ["lm-eval / LL"]
    assert len(scorings) == len(set(scorings)) == 5 + 1 + 5 + 5  # default, lm-eval's LL, bias-bench, oba2024
    identical = report.sensitivity.set_index("metric")["identical"]
    assert identical["ll"] == "" and all(identical[m] == "lm-eval" for m in CAUSAL_METRICS if m != "ll")


def test_the_headline_is_per_metric_between_conventions(tiny_gpt2, pairs, report):
    """Per metric, the pairs whose verdict is not the same under every convention, from each convention's own run; a
    disagreement between two metrics of one convention is not counted."""
    runs = {c: evaluate(tiny_gpt2, pairs, list(CAUSAL_METRICS), convention=c) for c in ("default", "lm-eval", "bias-bench", "oba2024")}
    changed_any = np.zeros(len(pairs), dtype=bool)
    for row in report.sensitivity.to_dict(orient="records"):
        assert row["compares"] == "conventions" and row["n"] == len(pairs)
        verdicts = np.vstack([_verdicts(runs[c], row["metric"]) for c in runs])  # the duplicates agree: same numbers
        changed = _differ(verdicts, verdicts[0]).any(axis=0)
        assert row["changed"] == int(changed.sum()), row["name"]
        changed_any |= changed
    assert report.changed == int(changed_any.sum())
    assert report.headline().startswith(f"{int(changed_any.sum())} of {len(pairs)} pairs change verdict between conventions")
    # Every scoring of every metric, against every metric: what the old headline counted (more pairs, or as many).
    everything = np.vstack([_verdicts(runs[c], m) for c in runs for m in CAUSAL_METRICS])
    assert report.changed <= int(_differ(everything, everything[0]).any(axis=0).sum())


def test_the_tools_against_each_other_on_their_own_headline_scores(tiny_gpt2, pairs, report):
    own = {c: _verdicts(evaluate(tiny_gpt2, pairs, [m], convention=c), m) for c, m in PEERS.items()}
    expected = {("lm-eval / LL", "bias-bench / AUL-c"), ("lm-eval / LL", "oba2024 / AUL-c"), ("bias-bench / AUL-c", "oba2024 / AUL-c")}
    assert set(zip(report.tools["scoring_a"], report.tools["scoring_b"])) == expected
    for row in report.tools.to_dict(orient="records"):
        a, b = (row[k].split(" / ")[0] for k in ("scoring_a", "scoring_b"))
        assert row["flips"] == int(_differ(own[a], own[b]).sum())
    listed = report.flips[report.flips["compares"] == "tools"]  # flips.csv lists them too
    assert set(zip(listed["scoring_a"], listed["scoring_b"])) == expected
    by_pair = report.verdicts.set_index("pair_id")["tools"]
    disagree = _differ(own["lm-eval"], own["bias-bench"]) | _differ(own["lm-eval"], own["oba2024"]) | _differ(own["bias-bench"], own["oba2024"])
    assert [by_pair[p.pair_id] for p in pairs] == disagree.astype(int).tolist()


def test_pairs_come_most_contested_first(report):
    v = report.verdicts
    assert list(zip(v["flips"], v["tools"])) == sorted(zip(v["flips"], v["tools"]), reverse=True)
    # flips: over the metrics, the conventions against the metric's majority (ties: the first scoring's), added up
    for _, row in v.head(3).iterrows():
        total = 0
        for m in CAUSAL_METRICS:
            values = [str(row[VERDICT_PREFIX + s]) for s in report.table.loc[report.table["metric"] == m, "scoring"]]
            majority = max(dict.fromkeys(values), key=values.count)
            total += sum(x != majority for x in values)
        assert row["flips"] == total
    assert v["flips"].iloc[0] > 0


def test_a_masked_model_compares_its_metrics(tiny_bert, pairs):
    report = convention_sensitivity(tiny_bert, pairs[:6])
    assert report.tools.empty and report.sensitivity["compares"].tolist() == ["metrics"]
    assert report.sensitivity["scorings"].iloc[0] == "AUL, CPS, PLL, PLL-word-l2r"
    assert set(report.flips["compares"]) == {"metrics"}
    assert report.headline().endswith("between AUL, CPS, PLL and PLL-word-l2r.")


def test_the_command_prints_the_headline_and_writes_it(causal_dirs, pairs, tmp_path, capsys):
    out = tmp_path / "conv"
    argv = ["conventions", "--model", str(causal_dirs["gpt2"]), "--dataset", "crows-pairs", "--data-dir", str(FIXTURE_DATA)]
    assert main([*argv, "--no-download", "--no-cache", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "Convention sensitivity: per metric, the pairs whose verdict changes between the conventions" in captured.out
    assert "The tools on their own headline scores" in captured.out and "lm-eval / LL vs bias-bench / AUL-c" in captured.out
    assert "pairs change verdict between conventions under at least one metric" in captured.err
    assert "between scorings" not in captured.err  # the old headline, metrics and conventions mixed
    saved = pd.read_csv(out / "pairs.csv")
    assert saved["flips"].is_monotonic_decreasing
    assert not any(s.startswith("lm-eval / AUL") for s in pd.read_csv(out / "conventions.csv")["scoring"])
    sensitivity = pd.read_csv(out / "sensitivity.csv")
    assert sensitivity["name"].tolist() == ["LL", "AUL-c", "AULA-c", "CPS-c", "SSS-c"]
    written = json.loads((out / "conventions.json").read_text())
    assert written["sensitivity"][1]["changed"] == sensitivity["changed"].iloc[1] and len(written["tools"]) == 3


# ---------------------------------------------------------------------------------------
# oba2024's own pairs: Oba et al.'s notebook keeps CrowS-Pairs' gender pairs only
# ---------------------------------------------------------------------------------------


def _gender(pairs):
    """Their notebook's filter, written from it: `example['bias_type'] == 2` of the Hugging Face crows_pairs, whose
    bias_type names are race-color, socioeconomic, gender, ...: index 2 is gender."""
    names = ["race-color", "socioeconomic", "gender", "disability", "nationality", "sexual-orientation", "physical-appearance", "religion", "age"]
    return [p for p in pairs if names.index(p.bias_type) == 2]


def test_oba2024_offers_its_gender_pairs_and_says_it(tiny_gpt2, pairs):
    from tests.engine import causal_reference as ref

    theirs = _gender(pairs)
    assert 0 < len(theirs) < len(pairs)
    oba = ref.oba_evaluate(tiny_gpt2.model, tiny_gpt2.tokenizer, theirs)
    kept = evaluate(tiny_gpt2, pairs, ["aul_c"], convention="oba2024", peer_pairs=True)
    assert kept.pairs["pair_id"].tolist() == [p.pair_id for p in theirs]
    block = kept.summary["convention"]
    assert block["statistics"]["acc_score"] == oba["acc_score"] and block["statistics"]["rbs"] == pytest.approx(oba["rbs"], abs=1e-5)
    assert block["peer_pairs"]["kept"] and "this run scored those" in block["peer_pairs"]["note"]
    every = evaluate(tiny_gpt2, pairs, ["aul_c"], convention="oba2024")  # every pair by default, and their numbers beside
    peer = every.summary["convention"]["peer_pairs"]
    assert len(every.pairs) == len(pairs) and (peer["pairs"], peer["of"], peer["kept"]) == (len(theirs), len(pairs), False)
    assert peer["statistics"]["acc_score"] == oba["acc_score"] and peer["statistics"]["rbs"] == pytest.approx(oba["rbs"], abs=1e-5)
    assert "gender pairs only" in peer["note"] and "--peer-pairs" in peer["note"]
    assert "peer_pairs" not in evaluate(tiny_gpt2, pairs[:3], ["ll"], convention="lm-eval").summary["convention"]


def test_peer_pairs_are_refused_where_there_are_none(tiny_gpt2, pairs, causal_dirs, tmp_path, capsys):
    from biaslens.engine.options import RunOptions
    from biaslens.errors import InputError

    with pytest.raises(InputError, match="The lm-eval convention scores every pair: only oba2024 has peer pairs"):
        evaluate(tiny_gpt2, pairs, ["ll"], convention="lm-eval", peer_pairs=True)
    with pytest.raises(InputError, match="The default convention scores every pair"):
        RunOptions(peer_pairs=True)  # before any model loads
    with pytest.raises(InputError, match="No gender pairs here"):
        evaluate(tiny_gpt2, [p for p in pairs if p.bias_type != "gender"], ["aul_c"], convention="oba2024", peer_pairs=True)
    argv = ["evaluate", "--model", str(causal_dirs["gpt2"]), "--dataset", "crows-pairs", "--data-dir", str(FIXTURE_DATA), "--no-download"]
    assert main([*argv, "--no-cache", "--convention", "oba2024", "--metrics", "aul_c", "--out", str(tmp_path / "a")]) == 0
    assert f"this run scored every pair ({len(_gender(pairs))} of {len(pairs)} are gender)" in capsys.readouterr().out
    assert main([*argv, "--no-cache", "--convention", "oba2024", "--peer-pairs", "--out", str(tmp_path / "b")]) == 0
    assert len(pd.read_csv(tmp_path / "b" / "pairs.csv")) == len(_gender(pairs))
    assert main([*argv, "--peer-pairs", "--out", str(tmp_path / "c")]) == 2
    assert "only oba2024 has peer pairs" in capsys.readouterr().err

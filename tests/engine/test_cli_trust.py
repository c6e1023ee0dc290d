"""Issue 33 on the command line and in the JSON: control pairs beside every bias score, mlm-bias's measures, rank
stability and relative bias in `compare`, each against the library computed independently."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.analyses import controls, mlm_bias, stability
from biaslens.analyses.paired import wins
from biaslens.cli import main
from biaslens.data.datasets import load_dataset
from biaslens.engine.evaluation import evaluate
from biaslens.engine.stats import bias_score
from tests.support import FIXTURE_DATA

DATA = ["--dataset", "crows-pairs", "--data-dir", str(FIXTURE_DATA), "--no-download", "--no-cache"]


def test_evaluate_with_controls_and_mlm_bias(model_dirs, tiny_bert, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["evaluate", "--model", str(model_dirs["bert-cased"]), *DATA, "--metrics", "aul,cps", "--controls", "--mlm-bias", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "control pairs [95% CI]" in printed and "mlm-bias measures" in printed and "CRRA" in printed
    summary = json.loads((out / "summary.json").read_text())
    data = load_dataset("crows-pairs", data_dir=str(FIXTURE_DATA), download=False)
    # The control score beside each bias score: the control pairs scored on their own, counted here.
    found = controls.control_pairs(data, seed=0)
    control = evaluate(tiny_bert, list(found.pairs), ["aul", "cps"])
    for m in ("aul", "cps"):
        counts = bias_score(control.pairs[f"{m}_stereo"], control.pairs[f"{m}_anti"])
        entry = summary["metrics"][m]["controls"]
        assert (entry["bias_score"], entry["ci_low"], entry["ci_high"], entry["n"]) == (counts.score, counts.ci_low, counts.ci_high, counts.n)
        assert entry["off_50"] == (counts.ci_low > 50 or counts.ci_high < 50)
        assert controls.control_text(entry) in printed
    assert summary["controls"]["pairs"] == len(found.pairs) and summary["controls"]["seed"] == 0
    assert pd.read_csv(out / "control_swaps.csv")["control"].tolist() == found.swaps["control"].tolist()
    assert len(pd.read_csv(out / "controls.csv")) == len(found.pairs)
    # mlm-bias's measures: the same as the analysis run directly.
    direct = mlm_bias.mlm_bias_scores(tiny_bert, data)
    for r in direct.scores.to_dict(orient="records"):
        assert summary["mlm_bias"]["measures"][r["measure"]]["bias_score"] == pytest.approx(r["bias_score"])
    saved = pd.read_csv(out / "mlm_bias.csv")
    assert saved["crr_stereo"].tolist() == pytest.approx(direct.pairs["crr_stereo"].tolist())


def test_controls_refuse_a_dataset_that_is_not_english_before_the_model_loads(tmp_path, capsys):
    argv = ["evaluate", "--model", str(tmp_path / "no-model-here"), "--dataset", "crows-pairs-fr", "--data-dir", str(FIXTURE_DATA)]
    code = main([*argv, "--no-download", "--controls", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "English only" in err and "French" in err and len(err.strip().splitlines()) == 1


def test_compare_with_rank_stability_and_relative_bias(model_dirs, tiny_models, tmp_path, capsys):
    names = [str(model_dirs["bert-cased"]), str(model_dirs["roberta"]), str(model_dirs["albert"])]
    out = tmp_path / "cmp"
    argv = ["compare", "--model", *names, *DATA, "--metrics", "aul", "--resamples", "300", "--mlm-bias", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Rank stability (Selvam et al. 2023)" in printed and "P(row scores above column)" in printed
    assert "Relative bias of model 2 against model 1" in printed
    saved = json.loads((out / "comparison.json").read_text())
    assert saved["models"] == names and len(pd.read_csv(out / "comparison.csv")) == 2  # two models against the first
    data = load_dataset("crows-pairs", data_dir=str(FIXTURE_DATA), download=False)
    results = {n: evaluate(tiny_models[f], data, ["aul"]) for n, f in zip(names, ("bert-cased", "roberta", "albert"))}
    want = stability.rank_stability({n: wins(r.pairs, "aul") for n, r in results.items()}, n_resamples=300, seed=0)
    got = saved["stability"]["aul"]
    assert got["pairwise"] == want.pairwise.to_dict(orient="records") and got["scores"] == want.scores.to_dict(orient="records")
    assert len(pd.read_csv(out / "stability.csv")) == 3
    first = mlm_bias.mlm_bias_scores(tiny_models["bert-cased"], data)
    second = mlm_bias.mlm_bias_scores(tiny_models["roberta"], data)
    relative = mlm_bias.relative_bias(first, second)
    saved_relative = pd.DataFrame(saved["mlm_bias"]["relative"])
    mine = saved_relative[saved_relative["model_2"] == names[1]].reset_index(drop=True)
    assert mine["relative_bias"].tolist() == pytest.approx(relative["relative_bias"].tolist())
    # By bias type: the types need two or more to resample by.
    assert main([*argv[:-2], "--stability", "types", "--out", str(tmp_path / "t")]) == 0

"""`biaslens evaluate` and `biaslens datasets` on the multiple-choice datasets: files, printed statistics, one-line refusals."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.cli import main
from tests.support import FIXTURE_DATA


def test_evaluate_bbq_prints_lm_evals_statistics_and_writes_its_files(causal_dirs, tmp_path, capsys):
    out = tmp_path / "bbq"
    argv = ["evaluate", "--model", str(causal_dirs["gpt2"]), "--dataset", "bbq-age", "--data-dir", str(FIXTURE_DATA), "--no-download"]
    assert main([*argv, "--convention", "lm-eval", "--no-cache", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "lm-evaluation-harness (lm-eval, arg-max log-likelihood): 6 items" in printed
    for name in ("acc", "accuracy_amb", "accuracy_disamb", "amb_bias_score", "disamb_bias_score"):
        assert f"\n{name} " in printed
    assert "Age " in printed and "wrote items.csv, choices.csv, tokens.csv, breakdown.csv, flips.csv, summary.json" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["conventions"]) == ["lm-eval"] and summary["dataset"]["name"] == "bbq-age"
    assert summary["manifest"]["sanity"]["status"] and summary["manifest"]["model_type"] == "gpt2"
    items = pd.read_csv(out / "items.csv")
    assert len(items) == 6 and {"lm-eval:answer", "lm-eval:correct", "lm-eval:margin"} <= set(items.columns)
    assert len(pd.read_csv(out / "tokens.csv")) >= 6 * 12


def test_evaluate_winogender_every_convention_from_a_folder(causal_dirs, tmp_path, capsys):
    out = tmp_path / "wino"
    argv = ["evaluate", "--model", str(causal_dirs["gpt2"]), "--dataset", str(FIXTURE_DATA / "winogender"), "--convention", "all"]
    assert main([*argv, "--limit", "12", "--no-cache", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "acc_gotcha_female" in printed and "lm-eval-norm" in printed and "items whose answer flips: lm-eval vs lm-eval-norm" in printed
    assert json.loads((out / "summary.json").read_text())["dataset"]["items"] == 12


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metrics", "aul"], "--metrics applies to sentence pairs"),
        (["--first-token", "none"], "--first-token applies to sentence pairs"),
        (["--convention", "original"], "The original convention does not apply to winogender"),
        (["--convention", "bias-bench"], "Unknown convention 'bias-bench' for a multiple-choice dataset"),
    ],
)
def test_one_line_refusals(causal_dirs, tmp_path, capsys, extra, message):
    argv = ["evaluate", "--model", str(causal_dirs["gpt2"]), "--dataset", "winogender", "--data-dir", str(FIXTURE_DATA), "--out", str(tmp_path / "o")]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "Loading" not in err  # refused before the model loads


def test_a_pairs_command_refuses_a_multiple_choice_dataset(model_dirs, tmp_path, capsys):
    argv = ["conventions", "--model", str(model_dirs["bert-cased"]), "--dataset", "bbq-age"]
    assert main([*argv, "--data-dir", str(FIXTURE_DATA), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "BBQ, Age is a multiple-choice dataset, not sentence pairs" in err and "Traceback" not in err


def test_datasets_lists_bbq_and_winogender(capsys):
    assert main(["datasets", "--data-dir", str(FIXTURE_DATA)]) == 0
    printed = capsys.readouterr().out
    assert "bbq                     11 of 11 files in" in printed and "winogender              2 of 2 files in" in printed
    assert "bbq-ambig" in printed and "winogender-gotcha-female" in printed


def test_compare_two_models_on_bbq(causal_dirs, tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "--model", str(causal_dirs["gpt2"]), str(causal_dirs["pythia"]), "--dataset", "bbq-age", "--data-dir", str(FIXTURE_DATA)]
    assert main([*argv, "--convention", "original", "--resamples", "200", "--no-cache", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "BBQ, Age, 6 items, BBQ (Parrish et al.) (original)." in printed and "McNemar p" in printed and "disamb_bias_score difference" in printed
    assert {p.name for p in out.iterdir()} == {"comparison.csv", "comparison.json", "flips.csv"}
    assert json.loads((out / "comparison.json").read_text())["paired"][0]["items"] == 6

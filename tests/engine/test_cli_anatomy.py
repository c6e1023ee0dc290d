"""`biaslens anatomy`: the three files of the issue with their columns, the summary, and refusals in one line (exit 2)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biaslens.cli.main import main

A, B = "The nurse said she was tired.", "The nurse said he was tired."


@pytest.mark.parametrize("which", ["masked", "causal"])
def test_anatomy_writes_the_three_views(model_dirs, causal_dirs, tmp_path, capsys, which):
    folder = model_dirs["bert-cased"] if which == "masked" else causal_dirs["gpt2"]
    out = tmp_path / "out"
    assert main(["anatomy", "--model", str(folder), A, B, "--out", str(out), "--steps", "16"]) == 0
    printed = capsys.readouterr().out
    assert ("AUL margin" if which == "masked" else "LL margin") in printed
    assert "completeness error" in printed and "margin per layer" in printed
    attribution = pd.read_csv(out / "attribution.csv")
    assert list(attribution.columns) == ["sentence", "position", "token", "text", "method", "value"]
    assert set(attribution["sentence"]) == {"stereo", "anti", "difference"}
    assert set(attribution["method"]) == {"integrated_gradients", "gradient_x_input"}
    lens = pd.read_csv(out / "logit_lens.csv")
    assert list(lens.columns) == ["sentence", "layer", "position", "token", "text", "logp"]
    assert sorted(lens["layer"].unique()) == [0, 1, 2]  # embeddings and the tiny models' two layers
    heads = pd.read_csv(out / "heads.csv")
    assert list(heads.columns) == ["layer", "head", "margin_change", "aula_share"]
    assert len(heads) == 4 and heads["aula_share"].notna().all()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metric"] == ("aul" if which == "masked" else "ll")
    assert len(summary["margin_per_layer"]) == 3
    assert summary["margin_per_layer"][-1] == pytest.approx(summary["margin"], abs=1e-5)
    assert summary["manifest"]["view"] == "anatomy"


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--steps", "0"], "n_steps must be"),
        (["--metric", "ll"], "not 'll'"),
    ],
)
def test_anatomy_refuses_in_one_line(model_dirs, tmp_path, capsys, extra, fragment):
    assert main(["anatomy", "--model", str(model_dirs["bert-cased"]), A, B, "--out", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert fragment in err[-1] and "Traceback" not in "\n".join(err)


def test_anatomy_refuses_a_non_pair_before_loading(tmp_path, capsys):
    assert main(["anatomy", "--model", str(tmp_path / "no-such-model"), A, A, "--out", str(tmp_path / "o")]) == 2
    assert "Loading" not in capsys.readouterr().err

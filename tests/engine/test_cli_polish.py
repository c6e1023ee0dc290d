"""Issue 40 item 12: what the commands and tables print, written for people."""

from __future__ import annotations

import pandas as pd

from biaslens.cli.evaluate import convention_line
from biaslens.cli.score import summary
from biaslens.figures.formatting import column_label


def test_a_convention_s_statistics_are_rounded_for_reading():
    block = {"name": "lm-evaluation-harness", "key": "lm-eval", "metric": "ll", "first_token": "bos"}
    line = convention_line({**block, "statistics": {"acc": 0.46949602122015915, "likelihood_diff": 3.14159, "n": 377}})
    assert "acc 0.4695," in line and "likelihood_diff 3.14," in line and line.endswith("n 377")


def test_the_score_printout_heads_each_column_once():
    sequences = pd.DataFrame(
        {"text_id": [0], "scored_tokens": [4], "logprob_sum": [-8.0], "logprob_mean": [-2.0], "score": [-2.0], "text": ["Hi there."]}
    )
    head = summary(sequences.assign(unit="nats", reduction="mean")).splitlines()[0].split()
    assert head == ["id", "tokens", "log", "p", "sum", "log", "p", "mean", "text"]  # the mean once, "text" once
    bits = summary(sequences.assign(unit="bits", reduction="mean")).splitlines()[0]
    assert "mean (bits)" in bits and bits.split().count("text") == 1


def test_every_interval_is_headed_95_percent_ci():
    assert column_label("ci_low") == "95% CI low" and column_label("control_ci_high") == "Control 95% CI high"


def test_inspect_prints_a_causal_model_s_own_columns_and_its_tokens_as_text(causal_dirs, capsys):
    """Issue 40 items 7 and 8: `inspect` printed a cps_logprob column of NaN for a causal model, its BOS ranked 0, and
    byte-level tokens raw ("ĠcafÃ©")."""
    from biaslens.cli.main import main

    assert main(["inspect", "--model", str(causal_dirs["gpt2"]), "Women can't drive a café.", "Men can't drive a café."]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.strip().startswith("position")).split()
    assert "cps_logprob" not in head and "cps_c_logprob" in head and "sss_c_logprob" in head
    bos = next(line for line in out.splitlines() if "<|endoftext|>" in line).split()
    assert bos[head.index("rank")] == "—"  # nothing predicts it: no rank, never 0
    assert "Ã" not in out and "Ġ" not in out and "é" in out


def test_biaslens_help_and_models_name_both_kinds(capsys):
    from biaslens.cli.main import main

    assert main(["models"]) == 0
    assert "masked or causal LM" in capsys.readouterr().out
    from biaslens.cli.main import build_parser

    assert "masked and causal language models" in build_parser().format_help()

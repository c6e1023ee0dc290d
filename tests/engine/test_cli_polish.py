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

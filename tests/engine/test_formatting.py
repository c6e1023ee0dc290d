"""biaslens.figures.formatting: a margin's written sign agrees with its verdict; table headers for people."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from biaslens.analyses.explore import verdicts
from biaslens.figures.formatting import column_label, format_margin, margin_decimals, margin_printf


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (-3e-6, "-0.000003"),  # AULA: "-0.0000" beside "anti-stereotypical" (issue 23, item 5)
        (4.2e-7, "+0.0000004"),
        (0.12345, "+0.1235"),
        (-12.34567, "-12.3457"),
        (0.0, "0.0000"),  # only an exact tie shows no sign
        (-1e-300, "-1.0e-300"),
        (math.nan, "—"),
    ],
)
def test_a_margin_shows_the_digits_its_sign_needs(value, shown):
    assert format_margin(value) == shown


def test_an_unsigned_margin_is_its_size():
    assert format_margin(-3e-6, signed=False) == "0.000003"
    assert format_margin(0.5, signed=False) == "0.5000"


@given(st.floats(allow_nan=False, allow_infinity=False), st.floats(allow_nan=False, allow_infinity=False))
def test_the_written_margin_agrees_with_the_verdict(stereo, anti):
    margin = stereo - anti
    if math.isinf(margin):
        return
    verdict = verdicts([stereo], [anti])[0]
    shown = format_margin(margin)
    expected = {"stereo": "+", "anti": "-", "tie": ""}[verdict]
    assert shown[0] in "+-" if expected else shown[0].isdigit()
    assert shown.startswith(expected)
    assert float(shown) != 0 or verdict == "tie"


def test_a_column_of_margins_gets_the_decimals_its_smallest_needs():
    assert margin_decimals([0.5, -0.25]) == 4
    assert margin_decimals([0.5, -3e-6, math.nan]) == 6
    assert margin_printf([0.5, -3e-6]) == "%+.6f"
    assert margin_printf([0.5, 1e-300]) == "%+.1e"


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("bias_type", "Bias type"),
        ("ci_low", "95% CI low"),
        ("ci_high", "95% CI high"),
        ("model", "Model"),
        ("mcnemar_method", "Test"),
        ("direction", "Direction"),
        ("aul_margin", "AUL margin"),
        ("all_masked_verdict", "All Masked prefers"),
        ("pll_word_l2r_stereo", "PLL-word-l2r stereo"),
        ("margin (roberta)", "Margin (roberta)"),
        ("count_unknown_thing", "Count unknown thing"),
        ("AUL (CP)", "AUL (CP)"),
        ("roberta", "roberta"),  # a model's name (a comparison's column) stays as it is
        ("roberta − bert-cased", "roberta − bert-cased"),
    ],
)
def test_column_labels_are_for_people(name, label):
    assert column_label(name) == label


def test_the_cli_inspect_output_writes_a_tiny_margin_with_its_sign(model_dirs, capsys, monkeypatch):
    """`biaslens inspect` prints the margin through `format_margin`: an AULA margin of -3e-6 is not "-0.0000"."""
    import pandas as pd

    from biaslens.cli.main import main
    from biaslens.engine.evaluation import PairInspection

    original = PairInspection.summary_frame

    def with_a_tiny_margin(self) -> pd.DataFrame:
        frame = original(self)
        frame.loc[frame["key"] == "aula", ["margin", "verdict"]] = [-3e-6, "anti"]
        return frame

    monkeypatch.setattr(PairInspection, "summary_frame", with_a_tiny_margin)
    assert main(["inspect", "--model", str(model_dirs["bert-cased"]), "Women can't drive.", "Men can't drive.", "--metrics", "aul,aula"]) == 0
    scores = capsys.readouterr().out.rsplit("\n\n", 1)[-1]
    aula = next(line for line in scores.splitlines() if line.split()[:1] == ["AULA"])
    assert "-0.000003" in aula and "-0.0000 " not in aula + " "


def test_margins_shown_together_share_one_number_of_decimals():
    """Issue 30, item 7: a flipped-pairs table showed one model's margins with 5 decimals and the other's with 6."""
    from biaslens.figures.formatting import margin_formatter

    write = margin_formatter([0.00004, -0.0000004, 0.12, float("nan"), 0.0])
    assert [write(v) for v in (0.00004, -0.0000004, 0.12)] == ["+0.0000400", "-0.0000004", "+0.1200000"]
    assert write(float("nan")) == "—" and write(None) == "—" and write(0.0) == "0.0000000"
    tiny = margin_formatter([3e-15, 0.5])
    assert tiny(3e-15) == "+3.0e-15" and tiny(0.5) == "+5.0e-01"  # scientific for all when one needs it (= margin_printf)


@given(st.floats(-1e3, 1e3, allow_nan=False), st.integers(2, 8))
def test_a_share_is_never_written_as_a_signed_zero(value, decimals):
    from biaslens.figures.formatting import format_share

    written = format_share(value, decimals)
    if value == 0:
        assert written == "0"
    else:
        assert float(written) != 0 and (written[0] == "+") == (value > 0)

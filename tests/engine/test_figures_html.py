"""The inspector's HTML figures (biaslens.figures.html): scales, bars, tooltips, escaping."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from biaslens.analyses import explore
from biaslens.figures import charts as figures, html as figures_html


def aligned_rows(*rows) -> pd.DataFrame:
    """A hand-made `figures.aligned_token_frame`: rows of (row label, kind, {side: (token, logprob, rank, cps)})."""
    out = []
    for order, (row, kind, sides) in enumerate(rows):
        for side, (token, logprob, rank, cps) in sides.items():
            out.append(
                {
                    "sentence": side,
                    "position": order + 1,
                    "label": token,
                    "row": row,
                    "order": order,
                    "kind": kind,
                    "side_name": figures.SIDE_NAMES[side],
                    "logprob": logprob,
                    "rank": rank,
                    "attention": 0.5,
                    "aula_contribution": logprob / 4,
                    "cps_logprob": cps,
                    "top5": f"{token}? (-1.00)",
                }
            )
    return pd.DataFrame(out)


SIMPLE = aligned_rows(
    ("the", "shared", {"stereo": ("the", -6.0, 10, -7.0), "anti": ("the", -3.0, 1, -2.0)}),
    ("she / he", "modified", {"stereo": ("she", -9.0, 100, float("nan")), "anti": ("he", -12.0, 1000, float("nan"))}),
)


def bars(html: str) -> list[tuple[str, float, float, str]]:
    """Every bar: (class, left %, width %, colour)."""
    found = re.findall(r'<i class="(bl-[sad])" style="left:([\d.]+)%;width:([\d.]+)%;background:(#[0-9A-Fa-f]{6})"', html)
    return [(c, float(left), float(width), color) for c, left, width, color in found]


def test_aligned_tokens_html_escapes_and_wraps(pair_inspection):
    cols = explore.aligned_columns(pair_inspection)
    html = figures_html.aligned_tokens_html(cols)
    assert html.count("bl-mod bl-stereo") == 2 and html.count("bl-mod bl-anti") == 3
    assert html.count("bl-tok bl-gap") == 1
    assert html.count('<div class="bl-col">') == len(cols)  # one wrapping column per aligned position: never overflows
    evil = cols.assign(stereo_token=["<script>"] * len(cols))
    assert "<script>" not in figures_html.aligned_tokens_html(evil).split("</style>", 1)[1]


def test_nice_ticks_are_round_and_cover_the_values():
    assert figures_html.nice_ticks(-12.3, 0, 5) == (-14.0, 0.0, [-14.0, -12.0, -10.0, -8.0, -6.0, -4.0, -2.0, 0.0])
    assert figures_html.nice_ticks(0, 0.0213, 4) == (0.0, 0.025, [0.0, 0.005, 0.01, 0.015, 0.02, 0.025])
    assert figures_html.nice_ticks(0, 0) == (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0])  # no range: a unit one
    assert figures_html.nice_ticks(5, -5, 2)[:2] == (-5.0, 5.0)  # ends in either order
    with pytest.raises(ValueError):
        figures_html.nice_ticks(0, math.inf)


@given(st.floats(-1e6, 1e6, allow_nan=False), st.floats(1e-6, 1e6, allow_nan=False), st.integers(1, 8))
@example(-1e-05, 7070.0, 1)  # a value a billionth of a step below zero: the domain starts at zero
@example(879609.9999999999, 1e-06, 4)  # far from zero the quotient low / step is rounded up: the end moves out a step
def test_nice_ticks_property(low, span, count):
    high = low + span
    start, stop, ticks = figures_html.nice_ticks(low, high, count)
    steps = np.diff(ticks)
    slack = 2e-9 * steps[0]  # a value within a billionth of a tick step of a round end counts as on it (float noise)
    assert start <= low + slack and stop >= high - slack
    assert len(ticks) >= 2 and np.allclose(steps, steps[0], rtol=1e-6)  # evenly spaced: the grid is one repeating pattern
    assert len(ticks) <= 2 * count + 3


def test_tick_labels_carry_the_decimals_of_their_step_and_a_real_minus():
    assert figures_html.format_tick(-0.004, 0.002) == "−0.004"
    assert figures_html.format_tick(0.0, 0.002) == "0.000" and figures_html.format_tick(-0.0, 0.5) == "0.0"
    assert figures_html.format_tick(-1000, 500) == "−1,000"


def test_bars_start_at_zero_on_one_axis_per_measure():
    html = figures_html.token_bars_html(SIMPLE, ["logprob"])
    # log p from -12 to 0: the axis runs from -12 to 0, so -6 is half the width, from the zero line at the right.
    assert bars(html) == [
        ("bl-s", 50.0, 50.0, figures.PALE_STEREO_COLOR),  # the (shared) stereotypical token: pale
        ("bl-a", 75.0, 25.0, figures.PALE_ANTI_COLOR),
        ("bl-s", 25.0, 75.0, figures.STEREO_COLOR),  # a modified pair: full colour
        ("bl-a", 0.0, 100.0, figures.ANTI_COLOR),
    ]
    assert html.count('class="bl-row bl-data"') == 2 and '<span class="bl-zero" style="left:100.00%">' in html
    assert '<b class="bl-stereo-c">she</b> / <b class="bl-anti-c">he</b>' in html  # the modified row, in both colours
    assert html.count('<b class="bl-first"') == 2  # ticks above and below the rows


def test_measures_sit_side_by_side_and_missing_values_draw_no_bar():
    html = figures_html.token_bars_html(SIMPLE, ["logprob", "cps_logprob"])
    assert "grid-template-columns:minmax(3rem,max-content) minmax(0,1fr) minmax(0,1fr)" in html
    assert len(bars(html)) == 4 + 2  # CPS does not mask the modified tokens: no bar for them
    with pytest.raises(ValueError, match="unknown measures"):
        figures_html.token_bars_html(SIMPLE, ["nonsense"])


def test_ranks_are_drawn_on_a_log_scale_from_one():
    html = figures_html.token_bars_html(SIMPLE, ["rank"])
    widths = [width for _, left, width, _ in bars(html)]
    assert widths == [33.33, 0.25, 66.67, 100.0]  # decades 1..1000, in % of the width; rank 1 a sliver
    assert [label for label in re.findall(r'<b class="bl-\w+" style="left:[\d.]+%">([^<]+)</b>', html)][:4] == ["1", "10", "100", "1k"]


def test_a_row_s_tooltip_holds_every_measure_of_both_tokens_and_is_escaped():
    evil = aligned_rows(("<img src=x>", "shared", {"stereo": ("<img src=x>", -1.0, 2, -1.5), "anti": ("<img src=x>", -2.0, 3, -2.5)}))
    html = figures_html.token_bars_html(evil, ["logprob"])
    assert "<img" not in html.split("</style>", 1)[1]
    tooltip = re.search(r'<div class="bl-row bl-data" title="([^"]*)"', html).group(1)
    assert "log p (AUL term) −1.000" in tooltip and "rank of the token 3" in tooltip and "CPS masked log p −2.500" in tooltip
    assert "top-5: &lt;img src=x&gt;? (-1.00)" in tooltip and "&#10;" in tooltip  # one line per sentence


def test_the_chart_of_a_real_pair(pair_inspection, tiny_bert):
    tokens = explore.token_table(pair_inspection, tiny_bert.decode_token)
    aligned = figures.aligned_token_frame(explore.aligned_columns(pair_inspection), tokens)
    html = figures_html.token_bars_html(aligned, list(figures.TOKEN_MEASURES))
    assert html.count('class="bl-row bl-data"') == aligned["row"].nunique()
    assert len(bars(html)) == sum(aligned[m].notna().sum() for m in figures.TOKEN_MEASURES)


def test_drivers_push_right_towards_the_stereotypical_sentence(pair_inspection):
    drivers = explore.margin_drivers(pair_inspection, "aul")
    html = figures_html.drivers_bars_html(drivers, "AUL: margin <b>", top=3)
    shown = drivers.head(3)
    for (css, left, _width, color), value in zip(bars(html), shown["contribution"]):
        assert css == "bl-d" and color == (figures.STEREO_COLOR if value > 0 else figures.ANTI_COLOR)
        assert (left == 50.0) == (value >= 0)
    largest = shown["contribution"].abs().max()
    assert max(width for *_, width, _ in bars(html)) == pytest.approx(50.0, abs=0.01) and largest > 0
    assert "AUL: margin &lt;b&gt;" in html and f"the 3 largest of {len(drivers)} tokens" in html
    values = re.findall(r'<div class="bl-val">([^<]+)</div>', html)
    assert len(values) == 3 and all(v[0] in "+−" for v in values)


def test_a_static_table_is_plain_html_with_full_values():
    frame = pd.DataFrame({"Metric": ["AUL", "<b>x</b>"], "Score": [-1.234567891, np.nan], "N": [3, 4]})
    html = figures_html.table_html(frame, {"Score": "{:+.4f}"})
    body = html.split("</style>", 1)[1]
    assert "<b>x</b>" not in body and "&lt;b&gt;x&lt;/b&gt;" in body
    assert '<td class="bl-num" data-value="-1.234567891">-1.2346</td>' in body
    assert '<td class="bl-num"></td>' in body  # a missing value is a blank cell, never "None" or "nan"
    assert '<th scope="col" class="bl-num">N</th>' in body and '<td class="bl-num" data-value="4">4</td>' in body


def test_a_static_table_puts_its_key_columns_first_in_sight_and_formats_by_function():
    from biaslens.figures.formatting import format_margin

    frame = pd.DataFrame({"Metric": ["AULA"], "Margin": [-3e-6], "Several pieces": [True]})
    html = figures_html.table_html(frame, {"Margin": format_margin}, key=2, help={"Margin": 'stereo − anti "in" log p'})
    body = html.split("</style>", 1)[1]
    assert body.startswith('<div class="bl-table-wrap">')  # a table ever wider than the page scrolls, with a visible bar
    assert '<th scope="col" class="bl-key">Metric</th>' in body
    assert '<th scope="col" class="bl-num bl-key" title="stereo − anti &quot;in&quot; log p">Margin</th>' in body
    assert '<td class="bl-num bl-key" data-value="-3e-06">-0.000003</td>' in body  # never -0.0000 beside "anti"
    assert "<td>yes</td>" in body


def test_what_drives_the_difference_never_shows_a_signed_zero():
    """Issue 30, item 7: "+0.0000" / "−0.0000" beside AULA's −0.000006; a share that is not 0 shows its digits, 0 is "0"."""
    import re

    import pandas as pd

    drivers = pd.DataFrame(
        {
            "label": ["black", "the", "boy", "."],
            "kind": ["modified", "shared", "shared", "shared"],
            "stereo_share": [0.3, 2e-6, -6e-6, 0.0],
            "anti_share": [0.1, 0.0, 0.0, 0.0],
            "contribution": [0.2, 2e-6, -6e-6, 0.0],
        }
    )
    html = figures_html.drivers_bars_html(drivers, "AUL: margin +0.2000")
    values = re.findall(r'<div class="bl-val">([^<]*)</div>', html)
    assert values == ["+0.2000", "+0.000002", "−0.000006", "0"]
    assert not re.search(r"[+−]0\.0+(?!\d*[1-9])\b", html)  # no signed zero anywhere, tooltips included

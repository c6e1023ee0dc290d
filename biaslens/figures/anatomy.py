"""The anatomy views drawn (biaslens.anatomy): attribution strips (HTML), the logit lens and the heads (Altair), and the
slide that puts them on one picture.

* `attribution_strips_html`: the two sentences aligned token by token (`figures.strips.align_strips`) and a third strip
  of their difference on the shared tokens, each token shaded by its attribution on a diverging scale (vermillion: it
  raises the sentence's score, blue: it lowers it; the same scale for all three strips), the value under it.
* `lens_heatmap`: token x layer, coloured by log p; `lens_margin_chart`: the margin at every layer.
* `heads_heatmap`: layer x head, coloured by a column of `HeadEffects.frame()` (margin change or AULA share), diverging
  around 0.
* `anatomy_slide`: the pair's sentences, the lens's margin and both head heatmaps at fixed widths, for `to_png` / `to_svg`.

Each token is drawn as the text it covers (`texts`, "café", not "ĠcafÃ©"); tokens are data behind keys (`charts.keyed`)
and escaped in HTML, never markup or Vega names.
"""

from __future__ import annotations

import html
import math
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from biaslens.anatomy.attribution import PairAttribution
from biaslens.anatomy.heads import HeadEffects
from biaslens.anatomy.lens import PairLens, SentenceLens
from biaslens.figures.charts import (
    ANTI_COLOR,
    SIDE_NAMES,
    STEREO_COLOR,
    _key_axis,
    _style,
    _unstyled,
    keyed,
    safe_title,
    slide_sentence,
)
from biaslens.figures.strips import align_strips

#: Titles of the head heatmaps' columns.
HEAD_VALUES = {"margin_change": "margin change when the head is zeroed", "aula_share": "share of the AULA margin"}

_STYLE = (
    "<style>"
    ".bl-astrips{display:flex;flex-wrap:wrap;align-items:flex-start;row-gap:0.8rem;column-gap:3px;margin:0.3rem 0 0.4rem 0}"
    ".bl-acol{display:flex;flex-direction:column;gap:4px}"
    ".bl-acell{display:flex;flex-direction:column;align-items:center;justify-content:center;min-width:1.6rem;height:2.55rem;"
    "padding:1px 6px;border-radius:5px;border:1px solid #e2e2e2;white-space:nowrap;line-height:1.15}"
    ".bl-acell small{font-size:0.7rem;color:#333;font-variant-numeric:tabular-nums}"
    ".bl-agap{border-color:transparent;color:#bbb}"
    ".bl-alab{display:flex;flex-direction:column;gap:4px;font-size:0.8rem;font-weight:600;color:#555;padding-right:0.4rem}"
    ".bl-alab span{height:2.55rem;display:flex;align-items:center;justify-content:flex-end;border:1px solid transparent;padding:1px 0}"
    ".bl-anote{font-size:0.82rem;color:#555;margin:0.1rem 0 0.3rem 0}"
    "</style>"
)


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _diverging(value: float, scale: float) -> str:
    """A cell's background: vermillion for a positive value, blue for a negative one, as deep as |value| / scale."""
    if not math.isfinite(value) or scale <= 0:
        return "#fafafa"
    r, g, b = _rgb(STEREO_COLOR if value > 0 else ANTI_COLOR)
    return f"rgba({r},{g},{b},{0.04 + 0.66 * min(abs(value) / scale, 1.0):.3f})"


def attribution_strips_html(pair: PairAttribution, method: str = "integrated_gradients") -> str:
    """Both sentences' attributions aligned token by token and their difference on the shared tokens (module docstring)."""
    stereo, anti = pair.stereo, pair.anti
    values = {"stereo": stereo.values(method), "anti": anti.values(method)}
    shown = {"stereo": list(stereo.texts), "anti": list(anti.texts)}
    difference = dict(zip(pair.alignment.unmodified_a, (values["stereo"][i] - values["anti"][j] for i, j in zip(*_shared(pair)))))
    scale = max([abs(float(v)) for vs in values.values() for v in vs] + [abs(float(v)) for v in difference.values()] + [0.0])
    columns = align_strips([shown["stereo"], shown["anti"]])
    cols = []
    for column in columns:
        cells = []
        for side, k in zip(("stereo", "anti"), column):
            if k is None:
                cells.append('<span class="bl-acell bl-agap" title="no token here">·</span>')
                continue
            v = float(values[side][k])
            cells.append(_cell(shown[side][k], v, f"{SIDE_NAMES[side]}: {shown[side][k]} · attribution {v:+.4f}", scale))
        k = column[0]
        if k is not None and k in difference:
            d = float(difference[k])
            cells.append(_cell(shown["stereo"][k], d, f"{shown['stereo'][k]}: stereo - anti {d:+.4f}", scale))
        else:
            cells.append('<span class="bl-acell bl-agap" title="not a shared token">·</span>')
        cols.append(f'<div class="bl-acol">{"".join(cells)}</div>')
    side = '<div class="bl-alab"><span>stereo</span><span>anti</span><span>difference</span></div>'
    note = (
        "Vermillion: the token's word embedding raises the sentence's score; blue: it lowers it (one scale for all three "
        "strips). The third strip is stereo − anti on the tokens both sentences share."
    )
    label = "Attribution of each sentence's score to its tokens, and their difference"
    return f'{_STYLE}<div class="bl-astrips" role="figure" aria-label="{label}">{side}{"".join(cols)}</div><div class="bl-anote">{note}</div>'


def _cell(token: str, value: float, tooltip: str, scale: float) -> str:
    """One token's cell: its text (escaped), its value under it, shaded by the value; the tooltip escaped."""
    tip = html.escape(tooltip, quote=True)
    return (
        f'<span class="bl-acell" style="background:{_diverging(value, scale)}" title="{tip}">'
        f"{html.escape(token) or '&nbsp;'}<small>{value:+.3f}</small></span>"
    )


def _shared(pair: PairAttribution) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return pair.alignment.unmodified_a, pair.alignment.unmodified_b


def lens_heatmap(lens: SentenceLens, title: str | list[str], side: str = "stereo") -> alt.Chart:
    """Token x layer, coloured by each scored token's log p read at that layer (layer 0 = embeddings)."""
    frame = lens.frame()
    data = frame.drop(columns="token").assign(token_key=keyed(frame["position"], list(frame["text"])))  # the drawing carries the text only
    chart = (
        alt.Chart(data, title=safe_title(title))
        .mark_rect()
        .encode(
            x=alt.X("token_key:N", sort="ascending", title=f"{SIDE_NAMES[side].lower()} sentence's tokens", axis=_key_axis(labelAngle=-40)),
            y=alt.Y("layer:O", title="layer (0 = embeddings)", sort="descending"),
            color=alt.Color("logp:Q", title="log p", scale=alt.Scale(scheme="viridis")),
            tooltip=[alt.Tooltip("layer:O"), alt.Tooltip("logp:Q", format=".3f")],
        )
        .properties(width="container", height=26 * lens.logprob.shape[0] + 90)
    )
    return _style(chart)


def lens_margin_chart(lens: PairLens, title: str | list[str]) -> alt.LayerChart:
    """The pair's margin (stereo - anti) read at every layer, with the zero line."""
    frame = lens.margin_frame()
    line = (
        alt.Chart(frame)
        .mark_line(point=True, color=STEREO_COLOR)
        .encode(
            x=alt.X("layer:O", title="layer (0 = embeddings)"),
            y=alt.Y("margin:Q", title="margin (stereo − anti)"),
            tooltip=[
                alt.Tooltip("layer:O"),
                alt.Tooltip("margin:Q", format="+.4f"),
                alt.Tooltip("stereo:Q", format=".4f"),
                alt.Tooltip("anti:Q", format=".4f"),
            ],
        )
    )
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#999999", strokeDash=[4, 4]).encode(y="y:Q")
    return _style(alt.layer(zero, line, title=safe_title(title)).properties(width="container", height=220))


def heads_heatmap(effects: HeadEffects, value: str, title: str | list[str]) -> alt.Chart:
    """Layer x head (from 0), coloured by `value` ("margin_change" or "aula_share"), diverging around 0."""
    frame = effects.frame()
    values = np.abs(frame[value].to_numpy(dtype=float))
    extent = float(np.nanmax(values)) if np.isfinite(values).any() else 0.0
    extent = extent if extent > 0 else 1.0
    chart = (
        alt.Chart(frame, title=safe_title(title))
        .mark_rect()
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color(
                f"{value}:Q", title=HEAD_VALUES[value].split(" when")[0], scale=alt.Scale(scheme="redblue", reverse=True, domain=[-extent, extent])
            ),
            tooltip=[
                alt.Tooltip("layer:O"),
                alt.Tooltip("head:O"),
                alt.Tooltip("margin_change:Q", format="+.5f"),
                alt.Tooltip("aula_share:Q", format="+.5f"),
            ],
        )
        .properties(width="container", height=30 * effects.layers + 90)
    )
    return _style(chart)


def attribution_chart(pair: PairAttribution, title: str | list[str], method: str = "integrated_gradients") -> alt.LayerChart:
    """The shared tokens' attribution difference (stereo - anti) as bars: vermillion where the token raises the
    stereotyped sentence's score more than the other's, blue where less."""
    frame = pair.difference(method)
    data = frame.drop(columns="token").assign(token_key=keyed(frame["position_stereo"], list(frame["text"])), raises=frame["difference"] > 0)
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("token_key:N", sort="ascending", title="shared tokens", axis=_key_axis(labelAngle=-40)),
            y=alt.Y("difference:Q", title="attribution, stereo − anti"),
            color=alt.Color("raises:N", scale=alt.Scale(domain=[True, False], range=[STEREO_COLOR, ANTI_COLOR]), legend=None),
            tooltip=[alt.Tooltip("difference:Q", format="+.4f"), alt.Tooltip("stereo:Q", format="+.4f"), alt.Tooltip("anti:Q", format="+.4f")],
        )
    )
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#999999").encode(y="y:Q")
    return _style(alt.layer(zero, bars, title=safe_title(title)).properties(width="container", height=220))


def anatomy_slide(
    title: str, stereo: str, anti: str, attribution: PairAttribution, lens: PairLens, effects: HeadEffects, *, panel_width: int = 380
) -> Any:
    """One pair's anatomy on one slide: its sentences, the shared tokens' attribution difference, the margin per layer,
    both sentences' logit lens, the heads' ablation effects and AULA shares. Fixed widths, so `to_svg` / `to_png` give the
    same picture anywhere."""

    def panel(chart: Any) -> Any:
        return alt.layer(*_unstyled(chart)).properties(width=panel_width)

    rows: list[Any] = [
        slide_sentence(stereo, "stereo", panel_width),
        slide_sentence(anti, "anti", panel_width),
        alt.hconcat(
            panel(attribution_chart(attribution, "Which shared words push (integrated gradients)")),
            panel(lens_margin_chart(lens, "Margin per layer")),
        ),
        alt.hconcat(
            panel(lens_heatmap(lens.stereo, "log p per layer, stereotypical", "stereo")),
            panel(lens_heatmap(lens.anti, "log p per layer, anti-stereotypical", "anti")),
        ),
    ]
    heads = [panel(heads_heatmap(effects, "margin_change", "Margin change, head zeroed"))]
    if effects.aula_metric is not None:
        heads.append(panel(heads_heatmap(effects, "aula_share", "Share of the AULA margin")))
    rows.append(alt.hconcat(*heads).resolve_scale(color="independent"))
    slide = alt.vconcat(*rows, spacing=18).resolve_scale(color="independent")
    return _style(slide.properties(title=alt.Title(safe_title(title), fontSize=20)))


__all__ = ["HEAD_VALUES", "anatomy_slide", "attribution_chart", "attribution_strips_html", "heads_heatmap", "lens_heatmap", "lens_margin_chart"]

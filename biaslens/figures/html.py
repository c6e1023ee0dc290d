"""The pair inspector's charts and the app's small tables as plain HTML and CSS (no streamlit, no charting library).

A pair opened by link must be quick in the browser, not only on the server: each Vega-Lite
chart cost the browser about 0.15 s of CPU to compile and draw, and the charting library as
much again to load, so the inspector's four charts made up most of a page's time behind the
engine (benchmarks/results/browser.md); a static table cost a table component and Arrow
decoding. As HTML the browser lays them out like text: they wrap and grow with the pair, scale
with the page's type (classroom mode) and show every measure of a token on hover (the
element's title).

The same figures as Altair charts, for export (`figures.inspector_slide`, `figures.to_svg`) and
notebooks, are `figures.aligned_token_chart` and `figures.drivers_chart`.
"""

from __future__ import annotations

import html
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from biaslens.figures.formatting import format_share
from biaslens.figures.charts import (
    ANTI_COLOR,
    NEUTRAL_COLOR,
    PALE_ANTI_COLOR,
    PALE_STEREO_COLOR,
    SIDE_NAMES,
    STEREO_COLOR,
    measure_title,
    token_measures,
)

#: Bar colour per (sentence, modified?): modified tokens in full colour, shared ones pale.
BAR_COLORS = {
    ("stereo", True): STEREO_COLOR,
    ("anti", True): ANTI_COLOR,
    ("stereo", False): PALE_STEREO_COLOR,
    ("anti", False): PALE_ANTI_COLOR,
}

#: How each per-token measure is written in a tooltip.
_MEASURE_FORMATS = {"rank": ",.0f", "attention": ".4f", "aula_contribution": ".4f"}  # (log p: ".3f")

_STYLE = (
    "<style>"
    ".bl-bars{display:grid;column-gap:1.4rem;font-size:0.95rem;line-height:1.25;margin:0.2rem 0 0.4rem 0}"
    ".bl-row{display:grid;grid-column:1/-1;grid-template-columns:subgrid;align-items:center}"
    ".bl-row.bl-data:hover{background:#f2f2f2}"
    ".bl-lab{text-align:right;max-width:15rem;overflow-wrap:anywhere;padding:0.1rem 0}"
    ".bl-head{font-weight:600;align-items:end;padding-bottom:0.15rem}"
    ".bl-cell{position:relative;height:1.6rem;border-right:1px solid #e6e6e6}"
    ".bl-cell.bl-one{height:1.35rem;border-right:none}"
    ".bl-cell i{position:absolute;display:block}"
    ".bl-cell i.bl-s{top:0.1rem;height:0.68rem}"
    ".bl-cell i.bl-a{top:0.82rem;height:0.68rem}"
    ".bl-cell i.bl-d{top:0.2rem;height:0.95rem}"
    f".bl-cell span.bl-zero{{position:absolute;top:0;bottom:0;border-left:1px solid {NEUTRAL_COLOR}}}"
    ".bl-ticks{position:relative;height:1.25rem;font-size:0.78rem;color:#555;font-weight:400;container-type:inline-size}"
    ".bl-ticks b{position:absolute;font-weight:400;white-space:nowrap;transform:translateX(-50%)}"
    ".bl-ticks b.bl-first{transform:none}.bl-ticks b.bl-last{transform:translateX(-100%)}"
    ".bl-val{font-variant-numeric:tabular-nums;white-space:nowrap;text-align:right}"
    ".bl-dir{grid-column:2/-1;display:flex;flex-wrap:wrap;justify-content:space-between;font-size:0.82rem;font-weight:600;column-gap:0.8rem}"
    ".bl-ftitle{font-weight:600;font-size:1.02rem;margin:0.3rem 0 0.2rem 0;overflow-wrap:anywhere}"
    ".bl-fnote{font-size:0.82rem;color:#555;margin-top:0.15rem}"
    f".bl-stereo-c{{color:{STEREO_COLOR}}}.bl-anti-c{{color:{ANTI_COLOR}}}"
    "</style>"
)


# ---------------------------------------------------------------------------------------
# Scales
# ---------------------------------------------------------------------------------------


def nice_ticks(low: float, high: float, count: int = 5) -> tuple[float, float, list[float]]:
    """A domain that covers [low, high] with round ends and about `count` evenly spaced round ticks (1, 2 or 5 × 10^k).

    Returns (domain low, domain high, ticks), ticks from the low end to the high end.
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"a scale needs finite ends, not {low} and {high}")
    low, high = min(low, high), max(low, high)
    if high == low:
        low, high = (low - 1.0, high + 1.0) if low else (0.0, 1.0)
    raw = (high - low) / max(1, count)
    step = 10.0 ** math.floor(math.log10(raw))
    error = raw / step
    step *= 10 if error >= 7.07 else 5 if error >= 3.16 else 2 if error >= 1.41 else 1
    # Round ends; a value within a billionth of a step of one counts as on it (0.30000000000000004 is 0.3).
    decimals = max(0, -math.floor(math.log10(step))) + 1
    start, stop = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    # low / step is rounded too: far from zero (879609.9999999999 in steps of 2e-7) an end can land a step inside.
    while round(start * step, decimals) > low + 1e-9 * step:
        start -= 1
    while round(stop * step, decimals) < high - 1e-9 * step:
        stop += 1
    ticks = [round((start + i) * step, decimals) for i in range(stop - start + 1)]
    return ticks[0], ticks[-1], ticks


def format_tick(value: float, step: float) -> str:
    """A tick label with as many decimals as its step needs, and a real minus sign."""
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    text = f"{abs(value):,.{decimals}f}"
    return ("−" if value < 0 and float(text.replace(",", "")) != 0 else "") + text


#: Width of a tick label's character and the least gap between two labels (rem): a column narrower than its labels
#: need keeps only the two end labels (many measures side by side, a laptop), so labels never overlap.
_TICK_CHAR_REM = 0.45
_TICK_GAP_REM = 0.8


def _fit_rule(width: int) -> str:
    """Hides the inner tick labels of the axes marked `bl-tw<width>` in a column narrower than `width` rem."""
    return f"@container (max-width: {width}rem){{.bl-tw{width} b.bl-mid{{display:none}}}}"


class _Scale:
    """Maps values of one measure to a share (0-100 %) of a bar cell's width."""

    def __init__(self, values: Sequence[float], *, log: bool = False, ticks: int = 4):
        finite = [float(v) for v in values if v is not None and math.isfinite(float(v))]
        self.log = log
        if log:  # ranks: 1 at the left edge, decades up to the largest
            top = max(1, math.ceil(math.log10(max([10.0, *finite]))))
            every = 1 if top <= 6 else 2
            top = every * math.ceil(top / every)  # the last tick at the right edge
            self.low, self.high = 0.0, float(top)
            self.ticks = [10.0**k for k in range(0, top + 1, every)]
        else:  # the zero line always shows
            self.low, self.high, self.ticks = nice_ticks(min([0.0, *finite]), max([0.0, *finite]), ticks)

    def share(self, value: float) -> float:
        x = math.log10(max(1.0, value)) if self.log else value
        return 100.0 * (x - self.low) / (self.high - self.low)

    def bar(self, value: float) -> tuple[float, float]:
        """(left, width) in % of the cell: from the zero line (the left edge on a log scale) to the value."""
        if self.log:
            return 0.0, self.share(value)
        zero, end = self.share(0.0), self.share(value)
        return min(zero, end), abs(end - zero)

    def labels(self) -> list[str]:
        step = self.ticks[1] - self.ticks[0] if len(self.ticks) > 1 else 1.0
        return [_compact(tick) if self.log else format_tick(tick, step) for tick in self.ticks]

    def fit_width(self) -> int:
        """The least width (rem) in which all the tick labels fit side by side (see `_fit_rule`)."""
        labels = self.labels()
        return math.ceil(len(labels) * (max(map(len, labels)) * _TICK_CHAR_REM + _TICK_GAP_REM))

    def tick_labels(self) -> str:
        out = []
        for i, (tick, label) in enumerate(zip(self.ticks, self.labels())):
            css = "bl-first" if i == 0 else "bl-last" if i == len(self.ticks) - 1 else "bl-mid"
            out.append(f'<b class="{css}" style="left:{self.share(tick):.2f}%">{label}</b>')
        return f'<div class="bl-ticks bl-tw{self.fit_width()}">{"".join(out)}</div>'

    def grid_style(self) -> str:
        """Grid lines at the ticks (evenly spaced) as the cell's background: no element per line."""
        period = 100.0 / (len(self.ticks) - 1) if len(self.ticks) > 1 else 100.0  # the ticks span the domain, evenly
        return f"background:repeating-linear-gradient(to right,#e6e6e6 0 1px,transparent 1px {period:.3f}%)"

    def zero_line(self) -> str:
        return "" if self.log else f'<span class="bl-zero" style="left:{self.share(0.0):.2f}%"></span>'


def _compact(value: float) -> str:
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _number(value, fmt: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return format(value, fmt).replace("-", "−")


def _title(lines: Sequence[str]) -> str:
    """Lines as the value of a title attribute (the browser's tooltip), escaped, one per line."""
    return html.escape("\n".join(lines), quote=True).replace("\n", "&#10;")


def _bar(css: str, left: float, width: float, color: str) -> str:
    return f'<i class="{css}" style="left:{left:.2f}%;width:{max(width, 0.25):.2f}%;background:{color}"></i>'


# ---------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------

_TABLE_STYLE = (
    "<style>"
    ".bl-table-wrap{overflow-x:auto;max-width:100%;margin:0.1rem 0 0.5rem 0;scrollbar-width:auto;scrollbar-color:#8a8a8a #ededed}"
    ".bl-table{border-collapse:collapse;width:100%;font-size:0.92rem;line-height:1.35}"
    ".bl-table th{font-weight:600;text-align:left;vertical-align:bottom;border-bottom:1px solid #cfcfcf;padding:0.3rem 0.35rem;"
    "overflow-wrap:normal;word-break:normal;hyphens:manual}"
    # A header breaks between words only ("Undecidab|le" read as two words): a table whose headers need more room than its
    # box scrolls sideways, its key column pinned. A cell's text (`anywhere`) may break, so the table shrinks first.
    ".bl-table td{border-bottom:1px solid #ececec;padding:0.3rem 0.35rem;vertical-align:top;overflow-wrap:anywhere}"
    ".bl-table .bl-num{text-align:right;font-variant-numeric:tabular-nums}.bl-table td.bl-num{white-space:nowrap}"
    # The key columns (a metric's or a model's name) break between words only: they keep their longest word's width.
    ".bl-table .bl-key{font-weight:600;overflow-wrap:break-word}"
    ".bl-table tr>.bl-key:first-child{position:sticky;left:0;background:#fff;z-index:1}"
    "</style>"
)

#: A format for `table_html`: a str.format template ("{:.2f}") or a function of the value (`formatting.format_margin`).
CellFormat = str | Callable[[Any], str]


def _cell_text(value: Any, fmt: CellFormat | None) -> str:
    if callable(fmt):
        return fmt(value)
    if fmt is not None:
        return fmt.format(value)
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def table_html(frame: pd.DataFrame, formats: Mapping[str, CellFormat] | None = None, *, key: int = 0, help: Mapping[str, str] | None = None) -> str:
    """`frame` as a plain HTML table, without its index: headers and cells wrap, so every column stays in sight.

    `formats` maps columns to a format string (e.g. "{:.4f}") or a function of the value; other floats get 4
    decimals, booleans "yes"/"no"; a missing value is a blank cell. Each number keeps its full value in the
    cell's `data-value`. The first `key` columns are the key results (bold; the first stays in sight if the
    table is ever wider than the page, which then shows a scroll bar). `help` gives a header's tooltip.
    """
    formats = dict(formats or {})
    numeric = {c for c in frame.columns if frame[c].dtype.kind in "iuf"}
    floats = {c for c in numeric if frame[c].dtype.kind == "f"}
    keys = set(frame.columns[:key])

    def css(column) -> str:
        names = [*(["bl-num"] if column in numeric else []), *(["bl-key"] if column in keys else [])]
        return f' class="{" ".join(names)}"' if names else ""

    def title(column) -> str:
        text = (help or {}).get(column)
        return f' title="{html.escape(text, quote=True)}"' if text else ""

    head = "".join(f'<th scope="col"{css(c)}{title(c)}>{html.escape(str(c))}</th>' for c in frame.columns)
    body = []
    for values in frame.itertuples(index=False, name=None):
        cells = []
        for column, value in zip(frame.columns, values):
            if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
                cells.append(f"<td{css(column)}></td>")
                continue
            text = html.escape(_cell_text(value, formats.get(column)))
            if column in numeric:
                full = repr(float(value)) if column in floats else str(int(value))
                cells.append(f'<td{css(column)} data-value="{full}">{text}</td>')
            else:
                cells.append(f"<td{css(column)}>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'{_TABLE_STYLE}<div class="bl-table-wrap"><table class="bl-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
    )


# ---------------------------------------------------------------------------------------
# One pair
# ---------------------------------------------------------------------------------------


_ALIGN_STYLE = (
    "<style>"
    ".bl-align{display:flex;flex-wrap:wrap;align-items:flex-start;row-gap:0.7rem;column-gap:4px;margin:0.25rem 0 0.6rem 0;"
    "font-size:1.15rem;max-width:100%}"
    ".bl-col{display:flex;flex-direction:column;gap:5px;align-items:stretch}"
    ".bl-col .bl-tok{text-align:center}"
    ".bl-side{font-size:0.9rem;font-weight:600;padding-right:0.6rem;text-align:right}"
    ".bl-side span{display:block;padding:3px 0;line-height:1.45rem}"
    f".bl-stereo-label{{color:{STEREO_COLOR}}} .bl-anti-label{{color:{ANTI_COLOR}}}"
    ".bl-tok{display:inline-block;padding:2px 7px;border-radius:6px;border:1px solid transparent;white-space:nowrap;line-height:1.45rem}"
    f".bl-mod.bl-stereo{{background:{STEREO_COLOR};color:#fff;font-weight:700}}"
    f".bl-mod.bl-anti{{background:{ANTI_COLOR};color:#fff;font-weight:700}}"
    ".bl-shared{border-color:#cfcfcf}"
    ".bl-special{color:#8a8a8a;font-size:0.85em}"
    ".bl-gap{color:#bbb}"
    "</style>"
)


def aligned_tokens_html(columns: pd.DataFrame) -> str:
    """The two sentences token by token, aligned column by column (from `explore.aligned_columns`).

    Each aligned column holds the stereotypical token above the anti-stereotypical one;
    modified tokens are filled with their sentence's colour, shared tokens are plain and
    special tokens faint; a dot marks a token the other sentence lacks. Columns wrap onto
    new lines at any width, so long pairs never overflow.
    """

    def cell(token: str, kind: str, side: str) -> str:
        if not token:
            return '<span class="bl-tok bl-gap" title="no token here">·</span>'
        css = {"modified": f"bl-mod bl-{side}", "special": "bl-special", "shared": "bl-shared"}[kind]
        return f'<span class="bl-tok {css}" title="{kind} token">{html.escape(token)}</span>'

    side = (
        f'<div class="bl-col bl-side"><span class="bl-stereo-label">{SIDE_NAMES["stereo"]}</span>'
        f'<span class="bl-anti-label">{SIDE_NAMES["anti"]}</span></div>'
    )
    cols = "".join(
        f'<div class="bl-col">{cell(s, k, "stereo")}{cell(a, k, "anti")}</div>'
        for s, a, k in zip(columns["stereo_token"], columns["anti_token"], columns["kind"])
    )
    return f'{_ALIGN_STYLE}<div class="bl-align">{side}{cols}</div>'


def shade_legend_html() -> str:
    """The colours of the aligned token charts as one line of HTML swatches."""
    items = "".join(
        f'<span style="white-space:nowrap;margin-right:1.1rem"><span style="display:inline-block;width:0.9em;height:0.9em;'
        f'background:{BAR_COLORS[side, modified]};border-radius:2px;vertical-align:-0.1em;margin-right:0.35rem"></span>'
        f"{SIDE_NAMES[side]} · {'modified' if modified else 'shared'}</span> "
        for modified in (True, False)
        for side in ("stereo", "anti")
    )
    return f'<div style="font-size:0.95rem;line-height:1.9">{items}</div>'


def _token_tooltip(row: str, kind: str, sides: dict[str, dict], measures: dict[str, tuple[str, str]]) -> str:
    """Every measure of both sentences' tokens in one aligned row (`measures`: those of the model's kind the frame has), and
    the model's top-5 predictions there."""
    lines = [f"{row.replace(chr(0x200B), '')} · {kind}"]
    for side in ("stereo", "anti"):
        token = sides.get(side)
        if token is None:
            lines.append(f"{SIDE_NAMES[side]}: no token here")
            continue
        values = " · ".join(f"{name} {_number(token.get(m), _MEASURE_FORMATS.get(m, '.3f'))}" for m, (name, _) in measures.items() if m in token)
        lines.append(f"{SIDE_NAMES[side]} “{token['label']}” (position {int(token['position'])}): {values}")
        if token.get("top5"):
            lines.append(f"   top-5: {token['top5']}")
    return _title(lines)


def token_bars_html(aligned: pd.DataFrame, measures: Sequence[str], kind: str = "masked") -> str:
    """The aligned token chart: one row per aligned token, one column of bars per measure, side by side; the measures
    named for a model of `kind` (`figures.charts.token_measures`).

    `aligned` comes from `figures.aligned_token_frame`. In each row the stereotypical sentence's
    bar is above the anti-stereotypical one's, both on the measure's one axis (ticks above and
    below the rows, grid lines, the zero line; ranks on a log scale); modified tokens are full
    colour, shared ones pale. Hovering a row shows every measure of both tokens and the model's
    top-5 predictions there.
    """
    known = token_measures(kind)
    unknown = [m for m in measures if m not in known]
    if unknown or not measures:
        raise ValueError(f"unknown measures {unknown}; choose from {', '.join(known)}")
    scales = {m: _Scale(aligned[m].tolist(), log=(m == "rank")) for m in measures}
    rows: dict[str, dict] = {}
    for token in aligned.sort_values("order", kind="stable").to_dict("records"):
        row = rows.setdefault(token["row"], {"kind": token["kind"], "sides": {}})
        row["sides"][token["sentence"]] = token
    all_measures = {m: words for m, words in known.items() if m in aligned}

    ticks = "".join(f"<div>{scales[m].tick_labels()}</div>" for m in measures)
    fit = "".join(_fit_rule(width) for width in sorted({scales[m].fit_width() for m in measures}))
    # Each measure's cell background (grid lines) and zero line: the same in every row.
    background = {m: f'<div class="bl-cell" style="{scales[m].grid_style()}">{scales[m].zero_line()}' for m in measures}
    out = [f'<div class="bl-row bl-head"><div></div>{"".join(f"<div>{html.escape(measure_title(m, kind))}</div>" for m in measures)}</div>']
    out.append(f'<div class="bl-row"><div></div>{ticks}</div>')
    for label, row in rows.items():
        sides, modified = row["sides"], row["kind"] == "modified"
        if modified:
            parts = [f'<b class="bl-{side}-c">{html.escape(sides[side]["label"]) if side in sides else "∅"}</b>' for side in ("stereo", "anti")]
            name = " / ".join(parts)
        else:
            name = html.escape(label)
        cells = []
        for m in measures:
            bars = []
            for side, css in (("stereo", "bl-s"), ("anti", "bl-a")):
                value = sides.get(side, {}).get(m)
                if value is None or not math.isfinite(float(value)):
                    continue
                bars.append(_bar(css, *scales[m].bar(float(value)), BAR_COLORS[side, modified]))
            cells.append(f"{background[m]}{''.join(bars)}</div>")
        tooltip = _token_tooltip(label, row["kind"], sides, all_measures)
        out.append(f'<div class="bl-row bl-data" title="{tooltip}"><div class="bl-lab">{name}</div>{"".join(cells)}</div>')
    out.append(f'<div class="bl-row"><div></div>{ticks}</div>')
    columns = "minmax(3rem,max-content) " + " ".join("minmax(0,1fr)" for _ in measures)
    label = "Aligned token chart: " + ", ".join(known[m][0] for m in measures)
    return (
        f'{_STYLE}<style>{fit}</style><div class="bl-bars" role="figure" aria-label="{html.escape(label)}" '
        f'style="grid-template-columns:{columns}">{"".join(out)}</div>'
    )


def drivers_bars_html(drivers: pd.DataFrame, title: str, *, top: int = 12) -> str:
    """The tokens that move the margin most (from `explore.margin_drivers`): signed bars with their values.

    Right (vermillion) pushes towards the stereotypical sentence, left (blue) towards the
    anti-stereotypical one; the bars of all rows (not only the `top` shown) add up to the margin.
    """
    shown = drivers.head(top)
    largest = float(np.abs(shown["contribution"].to_numpy(dtype=float)).max()) if len(shown) else 0.0
    scale = largest if largest > 0 and math.isfinite(largest) else 1.0
    decimals = min(8, max(4, 2 - math.floor(math.log10(scale)))) if largest > 0 else 4

    def share(value: float) -> str:  # never "+0.0000" for a share that is not 0 (`format_share`)
        return format_share(value, decimals).replace("-", "−") if math.isfinite(value) else "—"

    rows = []
    for token in shown.to_dict("records"):
        value = float(token["contribution"])
        width = 50.0 * abs(value) / scale
        left = 50.0 if value >= 0 else 50.0 - width
        color = STEREO_COLOR if value > 0 else ANTI_COLOR
        tip = _title(
            [
                f"{token['label']} · {token['kind']}",
                f"stereotypical share {share(float(token['stereo_share']))}",
                f"anti-stereotypical share {share(float(token['anti_share']))}",
                f"contribution to the margin {share(value)}",
            ]
        )
        rows.append(
            f'<div class="bl-row bl-data" title="{tip}"><div class="bl-lab">{html.escape(str(token["label"]))}</div>'
            f'<div class="bl-cell bl-one"><span class="bl-zero" style="left:50%"></span>{_bar("bl-d", left, width, color)}</div>'
            f'<div class="bl-val">{share(value)}</div></div>'
        )
    head = (
        '<div class="bl-row bl-head"><div></div><div class="bl-dir"><span class="bl-anti-c">← anti-stereotypical</span>'
        '<span class="bl-stereo-c">stereotypical →</span></div></div>'
    )
    more = f"the {len(shown)} largest of {len(drivers)} tokens; " if len(drivers) > len(shown) else ""
    note = f"Share of the margin (stereo − anti), {more}all of them add up to the margin."
    return (
        f'{_STYLE}<div class="bl-ftitle">{html.escape(title)}</div>'
        f'<div class="bl-bars" role="figure" aria-label="{html.escape(title)}" '
        f'style="grid-template-columns:minmax(3rem,max-content) minmax(0,1fr) max-content">{head}{"".join(rows)}</div>'
        f'<div class="bl-fnote">{note}</div>'
    )


__all__ = [
    "BAR_COLORS",
    "aligned_tokens_html",
    "drivers_bars_html",
    "format_tick",
    "nice_ticks",
    "shade_legend_html",
    "table_html",
    "token_bars_html",
]

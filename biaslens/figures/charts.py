"""Figures of the app, built from DataFrames (Altair / Vega-Lite; no streamlit here).

Each builder takes a table from `biaslens.analyses.explore` (or the engine) and returns an Altair
chart, so the same figure can be made from Python and exported as SVG offline with
`to_svg` (vl-convert). Colours are from the Okabe-Ito palette, which stays distinct under
the common colour-vision deficiencies: vermillion for the stereotypical sentence, blue
for the anti-stereotypical one, greys for unmodified and special tokens. Fonts are large
enough for a projector.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import altair as alt
import pandas as pd

if TYPE_CHECKING:
    from biaslens.kurita import TargetPair

STEREO_COLOR = "#D55E00"  # vermillion
ANTI_COLOR = "#0072B2"  # blue
SHARED_COLOR = "#B8B8B8"
SPECIAL_COLOR = "#E4E4E4"
NEUTRAL_COLOR = "#555555"
#: Shared (unmodified) tokens in the aligned token charts: the sentence's colour, pale.
PALE_STEREO_COLOR = "#F2B48A"
PALE_ANTI_COLOR = "#8DBBD9"
#: Okabe-Ito, for series without a stereo/anti meaning (metrics, models).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

SIDE_NAMES = {"stereo": "Stereotypical", "anti": "Anti-stereotypical"}
SIDE_COLORS = {"stereo": STEREO_COLOR, "anti": ANTI_COLOR}


def token_measures(kind: str = "masked") -> dict[str, tuple[str, str]]:
    """Per-token measures of the inspector for a model of `kind`: column -> (axis title, what it shows), in the kind's
    words (`biaslens.engine.metrics.KINDS`): "log p (AUL term)" for a masked model, "log p (AUL-c term)" for a causal one."""
    from biaslens.engine.metrics import KINDS, METRICS, token_label

    k = KINDS[kind]
    mean, weighted, unmodified = METRICS[k.mean], METRICS[k.weighted], METRICS[k.unmodified]
    read_alone = "when only it is masked" if unmodified.pass_kind == "masked" else k.reading
    return {
        "logprob": (f"log p ({mean.name} term)", f"log-probability of each token {k.reading}: {mean.name} averages these"),
        "attention": (
            "attention received",
            f"attention each token receives, averaged over layers, heads and query positions: {weighted.name}'s weights",
        ),
        "aula_contribution": (f"{weighted.name} contribution", f"attention × log p / n: each token's term in {weighted.name}"),
        "rank": ("rank of the token", "1 = the model's top prediction at that position is the token itself"),
        str(unmodified.token_column): (token_label(k.unmodified), f"log p of each unmodified token {read_alone}: {unmodified.name} sums these"),
    }


#: Per-token measures of the inspector for a masked model (`token_measures(kind)` for either kind).
TOKEN_MEASURES: dict[str, tuple[str, str]] = token_measures("masked")


def measure_title(measure: str, kind: str = "masked") -> str:
    """A per-token measure's name as a title: "Log p (AUL term)"."""
    name = token_measures(kind)[measure][0]
    return name[:1].upper() + name[1:]


_FONT = {"labelFontSize": 14, "titleFontSize": 15}


#: Room around a chart for its axis titles: the app's chart component keeps a chart's own padding, and without one the
#: y axis's title lost its left edge.
PADDING = {"left": 12, "right": 8, "top": 6, "bottom": 6}


def _style(chart: Any) -> Any:
    """Projector-friendly fonts on a top-level chart, and room around it (`PADDING`)."""
    return (
        chart.properties(padding=PADDING)
        .configure_axis(**_FONT, labelLimit=260)
        .configure_legend(labelFontSize=14, titleFontSize=14, labelLimit=320)
        .configure_title(fontSize=17, anchor="start")
        .configure_header(labelFontSize=14, titleFontSize=15)
        .configure_view(stroke=None)
    )


#: Axis and legend labels of a keyed category (`keyed`): the text after the key ("03 if" is drawn "if").
SHOW_TEXT = "slice(datum.label, indexof(datum.label, ' ') + 1)"


def keyed(values: Iterable[Any], labels: Iterable[Any] | None = None) -> list[str]:
    """Category values no text can turn into Vega code: each distinct value becomes "<n> <label>" (its label: itself, or
    the `labels` beside it), n its first-seen order, zero-padded (so sorting the keys keeps that order); axes and legends
    draw the label (`labelExpr=SHOW_TEXT`).

    Vega reads some category values, titles and sort lists as names: a token "if" made every slide fail to export
    ("Unrecognized signal name"), a token "constructor" drew an empty chart. So user text (tokens, words, model
    names, bias types, run descriptions) is only ever data behind a key: never a field or param name, a sort list,
    a scale domain or part of an expression.
    """
    values = list(values)
    order = {v: i for i, v in enumerate(dict.fromkeys(values))}
    width = len(str(max(len(order) - 1, 0)))
    return [f"{order[v]:0{width}d} {text}" for v, text in zip(values, values if labels is None else list(labels))]


def safe_title(text: Any) -> Any:
    """A title (a string or its lines) Vega draws as text: a bare word ("if", "toString") gets an invisible mark after it,
    or Vega would look it up as a name and fail."""
    if isinstance(text, (list, tuple)):
        return [safe_title(t) for t in text]
    if isinstance(text, str) and re.fullmatch(r"[A-Za-z_$][\w$]*", text):
        return text + "\u200b"
    return text


def _key_axis(**options: Any) -> alt.Axis:
    return alt.Axis(labelExpr=SHOW_TEXT, **options)


def _key_legend(**options: Any) -> alt.Legend:
    return alt.Legend(labelExpr=SHOW_TEXT, **options)


def _fifty_rule() -> alt.Chart:
    return alt.Chart(pd.DataFrame({"y": [50.0]})).mark_rule(strokeDash=[6, 4], color=NEUTRAL_COLOR).encode(y="y:Q")


# ---------------------------------------------------------------------------------------
# One pair
# ---------------------------------------------------------------------------------------


def _role(frame: pd.DataFrame) -> pd.Series:
    side = frame["sentence"].map(SIDE_NAMES)
    return pd.Series(
        [
            "special token" if special else f"{s} · modified" if modified else "unmodified"
            for s, special, modified in zip(side, frame["special"], frame["modified"])
        ],
        index=frame.index,
    )


_ROLE_DOMAIN = ["Stereotypical · modified", "Anti-stereotypical · modified", "unmodified", "special token"]
_ROLE_RANGE = [STEREO_COLOR, ANTI_COLOR, SHARED_COLOR, SPECIAL_COLOR]


def token_chart(tokens: pd.DataFrame, measure: str = "logprob", *, hide_special: bool = True, kind: str = "masked") -> alt.VConcatChart:
    """Per-token bars of one measure for both sentences (from `explore.token_table`), one row each; the measures named for
    a model of `kind`.

    Hovering a bar shows every measure of the token and the model's top-5 predictions.
    """
    measures = token_measures(kind)
    if measure not in measures:
        raise ValueError(f"unknown measure {measure!r}; choose from {', '.join(measures)}")
    title, _ = measures[measure]
    data = tokens.drop(columns=[c for c in ("top_tokens", "top_logprobs") if c in tokens])
    if hide_special:
        data = data.loc[~data["special"]]
    data = data.copy()
    data["role"] = _role(data)
    data["column"] = [f"{p:>3} {label}" for p, label in zip(data["position"], data["label"])]
    tooltip = _token_tooltip(data, kind)
    y_scale = alt.Scale(type="log") if measure == "rank" else alt.Scale(zero=True)
    rows = []
    for side in ("stereo", "anti"):
        part = data[data["sentence"] == side]
        chart = (
            alt.Chart(part, title=alt.Title(SIDE_NAMES[side], color=SIDE_COLORS[side], fontSize=15))
            .mark_bar()
            .encode(
                x=alt.X("column:N", sort=None, title=None, axis=alt.Axis(labelAngle=-45, labelOverlap=False, labelExpr="slice(datum.label, 4)")),
                y=alt.Y(f"{measure}:Q", title=title, scale=y_scale),
                color=alt.Color("role:N", title=None, scale=alt.Scale(domain=_ROLE_DOMAIN, range=_ROLE_RANGE), legend=alt.Legend(orient="top")),
                tooltip=tooltip,
            )
            .properties(height=200, width="container")
        )
        rows.append(chart)
    return _style(alt.vconcat(*rows).resolve_scale(color="shared"))


#: Height of one row of a horizontal bar chart (px), and the least height of such a chart.
ROW_HEIGHT = 30
MIN_HEIGHT = 140


def _token_tooltip(data: pd.DataFrame, kind: str, *extra: Any) -> list:
    """The per-token measures shown on hover (the token, `extra`, then every measure of `data` in the words of a model of
    `kind`; top-5 when `data` has it)."""
    formats = {"logprob": ".3f", "attention": ".4f", "aula_contribution": ".4f", "rank": ",.0f"}
    measures = [alt.Tooltip(f"{m}:Q", title=name, format=formats.get(m, ".3f")) for m, (name, _) in token_measures(kind).items() if m in data]
    tooltip = [alt.Tooltip("label:N", title="token"), *extra, alt.Tooltip("position:Q"), *measures]
    if "top5" in data:
        tooltip.append(alt.Tooltip("top5:N", title="top-5 predictions"))
    return tooltip


def rows_height(n_rows: int, per_row: int = ROW_HEIGHT, minimum: int = MIN_HEIGHT) -> int:
    """Height of a chart with `n_rows` rows: a fixed height per row, never below `minimum` (labels never overlap)."""
    return max(minimum, per_row * max(1, n_rows))


def aligned_token_frame(columns: pd.DataFrame, tokens: pd.DataFrame, *, hide_special: bool = True) -> pd.DataFrame:
    """Both sentences' tokens paired by alignment, one row per token (from `explore.aligned_columns` and `explore.token_table`).

    `row` names the aligned column ("drive" for a shared token, "Women / Men" for a modified
    pair; repeats made distinct with invisible marks), `order` keeps the sentence order,
    `side_name` is the sentence; every measure and `top5` of `tokens` comes along.
    """
    by_position = {(r["sentence"], int(r["position"])): r for r in tokens.to_dict("records")}
    out, seen = [], {}
    for order, col in enumerate(columns.to_dict("records")):
        if hide_special and col["kind"] == "special":
            continue
        s, a = col["stereo_token"], col["anti_token"]
        label = s if col["kind"] != "modified" else f"{s or '∅'} / {a or '∅'}"
        seen[label] = seen.get(label, 0) + 1
        label += "\u200b" * (seen[label] - 1)  # the same token twice: two rows, one visible label each
        for side in ("stereo", "anti"):
            position = int(col[f"{side}_position"])
            if position < 0:
                continue
            token = by_position.get((side, position))
            if token is None:
                continue
            out.append(
                {
                    **token,
                    "row": label,
                    "order": order,
                    "kind": col["kind"],
                    "side_name": SIDE_NAMES[side],
                    "shade": f"{SIDE_NAMES[side]} · {'modified' if col['kind'] == 'modified' else 'shared'}",
                }
            )
    return pd.DataFrame(out)


#: Height of one aligned token (two bars and a gap) in `aligned_token_chart`, and of its title and axis.
ALIGNED_ROW_HEIGHT = 30
ALIGNED_FRAME_HEIGHT = 80
#: Height of an attention heatmap's title and its tilted token labels, on top of 24 px per token.
HEATMAP_FRAME_HEIGHT = 130

_SHADE_DOMAIN = ["Stereotypical · modified", "Anti-stereotypical · modified", "Stereotypical · shared", "Anti-stereotypical · shared"]
_SHADE_RANGE = [STEREO_COLOR, ANTI_COLOR, PALE_STEREO_COLOR, PALE_ANTI_COLOR]


def aligned_token_chart(
    aligned: pd.DataFrame, measure: str = "logprob", *, title: str | None = None, legend: bool = True, kind: str = "masked"
) -> alt.LayerChart:
    """One horizontal bar pair per aligned token (from `aligned_token_frame`): stereotypical above anti-stereotypical; the
    measures named for a model of `kind`.

    Both sentences share one axis, so their tokens compare directly; modified tokens are
    full colour, shared ones pale. The height grows with the number of tokens.
    """
    measures = token_measures(kind)
    if measure not in measures:
        raise ValueError(f"unknown measure {measure!r}; choose from {', '.join(measures)}")
    axis_title, _ = measures[measure]
    data = aligned.sort_values("order", kind="stable")
    data = data.assign(row_key=keyed(data["order"], data["row"]))  # "03 drive": the aligned column's key, then its text
    n_rows = data["row_key"].nunique()
    tooltip = _token_tooltip(data, kind, alt.Tooltip("side_name:N", title="sentence"))
    x_scale = alt.Scale(type="log") if measure == "rank" else alt.Scale(zero=True)
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("row_key:N", sort="ascending", title=None, axis=_key_axis(labelOverlap=False, labelLimit=220)),
            yOffset=alt.YOffset("side_name:N", sort=list(SIDE_NAMES.values())),
            x=alt.X(f"{measure}:Q", title=axis_title, scale=x_scale),
            color=alt.Color(
                "shade:N",
                title=None,
                scale=alt.Scale(domain=_SHADE_DOMAIN, range=_SHADE_RANGE),
                legend=alt.Legend(orient="top", columns=2) if legend else None,
            ),
            tooltip=tooltip,
        )
    )
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color=NEUTRAL_COLOR).encode(x="x:Q")
    layers = [bars] if measure == "rank" else [bars, zero]
    # The app fits the whole figure into `height`: the rows, plus room for the title and the axis below them.
    chart = alt.layer(*layers).properties(height=rows_height(n_rows, ALIGNED_ROW_HEIGHT) + ALIGNED_FRAME_HEIGHT, width="container")
    if title:
        chart = chart.properties(title=safe_title(title))
    return _style(chart)


#: Height of a drivers chart's title, two-line axis title and one-column legend (px), on top of its rows.
DRIVERS_FRAME_HEIGHT = 160


def drivers_chart(drivers: pd.DataFrame, title: str, *, top: int = 12) -> alt.Chart:
    """The columns that move the margin most (from `explore.margin_drivers`), signed bars.

    Right (vermillion) pushes towards the stereotypical sentence, left (blue) towards the
    anti-stereotypical one.
    """
    data = drivers.head(top).reset_index(drop=True)
    data["pushes towards"] = ["Stereotypical" if c > 0 else "Anti-stereotypical" for c in data["contribution"]]
    data["row_key"] = keyed(data.index, data["label"])
    chart = (
        alt.Chart(data, title=safe_title(title))
        .mark_bar()
        .encode(
            y=alt.Y("row_key:N", sort="ascending", title=None, axis=_key_axis(labelOverlap=False)),
            # Two short lines and a one-column legend: the chart stays whole in a narrow column (three side by side at 1024 px).
            x=alt.X("contribution:Q", title=["share of the margin", "(stereo − anti)"], axis=alt.Axis(tickCount=4)),
            color=alt.Color(
                "pushes towards:N",
                scale=alt.Scale(domain=["Stereotypical", "Anti-stereotypical"], range=[STEREO_COLOR, ANTI_COLOR]),
                legend=alt.Legend(orient="bottom", direction="vertical", columns=1),
            ),
            tooltip=[
                alt.Tooltip("label:N", title="token(s)"),
                alt.Tooltip("kind:N"),
                alt.Tooltip("stereo_share:Q", title="stereo share", format=".4f"),
                alt.Tooltip("anti_share:Q", title="anti share", format=".4f"),
                alt.Tooltip("contribution:Q", format=".4f"),
            ],
        )
    )
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color=NEUTRAL_COLOR).encode(x="x:Q")
    # The app fits the whole figure (title, axis and legend included) into `height`: room for them on top of the rows.
    return _style(alt.layer(chart, zero).properties(height=rows_height(len(data)) + DRIVERS_FRAME_HEIGHT, width="container"))


def _highlight_axis(keys: Sequence[int], color: str) -> dict[str, Any]:
    """Axis settings that draw the labels of a keyed axis (`keyed`) whose key is one of `keys` bold in `color` (e.g. a
    sentence's modified tokens): the test holds numbers only, never the labels' text."""
    test = f"indexof({json.dumps(sorted({int(k) for k in keys}))}, toNumber(slice(datum.value, 0, indexof(datum.value, ' ')))) >= 0"
    return {
        "labelColor": {"condition": {"test": test, "value": color}, "value": "#333333"},
        "labelFontWeight": {"condition": {"test": test, "value": "bold"}, "value": "normal"},
    }


def attention_heatmap(table: pd.DataFrame, title: str | Sequence[str], *, modified: Sequence[str] = (), side: str = "stereo") -> alt.Chart:
    """An attention matrix (from `explore.attention_table`): rows are queries, columns keys.

    `modified` token labels are drawn bold in the sentence's colour on both axes.
    """
    positions = sorted(set(table["key_position"]) | set(table["query_position"]))
    rank = {p: i for i, p in enumerate(positions)}
    width = len(str(max(len(positions) - 1, 0)))
    data = table.assign(
        key_key=[f"{rank[p]:0{width}d} {t}" for p, t in zip(table["key_position"], table["key"])],
        query_key=[f"{rank[p]:0{width}d} {t}" for p, t in zip(table["query_position"], table["query"])],
    )
    marked_keys = {rank[p] for p, t in zip(table["key_position"], table["key"]) if t in set(modified)}
    marked = _highlight_axis(sorted(marked_keys), SIDE_COLORS.get(side, STEREO_COLOR)) if marked_keys else {}
    chart = (
        alt.Chart(data, title=safe_title(title))
        .mark_rect()
        .encode(
            x=alt.X("key_key:N", sort="ascending", title="attends to (key)", axis=_key_axis(labelAngle=-40, **marked)),
            y=alt.Y("query_key:N", sort="ascending", title="query", axis=_key_axis(**marked)),
            color=alt.Color("weight:Q", title="weight", scale=alt.Scale(scheme="viridis")),
            tooltip=[alt.Tooltip("query:N"), alt.Tooltip("key:N"), alt.Tooltip("weight:Q", format=".4f")],
        )
        .properties(width="container", height=24 * len(positions) + HEATMAP_FRAME_HEIGHT)
    )
    return _style(chart)


#: Name of the click selection on `head_overview_chart` (read back by the app's `on_select`).
HEAD_SELECTION = "head"


def head_overview_chart(overview: pd.DataFrame, title: str | Sequence[str], *, selected: tuple[int, int] | None = None) -> alt.LayerChart:
    """Layer × head grid (from `explore.head_overview`); clicking a cell selects that head (the `HEAD_SELECTION` param).

    `selected` (layer, head), 1-based, is outlined.
    """
    pick = alt.selection_point(name=HEAD_SELECTION, fields=["layer", "head"], on="click", clear="dblclick")
    cells = (
        alt.Chart(overview)
        .mark_rect()
        .encode(
            x=alt.X("head:O", title="head"),
            y=alt.Y("layer:O", title="layer"),
            color=alt.Color("attention:Q", title="attention", scale=alt.Scale(scheme="viridis")),
            tooltip=["layer:O", "head:O", alt.Tooltip("attention:Q", format=".4f")],
        )
        .add_params(pick)
    )
    layers: list[Any] = [cells]
    if selected is not None:
        mark = overview[(overview["layer"] == selected[0]) & (overview["head"] == selected[1])]
        layers.append(alt.Chart(mark).mark_rect(filled=False, stroke=STEREO_COLOR, strokeWidth=4).encode(x="head:O", y="layer:O"))
    chart = alt.layer(*layers, title=safe_title(title)).properties(width="container", height=34 * overview["layer"].nunique() + 110)
    return _style(chart)


# ---------------------------------------------------------------------------------------
# A dataset run
# ---------------------------------------------------------------------------------------


def _with_keys(data: pd.DataFrame, *columns: str | None) -> pd.DataFrame:
    """`data` with a keyed copy (`keyed`) of each text column named, as `<column>_key`: what the chart encodes."""
    return data.assign(**{f"{c}_key": keyed(data[c].astype(str)) for c in dict.fromkeys(columns) if c})


#: Height of the plot of a bias-score chart (px), of its title, and of one line of its legend.
PLOT_HEIGHT = 240
TITLE_HEIGHT = 36
LEGEND_LINE = 19
#: Characters a legend label's line holds at most (about 340 px at 14 px: a chart's legend in a 1024 px window).
LEGEND_WRAP = 46
#: Axis labels of a keyed category whose text holds line breaks ("AUL\nn=48"): one line each.
SHOW_LINES = f"split({SHOW_TEXT}, '\\n')"


def _n_lines(data: pd.DataFrame, x: str) -> list[str]:
    """Each row's x category with the N of its dots on a second line: "AUL\nn=48", or "n=50 / 100" when the dots at
    one category (models, groups) rest on different numbers of pairs, in their order."""
    ns: dict[Any, list[str]] = {}
    for value, n in zip(data[x], data["n"]):
        ns.setdefault(value, []).append(f"{int(n):,}" if pd.notna(n) else "—")
    line = {v: "n=" + (n[0] if len(set(n)) == 1 else " / ".join(n)) for v, n in ns.items()}
    return [f"{v}\n{line[v]}" for v in data[x]]


def _wrapped(texts: Iterable[str], width: int = LEGEND_WRAP) -> list[str]:
    """Texts broken into lines of at most `width` characters at spaces (a legend label drawn with `SHOW_LINES`)."""
    import textwrap

    return ["\n".join(textwrap.wrap(str(t), width, break_on_hyphens=False)) or str(t) for t in texts]


def _score_with_interval(
    data: pd.DataFrame, x: str, x_title: str, color: str | None, offset: str | None, *, legend_rows: bool = False
) -> alt.LayerChart:
    data = _with_keys(data, x, color, offset)
    if color:  # the legend's labels (a lab run's description is long): wrapped, never cut at the chart's edge
        data[f"{color}_key"] = keyed(data[color].astype(str), _wrapped(data[color].astype(str)))
    # N under each category, in the axis: as labels above the dots they collided with each other and with the caps.
    data["x_axis"] = keyed(data[x].astype(str), _n_lines(data, x))
    base = alt.Chart(data)
    angle = 0 if data[x].nunique() < 6 else -45  # two-line labels at -30 touched their neighbours in a 1024 px window
    enc: dict[str, Any] = {"x": alt.X("x_axis:N", title=x_title, sort="ascending", axis=alt.Axis(labelExpr=SHOW_LINES, labelAngle=angle))}
    if offset:
        enc["xOffset"] = alt.XOffset(f"{offset}_key:N", sort="ascending")
    if color:
        enc["color"] = alt.Color(
            f"{color}_key:N",
            title=None,
            sort="ascending",
            scale=alt.Scale(range=list(PALETTE)),
            legend=alt.Legend(labelExpr=SHOW_LINES, orient="top"),
        )
    tooltip = [
        alt.Tooltip(f"{x}:N"),
        alt.Tooltip("bias_score:Q", title="bias score", format=".2f"),
        alt.Tooltip("ci_low:Q", title="95% CI low", format=".2f"),
        alt.Tooltip("ci_high:Q", title="95% CI high", format=".2f"),
        alt.Tooltip("n:Q", title="N"),
        alt.Tooltip("ties:Q"),
    ]
    if color:
        tooltip.insert(1, alt.Tooltip(f"{color}:N"))
    # A dot and its 95% interval around the reference line at 50 (no preference): bars from 0 would suggest 0 is the baseline.
    bars = base.mark_point(filled=True, size=140, opacity=1).encode(
        y=alt.Y("bias_score:Q", title="bias score (%)", scale=alt.Scale(domain=[0, 100])), tooltip=tooltip, **enc
    )
    errors = base.mark_errorbar(ticks={"size": 16}, thickness=2.5).encode(  # short caps, not the band's whole width
        y=alt.Y("ci_low:Q", title="bias score (%)"), y2="ci_high:Q", **enc
    )
    # The whole figure fits the chart's height in the app: the plot keeps PLOT_HEIGHT whatever the legend and labels take.
    lines = [t.count("\n") + 1 for t in dict.fromkeys(data[f"{color}_key"])] if color else []
    legend = ((sum(lines) if legend_rows else 2 * max(lines)) * LEGEND_LINE + 12) if lines else 0  # one entry a row, or a row or two
    axis = (40 + 6 * max(len(v) for v in data[x].astype(str))) if angle else 64  # rotated labels reach down by their length
    return alt.layer(bars, errors, _fifty_rule()).properties(height=PLOT_HEIGHT + TITLE_HEIGHT + legend + axis)


def bias_scores_chart(summary: pd.DataFrame, title: str = "Bias score per metric") -> alt.LayerChart:
    """Bias score per metric with its 95% interval and N (from `explore.summary_table`); 50 = unbiased."""
    return _style(_score_with_interval(summary, "name", "metric", "name", None).properties(title=safe_title(title), width="container"))


def by_type_chart(by_type: pd.DataFrame, title: str = "Bias score per bias type") -> alt.LayerChart:
    """Per bias type and metric, bars with 95% intervals and N above (from `explore.by_type_table`)."""
    offset = "name" if by_type["name"].nunique() > 1 else None
    chart = _score_with_interval(by_type, "bias_type", "bias type", "name", offset)
    return _style(chart.properties(title=safe_title(title), width="container"))


def groups_chart(groups: pd.DataFrame, title: str = "Advantaged vs disadvantaged groups") -> alt.LayerChart:
    """CrowS-Pairs' Adv / Dis split per metric (from `explore.group_table`)."""
    chart = _score_with_interval(groups, "name", "metric", "group_name", "group_name")
    return _style(chart.properties(title=safe_title(title), width="container"))


# ---------------------------------------------------------------------------------------
# Several models
# ---------------------------------------------------------------------------------------


def model_scores_chart(scores: pd.DataFrame, metric_name: str) -> alt.LayerChart:
    """Each model's bias score with its 95% interval (from `ModelComparison.scores`)."""
    chart = _score_with_interval(scores, "model", "model", "model", None)
    return _style(chart.properties(title=f"{metric_name} bias score per model", width="container"))


def margin_scatter(margins: pd.DataFrame, x_model: str, y_model: str, metric_name: str) -> alt.LayerChart:
    """Per-pair margins of two models (from `ModelComparison.margins`); flipped verdicts highlighted.

    Points right of / above 0 prefer the stereotypical sentence under that model.
    """
    x_col, y_col = f"margin ({x_model})", f"margin ({y_model})"
    data = margins[["pair_id", "bias_type", "sent_stereo", "sent_anti", x_col, y_col]].rename(columns={x_col: "x", y_col: "y"})
    same = margins[f"verdict ({x_model})"] == margins[f"verdict ({y_model})"]
    data["verdict"] = ["same verdict" if s else "verdict flips" for s in same]
    points = (
        alt.Chart(data)
        .mark_circle(size=46, opacity=0.7)
        .encode(
            # Few ticks, labels that never overlap: margins of a random model are tiny and written long ("−0.00002").
            x=alt.X("x:Q", title=f"{metric_name} margin, {x_model}", axis=alt.Axis(tickCount=4, labelOverlap="greedy", labelSeparation=8)),
            y=alt.Y("y:Q", title=f"{metric_name} margin, {y_model}", axis=alt.Axis(tickCount=5, labelOverlap="greedy")),
            color=alt.Color("verdict:N", title=None, scale=alt.Scale(domain=["same verdict", "verdict flips"], range=[SHARED_COLOR, STEREO_COLOR])),
            tooltip=["pair_id:Q", "bias_type:N", "sent_stereo:N", "sent_anti:N", alt.Tooltip("x:Q", format=".3f"), alt.Tooltip("y:Q", format=".3f")],
        )
    )
    zero = pd.DataFrame({"v": [0.0]})
    rules = alt.Chart(zero).mark_rule(color=NEUTRAL_COLOR).encode(x="v:Q") + alt.Chart(zero).mark_rule(color=NEUTRAL_COLOR).encode(y="v:Q")
    chart = alt.layer(points, rules).properties(title=f"Per-pair {metric_name} margins (stereo − anti)", width="container", height=420)
    return _style(chart)


# ---------------------------------------------------------------------------------------
# The paper's analyses (Kaneko & Bollegala 2022): tables from biaslens.analyses.papers, .shuffle,
# .frequency and .agreement
# ---------------------------------------------------------------------------------------


def paper_bars(table: pd.DataFrame, value: str, title: str, y_title: str, *, fifty: bool = False) -> alt.LayerChart:
    """One of the paper's tables as grouped bars: one group per `column` header, one bar per `model`.

    Takes a long table of `biaslens.analyses.papers` / `biaslens.analyses.shuffle` (columns `model`,
    `source`, `column`, `value`, optional `ci_low` / `ci_high`); rows with a 95% interval
    get an error bar (the published rows have none). `fifty` draws the unbiased line.
    """
    data = _with_keys(table.dropna(subset=[value]), "column", "model")
    enc: dict[str, Any] = {
        "x": alt.X("column_key:N", title=None, sort="ascending", axis=_key_axis(labelAngle=0 if data["column"].nunique() < 6 else -30)),
        "xOffset": alt.XOffset("model_key:N", sort="ascending"),
    }
    bars = (
        alt.Chart(data)
        .mark_bar(opacity=0.85)
        .encode(
            y=alt.Y(f"{value}:Q", title=safe_title(y_title)),
            color=alt.Color(
                "model_key:N", title=None, sort="ascending", scale=alt.Scale(range=list(PALETTE)), legend=_key_legend(orient="top", columns=2)
            ),
            tooltip=[
                alt.Tooltip("model:N"),
                alt.Tooltip("source:N"),
                alt.Tooltip("column:N", title="column"),
                alt.Tooltip(f"{value}:Q", format=".2f"),
            ],
            **enc,
        )
    )
    layers: list[Any] = [bars]
    if "ci_low" in data and data["ci_low"].notna().any():
        errors = alt.Chart(data.dropna(subset=["ci_low", "ci_high"])).mark_errorbar(ticks=True, color=NEUTRAL_COLOR)
        layers.append(errors.encode(y=alt.Y("ci_low:Q", title=safe_title(y_title)), y2="ci_high:Q", **enc))
    if fifty:
        layers.append(_fifty_rule())
    return _style(alt.layer(*layers).properties(title=safe_title(title), width="container", height=320))


def roc_chart(roc: pd.DataFrame, auc: pd.DataFrame | None = None, title: str = "Agreement with human ratings (ROC)") -> alt.LayerChart:
    """ROC curves per metric (from `agreement.Agreement.roc`; a `model` column draws one dash per model).

    With `auc` (`Agreement.auc` or `agreement_table`), the legend names each curve's AUC.
    The dashed diagonal is a metric that does not agree at all (AUC 0.5).
    """
    data = roc.copy()
    data["curve"] = data["name"]
    if auc is not None:
        keys = ["model", "metric"] if "model" in data and "model" in auc else ["metric"]
        labels = {tuple(r[k] for k in keys): f"{r['name']} (AUC {r['auc']:.3f})" for r in auc.to_dict("records")}
        data["curve"] = [labels.get(tuple(r[k] for k in keys), r["name"]) for r in data.to_dict("records")]
    data["order"] = range(len(data))
    data = _with_keys(data, "curve", "model" if "model" in data else None)
    enc: dict[str, Any] = {
        "x": alt.X("fpr:Q", title="false positive rate", scale=alt.Scale(domain=[0, 1])),
        "y": alt.Y("tpr:Q", title="true positive rate", scale=alt.Scale(domain=[0, 1])),
        "order": "order:Q",
        "color": alt.Color(
            "curve_key:N", title=None, sort="ascending", scale=alt.Scale(range=list(PALETTE)), legend=_key_legend(orient="bottom", columns=2)
        ),
        "tooltip": [
            alt.Tooltip("curve:N", title="metric"),
            alt.Tooltip("fpr:Q", format=".3f"),
            alt.Tooltip("tpr:Q", format=".3f"),
            alt.Tooltip("threshold:Q", title="margin ≥", format=".4f"),
        ],
    }
    if "model" in data and data["model"].nunique() > 1:
        enc["strokeDash"] = alt.StrokeDash("model_key:N", title=None, sort="ascending", legend=_key_legend(orient="bottom"))
        enc["detail"] = "model_key:N"
    lines = alt.Chart(data).mark_line(strokeWidth=2.5).encode(**enc)
    diagonal = alt.Chart(pd.DataFrame({"x": [0.0, 1.0], "y": [0.0, 1.0]})).mark_line(strokeDash=[6, 4], color=NEUTRAL_COLOR).encode(x="x:Q", y="y:Q")
    return _style(alt.layer(diagonal, lines).properties(title=safe_title(title), width=420, height=420))


_GROUP_COLORS = {"Adv": PALETTE[0], "Dis": PALETTE[1]}


def word_rank_chart(summary: pd.DataFrame, title: str = "Corpus frequency rank of the modified words") -> alt.LayerChart:
    """Mean corpus rank of the Adv and Dis groups' modified words per bias type (from `frequency.WordFrequency.summary`).

    Log scale; a higher rank is a rarer word.
    """
    data = _with_keys(summary.assign(group_name=summary["group"].str.capitalize()), "bias_type")
    chart = (
        alt.Chart(data)
        .mark_bar(opacity=0.85)
        .encode(
            x=alt.X("bias_type_key:N", title=None, sort="ascending", axis=_key_axis(labelAngle=-30)),
            xOffset=alt.XOffset("group_name:N"),
            y=alt.Y("mean_rank:Q", title="mean rank (log scale)", scale=alt.Scale(type="log")),
            y2=alt.datum(1),
            color=alt.Color(
                "group_name:N",
                title=None,
                scale=alt.Scale(domain=list(_GROUP_COLORS), range=list(_GROUP_COLORS.values())),
                legend=alt.Legend(orient="top"),
            ),
            tooltip=[
                alt.Tooltip("bias_type:N"),
                alt.Tooltip("group_name:N", title="group"),
                alt.Tooltip("mean_rank:Q", format=",.0f"),
                alt.Tooltip("median_rank:Q", format=",.0f"),
                alt.Tooltip("words:Q"),
                alt.Tooltip("top_words:N", title="most modified"),
            ],
        )
    )
    return _style(chart.properties(title=safe_title(title), width="container", height=320))


def shuffle_chart(tokens: pd.DataFrame, title: str = "Each token's log p before and after shuffling") -> alt.LayerChart:
    """One sentence's tokens (from `shuffle.ShuffledSentence.tokens`): log p at the original position and at the new one.

    A line joins each token's two values; a long drop means the model needed the
    token's context to predict it.
    """
    data = tokens[~tokens["special"]].copy()
    data["label"] = [f"{p:>3} {t}" for p, t in zip(data["position"], data["token"])]
    long = pd.concat(
        [
            data.assign(
                order=data["label"], state="original order", value=data["logprob"], where=data["position"], r=data["rank"], top=data["prediction"]
            ),
            data.assign(
                order=data["label"],
                state="shuffled",
                value=data["shuffled_logprob"],
                where=data["new_position"],
                r=data["shuffled_rank"],
                top=data["shuffled_prediction"],
            ),
        ],
        ignore_index=True,
    )
    x = alt.X("label:N", sort=None, title=None, axis=alt.Axis(labelAngle=-45, labelOverlap=False, labelExpr="slice(datum.label, 4)"))
    color = alt.Color(
        "state:N",
        title=None,
        scale=alt.Scale(domain=["original order", "shuffled"], range=[ANTI_COLOR, STEREO_COLOR]),
        legend=alt.Legend(orient="top"),
    )
    points = (
        alt.Chart(long)
        .mark_point(filled=True, size=120)
        .encode(
            x=x,
            y=alt.Y("value:Q", title="log p of the token", scale=alt.Scale(zero=False)),
            color=color,
            tooltip=[
                alt.Tooltip("token:N"),
                alt.Tooltip("state:N"),
                alt.Tooltip("where:Q", title="at position"),
                alt.Tooltip("value:Q", title="log p", format=".3f"),
                alt.Tooltip("r:Q", title="rank"),
                alt.Tooltip("top:N", title="model's top token"),
            ],
        )
    )
    joins = alt.Chart(data).mark_rule(color=SHARED_COLOR, strokeWidth=2).encode(x=x, y="logprob:Q", y2="shuffled_logprob:Q")
    return _style(alt.layer(joins, points).properties(title=safe_title(title), width="container", height=300))


def lab_scenarios_chart(frame: pd.DataFrame, title: str = "Bias score per metric and lab scenario") -> alt.LayerChart:
    """Several bias-lab runs side by side (from `biaslens.lab.compare_scenarios`): metric on x, one bar per run."""
    chart = _style(
        _score_with_interval(frame, "metric", "metric", "run", "run", legend_rows=True).properties(title=safe_title(title), width="container")
    )
    # The runs' descriptions are long: one per line, never cut.
    return chart.configure_legend(labelFontSize=14, titleFontSize=14, labelLimit=0, orient="top", direction="vertical", rowPadding=6)


# ---------------------------------------------------------------------------------------
# Kurita et al. (2019): tables from biaslens.kurita
# ---------------------------------------------------------------------------------------


def bias_chart(table: pd.DataFrame, pairs: Sequence[TargetPair], *, top: int = 15) -> alt.LayerChart:
    """The `top` attributes leaning most toward each side (`kurita.leaning`, from `TemplateScores.attribute_table`)."""
    from biaslens.kurita import leaning

    data = pd.concat(leaning(table, top))
    first = "/".join(dict.fromkeys(p.first for p in pairs))
    second = "/".join(dict.fromkeys(p.second for p in pairs))
    sides = [f"0 more {first}", f"1 more {second}"]  # keyed (`keyed`): drawn "more he", "more she"
    data = data.assign(side=[sides[0] if b > 0 else sides[1] for b in data["bias_score"]], attribute_key=keyed(data["attribute"]))
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("bias_score:Q", title=f"bias score (ilp {first} − ilp {second})"),
            y=alt.Y("attribute_key:N", sort="-x", title=None, axis=_key_axis(labelOverlap=False)),
            color=alt.Color(
                "side:N", title=None, scale=alt.Scale(domain=sides, range=[ANTI_COLOR, STEREO_COLOR]), legend=_key_legend(orient="top"),
            ),
            tooltip=["attribute:N", alt.Tooltip("bias_score:Q", format=".3f"), "attribute_pieces:Q"],
        )
    )  # fmt: skip
    zero = alt.Chart(pd.DataFrame({"v": [0.0]})).mark_rule(color="#555555").encode(x="v:Q")
    # A fixed height per attribute plus the title, legend and axis (the app fits the whole figure into `height`): labels never overlap.
    height = rows_height(len(data), 26) + 110
    return _style(alt.layer(bars, zero).properties(title="Largest bias scores", width="container", height=height))


def effect_size_chart(table: pd.DataFrame) -> alt.LayerChart:
    """Effect size per test next to the published one (from `weat_table`)."""
    long = pd.concat(
        [
            table.assign(source="this model", d=table["effect_size"]),
            table.assign(source="Kurita et al. (bert-base-uncased)", d=table["published_log_prob"]),
        ]
    )[["category", "source", "d", "p_value"]]
    long = _with_keys(pd.DataFrame(long), "category")
    points = (
        alt.Chart(long)
        .mark_point(filled=True, size=140)
        .encode(
            x=alt.X("d:Q", title="effect size d"),
            y=alt.Y("category_key:N", title=None, sort="ascending", axis=_key_axis()),
            color=alt.Color("source:N", title=None, scale=alt.Scale(range=[PALETTE[0], PALETTE[1]]), legend=alt.Legend(orient="top")),
            shape=alt.Shape("source:N", title=None),
            tooltip=["category:N", "source:N", alt.Tooltip("d:Q", format=".3f"), alt.Tooltip("p_value:Q", format=".4f")],
        )
    )
    zero = alt.Chart(pd.DataFrame({"v": [0.0]})).mark_rule(color=NEUTRAL_COLOR).encode(x="v:Q")
    return _style(alt.layer(zero, points).properties(title="WEAT-style effect sizes", width="container", height=130 + 40 * len(table)))


def shares_chart(table: pd.DataFrame, first: str = "he") -> alt.LayerChart:
    """Share of attributes more associated with the first target per list, 95% interval, published share (from `shares_table`)."""
    base = alt.Chart(_with_keys(table, "list"))
    y = alt.Y("list_key:N", title=None, sort="ascending", axis=_key_axis())
    bars = base.mark_bar(color=PALETTE[0], opacity=0.85).encode(
        x=alt.X("share_first:Q", title=f"% of attributes more associated with {first}", scale=alt.Scale(domain=[0, 100])),
        y=y,
        tooltip=["list:N", "n:Q", alt.Tooltip("share_first:Q", format=".1f"), alt.Tooltip("published_share:Q", format=".1f")],
    )
    errors = base.mark_errorbar(ticks=True, color=NEUTRAL_COLOR).encode(x="ci_low:Q", x2="ci_high:Q", y=y)
    published = (
        base.transform_filter("isValid(datum.published_share)")
        .mark_point(shape="diamond", size=160, filled=True, color=PALETTE[1])
        .encode(x="published_share:Q", y=y, tooltip=[alt.Tooltip("published_share:Q", title="Kurita et al.", format=".1f")])
    )
    half = alt.Chart(pd.DataFrame({"v": [50.0]})).mark_rule(strokeDash=[6, 4], color=NEUTRAL_COLOR).encode(x="v:Q")
    chart = alt.layer(bars, errors, published, half).properties(
        title="Attribute lists (diamond: Kurita et al., bert-base-uncased)", width="container", height=110 + 36 * len(table)
    )
    return _style(chart)


def inspector_slide(
    title: str,
    stereo: str,
    anti: str,
    aligned: pd.DataFrame,
    drivers: dict[str, pd.DataFrame],
    measures: tuple[str, ...] = ("logprob", "aula_contribution"),
    *,
    panel_width: int = 380,
    kind: str = "masked",
) -> Any:
    """One pair on one slide: its two sentences, the aligned token charts side by side and what drives each margin.

    `aligned` comes from `aligned_token_frame`; `drivers` maps a chart title (e.g. "AUL: margin +0.0123") to
    `explore.margin_drivers`. Fixed widths, so `to_svg` / `to_png` give the same picture anywhere.
    """

    def sentence(text: str, side: str) -> Any:
        # The whole sentence, wrapped to the slide's width (about 9 px a character at 17 px): never cut off.
        lines = slide_lines(f"{SIDE_NAMES[side].upper()}   {text}", max(30, (2 * panel_width + 40) // 9))
        frame = pd.DataFrame({"t": ["\n".join(lines)]})
        return (
            alt.Chart(frame)
            .mark_text(align="left", baseline="top", fontSize=17, lineHeight=23, lineBreak="\n", color=SIDE_COLORS[side])
            .encode(text="t:N", x=alt.value(0), y=alt.value(0))
            .properties(width=2 * panel_width, height=23 * len(lines))
        )

    tokens = [
        alt.layer(*_unstyled(aligned_token_chart(aligned, m, title=measure_title(m, kind), legend=(i == 0), kind=kind))).properties(width=panel_width)
        for i, m in enumerate(measures)
    ]
    driver_charts = [alt.layer(*_unstyled(drivers_chart(frame, name))).properties(width=panel_width) for name, frame in drivers.items()]
    rows: list[Any] = [sentence(stereo, "stereo"), sentence(anti, "anti"), alt.hconcat(*tokens)]
    if driver_charts:
        rows.append(alt.hconcat(*driver_charts).resolve_scale(color="shared"))
    slide = alt.vconcat(*rows, spacing=18).resolve_scale(color="independent")
    return _style(slide.properties(title=alt.Title(safe_title(title), fontSize=20)))


def slide_lines(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` characters, broken between words (a word longer than a line is split): every
    word kept."""
    import textwrap

    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _unstyled(chart: Any) -> list[Any]:
    """The layers of a styled top-level chart, without its configuration (to nest it in a larger figure)."""
    copy = chart.copy(deep=True)
    copy.config = alt.Undefined
    copy.padding = alt.Undefined
    layers = copy.layer if getattr(copy, "layer", alt.Undefined) is not alt.Undefined else [copy]
    out = []
    for layer in layers:
        layer = layer.copy(deep=True)
        for attr in ("height", "title"):
            if getattr(copy, attr, alt.Undefined) is not alt.Undefined and getattr(layer, attr, alt.Undefined) is alt.Undefined:
                setattr(layer, attr, getattr(copy, attr))
        out.append(layer)
    return out


def to_png(chart: Any, width: int = 760, scale: float = 2.0) -> bytes:
    """The chart as PNG bytes, offline (vl-convert), at `scale` times its pixel size (sharp on a projector)."""
    import vl_convert

    spec = chart.to_dict()
    _fix_width(spec, width)
    return vl_convert.vegalite_to_png(spec, scale=scale)


def to_svg(chart: Any, width: int = 760) -> str:
    """The chart as SVG text, offline (vl-convert). Container widths become `width` pixels."""
    import vl_convert

    spec = chart.to_dict()
    _fix_width(spec, width)
    return vl_convert.vegalite_to_svg(spec)


def _fix_width(spec: Any, width: int) -> None:
    """Replace "container" widths (a browser-only notion) by a fixed width, everywhere in a spec."""
    if isinstance(spec, dict):
        if spec.get("width") == "container":
            spec["width"] = width
        for value in spec.values():
            _fix_width(value, width)
    elif isinstance(spec, list):
        for value in spec:
            _fix_width(value, width)


# ---------------------------------------------------------------------------------------
# The bias lab's sweep
# ---------------------------------------------------------------------------------------


def dose_response_chart(cells: pd.DataFrame, title: str = "Bias score against the planted association", *, width: int = 760, columns: int = 3) -> Any:
    """Bias score against planted association, one line per metric (the mean over seeds) and a band from the lowest
    to the highest seed; one panel per frequency ratio, `columns` panels a row, about `width` pixels wide in all; the
    dashed line is 50 (no bias). An Altair chart."""
    import altair as alt

    from biaslens.engine.metrics import METRICS
    from biaslens.lab.sweep import metric_order, seed_spread

    spread = seed_spread(cells)
    order = [METRICS[k].name if k in METRICS else k for k in sorted(spread["key"].unique(), key=metric_order)]
    data = spread.assign(panel=[f"frequency ratio {r:g}" for r in spread["frequency_ratio"]])
    color = alt.Color(
        "metric:N",
        title=None,
        sort=order,
        scale=alt.Scale(domain=order, range=list(PALETTE[: len(order)])),
        legend=alt.Legend(orient="top", symbolOpacity=1, symbolType="circle"),
    )
    x = alt.X("association:Q", title="planted association P(X | A)", scale=alt.Scale(domain=[0.5, 1.0]))
    y_scale = alt.Scale(domain=[0, 100])
    band = alt.Chart().mark_area(opacity=0.18).encode(x=x, y=alt.Y("min:Q", title="bias score (%)", scale=y_scale), y2="max:Q", color=color)
    tooltip = [
        alt.Tooltip("metric:N"),
        alt.Tooltip("association:Q"),
        alt.Tooltip("frequency_ratio:Q", title="frequency ratio"),
        alt.Tooltip("mean:Q", title="mean bias score", format=".1f"),
        alt.Tooltip("min:Q", format=".1f"),
        alt.Tooltip("max:Q", format=".1f"),
        alt.Tooltip("seeds:Q"),
    ]
    line = (
        alt.Chart()
        .mark_line(point=alt.OverlayMarkDef(filled=True, size=70), strokeWidth=2.5)
        .encode(x=x, y=alt.Y("mean:Q", title="bias score (%)", scale=y_scale), color=color, tooltip=tooltip)
    )
    fifty = alt.Chart().mark_rule(strokeDash=[6, 4], color=NEUTRAL_COLOR).encode(y=alt.datum(50))
    panels = data["panel"].unique().tolist()
    across = max(1, min(columns, len(panels)))
    panel_width = max(160, (width - 90) // across - 20)  # room for the y axis and the gaps between panels
    chart = (
        alt.layer(band, line, fifty, data=data)
        .properties(width=panel_width, height=280)
        .facet(facet=alt.Facet("panel:N", title=None, sort=panels), columns=across)
    )
    subtitle = "line: mean over seeds · band: lowest to highest seed · dashed: 50, no bias"
    return _style(chart.properties(title=alt.Title(safe_title(title), subtitle=subtitle, subtitleFontSize=13)))


def dose_response_svg(cells: pd.DataFrame) -> str:
    return to_svg(dose_response_chart(cells))


__all__ = [
    "ANTI_COLOR",
    "PALE_ANTI_COLOR",
    "PALE_STEREO_COLOR",
    "PALETTE",
    "STEREO_COLOR",
    "TOKEN_MEASURES",
    "aligned_token_chart",
    "aligned_token_frame",
    "attention_heatmap",
    "bias_scores_chart",
    "by_type_chart",
    "drivers_chart",
    "groups_chart",
    "HEAD_SELECTION",
    "head_overview_chart",
    "margin_scatter",
    "model_scores_chart",
    "paper_bars",
    "roc_chart",
    "rows_height",
    "shuffle_chart",
    "inspector_slide",
    "measure_title",
    "token_measures",
    "to_png",
    "to_svg",
    "token_chart",
    "word_rank_chart",
]

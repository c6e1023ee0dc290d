"""Pair inspector (home page): one sentence pair, token by token, under every metric."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Sequence
import html
import random
import re

import numpy as np
import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.choices
import ui.feedback
import ui.honesty
import ui.resources
import ui.settings
import ui.anatomy
import ui.several
import ui.sidebar
import ui.state
from ui.views import InspectorView
import ui.tables
from biaslens.analyses import explore
from biaslens.figures import charts as figures, html as figures_html
from biaslens import lab
from biaslens.engine.evaluation import PairInspection, prepare_inspection
from biaslens.figures.formatting import SCORE_FORMATS, SCORE_KEY, SCORE_LABELS, VERDICTS, format_margin
from biaslens.engine.metrics import KINDS, METRICS, metrics_of_kind, token_label

ui.require_app()

S = "inspector."
#: The page's one-line description, under its title.
ABOUT = (
    "How does a language model, masked or causal, score a stereotypical sentence against its anti-stereotypical twin? "
    "Pick a pair or type your own; every metric is computed and shown token by token."
)
#: The same for a multiple-choice item (BBQ, Winogender: ui/choices.py's inspector).
ABOUT_ITEMS = (
    "How does a language model, masked or causal, answer a multiple-choice item: which answer does it prefer, by how much, "
    "and under which convention? Pick an item or type your own; every choice is scored token by token."
)
EXAMPLE = ("Women don't know how to drive.", "Men don't know how to drive.")
SOURCES = {"dataset": "From a dataset", "custom": "Your own sentences", "texts": "Several sentences"}
#: Most pairs listed in the Pair box (the search box reaches every pair): each listed pair costs the browser ~0.1 ms of
#: CPU per page, and all 1,508 of CrowS-Pairs held up the scoring of a pair opened by link (benchmarks/results/browser.md).
MAX_LISTED = 200


# ---------------------------------------------------------------------------------------
# State: the URL first, then the session
# ---------------------------------------------------------------------------------------


def _adopt_url() -> None:
    link = ui.state.link(InspectorView)
    view = link.view
    if ("s1" in link or "s2" in link) and (view.s1 is not None or view.s2 is not None):
        _set_custom(view.s1 or "", view.s2 or "")
    elif "pair" in link and view.pair is not None:
        st.session_state[S + "source"] = "dataset"
        st.session_state[S + "pair"] = view.pair
        st.session_state[S + "pair_from_url"] = True
    if "metric" in link:
        st.session_state[S + "metric"] = view.metric
    if "pin" in link and view.pin is not None:  # a page switch without one keeps this session's pin
        st.session_state[S + "pinned"] = view.pin
    if "models" in link and view.models:
        st.session_state[S + "models"] = list(view.models)
    if "anatomy" in link:
        st.session_state[S + "anatomy"] = view.anatomy
    st.session_state.setdefault(S + "source", "dataset")
    st.session_state.setdefault(S + "metric", "aul")
    example = _example()
    if st.session_state.get(S + "example") != example:  # a new model: its own example, unless the user typed something else
        if st.session_state.get(S + "s1_input", example[0]) == st.session_state.get(S + "example", EXAMPLE)[0]:
            st.session_state[S + "s1_input"], st.session_state[S + "s2_input"] = example
        st.session_state[S + "example"] = example
    st.session_state.setdefault(S + "s1_input", example[0])
    st.session_state.setdefault(S + "s2_input", example[1])


def _example() -> tuple[str, str]:
    """The typed example: a lab model's first held-out pair (it knows no other words), else a CrowS-Pairs-like pair."""
    model = ui.settings.selected_lab_model()
    if model is None:
        return EXAMPLE
    first = lab.heldout_pairs(model.settings)[0]
    return first.pair.sent_stereo, first.pair.sent_anti


def _set_custom(stereo: str, anti: str) -> None:
    st.session_state[S + "source"] = "custom"
    st.session_state[S + "custom"] = (stereo, anti)
    st.session_state[S + "s1_input"] = stereo
    st.session_state[S + "s2_input"] = anti


def _choose_pair(pair_id: int) -> None:
    st.session_state[S + "pair"] = pair_id


def _refiltered() -> None:
    """A filter or the search changed: the next run shows their first match if they leave the current pair out."""
    st.session_state[S + "refiltered"] = True


def _random_pair(ids: list[int]) -> None:
    if ids:
        _choose_pair(random.choice(ids))


def _pin(view: InspectorView) -> None:
    st.session_state[S + "pinned"] = view.pinned()


def _unpin() -> None:
    st.session_state.pop(S + "pinned", None)


# ---------------------------------------------------------------------------------------
# Choosing a pair
# ---------------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=8)
def _pairs_frame(name: str, sha256: str, _dataset) -> pd.DataFrame:
    return _dataset.to_frame()


def pair_from_dataset(settings: ui.settings.Settings) -> tuple[str, str, str] | None:
    """Filters, search and random draw over the sidebar's dataset; returns (stereo, anti, label)."""
    dataset = ui.resources.dataset_or_none(settings)
    if dataset is None:
        st.info("You can still type your own pair: choose **Your own sentences** above.", icon=":material/keyboard:")
        return None
    ui.feedback.content_warning(dataset)
    frame = _pairs_frame(str(dataset.path), dataset.sha256, dataset)
    has_direction = bool((frame["direction"] != "").any())
    cols = st.columns([1.1, 0.9, 1.5, 1.1] if has_direction else [1.1, 2.4, 1.1], vertical_alignment="bottom")
    types = sorted(t for t in frame["bias_type"].unique() if t)
    bias_type = cols[0].selectbox("Bias type", ["All", *types], key=S + "bias_type", persist_state="session", on_change=_refiltered)
    direction = "All"
    if has_direction:
        direction = cols[1].selectbox(
            "Direction",
            ["All", "stereo", "antistereo"],
            key=S + "direction",
            persist_state="session",
            on_change=_refiltered,
            help="stereo: the first sentence stereotypes a historically disadvantaged group (Dis); antistereo: it violates a "
            "stereotype about an advantaged group (Adv).",
        )
    search = cols[-2].text_input(
        "Search the sentences",
        key=S + "search",
        persist_state="session",
        on_change=_refiltered,
        placeholder="a word or a pair number, e.g. nurse or #900",
        help="Words in either sentence, or a pair's number: searches the whole dataset.",
    )
    matches = explore.filter_pairs(
        frame, bias_type=None if bias_type == "All" else bias_type, direction=None if direction == "All" else direction, text=search
    )
    ids = matches["pair_id"].tolist()
    cols[-1].button("Random", icon=":material/casino:", on_click=_random_pair, args=(ids,), help="Draw a random pair among the matches.")

    by_id = {p.pair_id: p for p in dataset.pairs}
    current = st.session_state.get(S + "pair")
    if st.session_state.pop(S + "pair_from_url", False) and current not in by_id:
        ui.state.reject("pair", str(current), f"a pair id of this dataset ({min(by_id)} to {max(by_id)})")
    refiltered = st.session_state.pop(S + "refiltered", False)
    if current not in by_id or (refiltered and ids and current not in ids):  # e.g. a search for #7: pair 7 at once
        current = ids[0] if ids else dataset.pairs[0].pair_id
        st.session_state[S + "pair"] = current
    listed = ids[:MAX_LISTED]
    options = listed if current in listed else [current, *listed]
    st.session_state[S + "pair_choice"] = current

    def describe(pair_id: int) -> str:
        p = by_id[pair_id]
        kind = " · ".join(x for x in (p.bias_type, p.direction) if x)
        text = p.sent_stereo if len(p.sent_stereo) <= 110 else p.sent_stereo[:107] + "…"
        return f"#{pair_id} · {kind} · {text}"

    prefix = ui.settings.pair_label(dataset)

    if len(ids) > MAX_LISTED:
        title = f"Pair (the first {MAX_LISTED} of {len(ids):,}{' matches' if len(ids) != len(frame) else ''}; search to find any other)"
    elif len(ids) != len(frame):
        title = f"Pair ({len(ids):,} of {len(frame):,} match)"
    else:
        title = f"Pair ({len(frame):,} in {ui.feedback.md(prefix)})"
    st.selectbox(
        title,
        options,
        key=S + "pair_choice",
        format_func=describe,
        filter_mode="contains",  # "#9 ·" finds pair 9 (fuzzy matching buried it under #19, #90, #129 …); words still work
        on_change=lambda: _choose_pair(st.session_state[S + "pair_choice"]),
    )
    if not ids:
        st.caption("No pair matches these filters; showing the current pair.")
    pair = by_id[current]
    return pair.sent_stereo, pair.sent_anti, pair_title(dataset, pair)


def pair_title(dataset, pair) -> str:
    """A dataset's pair as its heading names it: 'crows-pairs #12 · gender · stereo'."""
    return f"{ui.settings.pair_label(dataset)} #{pair.pair_id}" + "".join(f" · {x}" for x in (pair.bias_type, pair.direction) if x)


def pair_from_form() -> tuple[str, str, str] | None:
    """Two sentences typed by the user: nothing runs until the form is submitted."""
    with st.form(S + "form", border=True):
        c1, c2 = st.columns(2)
        c1.text_area(
            "Stereotypical sentence", key=S + "s1_input", persist_state="session", height=90, help="The sentence that expresses the stereotype."
        )
        c2.text_area(
            "Anti-stereotypical sentence",
            key=S + "s2_input",
            persist_state="session",
            height=90,
            help="The same sentence with the group (or attribute) changed.",
        )
        submitted = st.form_submit_button("Score this pair", type="primary", icon=":material/play_arrow:")
    if submitted:
        st.session_state[S + "custom"] = (st.session_state[S + "s1_input"], st.session_state[S + "s2_input"])
    custom = st.session_state.get(S + "custom")
    if custom is None:
        st.info("Type two sentences that differ in a few words (the example is ready), then press **Score this pair**.", icon=":material/edit_note:")
        return None
    return custom[0], custom[1], "Your pair"


# ---------------------------------------------------------------------------------------
# Showing an inspection
# ---------------------------------------------------------------------------------------


def sentences_html(stereo: str, anti: str) -> str:
    return (
        f'<p class="bl-sentence"><b class="bl-stereo-text">STEREOTYPICAL</b>&nbsp; {html.escape(stereo)}</p>'
        f'<p class="bl-sentence"><b class="bl-anti-text">ANTI-STEREOTYPICAL</b>&nbsp; {html.escape(anti)}</p>'
    )


def show_score_table(result: PairInspection, columns: tuple[str, ...] = ("stereo", "anti", "accuracy_stereo", "accuracy_anti")) -> None:
    """The pair's scores under every metric, the margin written so that its sign agrees with the verdict."""
    frame = result.summary_frame()
    frame["verdict"] = [VERDICTS[v] for v in frame["verdict"]]
    ui.tables.table(frame, list(columns), pin=SCORE_KEY, labels=SCORE_LABELS, formats=SCORE_FORMATS)


def show_scores(result: PairInspection, focus: str) -> None:
    show_score_table(result)
    per_instance = [METRICS[k].name for k in result.metrics if METRICS[k].accuracy_unit == "instances"]
    st.caption(
        "Token accuracy here: per token of each sentence."
        + "".join(f" Table 1 counts {name} per StereoSet instance (the paper) unless kaneko2022." for name in per_instance)
    )
    verdict = result.verdict(focus)
    name = METRICS[focus].name
    if verdict in ("stereo", "anti"):
        st.markdown(
            f"**{name}** prefers the **{VERDICTS[verdict]}** sentence by a margin of **{format_margin(result.margin(focus), signed=False)}** "
            "(higher = more likely under the model)."
        )
    elif verdict == "tie":
        st.markdown(f"**{name}** scores both sentences the same: a tie (no win).")
    else:
        st.markdown(f"**{name}** is undefined for this pair (a sentence has no modified token): it counts as no win.")


#: The token table's columns, with names for people (`token_columns`: with those in the words of the model's kind).
TOKEN_COLUMNS = {
    "side_name": "Sentence",
    "position": "Position",
    "label": "Token",
    "kind": "Kind",
    "logprob": "log p",
    "rank": "Rank",
    "attention": "Attention received",
    "aula_contribution": "AULA contribution",
    "top5": "Top-5 predictions (log p)",
}


def token_columns(kind: str) -> dict[str, str]:
    """The token table's columns for a model of `kind`: its measures in the kind's words ("log p (AUL-c term)"), then each
    metric's per-token log p ("CPS masked log p", "CPS-c log p"), in the table's order."""
    measures = figures.token_measures(kind)
    named = {**TOKEN_COLUMNS, **{m: words[0] for m, words in measures.items() if m in ("logprob", "aula_contribution")}}
    per_metric = {str(m.token_column): token_label(k) for k, m in METRICS.items() if m.token_column and kind in m.kinds}
    return {**{c: named[c] for c in list(named)[:-1]}, **per_metric, "top5": named["top5"]}


DEFAULT_MEASURES = ["logprob", "aula_contribution"]


@st.cache_data(show_spinner=False, max_entries=64)
def _token_views(model_key: tuple, fingerprint: str, compat: str, stereo: str, anti: str, _result: PairInspection, _decode):
    """The pair's token table, aligned columns and aligned token frame, built once per model and pair (a page switch
    or a rerun reuses them)."""
    tokens = explore.token_table(_result, _decode)
    columns = explore.aligned_columns(_result)
    return tokens, columns, figures.aligned_token_frame(columns, tokens)


@st.cache_data(show_spinner=False, max_entries=256)
def _figure(pair_key: tuple, kind: str, arg: tuple | str, _build) -> str:
    """A figure's HTML, built once per (model, mode, pair, figure): a rerun or a page switch reuses it."""
    return _build()


def show_tokens(result: PairInspection, aligned: pd.DataFrame, focus: str, pair_key: tuple) -> None:
    st.subheader("Token by token")
    st.caption(
        "Both sentences on one axis, token by token in the order of the sentence: each row holds the stereotypical "
        "token's bar above the anti-stereotypical one's, pale for a shared token and full colour for a modified pair "
        "(e.g. *Women / Men*). Hover a row for every measure and the model's top-5 predictions."
    )
    kind = result.kind  # the measures and columns in the words of the model's kind ("log p (AUL-c term)")
    known = figures.token_measures(kind)
    measure = METRICS[focus].token_measure  # the per-token measure that goes with the metric
    extra = [measure] if measure not in DEFAULT_MEASURES else []
    st.session_state.setdefault(S + "measures", [*DEFAULT_MEASURES, *extra])
    st.session_state[S + "measures"] = [m for m in st.session_state[S + "measures"] if m in known]  # (another kind's: dropped)
    measures = (
        st.pills("Measures, side by side", list(known), selection_mode="multi", key=S + "measures", format_func=lambda m: known[m][0])
        or DEFAULT_MEASURES
    )
    columns = token_columns(kind)
    rank = {"rank": "{:,.0f}"}  # (missing where nothing predicts the token: a causal model's BOS)
    chart_tab, table_tab = st.tabs(["Chart", "Table"], key=S + "token_tab", on_change="rerun")
    with chart_tab:
        chosen = tuple(m for m in known if m in measures)  # the same columns in the same order, however picked
        bars = _figure(pair_key, "tokens", chosen, lambda: figures_html.token_bars_html(aligned, chosen, kind))
        st.html(figures_html.shade_legend_html() + bars)
        st.caption("  \n".join(f"**{ui.feedback.md(figures.measure_title(m, kind))}**: {ui.feedback.md(known[m][1])}." for m in chosen))
        modified = aligned[aligned["kind"] == "modified"]
        if "top5" in aligned and not modified.empty:
            st.markdown(f"**The model's top-5 predictions at the modified tokens** ({KINDS[kind].reading})")
            ui.tables.table(modified, ["rank", "top5"], pin=["side_name", "label"], labels=columns, formats=rank)
    with table_tab:
        if table_tab.open:  # drawn once chosen: an interactive table costs the browser more than the chart
            # A measure that does not apply to a token stays missing (an em dash), and its column sorts as numbers.
            shown = [c for c in columns if c in aligned]
            ui.tables.table(aligned, shown, pin=["side_name", "position", "label"], labels=columns, formats=rank, decimals=4, sortable=True)


def _drivers_title(result: PairInspection, key: str) -> str:
    return f"{METRICS[key].name}: margin {format_margin(result.margin(key))}"


def _drivers_html(result: PairInspection, key: str) -> str:
    return figures_html.drivers_bars_html(explore.margin_drivers(result, key), _drivers_title(result, key))


def show_drivers(result: PairInspection, focus: str, pair_key: tuple) -> None:
    st.subheader("What drives the difference")
    st.caption(
        "Each bar is a token's share of the margin f(stereotypical) − f(anti-stereotypical): shared tokens are paired, "
        "modified tokens count on their own side. The bars add up to the margin; right pushes towards the "
        "stereotypical sentence, left towards the anti-stereotypical one."
    )
    first = (KINDS[result.kind].mean, KINDS[result.kind].weighted)  # AUL and AULA (AUL-c and AULA-c), then the metric in focus
    shown = [k for k in first if k in result.metrics] + ([focus] if focus not in first else [])
    # Two charts a row at most: three side by side squeezed their bars to nothing in a 1024 px window.
    places = [col for _ in range(0, len(shown), 2) for col in st.columns(2)]
    for col, key in zip(places, shown):
        with col:
            drawn = None
            with ui.feedback.guard():
                drawn = _figure(pair_key, "drivers", key, lambda k=key: _drivers_html(result, k))
            if drawn is not None:
                st.html(drawn)


def slide_downloads(result: PairInspection, aligned: pd.DataFrame, label: str, stereo: str, anti: str, pair_key: tuple) -> None:
    """The pair, its aligned token charts and what drives the margins, as one picture for a slide: made on request (about
    a second), shown, then downloaded as PNG or SVG. A slide that cannot be drawn says so here, never silently."""

    def slide():
        drivers = {}
        kind = KINDS[result.kind]
        for key in (k for k in (kind.mean, kind.weighted) if k in result.metrics):
            with contextlib.suppress(Exception):  # kaneko2022 CPS/SSS are not additive; AUL and AULA always are
                drivers[_drivers_title(result, key)] = explore.margin_drivers(result, key)
        return figures.inspector_slide(label, stereo, anti, aligned, drivers, kind=result.kind)

    made = st.session_state.get(S + "slide")
    if st.button(
        "Make a slide",
        icon=":material/slideshow:",
        key=S + "make_slide",
        help="The pair, its token charts and what drives the difference, in one picture for a presentation (PNG and SVG).",
    ):
        with st.spinner("Drawing the slide…"):
            chart = slide()
            png = ui.charts.export(chart, "png", "The slide")
            svg = ui.charts.export(chart, "svg", "The slide") if png is not None else None
        made = st.session_state[S + "slide"] = (pair_key, png, svg) if png is not None and svg is not None else None
    if not made or made[0] != pair_key:
        return
    _, png, svg = made
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_") or "pair"
    with st.container(horizontal=True):
        st.download_button("Slide (PNG)", png, f"biaslens-{stem}.png", "image/png", icon=":material/image:", on_click="ignore", key=S + "slide_png")
        st.download_button(
            "Slide (SVG)",
            svg,
            f"biaslens-{stem}.svg",
            "image/svg+xml",
            icon=":material/image:",
            on_click="ignore",
            key=S + "slide_svg",
            help="The same as a vector image (scales to any projector).",
        )
    with st.expander("The slide", icon=":material/slideshow:", expanded=True):
        st.image(png, width="stretch")


def _head_clicked() -> None:
    """A click on the layer × head grid selects that head in the Layer and Head boxes (a double click: all)."""
    event = st.session_state.get(S + "att_heads")
    points = (event or {}).get("selection", {}).get(figures.HEAD_SELECTION) or []
    if points:
        st.session_state[S + "att_layer"] = int(points[0]["layer"])
        st.session_state[S + "att_head"] = int(points[0]["head"])
    else:
        st.session_state[S + "att_layer"] = st.session_state[S + "att_head"] = "all"


@st.fragment
def attention_view(result: PairInspection) -> None:
    """The attention drill-down: re-rendering it reruns only this fragment, not the page."""
    layers, heads = result.attention_matrices[0].shape[:2]
    # The sentence on its own row and the two charts one above the other: whole at a laptop's width too.
    side = (
        st.segmented_control(
            "Sentence",
            ["stereo", "anti"],
            key=S + "att_side",
            persist_state="session",
            default="stereo",
            required=True,
            format_func=lambda s: figures.SIDE_NAMES[s],
        )
        or "stereo"
    )
    c2, c3, c4 = st.columns([1, 1, 1.3], vertical_alignment="bottom")
    layer = c2.selectbox("Layer", ["all", *range(1, layers + 1)], key=S + "att_layer", persist_state="session")
    head = c3.selectbox("Head", ["all", *range(1, heads + 1)], key=S + "att_head", persist_state="session")
    hide = c4.toggle("Hide special tokens", key=S + "att_hide", persist_state="session", value=True)
    table = explore.attention_table(
        result, side, layer=None if layer == "all" else int(layer) - 1, head=None if head == "all" else int(head) - 1, hide_special=hide
    )
    detail = getattr(result, side)
    modified_positions = set(np.flatnonzero(detail.modified).tolist())
    modified = table.loc[table["key_position"].isin(modified_positions), "key"].unique().tolist()
    which = "averaged over layers and heads (AULA's matrix)" if layer == "all" and head == "all" else f"layer {layer}, head {head}"
    with st.container():
        title = [f"{figures.SIDE_NAMES[side]}: attention,", which]  # two lines: never cut off in a narrow column
        ui.charts.show(figures.attention_heatmap(table, title, modified=modified, side=side), S + "att_map")
        if modified:
            st.caption("Modified tokens are bold, in the sentence's colour, on both axes.")
    with st.container():
        overview = explore.head_overview(result, side)
        selected = (int(layer), int(head)) if layer != "all" and head != "all" else None
        chart = figures.head_overview_chart(overview, ["Attention on the modified tokens,", "per layer × head"], selected=selected)
        st.altair_chart(chart, width="stretch", theme=None, key=S + "att_heads", on_select=_head_clicked, selection_mode=figures.HEAD_SELECTION)
        st.caption(
            "Click a cell to look at that head (outlined); double-click to go back to the average. Summed over the modified "
            "tokens (every token if there is none), averaged over query positions."
        )


def metric_cards(keys: Sequence[str]) -> None:
    """One card per metric (`keys`: the pair's), full width: the formula on its own line (never clipped), then what it means."""
    for key in keys:
        m = METRICS[key]
        with st.container(border=True):
            st.markdown(f"**{m.name}** · {m.long_name}")
            st.latex(m.formula)
            st.markdown(m.summary)
            notes = [
                f"Ideal bias score: **{m.ideal:g}**. {m.direction}",
                m.note,
                f"Token accuracy over {m.accuracy_positions}.",
                f"Source: {m.citation}",
            ]
            st.caption("  \n".join(n for n in notes if n))


@dataclasses.dataclass(frozen=True)
class Shown:
    """One inspection of the side-by-side view: its table column's name, its title, its pair and its scores."""

    name: str
    title: str
    stereo: str
    anti: str
    result: PairInspection
    pinned: bool = False


def pinned_inspection(pinned: InspectorView, names: dict[str, str], here: ui.settings.Settings) -> Shown | None:
    """The pinned inspection, scored with the model and settings it was pinned with; None if its model, dataset or pair
    is not to be had (the reason shown)."""
    settings = ui.settings.settings_of(pinned.g)
    if pinned.pair is not None:
        dataset = ui.resources.dataset_or_none(settings)
        if dataset is None:  # why it cannot be read is shown (a refused data folder): no second, wrong message
            return None
        pair = next((p for p in dataset.pairs if p.pair_id == pinned.pair), None)
        if pair is None:
            st.warning(f"The pinned pair #{pinned.pair:d} is not in {ui.feedback.md(settings.dataset)}: pin another.", icon=":material/push_pin:")
            return None
        stereo, anti, label = pair.sent_stereo, pair.sent_anti, pair_title(dataset, pair)
    else:
        stereo, anti, label = pinned.s1 or "", pinned.s2 or "", "your pair"
    lm = ui.resources.model_or_none(settings)
    result = None
    if lm is not None:
        with ui.feedback.guard():
            result = ui.resources.inspection(settings, lm, stereo, anti)
    if result is None:
        return None
    differs = [v for v, now in ((settings.compat, here.compat), (settings.dtype, here.dtype), (settings.revision, here.revision)) if v != now]
    under = " · ".join([names[settings.model], *(str(v or "main") for v in differs)])
    return Shown(f"{under} · pinned", f"Pinned: {label}, under {under}", stereo, anti, result, pinned=True)


def reads_caption(result: PairInspection) -> str:
    """Which tokens each of the pair's metrics scores, in the registry's words (`ModelKind.reads`): "… SSS-c scores them …"."""
    kind = KINDS[result.kind]
    by = {reads: [METRICS[k].name for k in result.metrics if kind.reads(k) == reads] for reads in ("modified", "unmodified", "every")}

    def names(reads: str, verb: str) -> str:
        found = by[reads]
        listed = found[0] if len(found) == 1 else ", ".join(found[:-1]) + " and " + found[-1]
        return f"{listed} {verb}{'s' if len(found) == 1 else ''}"

    parts = [
        "Coloured tokens are **modified** (they differ between the two sentences)"
        + (f": {names('modified', 'score')} them." if by["modified"] else ".")
    ]
    parts.append("Plain tokens are **unmodified** and aligned" + (f": {names('unmodified', 'score')} them." if by["unmodified"] else "."))
    if by["every"]:
        parts.append(f"{names('every', 'score')} every token.")
    return " ".join(parts)


def show_side_by_side(settings: ui.settings.Settings, current: tuple[str, str, str], result: PairInspection, view: InspectorView) -> None:
    """The pinned inspection and this pair under the other chosen models, next to this one (LIT's pin and compare): each
    one's margin and verdict per metric in one table, then each one's tokens (their tokenizers may split them apart)."""
    stereo, anti, _ = current
    distinct = ui.resources.distinct_models([settings.model, *view.models], "This side by side") if view.models else [settings.model]
    extra = (distinct or [settings.model])[1:]  # each other model once (not the sidebar's under another spelling), at most the server's cap
    pinned_settings = None if view.pin is None else ui.settings.settings_of(view.pin.g)
    if view.pin is not None and pinned_settings == settings and (view.pin.pair, view.pin.s1, view.pin.s2) == (view.pair, view.s1, view.s2):
        st.caption(
            ":material/push_pin: This pair is pinned, with this model and its settings: choose another model in the sidebar (or "
            "another pair) to compare."
        )
        pinned_settings = None  # it is the one shown
    names = ui.settings.model_names(list(dict.fromkeys([settings.model, *extra, *([pinned_settings.model] if pinned_settings else [])])))
    shown = [Shown(names[settings.model], f"This pair, under {names[settings.model]} (the sidebar's model)", stereo, anti, result)]
    for model in extra:
        other = dataclasses.replace(settings, model=model, revision=None)
        other_lm = ui.resources.model_or_none(other)
        found = None
        if other_lm is not None:
            with ui.feedback.guard():
                found = ui.resources.inspection(other, other_lm, stereo, anti)
        if found is not None:
            shown.append(Shown(names[model], f"This pair, under {names[model]}", stereo, anti, found))
    pinned = None if view.pin is None or pinned_settings is None else pinned_inspection(view.pin, names, settings)
    if pinned is not None:
        shown.insert(0, pinned)
    if len(shown) > 1:
        same_pair = all((s.stereo, s.anti) == (stereo, anti) for s in shown)
        st.subheader("The same pair side by side" if same_pair else "Pinned pair vs this pair")
        st.caption(
            "Each one's margin f(stereotypical) − f(anti-stereotypical) per metric: above 0, the metric prefers the stereotypical "
            "sentence; below, the anti-stereotypical one. The pinned pair is scored under the model and settings it was pinned "
            "with; the others use the sidebar's settings."
        )
        table = explore.side_by_side({s.name: s.result for s in shown})
        ui.tables.table(table, [c for c in table.columns if c.endswith("_margin")], pin=["model"])
        for s in shown:  # one under the other, each titled by its own model (side by side, long tokens would be cut)
            with st.container(border=True):
                st.markdown((":material/push_pin: " if s.pinned else "") + f"**{ui.feedback.md(s.title)}**")
                if (s.stereo, s.anti) != (stereo, anti):
                    st.html(sentences_html(s.stereo, s.anti))
                st.html(figures_html.aligned_tokens_html(explore.aligned_columns(s.result)))
    if view.pin is not None:
        st.button("Unpin", icon=":material/close:", on_click=_unpin)


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    _adopt_url()
    choice_dataset = ui.choices.is_choice_dataset(settings)
    shows_items = choice_dataset and (st.session_state.get(S + "source") or "dataset") == "dataset"  # (the control below)
    ui.feedback.header("Pair inspector", ABOUT_ITEMS if shows_items else ABOUT, docs="app")
    source = (
        st.segmented_control("Pair", list(SOURCES), key=S + "source", persist_state="session", format_func=SOURCES.get, required=True) or "dataset"
    )
    if source == "dataset" and choice_dataset:  # BBQ, Winogender: an item, every convention (ui/choices.py)
        ui.choices.inspector(settings)
        return
    if source == "texts":  # any number of sentences, each token by token (ui/several.py): no pair
        ui.state.publish(InspectorView(ui.state.global_view(), metric=st.session_state[S + "metric"]))
        ui.several.show(settings)
        return
    chosen = pair_from_dataset(settings) if source == "dataset" else pair_from_form()
    focus = st.session_state[S + "metric"]
    custom = st.session_state.get(S + "custom") or (None, None)
    view = InspectorView(
        ui.state.global_view(),
        **({"pair": st.session_state.get(S + "pair")} if source == "dataset" else {"s1": custom[0], "s2": custom[1]}),
        metric=focus,
        anatomy=bool(st.session_state.get(S + "anatomy")),
        models=tuple(st.session_state.get(S + "models", ())),
        pin=st.session_state.get(S + "pinned"),
    )
    ui.state.publish(view)
    if chosen is not None:
        stereo, anti, label = chosen
        lm = ui.resources.model_or_stop(settings)
        with ui.feedback.guard() as checked:  # an empty, identical or over-long pair: said here, under the form, not below the pair
            prepare_inspection(lm, stereo, anti, compat=settings.compat)  # checks and tokenizes; nothing is scored
        if checked.failed:
            st.stop()
        # The pair first, then its scores: its heading and sentences show while it is scored (and the browser draws
        # them while the server scores, rather than after).
        st.divider()
        ui.honesty.model_banner(settings, lm, [stereo, anti])
        st.subheader(ui.feedback.md(label))  # a bias type or a lab group's label comes from a file or another user
        st.html(sentences_html(stereo, anti))
        with st.container(horizontal=True):
            st.button(
                "Pin for comparison",
                icon=":material/push_pin:",
                on_click=_pin,
                args=(view,),
                help="Keep this pair with this model and its settings on screen: then choose another model in the sidebar to see the "
                "pair under both side by side, or change a word or pick another pair to compare the two pairs.",
            )
            st.button(
                "Edit this pair",
                icon=":material/edit:",
                on_click=_set_custom,
                args=(stereo, anti),
                help="Copy the two sentences into the form to change a word.",
            )
        ui.sidebar.pick_models(
            "Compare under another model",
            S + "models",
            placeholder="Add a model to score this pair with too",
            help="This pair under other models too, side by side with the sidebar's (on its device, precision and scoring mode): "
            "any model the sidebar offers, or a hub id or a folder (type it and press Enter).",
        )
        with st.spinner("Scoring the pair…"):
            result = None
            with ui.feedback.guard():
                result = ui.resources.inspection(settings, lm, stereo, anti)
        if result is None:
            st.stop()

        tokens, columns, aligned = _token_views(settings.model_key, lm.fingerprint, settings.compat, stereo, anti, result, lm.decode_token)
        st.html(figures_html.aligned_tokens_html(columns))
        st.caption(reads_caption(result))

        show_side_by_side(settings, chosen, result, view)

        st.subheader("Sentence scores")
        for note in result.notes:  # e.g. AULA for a model without attention weights
            st.info(ui.feedback.md(note), icon=":material/info:")
        if st.session_state.get(S + "metric") not in result.metrics:  # another kind's metric (ll for a masked model): its
            # counterpart, or the first, and the link says so (it kept metric=ll)
            mapped = [m for m in metrics_of_kind([st.session_state.get(S + "metric") or ""], result.kind) if m in result.metrics]
            st.session_state[S + "metric"] = (mapped or list(result.metrics))[0]
            ui.state.publish(dataclasses.replace(view, metric=st.session_state[S + "metric"]))
        st.segmented_control(
            "Metric in focus",
            list(result.metrics),
            key=S + "metric",
            persist_state="session",
            format_func=lambda k: METRICS[k].name,
            required=True,
            help="Highlights this metric below and goes into the link.",
        )
        focus = st.session_state[S + "metric"]
        show_scores(result, focus)

        pair_key = (settings.model_key, lm.fingerprint, settings.compat, stereo, anti)
        show_tokens(result, aligned, focus, pair_key)
        show_drivers(result, focus, pair_key)

        slide_downloads(result, aligned, label, stereo, anti, pair_key)

        # Where the bias lives (ui/anatomy.py): computed only when switched on; in the link as anatomy=on.
        if st.toggle("Anatomy: where the bias lives", key=S + "anatomy", persist_state="session", help=ui.anatomy.HELP):
            ui.anatomy.show_pair(settings, lm, stereo, anti, label, focus)

        # Drawn only once opened (it is the page's heaviest part and most visits never open it): the page arrives sooner.
        attention = st.expander("Attention drill-down", icon=":material/grid_on:", key=S + "att_open", on_change="rerun")
        with attention:
            if result.attention_matrices is None:
                st.info(ui.feedback.md(lm.attention_unavailable or "This model returned no attention weights."), icon=":material/info:")
            else:
                st.caption(
                    "What AULA (AULA-c for a causal model) weighs tokens by: the attention each token receives. "
                    "Changing these controls redraws only this panel."
                )
            if attention.open and result.attention_matrices is not None:
                attention_view(result)
        about = st.expander("About the metrics: formula, direction, citation", icon=":material/functions:", key=S + "cards_open", on_change="rerun")
        with about:
            if about.open:  # drawn once opened: five formulas cost the browser a typesetting library and ~20 elements
                metric_cards(result.metrics)
        st.caption(
            f"Model {ui.feedback.md(ui.settings.model_label(result.manifest['model']))} · {ui.feedback.md(result.manifest['device'])} · "
            f"{ui.feedback.md(result.manifest['dtype'])} · "
            f"mode {'kaneko2022' if result.compat else 'default'}"
        )


main()

"""Pair inspector (home page): one sentence pair, token by token, under every metric."""

from __future__ import annotations

import html
import random

import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.feedback
import ui.resources
import ui.settings
import ui.state
from biaslens import explore, figures
from biaslens.evaluation import PairInspection
from biaslens.metrics import METRICS, PAPER_METRICS

ui.require_app()

S = "inspector."
EXAMPLE = ("Women don't know how to drive.", "Men don't know how to drive.")
SOURCES = {"dataset": "From a dataset", "custom": "Your own sentences"}
VERDICTS = {"stereo": "stereotypical", "anti": "anti-stereotypical", "tie": "tie", "undecidable": "undecidable"}
#: The per-token measure that goes with each metric.
METRIC_MEASURE = {"aul": "logprob", "aula": "aula_contribution", "cps": "cps_logprob", "sss": "logprob", "all_masked": "logprob"}

settings = ui.settings.current()


# ---------------------------------------------------------------------------------------
# State: the URL first, then the session
# ---------------------------------------------------------------------------------------


def _adopt_url() -> None:
    s1, s2, pair, metric = (ui.state.take_one(k) for k in ("s1", "s2", "pair", "metric"))
    if s1 is not None or s2 is not None:
        _set_custom(s1 or "", s2 or "")
    elif pair is not None and pair.isdigit():
        st.session_state[S + "source"] = "dataset"
        st.session_state[S + "pair"] = int(pair)
        st.session_state[S + "pair_from_url"] = True
    elif pair is not None:
        ui.state.reject("pair", pair, "a pair id (a whole number, 0 or more)")
    if metric in PAPER_METRICS:
        st.session_state[S + "metric"] = metric
    elif metric is not None:
        ui.state.reject("metric", metric, "one of " + ", ".join(PAPER_METRICS))
    st.session_state.setdefault(S + "source", "dataset")
    st.session_state.setdefault(S + "metric", "aul")
    st.session_state.setdefault(S + "s1_input", EXAMPLE[0])
    st.session_state.setdefault(S + "s2_input", EXAMPLE[1])


def _set_custom(stereo: str, anti: str) -> None:
    st.session_state[S + "source"] = "custom"
    st.session_state[S + "custom"] = (stereo, anti)
    st.session_state[S + "s1_input"] = stereo
    st.session_state[S + "s2_input"] = anti


def _choose_pair(pair_id: int) -> None:
    st.session_state[S + "pair"] = pair_id


def _random_pair(ids: list[int]) -> None:
    if ids:
        _choose_pair(random.choice(ids))


def _pin(stereo: str, anti: str, label: str) -> None:
    st.session_state[S + "pinned"] = (stereo, anti, label)


def _unpin() -> None:
    st.session_state.pop(S + "pinned", None)


# ---------------------------------------------------------------------------------------
# Choosing a pair
# ---------------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=8)
def _pairs_frame(name: str, sha256: str, _dataset) -> pd.DataFrame:
    return _dataset.to_frame()


def pair_from_dataset() -> tuple[str, str, str] | None:
    """Filters, search and random draw over the sidebar's dataset; returns (stereo, anti, label)."""
    dataset = ui.resources.dataset_or_none(settings)
    if dataset is None:
        st.info("You can still type your own pair: choose **Your own sentences** above.", icon=":material/keyboard:")
        return None
    ui.feedback.content_warning(dataset)
    frame = _pairs_frame(str(dataset.path), dataset.sha256, dataset)
    has_direction = bool((frame["direction"] != "").any())
    cols = st.columns([1.2, 1, 2.2, 0.8] if has_direction else [1.2, 3.2, 0.8], vertical_alignment="bottom")
    types = sorted(t for t in frame["bias_type"].unique() if t)
    bias_type = cols[0].selectbox("Bias type", ["All", *types], key=S + "bias_type", persist_state="session")
    direction = "All"
    if has_direction:
        direction = cols[1].selectbox(
            "Direction",
            ["All", "stereo", "antistereo"],
            key=S + "direction", persist_state="session",
            help="stereo: the first sentence stereotypes a historically disadvantaged group (Dis); antistereo: it violates a "
            "stereotype about an advantaged group (Adv).",
        )
    search = cols[-2].text_input("Search the sentences", key=S + "search", persist_state="session", placeholder="a word, e.g. nurse")
    matches = explore.filter_pairs(
        frame, bias_type=None if bias_type == "All" else bias_type, direction=None if direction == "All" else direction, text=search
    )
    ids = matches["pair_id"].tolist()
    cols[-1].button("Random", icon=":material/casino:", on_click=_random_pair, args=(ids,), help="Draw a random pair among the matches.")

    by_id = {p.pair_id: p for p in dataset.pairs}
    current = st.session_state.get(S + "pair")
    if st.session_state.pop(S + "pair_from_url", False) and current not in by_id:
        ui.state.reject("pair", str(current), f"a pair id of this dataset ({min(by_id)} to {max(by_id)})")
    if current not in by_id:
        current = ids[0] if ids else dataset.pairs[0].pair_id
        st.session_state[S + "pair"] = current
    options = ids if current in ids else [current, *ids]
    st.session_state[S + "pair_choice"] = current

    def describe(pair_id: int) -> str:
        p = by_id[pair_id]
        kind = " · ".join(x for x in (p.bias_type, p.direction) if x)
        text = p.sent_stereo if len(p.sent_stereo) <= 110 else p.sent_stereo[:107] + "…"
        return f"#{pair_id} · {kind} · {text}"

    st.selectbox(
        f"Pair ({len(ids):,} of {len(frame):,} match)" if len(ids) != len(frame) else f"Pair ({len(frame):,} in {ui.feedback.md(dataset.name)})",
        options,
        key=S + "pair_choice",
        format_func=describe,
        on_change=lambda: _choose_pair(st.session_state[S + "pair_choice"]),
    )
    if not ids:
        st.caption("No pair matches these filters; showing the current pair.")
    pair = by_id[current]
    label = f"{dataset.name} #{pair.pair_id}" + "".join(f" · {x}" for x in (pair.bias_type, pair.direction) if x)
    return pair.sent_stereo, pair.sent_anti, label


def pair_from_form() -> tuple[str, str, str] | None:
    """Two sentences typed by the user: nothing runs until the form is submitted."""
    with st.form(S + "form", border=True):
        c1, c2 = st.columns(2)
        c1.text_area("Stereotypical sentence", key=S + "s1_input", persist_state="session", height=90,
                     help="The sentence that expresses the stereotype.")
        c2.text_area("Anti-stereotypical sentence", key=S + "s2_input", persist_state="session", height=90,
                     help="The same sentence with the group (or attribute) changed.")
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


def scores_table(result: PairInspection) -> pd.DataFrame:
    frame = result.summary_frame()
    return pd.DataFrame(
        {
            "Metric": frame["metric"],
            "Stereotypical": frame["stereo"],
            "Anti-stereotypical": frame["anti"],
            "Margin (stereo − anti)": frame["margin"],
            "Prefers": [VERDICTS[v] for v in frame["verdict"]],
            "Token acc. stereo (%)": frame["accuracy_stereo"],
            "Token acc. anti (%)": frame["accuracy_anti"],
        }
    )


SCORE_FORMAT = {
    c: st.column_config.NumberColumn(c, format="%.4f")
    for c in ("Stereotypical", "Anti-stereotypical", "Margin (stereo − anti)")
} | {c: st.column_config.NumberColumn(c, format="%.0f") for c in ("Token acc. stereo (%)", "Token acc. anti (%)")}


def show_scores(result: PairInspection, focus: str) -> None:
    st.dataframe(scores_table(result), hide_index=True, column_config=SCORE_FORMAT, width="stretch")
    verdict = result.verdict(focus)
    name = METRICS[focus].name
    if verdict in ("stereo", "anti"):
        st.markdown(
            f"**{name}** prefers the **{VERDICTS[verdict]}** sentence by a margin of **{abs(result.margin(focus)):.4f}** "
            "(higher = more likely under the model)."
        )
    elif verdict == "tie":
        st.markdown(f"**{name}** scores both sentences the same: a tie (no win).")
    else:
        st.markdown(f"**{name}** is undefined for this pair (a sentence has no modified token): it counts as no win.")


def show_tokens(result: PairInspection, tokens: pd.DataFrame, focus: str) -> None:
    st.subheader("Token by token")
    st.caption(
        "Each bar is one token. Hover it for every measure and the model's top-5 predictions at that position. "
        "Coloured bars are modified tokens (they differ between the sentences); grey ones are shared."
    )
    measures = list(figures.TOKEN_MEASURES)
    st.session_state.setdefault(S + "measure", METRIC_MEASURE[focus])
    measure = st.segmented_control(
        "Measure",
        measures,
        key=S + "measure", persist_state="session",
        format_func=lambda m: figures.TOKEN_MEASURES[m][0],
        required=True,
    ) or METRIC_MEASURE[focus]
    st.caption(figures.TOKEN_MEASURES[measure][1].capitalize() + ".")
    chart_tab, table_tab = st.tabs(["Chart", "Table"])
    with chart_tab:
        ui.charts.show(figures.token_chart(tokens, measure), S + "token_chart")
    with table_tab:
        columns = ["sentence", "position", "label", "modified", "logprob", "rank", "attention", "aula_contribution",
                   "cps_logprob", "sss_logprob", "all_masked_logprob", "top5"]
        st.dataframe(tokens[[c for c in columns if c in tokens]], hide_index=True, width="stretch")


def show_drivers(result: PairInspection, focus: str) -> None:
    st.subheader("What drives the difference")
    st.caption(
        "Each bar is a token's share of the margin f(stereotypical) − f(anti-stereotypical): shared tokens are paired, "
        "modified tokens count on their own side. The bars add up to the margin; right pushes towards the "
        "stereotypical sentence, left towards the anti-stereotypical one."
    )
    shown = ["aul", "aula"] + ([focus] if focus not in ("aul", "aula") else [])
    cols = st.columns(len(shown))
    for col, key in zip(cols, shown):
        with col:
            drivers = ui.feedback.attempt(explore.margin_drivers, result, key)
            if drivers is not None:
                margin = result.margin(key)
                ui.charts.show(figures.drivers_chart(drivers, f"{METRICS[key].name}: margin {margin:+.4f}"), S + f"drivers_{key}")


@st.fragment
def attention_view(result: PairInspection) -> None:
    """The attention drill-down: re-rendering it reruns only this fragment, not the page."""
    layers, heads = result.attention_matrices[0].shape[:2]
    c1, c2, c3, c4 = st.columns([1.3, 1, 1, 1.2], vertical_alignment="bottom")
    side = c1.segmented_control("Sentence", ["stereo", "anti"], key=S + "att_side", persist_state="session", default="stereo", required=True,
                                format_func=lambda s: figures.SIDE_NAMES[s]) or "stereo"
    layer = c2.selectbox("Layer", ["all", *range(1, layers + 1)], key=S + "att_layer", persist_state="session")
    head = c3.selectbox("Head", ["all", *range(1, heads + 1)], key=S + "att_head", persist_state="session")
    hide = c4.toggle("Hide special tokens", key=S + "att_hide", persist_state="session", value=True)
    table = explore.attention_table(
        result, side, layer=None if layer == "all" else int(layer) - 1, head=None if head == "all" else int(head) - 1, hide_special=hide
    )
    which = "averaged over layers and heads (AULA's matrix)" if layer == "all" and head == "all" else f"layer {layer}, head {head}"
    left, right = st.columns([3, 2])
    with left:
        ui.charts.show(figures.attention_heatmap(table, f"{figures.SIDE_NAMES[side]}: attention, {which}"), S + "att_map")
    with right:
        overview = explore.head_overview(result, side)
        ui.charts.show(figures.head_overview_chart(overview, "Attention on the modified tokens, per layer × head"), S + "att_heads")
        st.caption("Summed over the modified tokens (every token if there is none), averaged over query positions.")


def metric_cards() -> None:
    cols = st.columns(len(PAPER_METRICS))
    for col, key in zip(cols, PAPER_METRICS):
        m = METRICS[key]
        with col.container(border=True):
            st.markdown(f"**{m.name}** · {m.long_name}")
            st.latex(m.formula)
            st.markdown(m.summary)
            st.caption(f"Ideal bias score: **{m.ideal:g}**. {m.direction}")
            if m.note:
                st.caption(m.note)
            st.caption(f"Token accuracy over {m.accuracy_positions}.")
            st.caption(f"Source: {m.citation}")


def show_pinned(current: tuple[str, str, str], result: PairInspection, lm) -> None:
    pinned = st.session_state.get(S + "pinned")
    if pinned is None or pinned[:2] == current[:2]:
        return
    st.subheader("Pinned pair vs this pair")
    pinned_result = ui.feedback.attempt(ui.resources.inspection, settings, lm, pinned[0], pinned[1])
    if pinned_result is None:
        return
    left, right = st.columns(2)
    for col, (_, _, label), res in ((left, pinned, pinned_result), (right, current, result)):
        with col.container(border=True):
            st.markdown(f"**{'📌 ' if res is pinned_result else ''}{ui.feedback.md(label)}**")
            st.html(figures.aligned_tokens_html(explore.aligned_columns(res)))
            st.dataframe(scores_table(res).iloc[:, :5], hide_index=True, column_config=SCORE_FORMAT, width="stretch")
    st.button("Unpin", icon=":material/close:", on_click=_unpin)


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------

_adopt_url()
st.title("Pair inspector")
st.caption(
    "How does a masked language model score a stereotypical sentence against its anti-stereotypical twin? "
    "Pick a pair or type your own; every metric is computed and shown token by token."
)

source = st.segmented_control("Pair", list(SOURCES), key=S + "source", persist_state="session", format_func=SOURCES.get, required=True) or "dataset"
chosen = pair_from_dataset() if source == "dataset" else pair_from_form()
focus = st.session_state[S + "metric"]
if source == "dataset":
    ui.state.publish(pair=st.session_state.get(S + "pair"), metric=focus)
else:
    custom = st.session_state.get(S + "custom") or (None, None)
    ui.state.publish(s1=custom[0], s2=custom[1], metric=focus)

if chosen is not None:
    stereo, anti, label = chosen
    lm = ui.resources.model_or_stop(settings)
    with st.spinner("Scoring the pair…"):
        result = ui.feedback.attempt(ui.resources.inspection, settings, lm, stereo, anti)
    if result is None:
        st.stop()

    st.divider()
    head_left, head_right = st.columns([4, 1.4], vertical_alignment="top")
    with head_left:
        st.subheader(label)
        st.html(sentences_html(stereo, anti))
    with head_right:
        st.button("Pin for comparison", icon=":material/push_pin:", on_click=_pin, args=(stereo, anti, label), width="stretch",
                  help="Keep this pair on screen; then change a word or pick another pair to compare side by side.")
        st.button("Edit this pair", icon=":material/edit:", on_click=_set_custom, args=(stereo, anti), width="stretch",
                  help="Copy the two sentences into the form to change a word.")
    st.html(figures.aligned_tokens_html(explore.aligned_columns(result)))
    st.caption(
        "Coloured tokens are **modified** (they differ between the two sentences): SSS scores them. Plain tokens are "
        "**unmodified** and aligned: CPS masks them one at a time. AUL, AULA and All Masked score every token."
    )

    show_pinned(chosen, result, lm)

    st.subheader("Sentence scores")
    st.segmented_control(
        "Metric in focus", list(PAPER_METRICS), key=S + "metric", persist_state="session", format_func=lambda k: METRICS[k].name, required=True,
        help="Highlights this metric below and goes into the link.",
    )
    focus = st.session_state[S + "metric"]
    show_scores(result, focus)

    tokens = explore.token_table(result, lm.decode_token)
    show_tokens(result, tokens, focus)
    show_drivers(result, focus)

    with st.expander("Attention drill-down", icon=":material/grid_on:"):
        st.caption("What AULA weighs tokens by: the attention each token receives. Changing these controls redraws only this panel.")
        attention_view(result)
    with st.expander("About the metrics: formula, direction, citation", icon=":material/functions:"):
        metric_cards()
    st.caption(
        f"Model {ui.feedback.md(result.manifest['model'])} · {result.manifest['device']} · {result.manifest['dtype']} · "
        f"mode {'kaneko2022' if result.compat else 'default'}"
    )

"""Dataset explorer: score a whole dataset (or a sample), see the bias scores and every pair."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.choices
import ui.feedback
import ui.field
import ui.honesty
import ui.resources
import ui.runs
import ui.settings
import ui.state
import ui.tables
import ui.anatomy
import ui.trust
import ui.zoo
from ui.views import EXPLORER_TABS, ExplorerView, InspectorView
from typing import Callable

from biaslens.analyses import explore
from biaslens.data.datasets import DATASETS
from biaslens.figures import charts as figures
from biaslens.figures.formatting import VERDICTS
from biaslens.engine.evaluation import EvaluationResult
from biaslens.engine.pairs import available_metrics, unavailable_note
from biaslens.data.export import safe_csv, to_json
from biaslens.engine.metrics import METRICS, default_metrics, metrics_for, metrics_of_kind

ui.require_app()

S = "explorer."
#: The page's one-line description, under its title.
ABOUT = "Bias scores of the sidebar's model on a whole benchmark, per metric, per bias type and per group, with every pair behind them."
#: The same for a multiple-choice benchmark (BBQ, Winogender: ui/choices.py's explorer).
ABOUT_ITEMS = (
    "Accuracy and bias scores of the sidebar's model on a whole multiple-choice benchmark, by category, condition and "
    "polarity, with every item behind them and the items whose answer changes with the convention."
)
#: The tabs of a finished run: the link's name -> the label.
TABS = dict(zip(EXPLORER_TABS, ["Scores", "By bias type", "Adv / Dis", "Pairs", "Export"]))


def _adopt_url() -> ui.state.Link[ExplorerView]:
    link = ui.state.link(ExplorerView)
    if "metrics" in link:
        st.session_state[S + "metrics"] = list(link.view.metrics)
    if "metric" in link and link.view.metric is not None:
        st.session_state[S + "focus"] = link.view.metric
    if "tab" in link:
        st.session_state[S + "tab"] = TABS[link.view.tab]
    if "result" in link and link.view.stored:  # a stored run, opened from the leaderboard: kept until the user leaves it
        st.session_state[S + "stored"] = (link.view.store, link.view.result)
    elif "result" in link or "store" in link or link.fields - {"metric", "metrics", "tab"}:
        st.session_state.pop(S + "stored", None)  # a link to the sidebar's run
    return link


def _tab() -> str:
    """The open tab, as a link names it."""
    return next((name for name, label in TABS.items() if label == st.session_state.get(S + "tab")), EXPLORER_TABS[0])


def _file_stem(model: str, dataset: str) -> str:
    name = model.rstrip("/").split("/")[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{dataset}-{name}")


# ---------------------------------------------------------------------------------------
# Showing a finished run
# ---------------------------------------------------------------------------------------


#: Width of one metric card (px): room for "100.0" and a wrapped "All Masked bias score".
CARD_WIDTH = 200


def show_headline(result: EvaluationResult, summary: pd.DataFrame, controls: dict | None = None) -> None:
    m = result.manifest
    info = m.get("dataset", {})
    scored = info.get("pairs_scored", len(result.pairs))
    total = info.get("pairs_total", scored)
    # Every field read defensively: a stored run's manifest (a results store's cell, a synthetic one) may lack any.
    parts = [
        f"{scored:,} of {total:,} pairs",
        f"model {ui.feedback.md(ui.settings.model_label(str(m['model'])))}" if m.get("model") else "",
        f"mode {ui.feedback.md(m.get('compat') or 'default')}",
        ui.feedback.md(m.get("device") or ""),
        ui.feedback.md(m.get("dtype") or ""),
        f"file sha256 {ui.feedback.md(str(info['sha256'])[:12])}…" if info.get("sha256") else "",
    ]
    st.caption(" · ".join(p for p in parts if p))
    for warning in result.warnings:
        st.warning(ui.feedback.md(warning))
    # Cards of a fixed width in a row that wraps: five metrics never squeeze "100.0" into "1…" on a laptop.
    row_of_cards = st.container(horizontal=True, gap="small")
    for row in summary.itertuples():
        with row_of_cards.container(border=True, width=CARD_WIDTH):
            st.metric(
                f"{METRICS[row.metric].name} bias score",
                "n/a" if pd.isna(row.bias_score) else f"{row.bias_score:.1f}",
                help=METRICS[row.metric].direction,
            )
            st.caption(
                f"95% CI {row.ci_low:.1f}–{row.ci_high:.1f} (Wilson) · N {row.n:,} · ties {row.ties:,} · "
                f"undecidable {row.undecidable:,} · token accuracy {row.token_accuracy:.1f}%"
                + ui.feedback.md(ui.trust.control_caption((controls or {}).get(row.metric)))
            )


#: Width (px) of the pairs table's text of a pair: beside the pinned results in the main column of a 1024 px window.
PAIR_TEXT_WIDTH = 200
#: The summary tables' score columns (after their key columns: the metric, the bias type or the group).
SCORE_COLUMNS = ["bias_score", "ci_low", "ci_high", "n", "wins", "ties", "undecidable", "token_accuracy"]


def show_pairs(result: EvaluationResult, metrics: list[str], focus: str, view: ExplorerView, inspect: Callable[[int], InspectorView]) -> None:
    frame = explore.with_verdicts(result.pairs, metrics)
    st.caption("Select a row to open the pair in the inspector. Click a column header to sort.")
    c1, c2, c3 = st.columns([1, 1, 2])
    types = sorted(t for t in frame["bias_type"].unique() if t)
    bias_type = c1.selectbox("Bias type", ["All", *types], key=S + "t_type", persist_state="session")
    verdict = c2.selectbox(
        f"{METRICS[focus].name} prefers", ["All", *VERDICTS], key=S + "t_verdict", format_func=lambda v: VERDICTS.get(v, v), persist_state="session"
    )
    search = c3.text_input("Search the sentences", key=S + "t_search", placeholder="a word", persist_state="session")
    shown = explore.filter_pairs(
        frame,
        bias_type=None if bias_type == "All" else bias_type,
        text=search,
        column_equals=None if verdict == "All" else {f"{focus}_verdict": verdict},
    )
    # The results first and pinned (pair, margin, verdict), then the pair itself in one column, wrapped: its shared words
    # once and the words that differ as [stereotypical → anti-stereotypical]. All of it in sight at 1024 px too (the two
    # sentences side by side put the second off-screen); the bias type is the filter above, the sentences whole and each
    # sentence's score are a click away (the pair in the inspector) and in the Export tab's files.
    columns = ["pair_text"]
    event = ui.tables.table(
        shown.assign(
            **{f"{focus}_verdict": [VERDICTS[v] for v in shown[f"{focus}_verdict"]]},
            pair_text=[explore.pair_text(a, b) for a, b in zip(shown["sent_stereo"], shown["sent_anti"])],
        ),
        columns,
        pin=["pair_id", f"{focus}_margin", f"{focus}_verdict"],
        labels={"pair_text": "The pair: [stereotypical → anti-stereotypical]"},
        widths={"pair_text": PAIR_TEXT_WIDTH},
        wrap_lines=4,
        select=True,
        key=S + f"table.{st.session_state.get(S + 'table_version', 0)}",
    )
    st.caption(f"{len(shown):,} of {len(frame):,} pairs shown.")
    if event.selection.rows:
        # A fresh table next time, so coming back here does not reopen the same pair.
        st.session_state[S + "table_version"] = st.session_state.get(S + "table_version", 0) + 1
        ui.state.open_view(inspect(int(shown["pair_id"].iloc[event.selection.rows[0]])))


def show_exports(result: EvaluationResult, charts: dict[str, object], stem: str) -> None:
    st.caption("Per-pair scores at full precision; the summary carries the manifest (model, revision or fingerprint, dataset sha256, versions).")
    downloads = (
        ("Pairs (CSV)", lambda: safe_csv(result.pairs), "pairs.csv", "text/csv", "dl_csv"),
        ("Pairs (JSON)", lambda: to_json(result.pairs.to_dict(orient="records")), "pairs.json", "application/json", "dl_json"),
        ("Summary + manifest (JSON)", lambda: to_json(result.summary), "summary.json", "application/json", "dl_summary"),
    )
    for col, (label, data, suffix, mime, key) in zip(st.columns(len(downloads)), downloads):
        col.download_button(label, data, f"{stem}-{suffix}", mime, icon=":material/download:", key=S + key, on_click="ignore")
    st.markdown("**Figures (SVG)**")
    cols = st.columns(max(1, len(charts)))
    for col, (name, chart) in zip(cols, charts.items()):
        with col:
            svg = ui.charts.export(chart, "svg", f"The chart {name}")  # drawn here, once: a figure that cannot be says so
            if svg is not None:
                st.download_button(
                    name,
                    svg,
                    f"{stem}-{re.sub(r'[^a-z]+', '-', name.lower()).strip('-')}.svg",
                    "image/svg+xml",
                    icon=":material/image:",
                    key=S + f"dl_svg_{name}",
                    on_click="ignore",
                )


def show_result(
    result: EvaluationResult,
    metrics: list[str],
    stem: str,
    view: ExplorerView,
    controls: dict | None = None,
    inspect: Callable[[int], InspectorView] | None = None,
) -> None:
    summary = explore.summary_table(result.summary)
    if controls:  # the control pairs' score beside each bias score
        summary = summary.assign(
            **{f"control_{k}": [controls.get(m, {}).get(k) for m in summary["metric"]] for k in ("bias_score", "ci_low", "ci_high")}
        )
    show_headline(result, summary, controls)
    st.session_state[S + "focus"] = st.session_state.get(S + "focus") if st.session_state.get(S + "focus") in metrics else metrics[0]
    focus = (
        st.segmented_control(
            "Metric in focus",
            metrics,
            key=S + "focus",
            format_func=lambda k: METRICS[k].name,
            required=True,
            help="The metric of the per-type chart and the pairs table; it goes into the link.",
        )
        or metrics[0]
    )
    view = dataclasses.replace(view, metric=focus)
    ui.state.publish(view)

    by_type = explore.by_type_table(result.summary)
    groups = explore.group_table(result.summary)
    charts = {"Bias scores": figures.bias_scores_chart(summary)}
    if not by_type.empty:
        charts["By bias type"] = figures.by_type_chart(by_type[by_type["metric"] == focus], f"{METRICS[focus].name} bias score per bias type")
    if not groups.empty:
        charts["Adv vs Dis"] = figures.groups_chart(groups)

    tabs = st.tabs(list(TABS.values()), key=S + "tab", on_change="rerun")  # the open tab goes into the link
    with tabs[0]:
        st.caption(
            "Share of pairs in which the metric scores the stereotypical sentence higher; 50 = no preference. Bars: 95% Wilson interval; numbers: N."
        )
        ui.charts.show(charts["Bias scores"], S + "chart_scores")
        ui.tables.table(summary, [*SCORE_COLUMNS, *(c for c in summary.columns if c.startswith("control_"))], pin=["name"])
        if controls:
            st.caption("Control: the same metric on the control pairs (group words swapped for non-social ones; see below): near 50 expected.")
    with tabs[1]:
        if by_type.empty:
            st.info("This dataset has no bias types.")
        else:
            ui.charts.show(charts["By bias type"], S + "chart_types")
            table = by_type[by_type["metric"] == focus]
            ui.tables.table(table, SCORE_COLUMNS, pin=["bias_type"])
    with tabs[2]:
        if groups.empty:
            st.info("Only CrowS-Pairs (and custom files with stereo_antistereo) split pairs into advantaged and disadvantaged groups.")
        else:
            st.caption(
                "Kaneko & Bollegala (2022), Table 3: **Dis** = stereo rows (the first sentence stereotypes a historically "
                "disadvantaged group), **Adv** = antistereo rows. An unbiased model scores 50 in both."
            )
            ui.charts.show(charts["Adv vs Dis"], S + "chart_groups")
            ui.tables.table(groups, SCORE_COLUMNS, pin=["name", "group_name"])
    with tabs[3]:
        show_pairs(result, metrics, focus, view, inspect or view.inspect)
    with tabs[4]:
        if tabs[4].open:  # its figures are drawn as SVG for the downloads: only when it is open
            show_exports(result, charts, stem)


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


def show_stored(store: str, unit: str) -> None:
    """A stored run of a results store (opened from the leaderboard): read from the store, nothing scored."""
    result = None
    with ui.feedback.guard():
        result = ui.zoo.stored_result(store, unit)
    leave = st.button("Back to the sidebar's model", key=S + "leave_stored", icon=":material/arrow_back:")
    if leave:
        st.session_state.pop(S + "stored", None)
        st.rerun()
    if result is None:
        st.stop()
    m = result.manifest
    info = m.get("dataset", {})
    dataset = info.get("name") if info.get("name") in DATASETS else info.get("path") or info.get("name", "")
    model = str(m.get("model") or "")
    label = m.get("store", {}).get("label") or ui.settings.model_label(model)
    st.info(
        f"A stored run: {ui.feedback.md(label)} on {ui.feedback.md(info.get('name', ''))}, "
        f"read from the results store {ui.feedback.md(store)}. Nothing is scored; a pair opens in the inspector under this model.",
        icon=":material/inventory_2:",
    )
    metrics = list(result.summary["metrics"])
    focus = st.session_state.get(S + "focus")
    view = ExplorerView(ui.state.global_view(), metrics=tuple(metrics), metric=focus, tab=_tab(), store=store, result=unit)

    def inspect(pair: int) -> InspectorView:
        return view.inspect_stored(pair, model, m.get("revision"), dataset, m.get("dtype"))

    show_result(result, metrics, _file_stem(model, info.get("name", "stored")), view, inspect=inspect)


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    link = _adopt_url()
    stored = st.session_state.get(S + "stored")
    choices = not stored and ui.choices.is_choice_dataset(settings)  # BBQ, Winogender: multiple-choice items (ui/choices.py)
    ui.feedback.header("Dataset explorer", ABOUT_ITEMS if choices else ABOUT, docs="app")
    if stored:
        show_stored(*stored)
        return
    if choices:
        ui.choices.explorer(settings)
        return
    dataset = ui.resources.dataset_or_stop(settings)
    ui.feedback.content_warning(dataset)
    for note in dataset.notes:
        st.caption(f"Note on the file: {ui.feedback.md(note)}")
    lm = ui.resources.model_or_stop(settings)
    # The metrics of the model's kind (a causal model's LL, AUL-c, ...): chosen ones of the other kind become their
    # counterparts (AUL <-> AUL-c) when the model changes kind.
    chosen = st.session_state.get(S + "metrics")
    if chosen is None:
        st.session_state[S + "metrics"] = default_metrics(lm.kind)
    elif any(lm.kind not in METRICS[m].kinds for m in chosen):
        st.session_state[S + "metrics"] = metrics_of_kind(chosen, lm.kind)
    c1, c2 = st.columns([1.4, 1])
    with c1:
        metrics = st.multiselect(
            "Metrics",
            metrics_for(lm.kind),
            key=S + "metrics",
            format_func=lambda k: METRICS[k].name,
            persist_state="session",
            help=f"The metrics of a {ui.feedback.md(lm.kind)} language model. "
            + (
                "AUL and AULA need one pass per sentence; CPS and PLL one per token, so they take longest."
                if lm.kind == "masked"
                else "All of them come from one pass per sentence (each token read given the tokens before it)."
            ),
        )
    with c2:
        sample, seed = ui.runs.sample_controls(S, len(dataset), link)
    focus = st.session_state.get(S + "focus")
    view = ExplorerView(ui.state.global_view(), metrics=tuple(metrics), metric=focus, sample=sample, seed=seed, tab=_tab())
    ui.state.publish(view)
    if not metrics:
        st.info("Choose at least one metric.", icon=":material/checklist:")
        st.stop()
    metrics, unavailable = available_metrics(lm, metrics)
    if unavailable:  # e.g. AULA for a model that returns no attention weights: left out, with the reason
        st.info(unavailable_note(unavailable), icon=":material/info:")
        if not metrics:
            st.stop()
    spec = ui.runs.spec_for(settings, lm, dataset, metrics, sample, seed)
    result = ui.runs.lookup(spec, lm, dataset)
    if result is None:
        n_pairs = spec.sample or len(dataset)
        kept = ui.runs.kept(spec, lm, dataset)

        def notice() -> None:
            scores = f"{len(metrics)} metric{'s' if len(metrics) > 1 else ''}"
            if kept:
                st.info(
                    f"Not finished: {kept:,} of {n_pairs:,} pairs kept in the result cache ({scores}, from a stopped or an earlier "
                    f"run). Resume scores the other {n_pairs - kept:,}.",
                    icon=":material/pause_circle:",
                )
            else:
                st.info(
                    f"Not scored yet: {n_pairs:,} pairs × {scores} with this model. Finished chunks are cached, so a stopped "
                    "run resumes where it stopped.",
                    icon=":material/hourglass_empty:",
                )
            ui.runs.time_estimate(spec, lm, dataset, n_pairs - kept, key=S + "estimate")

        if ui.runs.offer("Resume" if kept else "Run", key=S + "run", pending=ui.runs.is_pending(spec), notice=notice):
            names = ", ".join(METRICS[m].name for m in metrics)
            result = ui.runs.run(spec, lm, dataset, f"Scoring {ui.settings.short_dataset_name(dataset)} ({names})", kept=kept)
        if result is None:
            st.stop()
    result = ui.field.flag_filter(settings, lm, dataset, result, metrics)
    ui.honesty.model_banner(settings, lm, [t for p in dataset.pairs[:100] for t in (p.sent_stereo, p.sent_anti)])
    controls = ui.trust.control_entries(settings, lm, dataset, result, metrics)
    show_result(result, metrics, _file_stem(settings.model, dataset.name), view, controls)
    ui.field.stereoset_panel(settings, lm, dataset, result, metrics)
    ui.trust.controls_panel(settings, lm, dataset, result, metrics)
    ui.trust.conventions_panel(lm, dataset, result, view.inspect)
    if lm.fills_masks:  # mlm-bias's measures mask each token: a masked model's
        ui.trust.mlm_bias_panel(lm, dataset, result)
    ui.anatomy.heads_panel(settings, lm, dataset, result)  # which heads move the bias score (ui/anatomy.py)


main()

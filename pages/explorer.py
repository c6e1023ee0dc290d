"""Dataset explorer: score a whole dataset (or a sample), see the bias scores and every pair."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.feedback
import ui.field
import ui.honesty
import ui.resources
import ui.runs
import ui.settings
import ui.state
from ui.tables import labelled_table
from biaslens import explore, figures
from biaslens.evaluation import EvaluationResult, available_metrics, unavailable_note
from biaslens.export import safe_csv, to_json
from biaslens.metrics import METRICS, PAPER_METRICS

ui.require_app()

S = "explorer."
INSPECTOR = "pages/inspector.py"
VERDICTS = {"stereo": "stereotypical", "anti": "anti-stereotypical", "tie": "tie", "undecidable": "undecidable"}


def _adopt_url() -> None:
    metrics = ui.state.take_list("metrics")
    if metrics:
        chosen = [m for m in metrics if m in METRICS]
        if chosen:
            st.session_state[S + "metrics"] = chosen
        unknown = [m for m in metrics if m not in METRICS]
        if unknown:
            ui.state.reject("metrics", unknown, "metric names from " + ", ".join(METRICS))
    metric = ui.state.take_one("metric")
    if metric in METRICS:
        st.session_state[S + "focus"] = metric
    elif metric is not None:
        ui.state.reject("metric", metric, "one of " + ", ".join(METRICS))
    st.session_state.setdefault(S + "metrics", list(PAPER_METRICS))


def _file_stem(model: str, dataset: str) -> str:
    name = model.rstrip("/").split("/")[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{dataset}-{name}")


# ---------------------------------------------------------------------------------------
# Showing a finished run
# ---------------------------------------------------------------------------------------


#: Width of one metric card (px): room for "100.0" and a wrapped "All Masked bias score".
CARD_WIDTH = 200


def show_headline(result: EvaluationResult, summary: pd.DataFrame) -> None:
    m = result.manifest
    info = m.get("dataset", {})
    scored = info.get("pairs_scored", len(result.pairs))
    total = info.get("pairs_total", scored)
    st.caption(
        f"{scored:,} of {total:,} pairs · model {ui.feedback.md(ui.settings.model_label(m['model']))} · mode {m.get('compat', 'default')} · "
        f"{m['device']} · {m['dtype']}" + (f" · file sha256 {info['sha256'][:12]}…" if info.get("sha256") else "")
    )
    for warning in result.warnings:
        st.warning(ui.feedback.md(warning))
    # Cards of a fixed width in a row that wraps: five metrics never squeeze "100.0" into "1…" on a laptop.
    row_of_cards = st.container(horizontal=True, gap="small")
    for row in summary.itertuples():
        with row_of_cards.container(border=True, width=CARD_WIDTH):
            st.metric(
                f"{row.name} bias score",
                "n/a" if pd.isna(row.bias_score) else f"{row.bias_score:.1f}",
                help=METRICS[row.metric].direction,
            )
            st.caption(
                f"95% CI {row.ci_low:.1f}–{row.ci_high:.1f} (Wilson) · N {row.n:,} · ties {row.ties} · "
                f"undecidable {row.undecidable} · token accuracy {row.token_accuracy:.1f}%"
            )


#: The summary tables' score columns: name -> (label, format). Static tables: a projector or a 1024 px window shows them all.
SCORE_COLUMNS: dict[str, tuple[str, str | None]] = {
    "bias_score": ("Bias score", "{:.2f}"),
    "ci_low": ("95% CI low", "{:.2f}"),
    "ci_high": ("95% CI high", "{:.2f}"),
    "n": ("N", None),
    "wins": ("Wins", None),
    "ties": ("Ties", None),
    "undecidable": ("Undecidable", None),
    "token_accuracy": ("Token accuracy (%)", "{:.2f}"),
}


def show_pairs(result: EvaluationResult, metrics: list[str], focus: str) -> None:
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
    columns = [
        "pair_id",
        "bias_type",
        "direction",
        "sent_stereo",
        "sent_anti",
        f"{focus}_stereo",
        f"{focus}_anti",
        f"{focus}_margin",
        f"{focus}_verdict",
    ]
    if not (shown["direction"] != "").any():
        columns.remove("direction")
    name = METRICS[focus].name
    event = st.dataframe(
        shown[columns],
        hide_index=True,
        width="stretch",
        height=420,
        key=S + f"table.{st.session_state.get(S + 'table_version', 0)}",
        on_select="rerun",
        selection_mode="single-row",
        column_config={
            "pair_id": st.column_config.NumberColumn("Pair", format="%d"),
            "bias_type": "Bias type",
            "direction": "Direction",
            "sent_stereo": st.column_config.TextColumn("Stereotypical sentence", width="large"),
            "sent_anti": st.column_config.TextColumn("Anti-stereotypical sentence", width="large"),
            f"{focus}_stereo": st.column_config.NumberColumn(f"{name} stereo", format="%.4f"),
            f"{focus}_anti": st.column_config.NumberColumn(f"{name} anti", format="%.4f"),
            f"{focus}_margin": st.column_config.NumberColumn(f"{name} margin", format="%.4f"),
            f"{focus}_verdict": f"{name} prefers",
        },
        placeholder="—",
    )
    st.caption(f"{len(shown):,} of {len(frame):,} pairs shown.")
    if event.selection.rows:
        # A fresh table next time, so coming back here does not reopen the same pair.
        st.session_state[S + "table_version"] = st.session_state.get(S + "table_version", 0) + 1
        ui.state.open_page(INSPECTOR, pair=int(shown["pair_id"].iloc[event.selection.rows[0]]), metric=focus)


def show_exports(result: EvaluationResult, charts: dict[str, object], stem: str) -> None:
    st.caption("Per-pair scores at full precision; the summary carries the manifest (model, revision or fingerprint, dataset sha256, versions).")
    c1, c2, c3 = st.columns(3)
    c1.download_button(
        "Pairs (CSV)",
        lambda: safe_csv(result.pairs),
        f"{stem}-pairs.csv",
        "text/csv",
        icon=":material/download:",
        key=S + "dl_csv",
        on_click="ignore",
    )
    c2.download_button(
        "Pairs (JSON)",
        lambda: to_json(result.pairs.to_dict(orient="records")),
        f"{stem}-pairs.json",
        "application/json",
        icon=":material/download:",
        key=S + "dl_json",
        on_click="ignore",
    )
    c3.download_button(
        "Summary + manifest (JSON)",
        lambda: to_json(result.summary),
        f"{stem}-summary.json",
        "application/json",
        icon=":material/download:",
        key=S + "dl_summary",
        on_click="ignore",
    )
    st.markdown("**Figures (SVG)**")
    cols = st.columns(max(1, len(charts)))
    for col, (name, chart) in zip(cols, charts.items()):
        col.download_button(
            name,
            lambda chart=chart: figures.to_svg(chart),
            f"{stem}-{re.sub(r'[^a-z]+', '-', name.lower()).strip('-')}.svg",
            "image/svg+xml",
            icon=":material/image:",
            key=S + f"dl_svg_{name}",
            on_click="ignore",
        )


def show_result(result: EvaluationResult, metrics: list[str], stem: str) -> None:
    summary = explore.summary_table(result.summary)
    show_headline(result, summary)
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
    ui.state.publish(metrics=metrics, metric=focus, sample=st.session_state.get(S + "spec_sample"))

    by_type = explore.by_type_table(result.summary)
    groups = explore.group_table(result.summary)
    charts = {"Bias scores": figures.bias_scores_chart(summary)}
    if not by_type.empty:
        charts["By bias type"] = figures.by_type_chart(by_type[by_type["metric"] == focus], f"{METRICS[focus].name} bias score per bias type")
    if not groups.empty:
        charts["Adv vs Dis"] = figures.groups_chart(groups)

    tabs = st.tabs(["Scores", "By bias type", "Adv / Dis", "Pairs", "Export"])
    with tabs[0]:
        st.caption(
            "Share of pairs in which the metric scores the stereotypical sentence higher; 50 = no preference. Bars: 95% Wilson interval; numbers: N."
        )
        ui.charts.show(charts["Bias scores"], S + "chart_scores")
        labelled_table(summary, {"name": ("Metric", None), **SCORE_COLUMNS})
    with tabs[1]:
        if by_type.empty:
            st.info("This dataset has no bias types.")
        else:
            ui.charts.show(charts["By bias type"], S + "chart_types")
            table = by_type[by_type["metric"] == focus]
            labelled_table(table, {"bias_type": ("Bias type", None), **SCORE_COLUMNS})
    with tabs[2]:
        if groups.empty:
            st.info("Only CrowS-Pairs (and custom files with stereo_antistereo) split pairs into advantaged and disadvantaged groups.")
        else:
            st.caption(
                "Kaneko & Bollegala (2022), Table 3: **Dis** = stereo rows (the first sentence stereotypes a historically "
                "disadvantaged group), **Adv** = antistereo rows. An unbiased model scores 50 in both."
            )
            ui.charts.show(charts["Adv vs Dis"], S + "chart_groups")
            labelled_table(groups, {"name": ("Metric", None), "group_name": ("Group", None), **SCORE_COLUMNS})
    with tabs[3]:
        show_pairs(result, metrics, focus)
    with tabs[4]:
        show_exports(result, charts, stem)


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    _adopt_url()
    st.title("Dataset explorer")
    st.caption("Bias scores of the sidebar's model on a whole benchmark, per metric, per bias type and per group, with every pair behind them.")
    dataset = ui.resources.dataset_or_stop(settings)
    ui.feedback.content_warning(dataset)
    for note in dataset.notes:
        st.caption(f"Note on the file: {ui.feedback.md(note)}")
    c1, c2 = st.columns([1.4, 1])
    with c1:
        metrics = st.multiselect(
            "Metrics",
            list(METRICS),
            key=S + "metrics",
            format_func=lambda k: METRICS[k].name,
            persist_state="session",
            help="AUL and AULA need one pass per sentence; CPS and PLL one per token, so they take longest.",
        )
    with c2:
        sample, seed = ui.runs.sample_controls(S, len(dataset))
    st.session_state[S + "spec_sample"] = sample
    if not metrics:
        ui.state.publish(sample=sample)
        st.info("Choose at least one metric.", icon=":material/checklist:")
        st.stop()
    ui.state.publish(metrics=metrics, metric=st.session_state.get(S + "focus"), sample=sample)
    lm = ui.resources.model_or_stop(settings)
    metrics, unavailable = available_metrics(lm, metrics)
    if unavailable:  # e.g. AULA for a model that returns no attention weights: left out, with the reason
        st.info(unavailable_note(unavailable), icon=":material/info:")
        if not metrics:
            st.stop()
    spec = ui.runs.spec_for(settings, lm, dataset, metrics, sample, seed)
    result = ui.runs.lookup(spec, lm, dataset)
    if result is None:
        n_pairs = spec.sample or len(dataset)
        pending = ui.runs.is_pending(spec)
        notice = st.empty()  # cleared once the run is done, so it never sits above its results
        with notice.container():
            st.info(
                f"Not scored yet: {n_pairs:,} pairs × {len(metrics)} metric{'s' if len(metrics) > 1 else ''} with this model. "
                + (
                    "The interrupted run resumes from the cache."
                    if pending
                    else "Finished chunks are cached, so an interrupted run resumes where it stopped."
                ),
                icon=":material/hourglass_empty:",
            )
            if not pending:
                ui.runs.time_estimate(spec, lm, dataset, n_pairs, key=S + "estimate")
            clicked = st.button("Run", type="primary", icon=":material/play_arrow:", key=S + "run")
        if clicked or pending:
            names = ", ".join(METRICS[m].name for m in metrics)
            result = ui.runs.run(spec, lm, dataset, f"Scoring {ui.settings.short_dataset_name(dataset)} ({names})")
        if result is None:
            st.stop()
        notice.empty()
    result = ui.field.flag_filter(settings, lm, dataset, result, metrics)
    ui.honesty.model_banner(settings, lm, [t for p in dataset.pairs[:100] for t in (p.sent_stereo, p.sent_anti)])
    show_result(result, metrics, _file_stem(settings.model, dataset.name))
    ui.field.stereoset_panel(settings, lm, dataset, result, metrics)


main()

"""Model comparison: two or more models on the same dataset and metric, side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.feedback
import ui.honesty
import ui.resources
import ui.runs
import ui.settings
import ui.sidebar
import ui.state
from biaslens import explore, figures, paired
from biaslens.export import safe_csv
from biaslens.metrics import METRICS

ui.require_app()

S = "compare."
INSPECTOR = "pages/inspector.py"


def _adopt_url(settings: ui.settings.Settings) -> None:
    models = ui.state.take_list("models")
    if models:
        st.session_state[S + "models"] = models
    metric = ui.state.take_one("metric")
    if metric in METRICS:
        st.session_state[S + "metric"] = metric
    elif metric is not None:
        ui.state.reject("metric", metric, "one of " + ", ".join(METRICS))
    st.session_state.setdefault(S + "models", [settings.model])
    st.session_state.setdefault(S + "metric", "aul")


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    _adopt_url(settings)
    st.title("Model comparison")
    st.caption(
        "Two or more models on the same pairs and metric: their bias scores with intervals, the difference per bias type, "
        "each pair's margin under both, and the pairs whose verdict flips."
    )
    dataset = ui.resources.dataset_or_stop(settings)
    ui.feedback.content_warning(dataset)
    choices = ui.sidebar.model_choices()
    labels = {c.value: c.label for c in choices}
    options = list(dict.fromkeys([c.value for c in choices] + [settings.model] + list(st.session_state[S + "models"])))
    c1, c2 = st.columns([1.6, 1])
    with c1:
        models = st.multiselect(
            "Models",
            options,
            key=S + "models",
            format_func=lambda v: labels.get(v) or ui.settings.model_label(v),
            accept_new_options=True,
            persist_state="session",
            help="Presets, hub ids or local folders (type a path and press Enter). Each runs on the sidebar's device and precision.",
        )
        metric = st.selectbox(
            "Metric", list(METRICS), key=S + "metric", format_func=lambda k: f"{METRICS[k].name} · {METRICS[k].long_name}", persist_state="session"
        )
    with c2:
        sample, seed = ui.runs.sample_controls(S, len(dataset))
    ui.state.publish(models=models, metric=metric, sample=sample)
    if len(models) < 2:
        st.info("Choose at least two models to compare (type a folder path to add a local model).", icon=":material/group_add:")
        st.stop()
    loaded, missing = {}, []
    for model in models:
        lm = ui.resources.model_or_none(settings, model)
        if lm is None:
            continue
        spec = ui.runs.spec_for(settings, lm, dataset, [metric], sample, seed)
        result = ui.runs.lookup(spec, lm, dataset)
        if result is None:
            missing.append((model, lm, spec))
        else:
            loaded[model] = result
    if missing:
        n_pairs = missing[0][2].sample or len(dataset)
        pending = any(ui.runs.is_pending(spec) for _, _, spec in missing)
        notice = st.empty()  # cleared once the runs are done, so it never sits above their results
        with notice.container():
            st.info(
                f"Not scored yet with {METRICS[metric].name} on {n_pairs:,} pairs: "
                + ui.feedback.md(", ".join(ui.settings.model_label(m) for m, _, _ in missing))
                + ".",
                icon=":material/hourglass_empty:",
            )
            if not pending:
                for i, (model, model_lm, model_spec) in enumerate(missing):
                    st.caption(f"{ui.settings.model_label(model)}:")
                    ui.runs.time_estimate(model_spec, model_lm, dataset, n_pairs, key=f"{S}estimate.{i}")
            clicked = st.button("Score them", type="primary", icon=":material/play_arrow:", key=S + "run")
        if not (clicked or pending):
            st.stop()
        for model, lm, spec in missing:
            result = ui.runs.run(spec, lm, dataset, f"Scoring {ui.settings.short_dataset_name(dataset)} with {ui.settings.model_label(model)}")
            if result is None:
                st.stop()
            loaded[model] = result
        notice.empty()
    if len(loaded) < 2:
        st.warning("Fewer than two of the chosen models could be loaded: nothing to compare.")
        st.stop()
    names = ui.settings.model_names(list(loaded))
    _texts = [t for p in dataset.pairs[:100] for t in (p.sent_stereo, p.sent_anti)]
    for _model in loaded:  # a model that looks untrained or does not know these words: said here, beside its scores
        ui.honesty.model_banner(settings, ui.resources.get_model(settings, _model), _texts, name=ui.settings.model_label(_model))
    results = {names[m]: loaded[m] for m in models if m in loaded}
    comparison = None
    with ui.feedback.guard():
        comparison = explore.compare_models(results, metric)
    if comparison is None:
        st.stop()
    metric_name = METRICS[metric].name
    order = list(results)
    st.subheader(f"{metric_name} bias score")
    left, right = st.columns([3, 2])
    with left:
        ui.charts.show(figures.model_scores_chart(comparison.scores, metric_name), S + "chart_scores")
    with right:
        st.dataframe(
            comparison.scores,
            hide_index=True,
            width="stretch",
            column_config={
                "model": "Model",
                "bias_score": st.column_config.NumberColumn("Bias score", format="%.2f"),
                "ci_low": st.column_config.NumberColumn("95% CI low", format="%.2f"),
                "ci_high": st.column_config.NumberColumn("95% CI high", format="%.2f"),
                "token_accuracy": st.column_config.NumberColumn("Token acc. (%)", format="%.2f"),
            },
            placeholder="—",
        )
        st.caption("50 = no preference between the sentences. Intervals: 95% Wilson.")
    st.subheader("Per bias type")
    by_type_long = explore.stack_by_type({label: r.summary for label, r in results.items()}, metric)
    if by_type_long.empty:
        st.info("This dataset has no bias types.")
    else:
        ui.charts.show(figures.by_type_chart(by_type_long, f"{metric_name} bias score per bias type and model"), S + "chart_types")
        st.dataframe(
            comparison.by_type,
            hide_index=True,
            width="stretch",
            column_config={
                c: st.column_config.NumberColumn(c, format="%.2f") for c in comparison.by_type.columns if c != "bias_type" and not c.startswith("n (")
            },
            placeholder="—",
        )
        st.caption(f"The last columns are each model's score minus {ui.feedback.md(order[0])}'s, in percentage points.")
    st.subheader("Paired test")
    paired_rows = []
    for label in order[1:]:
        table = None
        with ui.feedback.guard():
            table = paired.paired_comparison(results[order[0]], results[label], [metric], seed=seed)
        if table is not None:
            paired_rows.append(table.assign(models=f"{label} − {order[0]}"))
    if paired_rows:
        st.dataframe(
            pd.concat(paired_rows, ignore_index=True),
            hide_index=True,
            width="stretch",
            column_order=[
                "models",
                "n",
                "score_first",
                "score_second",
                "difference",
                "ci_low",
                "ci_high",
                "mcnemar_b",
                "mcnemar_c",
                "p_value",
                "mcnemar_method",
            ],
            column_config={
                "models": "Models",
                "n": "Pairs",
                "score_first": st.column_config.NumberColumn(f"{order[0]}", format="%.2f"),
                "score_second": st.column_config.NumberColumn("Other model", format="%.2f"),
                "difference": st.column_config.NumberColumn("Difference", format="%+.2f"),
                "ci_low": st.column_config.NumberColumn("95% CI low", format="%+.2f"),
                "ci_high": st.column_config.NumberColumn("95% CI high", format="%+.2f"),
                "mcnemar_b": st.column_config.NumberColumn(f"Only {order[0]} prefers stereo"),
                "mcnemar_c": st.column_config.NumberColumn("Only the other prefers stereo"),
                "p_value": st.column_config.NumberColumn("McNemar p", format="%.3g"),
                "mcnemar_method": "Test",
            },
            placeholder="—",
        )
        st.caption(
            f"The same pairs under both models: difference of bias scores in percentage points with a paired bootstrap 95% interval "
            f"({paired.N_RESAMPLES:,} resamples of the pairs, seed {seed}), and McNemar's test on the verdicts (exact below 25 "
            "discordant pairs). An interval that excludes 0 and a small p say the models' bias scores differ on these pairs."
        )
    st.subheader("Per pair")
    x_model, y_model = order[0], order[1]
    if len(order) > 2:
        c1, c2 = st.columns(2)
        x_model = c1.selectbox("Horizontal axis", order, index=0, key=S + "x")
        y_model = c2.selectbox("Vertical axis", order, index=1, key=S + "y")
    ui.charts.show(figures.margin_scatter(comparison.margins, x_model, y_model, metric_name), S + "chart_scatter")
    st.caption("Each point is a pair: its margin f(stereotypical) − f(anti-stereotypical) under each model. Points off the shared quadrants flip.")
    st.subheader(f"Pairs whose verdict flips ({len(comparison.flips):,} of {len(comparison.margins):,})")
    if comparison.flips.empty:
        st.info("Every pair gets the same verdict from every model.")
    else:
        st.caption("Select a row to open the pair in the inspector (with the sidebar's model).")
        event = st.dataframe(
            comparison.flips,
            hide_index=True,
            width="stretch",
            height=380,
            key=S + f"flips.{st.session_state.get(S + 'table_version', 0)}",
            on_select="rerun",
            selection_mode="single-row",
            column_config={
                "pair_id": st.column_config.NumberColumn("Pair", format="%d"),
                "sent_stereo": st.column_config.TextColumn("Stereotypical sentence", width="large"),
                "sent_anti": st.column_config.TextColumn("Anti-stereotypical sentence", width="large"),
            }
            | {c: st.column_config.NumberColumn(c, format="%.4f") for c in comparison.flips.columns if c.startswith("margin (")},
            placeholder="—",
        )
        if event.selection.rows:
            st.session_state[S + "table_version"] = st.session_state.get(S + "table_version", 0) + 1
            ui.state.open_page(INSPECTOR, pair=int(comparison.flips["pair_id"].iloc[event.selection.rows[0]]), metric=metric)
        st.download_button(
            "Flipped pairs (CSV)",
            lambda: safe_csv(comparison.flips),
            f"{dataset.name}-{metric}-flips.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
        )


main()

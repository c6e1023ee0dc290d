"""Model comparison: two or more models on the same dataset and metric, side by side."""

from __future__ import annotations

import functools

import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.choices
import ui.feedback
import ui.honesty
import ui.resources
import ui.runs
import ui.settings
import ui.sidebar
import ui.state
import ui.tables
import ui.trust
from ui.views import CompareView
from biaslens.analyses import explore, paired
from biaslens.figures import charts as figures
from biaslens.data.export import safe_csv
from biaslens.engine.evaluation import EvaluationResult
from biaslens.engine.metrics import METRICS, kind_unavailable
from biaslens.engine.stats import MCNEMAR_TEST

ui.require_app()

S = "compare."
#: The page's one-line description, under its title.
ABOUT = (
    "Two or more models on the same pairs and metric: their bias scores with intervals, the difference per bias type, "
    "each pair's margin under both, and the pairs whose verdict flips."
)
#: The description on a multiple-choice dataset (BBQ, Winogender: items and their statistics, not pairs; ui/choices.py).
ABOUT_ITEMS = (
    "Two or more models on the same multiple-choice items and convention: their statistics (accuracy, bias scores) with "
    "intervals, each model against the first (paired bootstrap, McNemar), and the items whose answer differs."
)


def _adopt_url(settings: ui.settings.Settings) -> ui.state.Link[CompareView]:
    link = ui.state.link(CompareView)
    if "models" in link:
        st.session_state[S + "models"] = list(link.view.models) or [settings.model]
    if "metric" in link:
        st.session_state[S + "metric"] = link.view.metric
    st.session_state.setdefault(S + "models", [settings.model])
    st.session_state.setdefault(S + "metric", "aul")
    return link


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    link = _adopt_url(settings)
    choices = ui.choices.is_choice_dataset(settings)
    ui.feedback.header("Model comparison", ABOUT_ITEMS if choices else ABOUT, docs="app")
    if choices:  # BBQ, Winogender: the models' answers item by item (ui/choices.py)
        ui.choices.compare(settings, S + "models")  # the same models, picked here or given in a link
        return
    dataset = ui.resources.dataset_or_stop(settings)
    ui.feedback.content_warning(dataset)
    c1, c2 = st.columns([1.6, 1])
    with c1:
        models = ui.sidebar.pick_models(
            "Models",
            S + "models",
            placeholder=ui.sidebar.ADD_MODEL,
            help="Every model the sidebar offers (presets, the server's model folders, your lab models, models used in this "
            "session), or a hub id or a local folder: type it and press Enter. Each runs on the sidebar's device and precision.",
        )
        metric = st.selectbox(
            "Metric", list(METRICS), key=S + "metric", format_func=lambda k: f"{METRICS[k].name} · {METRICS[k].long_name}", persist_state="session"
        )
    with c2:
        sample, seed = ui.runs.sample_controls(S, len(dataset), link)
    view = CompareView(ui.state.global_view(), models=tuple(models), metric=metric, sample=sample, seed=seed)
    ui.state.publish(view)
    if len(models) < 2:
        st.info("Choose at least two models to compare (type a folder path to add a local model).", icon=":material/group_add:")
        st.stop()
    distinct = ui.resources.distinct_models(models)  # every spelling of one model once; at most $BIASLENS_MAX_COMPARE_MODELS
    if distinct is None:
        st.stop()
    if len(distinct) < 2:
        st.info("These names are one model: choose another to compare it with.", icon=":material/group_add:")
        st.stop()
    # One model at a time: each is loaded (from the server's pool), looked up or noted, and let go before the next, so a
    # comparison never holds more models than the pool keeps ($BIASLENS_MAX_MODELS).
    loaded: dict[str, EvaluationResult] = {}
    missing: list[tuple[str, ui.runs.RunSpec, int]] = []
    banners = st.container()
    texts = [t for p in dataset.pairs[:100] for t in (p.sent_stereo, p.sent_anti)]
    for model in distinct:
        lm = ui.resources.model_or_none(settings, model)
        if lm is None:
            continue
        with banners:  # a model that looks untrained or does not know these words: said once, above its scores
            ui.honesty.model_banner(settings, lm, texts, name=ui.settings.model_label(model))
        why = kind_unavailable(metric, lm.kind)  # a causal model asked for a masked-LM metric, or back: said once, left out
        if why:
            name = ui.feedback.md(ui.settings.model_label(model))
            banners.warning(f"{name} is left out of this comparison: {ui.feedback.md(why)}", icon=":material/block:")
            continue
        spec = ui.runs.spec_for(settings, lm, dataset, [metric], sample, seed)
        result = ui.runs.lookup(spec, lm, dataset)
        if result is None:
            missing.append((model, spec, ui.runs.kept(spec, lm, dataset)))
        else:
            loaded[model] = result
        del lm
    if len(loaded) + len(missing) < 2:
        st.info(  # nothing is offered to run: one model's scores compare with nothing
            f"Fewer than two of the chosen models could be loaded and give {METRICS[metric].name} (see above): nothing to compare. "
            "A masked and a causal model give different metrics; in the pair inspector they stand side by side on one pair, "
            "each metric beside its counterpart.",
            icon=":material/group_add:",
        )
        st.stop()
    if missing:
        n_pairs = missing[0][1].sample or len(dataset)
        kept = {model: n for model, _, n in missing}
        with ui.feedback.guard() as over:  # the whole comparison against the server's cap, not each model alone
            ui.resources.server_settings().check_run(n_pairs, 1, "This comparison", models=len(missing))
        if over.failed:
            st.stop()

        def notice() -> None:
            waiting = [ui.settings.model_label(m) + (f" ({kept[m]:,} of {n_pairs:,} pairs kept)" if kept[m] else "") for m, _, _ in missing]
            st.info(
                f"Not scored yet with {METRICS[metric].name} on {n_pairs:,} pairs: {ui.feedback.md(', '.join(waiting))}.",
                icon=":material/hourglass_empty:",
            )
            for i, (model, model_spec, _) in enumerate(missing):
                st.caption(f"{ui.feedback.md(ui.settings.model_label(model))}:")
                ui.runs.time_estimate(
                    model_spec, functools.partial(ui.resources.get_model, settings, model), dataset, n_pairs - kept[model], key=f"{S}estimate.{i}"
                )

        pending = any(ui.runs.is_pending(spec) for _, spec, _ in missing)
        if not ui.runs.offer("Resume" if any(kept.values()) else "Score them", key=S + "run", pending=pending, notice=notice):
            st.stop()
        for model, spec, _ in missing:
            lm = ui.resources.model_or_none(settings, model)
            if lm is None:
                st.stop()
            label = f"Scoring {ui.settings.short_dataset_name(dataset)} with {ui.settings.model_label(model)}"
            result = ui.runs.run(spec, lm, dataset, label, kept=kept[model])
            del lm
            if result is None:
                st.stop()
            loaded[model] = result
    names = ui.settings.model_names(list(loaded))
    results = {names[m]: loaded[m] for m in distinct if m in loaded}
    comparison = None
    with ui.feedback.guard():
        comparison = explore.compare_models(results, metric)
    if comparison is None:
        st.stop()
    metric_name = METRICS[metric].name
    order = list(results)
    st.subheader(f"{metric_name} bias score")
    ui.charts.show(figures.model_scores_chart(comparison.scores, metric_name), S + "chart_scores")
    ui.tables.table(comparison.scores, [c for c in comparison.scores.columns if c not in ("model", "bias_score")], pin=["model", "bias_score"])
    st.caption("50 = no preference between the sentences. Intervals: 95% Wilson.")
    st.subheader("Per bias type")
    by_type_long = explore.stack_by_type({label: r.summary for label, r in results.items()}, metric)
    if by_type_long.empty:
        st.info("This dataset has no bias types.")
    else:
        ui.charts.show(figures.by_type_chart(by_type_long, f"{metric_name} bias score per bias type and model"), S + "chart_types")
        ui.tables.table(comparison.by_type, pin=["bias_type"])
        st.caption(f"The last columns are each model's score minus {ui.feedback.md(order[0])}'s, in percentage points.")
    st.subheader("Paired test")
    paired_rows = []
    for label in order[1:]:
        table = None
        with ui.feedback.guard():
            table = paired.paired_comparison(results[order[0]], results[label], [metric], seed=seed)
        if table is not None:
            # Each model's bias score under its own name (one row per model against the first; blank where not compared).
            paired_rows.append(table.assign(models=f"{label} − {order[0]}", **{f"score ({label})": table["score_second"]}))
    if paired_rows:
        others = [f"score ({label})" for label in order[1:] if any(f"score ({label})" in t for t in paired_rows)]
        only_other = f"Only {order[1]} prefers stereo" if len(order) == 2 else "Only the other model prefers stereo"
        # The answer first (difference, its interval, McNemar's p), then what it rests on.
        ui.tables.table(
            pd.concat(paired_rows, ignore_index=True),
            ["n", "score_first", *others, "mcnemar_b", "mcnemar_c", "mcnemar_method"],
            pin=["models", "difference", "ci_low", "ci_high", "p_value"],
            labels={
                "n": "Pairs",
                "score_first": order[0],
                **{column: column.removeprefix("score (")[:-1] for column in others},
                "mcnemar_b": f"Only {order[0]} prefers stereo",
                "mcnemar_c": only_other,
                "p_value": "McNemar p",
            },
            formats={"difference": "{:+.2f}", "ci_low": "{:+.2f}", "ci_high": "{:+.2f}"},
            sortable=True,  # interactive: its ten columns, two headed by model names, scroll past the pinned answer in a narrow window
        )
        st.caption(
            f"The same pairs under both models: difference of bias scores in percentage points with a "
            f"{ui.feedback.md(paired.bootstrap_method(paired.N_RESAMPLES, seed))}; p: {MCNEMAR_TEST}, on the verdicts. An interval that excludes 0 "
            "and a small p say the models' bias scores differ on these pairs."
        )
    ui.trust.stability_section(results, metric, seed)
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
        flips = comparison.flips
        event = ui.tables.table(
            flips,
            pin=["pair_id", *(c for c in flips.columns if c.startswith("margin ("))],
            select=True,
            key=S + f"flips.{st.session_state.get(S + 'table_version', 0)}",
        )
        if event.selection.rows:
            st.session_state[S + "table_version"] = st.session_state.get(S + "table_version", 0) + 1
            ui.state.open_view(view.inspect(int(flips["pair_id"].iloc[event.selection.rows[0]])))
        st.download_button(
            "Flipped pairs (CSV)",
            lambda: safe_csv(comparison.flips),
            f"{dataset.name}-{metric}-flips.csv",
            "text/csv",
            icon=":material/download:",
            on_click="ignore",
        )
    lms = {names[m]: ui.resources.get_model(settings, m) for m in models if m in loaded}
    if all(lm.fills_masks for lm in lms.values()):  # mlm-bias's measures mask each token: masked models only
        ui.trust.relative_bias_section(lms, dataset, results)


main()

"""Paper analyses: Kaneko & Bollegala (2022), Tables 1-5 and Figure 1 for the sidebar's model, beside the published numbers."""

from __future__ import annotations

import dataclasses
import re
import shlex

import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.feedback
import ui.honesty
import ui.memo
import ui.progress
import ui.resources
import ui.runs
import ui.settings
import ui.sidebar
import ui.state
import ui.tables
from ui.views import AnalysesView
from biaslens.analyses import explore
from biaslens.figures import charts as figures
from biaslens import lab
from biaslens.analyses.papers import SOURCE_RUN, bias_score_table, paper_layout
from biaslens.data.datasets import DATASETS, PairDataset
from biaslens.engine.evaluation import EvaluationResult
from biaslens.data.export import safe_csv
from biaslens.engine.metrics import METRICS
from biaslens.engine.models import LanguageModel
from biaslens.report.reproduction import (
    ANALYSES,
    DEFAULT_DATASETS,
    TABLE5_INTERVALS,
    TITLES,
    ModelAnalyses,
    ReportOptions,
    ReproductionReport,
    analyse_model,
    build_report,
    reusable_scores,
    table5_intervals,
    table5_notes,
    zip_report,
)
from biaslens.analyses.shuffle import ShuffledSentence, shuffle_sentence

ui.require_app()

S = "analyses."
#: The page's one-line description, under its title.
ABOUT = (
    "Kaneko & Bollegala (2022), *Unmasking the Mask*, for the sidebar's model: token prediction accuracy, word frequency, "
    "advantaged vs disadvantaged groups, shuffled and unrelated sentences, bias scores and agreement with human ratings, "
    "beside the numbers the paper published for bert-base-cased, roberta-large and albert-large-v2."
)
#: Pairs per dataset scored by default: minutes, not hours, on a CPU. The whole dataset is opt-in.
DEFAULT_SAMPLE = 100
#: Finished analyses kept for all sessions (a reload or a second visitor reopens them instantly).
KEEP = 8
DEFAULT_SENTENCE = "The new doctor explained the test results to the family in a calm voice."
SHORT = {
    "accuracy": "Token accuracy (Table 1)",
    "frequency": "Word frequency (Table 2)",
    "groups": "Adv / Dis groups (Table 3)",
    "shuffle": "Shuffle and unrelated (Table 4)",
    "scores": "Bias scores (Table 5)",
    "agreement": "Human ratings (Figure 1)",
}


# ---------------------------------------------------------------------------------------
# Finished analyses, shared by all sessions
# ---------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _store() -> ui.memo.LRU[tuple, tuple[ModelAnalyses, ReproductionReport]]:
    """The last `KEEP` finished analyses: key -> (ModelAnalyses, ReproductionReport). Values are never mutated."""
    return ui.memo.LRU(KEEP)


def _key(lm: LanguageModel, datasets: dict[str, PairDataset], options: ReportOptions) -> tuple:
    """Everything an analysis depends on: the model's weights and dtype, the data files, the options."""
    return (lm.name, lm.fingerprint, str(lm.dtype), tuple((name, d.sha256) for name, d in datasets.items()), options)


@st.cache_data(show_spinner=False, max_entries=64)
def _shuffled(_lm: LanguageModel, fingerprint: str, dtype: str, max_length: int, text: str, seed: int) -> ShuffledSentence:
    return shuffle_sentence(_lm, text, seed)


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False, max_entries=8)
def _renamed(name: str, sha256: str, _dataset: PairDataset) -> PairDataset:
    return dataclasses.replace(_dataset, name=name, pairs=tuple(dataclasses.replace(p, dataset=name) for p in _dataset.pairs))


def _named(dataset: PairDataset, name: str) -> PairDataset:
    """A pairs file under its own name ('lab pairs: planted association', the file's stem) in every table, never 'custom'."""
    if dataset.name != "custom" or name == "custom":
        return dataset
    return _renamed(name, dataset.sha256, dataset)


class _StageBars:
    """The engine's `progress(stage, done, total)` as one progress bar with time left, relabelled per stage."""

    def __init__(self) -> None:
        self.box = st.empty()
        self.stage: str | None = None
        self.bar: ui.progress.ProgressBar | None = None

    def __call__(self, stage: str, done: float, total: int) -> None:
        if stage != self.stage or self.bar is None:
            self.stage = stage
            self.bar = ui.progress.ProgressBar(stage, where=self.box)
        self.bar(done, total)

    def clear(self) -> None:
        self.box.empty()


def _analyse(lm: LanguageModel, datasets: dict[str, PairDataset], options: ReportOptions, label: str) -> ModelAnalyses | None:
    """`analyse_model` with a Stop button and a progress bar (`ui.runs.stoppable`: the job is `_key`); None (message shown)
    if it failed."""
    analysed = None
    with ui.runs.stoppable(_key(lm, datasets, options), help="Stop. Finished chunks stay in the result cache: running again resumes from there."):
        bars = _StageBars()
        with ui.feedback.guard():
            pairs = sum(min(options.sample or len(d), options.limit or len(d), len(d)) for d in datasets.values())
            ui.resources.server_settings().check_run(pairs, len(options.metrics), "This analysis")
            with ui.runs.heavy_job("This analysis"):
                analysed = analyse_model(lm, datasets, options, label=label, cache=ui.resources.result_cache(), progress=ui.runs.watched(bars))
        bars.clear()
    return analysed


def _run(settings: ui.settings.Settings, lm: LanguageModel, datasets: dict[str, PairDataset], options: ReportOptions, key: tuple, label: str):
    analysed = _analyse(lm, datasets, options, label)
    found = None
    if analysed is not None:
        with ui.feedback.guard():
            found = (analysed, build_report([analysed], datasets, options))
            _store().put(key, found)
            models = st.session_state.setdefault(S + "models", [])
            if settings.model not in models:
                models.append(settings.model)
    return found


# ---------------------------------------------------------------------------------------
# Showing
# ---------------------------------------------------------------------------------------


def _frame(frame: pd.DataFrame) -> None:
    """A table of the report: its first column (the model, a word, a bias type) is the row's name; metrics by their name
    (not also by their key); two decimals, p-values to 3 significant digits."""
    shown = frame.drop(columns="metric") if {"metric", "name"} <= set(frame.columns) else frame
    ui.tables.table(shown, pin=list(shown.columns[:1]))


def _views(report: ReproductionReport) -> tuple[dict, dict]:
    """The report's sections (by figure stem) and figures, built once per report and session."""
    kept = st.session_state.get(S + "views")
    if kept is None or kept[0] is not report:
        kept = (report, {s[3]: s for s in report.sections()}, report.charts())
        st.session_state[S + "views"] = kept
    return kept[1], kept[2]


def _section(found, stem: str, chart_key: str, why_not: str) -> None:
    """One of the report's sections, exactly as `python -m biaslens report` writes it, with its figure."""
    if found is None:  # (said once, above the tabs)
        st.caption("Not run yet.")
        return
    with ui.feedback.guard():
        sections, charts = _views(found[1])
        if stem not in sections:
            st.info(why_not, icon=":material/info:")
            return
        _title, text, shown, _stem = sections[stem]
        st.caption(text)
        for note in found[1].small_sample_notes().get(stem, []):
            st.warning(f"Small sample: {ui.feedback.md(note)}", icon=":material/warning:")
        for caption, table in shown:
            st.markdown(f"**{ui.feedback.md(caption)}**")
            _frame(table)
        if stem in charts:
            ui.charts.show(charts[stem], S + chart_key)


def _reset_shuffle_seed() -> None:
    st.session_state[S + "sentence_seed"] = 0


def _next_shuffle_seed() -> None:
    st.session_state[S + "sentence_seed"] = int(st.session_state.get(S + "sentence_seed", 0)) + 1


def _default_sentence() -> str:
    """The sentence to shuffle first: a lab model's first held-out sentence (it knows no other words), else a plain one."""
    model = ui.settings.selected_lab_model()
    return DEFAULT_SENTENCE if model is None else lab.heldout_pairs(model.settings)[0].pair.sent_stereo


@st.fragment
def _shuffle_box(settings: ui.settings.Settings, lm: LanguageModel) -> None:
    """One sentence before and after shuffling; "Shuffle again" reruns only this part."""
    st.markdown("**One sentence, shuffled**")
    default = _default_sentence()
    previous = st.session_state.get(S + "sentence_default", DEFAULT_SENTENCE)
    if previous != default and st.session_state.get(S + "sentence", previous) == previous:  # another model: its own, unless typed
        st.session_state[S + "sentence"] = default
        _reset_shuffle_seed()
    st.session_state[S + "sentence_default"] = default
    st.session_state.setdefault(S + "sentence", default)
    st.session_state.setdefault(S + "sentence_seed", 0)
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    text = c1.text_input(
        "Sentence",
        key=S + "sentence",
        on_change=_reset_shuffle_seed,
        help="Its non-special tokens are shuffled (special tokens stay in place; nothing is re-tokenized).",
    )
    c2.button(
        "Shuffle again",
        icon=":material/shuffle:",
        key=S + "reshuffle",
        on_click=_next_shuffle_seed,
        width="stretch",
        help="A new seed: the next one. The same sentence and seed always shuffle alike.",
    )
    seed = int(st.session_state[S + "sentence_seed"])
    result = None
    with ui.feedback.guard():
        result = _shuffled(lm, lm.fingerprint, str(lm.dtype), lm.max_length, text, seed)
    if result is None:
        return
    st.markdown(f"Original: {ui.feedback.md(result.original.text)}  \nShuffled (seed {seed}): **{ui.feedback.md(result.shuffled.text)}**")
    st.caption(
        f"AUL token accuracy of this sentence: {result.accuracy():.1f}% in the original order, {result.accuracy(True):.1f}% shuffled "
        f"(non-special tokens). Each token is scored at its new position."
    )
    with st.expander("The same on the command line"):
        st.code(shlex.join(["python", "-m", "biaslens", "shuffle", text, "--seed", str(seed), "--model", settings.model]), language="bash")
    ui.charts.show(figures.shuffle_chart(result.tokens), S + "chart_sentence")
    ui.tables.table(
        result.tokens,
        pin=["position", "token"],
        labels={
            "special": "Special",
            "logprob": "log p",
            "rank": "Rank",
            "prediction": "Model's top token",
            "new_position": "New position",
            "shuffled_logprob": "log p shuffled",
            "shuffled_rank": "Rank shuffled",
            "shuffled_prediction": "Top token shuffled",
        },
        decimals=4,
    )


def _scores_of(lm: LanguageModel, datasets: dict[str, PairDataset], options: ReportOptions) -> dict[str, EvaluationResult] | None:
    """A model's runs with the options' metrics on every dataset: from a finished analysis or the result cache, else None."""

    def finished(key_options: ReportOptions) -> ModelAnalyses | None:
        found = _store().get(_key(lm, datasets, key_options))
        return None if found is None else found[0]

    reused = reusable_scores(finished, datasets, options)
    if reused is not None:
        return reused
    out = {}
    for name, dataset in datasets.items():
        result = None
        with ui.feedback.guard():
            result = explore.cached_evaluation(
                lm, dataset, list(options.metrics), ui.resources.result_cache(), compat=options.compat, **options.selection()
            )
        if result is None:
            return None
        out[name] = result
    return out


def _summary(settings: ui.settings.Settings, lm: LanguageModel, datasets: dict[str, PairDataset], options: ReportOptions) -> None:
    """Table 5 for every model the user has run with these options (this session or the result cache)."""
    st.caption(
        f"{TITLES['scores']}: percentage of pairs whose stereotypical sentence scores higher (50 = no preference), for every model "
        "chosen here, on the same pairs and scoring mode. Models already scored (in this session, an earlier one, or by "
        "`python -m biaslens report`) are read from the result cache at once."
    )
    st.session_state.setdefault(S + "models", [settings.model])
    models = ui.sidebar.pick_models(
        "Models",
        S + "models",
        help="Every model the sidebar offers, or a hub id or a local folder (type it and press Enter), on the sidebar's device and precision.",
    )
    if not models:
        st.info("Choose at least one model.", icon=":material/group_add:")
        return
    distinct = ui.resources.distinct_models(models, "This analysis")  # each model once, at most $BIASLENS_MAX_COMPARE_MODELS
    if distinct is None:
        return
    models = distinct
    names = ui.settings.model_names(models)
    results: dict[str, dict[str, EvaluationResult]] = {}
    scores_only = dataclasses.replace(options, analyses=("scores",))
    missing: list[tuple[str, tuple]] = []  # (model, its analysis' key): no model is held between models
    for model in models:
        model_lm = lm if model == settings.model else ui.resources.model_or_none(settings, model)
        if model_lm is None:
            continue
        found = _scores_of(model_lm, datasets, options)
        if found is None:
            missing.append((model, _key(model_lm, datasets, scores_only)))
        else:
            results[names[model]] = found
        del model_lm
    if missing:
        waiting = ", ".join(names[m] for m, _ in missing)
        with ui.feedback.guard() as over:  # every model it has to score, against the server's one cap
            pairs = sum(min(options.sample or len(d), options.limit or len(d), len(d)) for d in datasets.values())
            ui.resources.server_settings().check_run(pairs, len(options.metrics), "Scoring these models", models=len(missing))
        if not over.failed and ui.runs.offer(
            "Score them",
            key=S + "score_models",
            pending=any(ui.runs.is_pending(key) for _, key in missing),
            notice=lambda: st.info(f"Not scored yet with these options: {ui.feedback.md(waiting)}.", icon=":material/hourglass_empty:"),
        ):
            for model, key in missing:
                model_lm = lm if model == settings.model else ui.resources.model_or_none(settings, model)
                analysed = None if model_lm is None else _analyse(model_lm, datasets, scores_only, names[model])
                del model_lm
                report = None
                if analysed is not None:
                    with ui.feedback.guard():
                        report = build_report([analysed], datasets, scores_only)
                if report is None:
                    break
                _store().put(key, (analysed, report))
                results[names[model]] = analysed.evaluations
    results = {names[m]: results[names[m]] for m in models if names[m] in results}
    table = None
    with ui.feedback.guard():
        table = bias_score_table(results)
        table = table[table["metric"].isin(options.metrics) | (table["source"] != SOURCE_RUN)].reset_index(drop=True)
    if table is None:
        return
    _frame(paper_layout(table, "bias_score"))
    for note in table5_notes(table):
        st.warning(f"Small sample: {ui.feedback.md(note)}", icon=":material/warning:")
    st.markdown(f"**{TABLE5_INTERVALS}**")
    _frame(table5_intervals(table))
    ui.charts.show(figures.paper_bars(table, "bias_score", TITLES["scores"], "bias score", fifty=True), S + "chart_summary")
    st.download_button(
        "Table 5 (CSV)",
        lambda: safe_csv(table),
        "table5_bias_scores.csv",
        "text/csv",
        icon=":material/download:",
        key=S + "dl_summary",
        on_click="ignore",
    )


def _cli(settings: ui.settings.Settings, names: list[str], options: ReportOptions) -> str:
    args = ["python", "-m", "biaslens", "report", "--model", settings.model, "--datasets", ",".join(names), "--compat", options.compat]
    if options.analyses != tuple(ANALYSES):
        args += ["--analyses", ",".join(options.analyses)]
    if options.sample:
        args += ["--sample", str(options.sample), "--seed", str(options.seed)]
    args += ["--shuffle-seed", str(options.shuffle_seed)]
    if settings.revision:
        args += ["--revision", settings.revision]
    if settings.device != "auto":
        args += ["--device", settings.device]
    if settings.dtype != "float32":
        args += ["--dtype", settings.dtype]
    return shlex.join([*args, "--out", "report"])


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


TAB = {"accuracy": 0, "frequency": 1, "groups": 2, "shuffle": 3, "scores": 4, "agreement": 5, "report": 6}
#: The tabs that show one of the report's sections: (its stem, its chart, why a run may lack it), in the order they are built.
SECTIONS = {
    "accuracy": ("table1_token_accuracy", "chart_accuracy", "Token accuracy was not part of this run: choose it under Analyses."),
    "groups": (
        "table3_groups",
        "chart_groups",
        "No Adv / Dis groups: choose Adv / Dis groups under Analyses, with CrowS-Pairs (or a custom file with stereo_antistereo).",
    ),
    "shuffle": ("table4_shuffle", "chart_shuffle", "The shuffle experiment was not part of this run: choose it under Analyses."),
    "frequency": (
        "table2_word_frequency",
        "chart_frequency",
        "No word frequency: choose it under Analyses, with CrowS-Pairs (it needs stereo/antistereo pairs).",
    ),
    "agreement": ("figure1_roc", "chart_roc", "No agreement analysis: choose it under Analyses, with CrowS-Pairs (it needs the human annotations)."),
}


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    ui.feedback.header("Paper analyses", ABOUT, docs="analyses")
    lm = ui.resources.model_or_stop(settings)
    if lm.kind == "causal":
        st.info(
            "Not for a causal model: these are Kaneko & Bollegala's tables for masked language models (AUL against the "
            "masked metrics, masked-token accuracy, shuffled masked inputs). A causal model's bias scores under its own "
            "metrics (LL, AUL-c, AULA-c, CPS-c, SSS-c), per bias type and Adv/Dis (Tables 3 and 5's views), and its "
            "peers' scoring conventions side by side are in the Dataset explorer.",
            icon=":material/block:",
        )
        ui.state.publish(AnalysesView(ui.state.global_view()))  # the link keeps the model and dataset
        st.stop()
    _lab_model = ui.settings.selected_lab_model()
    # A lab model knows only its own words: it defaults to its held-out pairs, not to CrowS-Pairs and StereoSet.
    _defaults = [str(_lab_model.path / lab.PAIRS_FILE)] if _lab_model else list(dict.fromkeys([*DEFAULT_DATASETS, settings.dataset]))
    if S + "datasets" not in st.session_state or st.session_state.get(S + "datasets_for", settings.model) != settings.model:
        st.session_state[S + "datasets"] = _defaults  # first visit, or another model: what that model knows
    st.session_state[S + "datasets_for"] = settings.model
    st.session_state.setdefault(S + "analyses", list(ANALYSES))
    st.session_state.setdefault(S + "shuffle_seed", 0)
    st.session_state.setdefault(S + "sample_on", _lab_model is None)  # a lab model's 48 pairs: all of them
    st.session_state.setdefault(S + "sample_n", DEFAULT_SAMPLE)
    c1, c2 = st.columns([1.4, 1])
    with c1:
        offered = list(dict.fromkeys([*_defaults, *DEFAULT_DATASETS, *DATASETS, settings.dataset, *st.session_state[S + "datasets"]]))
        chosen = st.multiselect(
            "Datasets",
            offered,
            key=S + "datasets",
            format_func=ui.settings._dataset_label,
            help="The paper uses CrowS-Pairs (Tables 1-5, Figure 1) and StereoSet (Tables 1, 4, 5). A custom pairs file from "
            "the sidebar's Dataset box is offered too.",
        )
        wanted = st.multiselect(
            "Analyses",
            list(ANALYSES),
            key=S + "analyses",
            format_func=lambda a: SHORT[a],
            help="What to compute. Everything already in the result cache is read back, not computed again.",
        )
        datasets: dict[str, PairDataset] = {}
        for name in chosen:
            dataset = ui.resources.dataset_or_none(settings, name)
            if dataset is not None:
                short = ui.settings.short_dataset_name(dataset)
                datasets[short] = _named(dataset, short)
    with c2:
        total = max((len(d) for d in datasets.values()), default=1)
        several = f"Score a random sample of each dataset (the largest has {total:,} pairs)" if len(datasets) > 1 else None
        sample, seed = ui.runs.sample_controls(S, total, ui.state.link(AnalysesView), several)
        shuffle_seed = st.number_input(
            "Shuffle seed (Table 4)",
            min_value=0,
            step=1,
            key=S + "shuffle_seed",
            help="Seeds the shuffle of every sentence: the same seed shuffles each sentence alike.",
        )
    ui.state.publish(AnalysesView(ui.state.global_view(), sample=sample, seed=seed))
    cols = st.columns(max(1, len(datasets)))
    for col, dataset in zip(cols, datasets.values()):
        with col:
            ui.feedback.content_warning(dataset)
    label = ui.settings.model_label(settings.model)
    found = None
    options = None
    if not datasets:
        st.info("Choose at least one dataset that loads.", icon=":material/dataset:")
    elif not wanted:
        st.info("Choose at least one analysis.", icon=":material/checklist:")
    else:
        with ui.feedback.guard():
            options = ReportOptions(
                analyses=tuple(a for a in ANALYSES if a in wanted), compat=settings.compat, sample=sample, seed=seed, shuffle_seed=int(shuffle_seed)
            )
        if options is not None:
            key = _key(lm, datasets, options)
            found = _store().get(key)
            if found is None:
                pairs = f"a sample of {sample:,} pairs" if sample else "every pair"
                notice = (
                    f"Not run yet for {ui.feedback.md(label)}: {', '.join(SHORT[a] for a in options.analyses)} on {pairs} of "
                    f"{ui.feedback.md(', '.join(datasets))}. Whatever is already in the result cache is read back; a stopped run "
                    "resumes where it stopped."
                )
                if ui.runs.offer(
                    "Run the analyses",
                    key=S + "run",
                    pending=ui.runs.is_pending(key),
                    notice=lambda: st.info(notice, icon=":material/hourglass_empty:"),
                ):
                    found = _run(settings, lm, datasets, options, key, label)
    if found is not None:
        analysed, report = found
        ui.honesty.model_banner(settings, lm, [t for d in datasets.values() for p in d.pairs[:100] for t in (p.sent_stereo, p.sent_anti)])
        for warning in report.warnings():
            st.warning(ui.feedback.md(warning), icon=":material/warning:")
        if analysed.cached_pairs:
            st.caption(f"{analysed.cached_pairs:,} pair records came from the result cache.")
    if found is None:  # one box for every tab, not one box in each
        st.info("Run the analyses above: their tables, the figure and the report fill the tabs below.", icon=":material/play_arrow:")
    # In the paper's order: Tables 1-5, then Figure 1.
    tabs = st.tabs(
        [
            "Token accuracy · T1",
            "Word frequency · T2",
            "Adv / Dis groups · T3",
            "Shuffle · T4",
            "Bias scores · T5",
            "Human ratings · F1",
            "Report",
        ]
    )
    for tab, (stem, chart_key, why_not) in SECTIONS.items():
        with tabs[TAB[tab]]:
            st.subheader(TITLES[tab])
            _section(found, stem, chart_key, why_not)
            if tab == "accuracy" and found is not None:
                for c in found[0].accuracy:
                    st.markdown(
                        f"**{ui.feedback.md(c.dataset)}: {METRICS[c.masked_metric].name} vs AUL on the {ui.feedback.md(c.paired_tokens)}** "
                        f"(McNemar, {ui.feedback.md(c.mcnemar.method)}: p = {c.mcnemar.p_value:.3g})"
                    )
                    _frame(c.contingency.reset_index(names=""))
            elif tab == "shuffle":
                st.divider()
                _shuffle_box(settings, lm)
    with tabs[TAB["scores"]]:
        st.subheader(TITLES["scores"])
        if options is None:
            st.info("Choose the datasets and analyses above first.")
        else:
            _summary(settings, lm, datasets, options)
    with tabs[TAB["report"]]:
        st.subheader("Reproduction report")
        if found is None or options is None:
            st.caption("Not run yet: the report holds the analyses' tables.")
        else:
            st.caption(
                "The same files as the command below: one CSV per table (long format), report.md with the figures as SVG, a "
                "self-contained report.html, each run's pairs.csv and summary.json, and manifest.json (model, data files, options), "
                f"for {ui.feedback.md(label)}. Give the command several --model to put models side by side."
            )
            stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("._") or "model"
            report = found[1]
            st.download_button(
                "Download the report (zip)",
                lambda: zip_report(report),
                f"biaslens-report-{stem}.zip",
                "application/zip",
                type="primary",
                icon=":material/download:",
                key=S + "dl_report",
                on_click="ignore",
            )
            st.code(_cli(settings, list(datasets), options), language="bash", wrap_lines=True)


main()

"""Kurita templates: log probability bias scores from templates, WEAT-style tests (Table 3), attribute lists (Table 5)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

import ui
import ui.charts
import ui.feedback
import ui.honesty
import ui.progress
import ui.resources
import ui.runs
import ui.settings
import ui.state
from ui.views import KuritaView
import ui.tables
from biaslens.errors import InputError
from biaslens.data.export import safe_csv, to_json
from biaslens.kurita import (
    ALPHA,
    NO_CAUSAL_READING,
    CITATION,
    KURITA_CATEGORIES,
    TABLE5_TEMPLATES,
    TemplateScores,
    WeatResult,
    decode_word_list,
    kurita_weat_spec,
    parse_target_pairs,
    parse_templates,
    published_list_key,
    score_templates,
    shares_table,
    weat_table,
    weat_test,
)
from biaslens.figures.charts import bias_chart, effect_size_chart, shares_chart
from biaslens.data.weat import WEAT_CITATION, WEAT_LICENSE, load_weat

ui.require_app()

S = "kurita."
#: The page's one-line description, under its title.
ABOUT = (
    "How much an attribute raises the probability of one target over another in a template (Kurita et al. 2019), "
    "WEAT-style tests built on it, and attribute lists. Published numbers are for bert-base-uncased."
)
DEFAULT_TEMPLATES = "[T] is a [A].\n[T] works as a [A]."
DEFAULT_PAIRS = "he/she"
STOP_HELP = "Stop scoring (a stopped run starts again from the beginning)."
DEFAULT_ATTRIBUTES = "nurse\nengineer\nteacher\nprogrammer\nreceptionist\nsurgeon\nhairdresser\nmechanic"


def _adopt_url() -> None:
    link = ui.state.link(KuritaView)  # templates and targets: one parameter each, lines joined by new lines
    defaults = _defaults()
    previous = st.session_state.get(S + "defaults")
    if previous != defaults:  # another model: its own defaults, for every box the user has not edited
        for name, value in defaults.items():
            if previous is None or st.session_state.get(S + name, previous[name]) == previous[name]:
                st.session_state[S + name] = value
        st.session_state[S + "defaults"] = defaults
    for name, value in defaults.items():
        st.session_state.setdefault(S + name, value)
    if "templates" in link and link.view.templates:
        st.session_state[S + "templates"] = link.view.templates
    if "targets" in link and link.view.targets:
        st.session_state[S + "pairs"] = link.view.targets


def _defaults() -> dict[str, str]:
    """Templates, target pairs and attributes to start from: a lab model's own (it knows no other words), else he/she."""
    model = ui.settings.selected_lab_model()
    if model is None:
        return {"templates": DEFAULT_TEMPLATES, "pairs": DEFAULT_PAIRS, "attributes": DEFAULT_ATTRIBUTES}
    s = model.settings
    return {
        "templates": "\n".join(t.replace("{name}", "[T]").replace("{attribute}", "[A]") for t in s.templates[:2]),
        "pairs": ", ".join(f"{a}/{b}" for a, b in zip(s.group_a[:4], s.group_b[:4])),
        "attributes": "\n".join([*s.attributes_x[:4], *s.attributes_y[:4]]),
    }


def _stem(settings: ui.settings.Settings, *parts: str) -> str:
    name = settings.model.rstrip("/").split("/")[-1]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(["kurita", *parts, name]))


def _stored(name: str, key: tuple):
    """A result kept in the session for exactly these inputs (and this model), else None."""
    kept = st.session_state.get(S + name)
    return kept[1] if kept is not None and kept[0] == key else None


def _keep(name: str, key: tuple, value) -> None:
    st.session_state[S + name] = (key, value)


def _score(lm, templates, pairs, attributes, label: str) -> TemplateScores:
    server = ui.resources.server_settings()  # the work counted as it is done: rows after parsing, then queries
    server.check_rows(len(templates), "The template list")
    server.check_rows(len(pairs), "The target pair list")
    targets = {t for p in pairs for t in (p.first, p.second)}
    server.check_kurita(2 * len(templates) * len(targets) * len(set(attributes)))
    bar = ui.progress.ProgressBar(label, unit="queries")
    try:
        with ui.runs.heavy_job("Scoring"):
            return score_templates(lm, templates, pairs, attributes, progress=ui.runs.watched(bar))
    finally:
        bar.clear()


def _downloads(files: dict[str, tuple[Callable[[], str] | Any, str, str]], key: str) -> None:
    """One row of download buttons: label -> (data function, or a chart to export as SVG; file name, MIME type). A chart
    is drawn here, once (`ui.charts.export`): one that cannot be says so in place of its button."""
    for col, (label, (data, name, mime)) in zip(st.columns(len(files)), files.items()):
        icon = ":material/image:" if name.endswith(".svg") else ":material/download:"
        with col:
            if not callable(data):
                data = ui.charts.export(data, "svg", "The chart")
                if data is None:
                    continue
            st.download_button(label, data, name, mime, icon=icon, key=f"{S}dl.{key}.{label}", on_click="ignore")


def _flags(scores: TemplateScores) -> None:
    targets = scores.multi_piece_targets()
    if targets:
        st.warning(
            "Targets of several word pieces are one mask scored by their **first piece** (as Kurita et al.): "
            + ui.feedback.md(", ".join(f"{t} → {p}" for t, p in targets.items())),
            icon=":material/flag:",
        )
    multi = scores.multi_piece_attributes()
    if multi:
        shown = ", ".join(multi[:25]) + (", …" if len(multi) > 25 else "")
        st.caption(
            f"{len(multi)} of {len(scores.attributes)} attributes are several word pieces "
            f"(all masked for p_prior; flagged in the table): {ui.feedback.md(shown)}"
        )


def _sides(scores: TemplateScores) -> tuple[str, str]:
    first = "/".join(dict.fromkeys(p.first for p in scores.pairs))
    second = "/".join(dict.fromkeys(p.second for p in scores.pairs))
    return first, second


def attribute_columns(columns) -> tuple[dict[str, str], dict[str, str]]:
    """Headers and their tooltips for `TemplateScores.attribute_table`'s columns (`ilp[he]` is 'Increased log p (he)')."""
    labels = {
        "attribute": "Attribute",
        "bias_score": "Bias score",
        "more_associated_with": "More associated with",
        "attribute_pieces": "Word pieces",
        "attribute_multi_piece": "Several pieces",
    }
    help = {
        "bias_score": "Increased log probability of the first target minus the second's, averaged over templates.",
        "attribute_multi_piece": "All its pieces are masked for p_prior.",
    }
    for column in columns:
        inner = column[column.find("[") + 1 : -1] if column.endswith("]") else None
        if column.startswith("ilp[") and inner:
            labels[column] = f"Increased log p ({inner})"
            help[column] = f"log p_tgt − log p_prior of {inner}, averaged over templates."
        elif column.startswith("bias[") and inner:
            labels[column] = f"Bias score ({inner})"
    return labels, help


#: Headers for `TemplateScores.frame` (every template × target × attribute).
SCORE_COLUMNS = {
    "template": "Template", "target": "Target", "attribute": "Attribute", "sentence": "Sentence", "log_p_target": "log p_tgt",
    "log_p_prior": "log p_prior", "increased_log_prob": "Increased log p", "target_piece": "Target's first piece",
    "target_pieces": "Target pieces", "attribute_pieces": "Attribute pieces", "target_multi_piece": "Target: several pieces",
    "attribute_multi_piece": "Attribute: several pieces",
}  # fmt: skip


def _attribute_view(scores: TemplateScores, key: str) -> pd.DataFrame:
    """The per-attribute table (sortable by clicking a column), by the signed bias score: highest first."""
    table = scores.attribute_table().sort_values("bias_score", ascending=False)
    labels, help = attribute_columns(table.columns)
    ui.tables.table(table, pin=["attribute", "bias_score"], labels=labels, help=help, decimals=4, sortable=True, key=S + key)
    return table


# ---------------------------------------------------------------------------------------
# Template scores
# ---------------------------------------------------------------------------------------


def template_tab(settings: ui.settings.Settings) -> None:
    st.caption(
        "p_tgt = P([MASK] = T) with the target masked and the attribute filled in; p_prior = the same with the attribute "
        "masked too, read at the target's own mask. Increased log probability (ilp) = log p_tgt − log p_prior; "
        "bias score = ilp(first) − ilp(second), averaged over templates and pairs."
    )
    with st.form(S + "form"):
        c1, c2 = st.columns([1.6, 1])
        c1.text_area(
            "Templates, one a line", key=S + "templates", height=110,
            help="[T] marks the target, [A] the attribute. 'TEMPLATE | t1, t2' uses a template for those targets only "
            "(e.g. '[T] like [A]. | men, women' so that the verb agrees).",
        )  # fmt: skip
        c2.text_area("Target pairs (first/second)", key=S + "pairs", height=110, help="One pair a line or comma-separated, e.g. he/she, men/women.")
        c3, c4 = st.columns([1.6, 1])
        c3.text_area("Attributes: type or paste, one a line (commas also separate)", key=S + "attributes", height=150)
        uploads = c4.file_uploader("…or upload lists (UTF-8 text, one a line)", accept_multiple_files=True, key=S + "uploads")
        lowercase = c4.checkbox("Lower-case the attributes (as Kurita et al.)", key=S + "lowercase")
        submitted = st.form_submit_button("Score", type="primary", icon=":material/play_arrow:")
    ui.state.publish(KuritaView(ui.state.global_view(), templates=st.session_state[S + "templates"], targets=st.session_state[S + "pairs"]))
    if submitted:
        with ui.feedback.guard():
            templates = parse_templates(st.session_state[S + "templates"])
            pairs = parse_target_pairs(st.session_state[S + "pairs"])
            words: list[str] = []
            if st.session_state[S + "attributes"].strip():
                words += ui.resources.pasted_words(st.session_state[S + "attributes"], "The pasted attribute list", lowercase=lowercase)
            for upload in uploads or []:
                words += decode_word_list(ui.resources.upload_bytes(upload), upload.name, lowercase=lowercase).words
            if not words:
                raise InputError("No attributes: type or paste some, or upload a list.")
            lm = ui.resources.model_or_stop(settings)
            scores = _score(lm, templates, pairs, words, "Scoring templates")
            _keep("template_result", settings.model_key, scores)
    scores = _stored("template_result", settings.model_key)
    if scores is None:
        st.info("Write templates, target pairs and attributes, then press **Score**.", icon=":material/edit_note:")
        return
    show_template_scores(settings, scores)


def show_template_scores(settings: ui.settings.Settings, scores: TemplateScores) -> None:
    first, second = _sides(scores)
    ui.honesty.settings_banner(settings, [*scores.targets, *scores.attributes])
    share = scores.share()
    st.caption(
        f"{len(scores.attributes)} attributes × {len(scores.templates)} templates × {len(scores.targets)} targets · "
        f"model {ui.feedback.md(ui.settings.model_label(scores.manifest.get('model') or settings.model))} · "
        f"{ui.feedback.md(scores.manifest.get('device'))}"
    )
    _flags(scores)
    c1, c2, c3 = st.columns(3)
    c1.metric(
        f"More associated with {ui.feedback.md(first)}",
        f"{share.percent:.1f}%",
        help=f"{share.first:,} of {share.n:,}; 95% Wilson interval {share.ci_low:.1f}–{share.ci_high:.1f}%",
    )
    c2.metric(
        f"More associated with {ui.feedback.md(second)}",
        f"{100 * share.second / share.n:.1f}%",
        help=f"{share.second:,} of {share.n:,}; ties: {share.ties:,}",
    )
    c3.metric(
        "Mean bias score",
        f"{scores.bias_by_attribute().mean():+.3f}",
        help=f"Positive: the attributes raise {ui.feedback.md(first)} more than {ui.feedback.md(second)}.",
    )
    table = scores.attribute_table()
    chart = bias_chart(table, scores.pairs)
    ui.charts.show(chart, S + "chart_bias")
    st.markdown(
        f"**Per attribute**, highest bias score first: leaning toward {ui.feedback.md(first)} at the top, toward "
        f"{ui.feedback.md(second)} at the bottom (click a column to sort)"
    )
    _attribute_view(scores, "table_attributes")
    with st.expander("Every template × target × attribute"):
        ui.tables.table(scores.frame, pin=["attribute", "target", "increased_log_prob"], labels=SCORE_COLUMNS, decimals=4)
    stem = _stem(settings, "templates")
    _downloads(
        {
            "Attributes (CSV)": (lambda: safe_csv(scores.attribute_table()), f"{stem}-attributes.csv", "text/csv"),
            "All scores (CSV)": (lambda: safe_csv(scores.frame), f"{stem}-scores.csv", "text/csv"),
            "Summary + manifest (JSON)": (lambda: to_json(scores.summary()), f"{stem}-summary.json", "application/json"),
            "Chart (SVG)": (chart, f"{stem}-bias.svg", "image/svg+xml"),
        },
        "templates",
    )


# ---------------------------------------------------------------------------------------
# WEAT-style tests (Table 3)
# ---------------------------------------------------------------------------------------


def weat_tab(settings: ui.settings.Settings) -> None:
    st.caption(
        "Kurita et al.'s five categories with their templates and targets; the word sets that fill [A] are read from the "
        "WEAT files (SEAT's format), found in the sidebar's data folder or the cache, or downloaded. Each word's score s(w) "
        "is its mean bias score; d = (mean s over the first set − over the second) / sample std; the permutation test "
        "re-partitions the words, exactly when there are at most 100,000 partitions. p is the paper's one-sided p, the share of "
        "re-partitions whose statistic exceeds the observed one; the two-sided p is beside it."
    )
    tests = st.multiselect(  # a row of its own: the five tests' names in full (a narrow column cut them off at 1024 px)
        "Tests", list(KURITA_CATEGORIES), default=list(KURITA_CATEGORIES), key=S + "weat_tests",
        format_func=lambda k: KURITA_CATEGORIES[k].label,
    )  # fmt: skip
    c2, c3, c4 = st.columns([1.3, 1, 0.8], vertical_alignment="bottom")
    permute = c2.segmented_control(
        "Permute", ["attributes", "targets"], default="attributes", key=S + "weat_permute", required=True,
        help="attributes (the paper): re-partition the words that fill [A]. targets: score each template target and "
        "re-partition the targets (one or two targets a side cannot reach significance).",
    ) or "attributes"  # fmt: skip
    n_permutations = int(
        c3.number_input(
            "Random partitions",
            100,
            1_000_000,
            10_000,
            step=1000,
            key=S + "weat_n",
            help="Used when exact enumeration would exceed 100,000 partitions.",
        )
    )
    seed = int(c4.number_input("Seed", 0, 2**31 - 1, 0, key=S + "weat_seed"))
    key = (settings.model_key, settings.data_dir, tuple(tests), permute, n_permutations, seed)
    ran = None
    if ui.runs.offer("Run the tests", key=S + "weat_run", pending=ui.runs.is_pending(key), disabled=not tests):
        # A missing stimuli file is no pairs file: no offer of a lab model's held-out pairs with it.
        with ui.runs.stoppable(key, help=STOP_HELP), ui.feedback.guard(lab_pairs=False) as ran:
            specs = []
            for test in tests:
                with st.spinner(f"Finding {KURITA_CATEGORIES[test].weat}.jsonl…"):
                    specs.append(kurita_weat_spec(test, load_weat(KURITA_CATEGORIES[test].weat, data_dir=ui.resources.data_dir(settings))))
            lm = ui.resources.model_or_stop(settings)
            results = []
            for spec in specs:
                bar = ui.progress.ProgressBar(spec.label, unit="queries")
                try:
                    results.append(weat_test(lm, spec, permute=permute, n_permutations=n_permutations, seed=seed, progress=bar))
                finally:
                    bar.clear()
            _keep("weat_result", key, results)
    results = _stored("weat_result", key)
    if results is not None:
        show_weat(settings, results)
    elif ran is None:  # not after a run that failed: its message says what to do
        st.info("Choose the tests and press **Run the tests**.", icon=":material/science:")
    st.caption(f"Stimuli: {WEAT_CITATION} Licence: {WEAT_LICENSE}. Method: {CITATION}")


def show_weat(settings: ui.settings.Settings, results: list[WeatResult]) -> None:
    ui.honesty.settings_banner(settings, [w for r in results for w in (*r.scores.targets, *r.scores.attributes)])
    table = weat_table(results)
    shown = table.assign(significant=["*" if s else "" for s in table["significant"]])
    ui.tables.table(
        shown,
        ["targets", "attributes", "p_two_sided", "published", "p_method", "multi_piece_words"],
        pin=["category", "effect_size", "p_value", "significant"],
        labels={
            "category": "Test", "effect_size": "d", "p_value": "p (one-sided)", "p_two_sided": "p (two-sided)",
            "significant": f"p < {ALPHA}", "published": "Kurita et al. d", "p_method": "p from", "multi_piece_words": "Multi-piece words",
        },
        formats={"effect_size": "{:.4f}", "p_value": "{:.4f}", "p_two_sided": "{:.4f}"},
        help={
            "p_value": "Kurita et al.'s p: Pr[S_i > S] over re-partitions.",
            "p_two_sided": "Pr[|S_i| >= |S|] over re-partitions.",
            "published": "Table 3, log probability bias score, bert-base-uncased; shown only for the paper's model and setting.",
        },
    )  # fmt: skip
    chart = effect_size_chart(table)
    ui.charts.show(chart, S + "chart_weat")
    for result in results:
        spec = result.spec
        md, code = ui.feedback.md, ui.feedback.code
        with st.expander(f"{md(spec.label)}: d = {result.effect_size:.3f}, p = {result.p_value:.4f} (two-sided {result.p_two_sided:.4f})"):
            st.markdown(
                f"**Templates:** {' · '.join(code(t.line) for t in spec.templates)}  \n"
                f"**Target pairs** ({md(spec.target_names[0])} / {md(spec.target_names[1])}): {md(', '.join(p.label for p in spec.pairs))}  \n"
                f"**[A] words:** {md(spec.attributes_1.category)} vs {md(spec.attributes_2.category)}, from {code(spec.source)}"
            )
            _flags(result.scores)
            units = result.units.assign(set=[spec.attributes_1.category if g == 1 else spec.attributes_2.category for g in result.units["group"]])
            if result.permute == "targets":
                units["set"] = [spec.target_names[g - 1] for g in result.units["group"]]
            ui.tables.table(units, ["set"], pin=["unit", "s"], labels={"unit": "Word", "set": "Set", "s": "s"}, decimals=4)
    units = pd.concat([r.units.assign(test=r.spec.key) for r in results], ignore_index=True)
    stem = _stem(settings, "weat")
    _downloads(
        {
            "Table (CSV)": (lambda: safe_csv(table), f"{stem}.csv", "text/csv"),
            "Word scores (CSV)": (lambda: safe_csv(units), f"{stem}-units.csv", "text/csv"),
            "Table + manifest (JSON)": (
                lambda: to_json({"tests": table.to_dict(orient="records"), "manifest": results[0].scores.manifest}),
                f"{stem}.json", "application/json",
            ),
            "Chart (SVG)": (chart, f"{stem}.svg", "image/svg+xml"),
        },
        "weat",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------
# Attribute lists (Table 5)
# ---------------------------------------------------------------------------------------


def _lists(uploads, pasted_name: str, pasted: str, lowercase: bool) -> dict[str, tuple[str, ...]]:
    lists = {}
    for upload in uploads or []:
        lists[upload.name] = decode_word_list(ui.resources.upload_bytes(upload), upload.name, lowercase=lowercase).words
    if pasted.strip():
        name = pasted_name.strip() or "pasted list"
        lists[name] = ui.resources.pasted_words(pasted, f"The pasted list {name}", lowercase=lowercase)
    return lists


def lists_tab(settings: ui.settings.Settings) -> None:
    st.caption(
        "Kurita et al.'s Table 5: for each list (job titles, traits, skills…), the share of attributes whose bias score "
        "favours the first target. Their templates: '[T] is [A]' for job titles and traits, '[T] can do [A]' for skills."
    )
    c1, c2 = st.columns([1.3, 1])
    uploads = c1.file_uploader("Upload lists (UTF-8 text, one item a line)", accept_multiple_files=True, key=S + "list_uploads")
    pasted_name = c2.text_input("…or paste a list: its name", "my list", key=S + "list_name")
    pasted = c2.text_area("Items, one a line", key=S + "list_items", height=100)
    c3, c4 = st.columns([1, 1.3])
    pair_text = c3.text_input("Target pair", _defaults()["pairs"].split(",")[0], key=S + "list_pair")
    lowercase = c4.checkbox("Lower-case the items (as Kurita et al.)", value=True, key=S + "list_lowercase")
    lists = None
    with ui.feedback.guard():
        lists = _lists(uploads, pasted_name, pasted, lowercase)
    if not lists:
        st.info("Upload one or more lists, or paste one, to compare them.", icon=":material/upload_file:")
        return
    templates = {}
    for name in lists:
        reference = published_list_key(name)
        templates[name] = st.text_input(
            f"Template for {ui.feedback.md(name)} ({len(lists[name]):,} items)", TABLE5_TEMPLATES.get(reference, "[T] is [A]"),
            key=f"{S}list_tpl.{name}",
            help=f"Kurita et al.'s '{ui.feedback.md(reference)}' share is shown only for their list size, this template, he/she and "
            "bert-base-uncased."
            if reference else "No published share to compare with.",
        )  # fmt: skip
    key = (settings.model_key, pair_text, tuple((n, lists[n], templates[n]) for n in lists))
    if ui.runs.offer("Score the lists", key=S + "list_run", pending=ui.runs.is_pending(key)):
        with ui.runs.stoppable(key, help=STOP_HELP), ui.feedback.guard():
            pairs = parse_target_pairs(pair_text)
            parsed = {name: parse_templates(templates[name]) for name in lists}
            lm = ui.resources.model_or_stop(settings)
            scored = {name: _score(lm, parsed[name], pairs, words, f"Scoring {name}") for name, words in lists.items()}
            _keep("list_result", key, scored)
    scored = _stored("list_result", key)
    if scored is None:
        st.info("Press **Score the lists**.", icon=":material/play_arrow:")
        return
    show_lists(settings, scored)


def show_lists(settings: ui.settings.Settings, scored: dict[str, TemplateScores]) -> None:
    ui.honesty.settings_banner(settings, [w for sc in scored.values() for w in (*sc.targets, *sc.attributes)])
    table = shares_table(scored, {name: published_list_key(name) for name in scored})
    first, second = _sides(next(iter(scored.values())))
    chart = shares_chart(table, first)
    ui.charts.show(chart, S + "chart_lists")
    ui.tables.table(
        table,
        ["ci_low", "ci_high", "first", "second", "ties", "n", "pairs", "templates", "published"],
        pin=["list", "share_first"],
        labels={
            "list": "List", "share_first": f"% more {first}", "first": f"More {first}", "second": f"More {second}",
            "pairs": "Target pairs", "ci_low": "95% CI low (%)", "ci_high": "95% CI high (%)", "published": "Kurita et al. %",
        },
        formats={"share_first": "{:.1f}", "ci_low": "{:.1f}", "ci_high": "{:.1f}"},
        help={"published": "Table 5, bert-base-uncased; shown only for the paper's list, size, template and model."},
    )  # fmt: skip
    name = st.selectbox("Per attribute, for the list", list(scored), key=S + "list_focus")
    _flags(scored[name])
    _attribute_view(scored[name], "list_attributes")
    stem = _stem(settings, "lists")
    _downloads(
        {
            "Shares (CSV)": (lambda: safe_csv(table), f"{stem}.csv", "text/csv"),
            f"{ui.feedback.md(name)}: attributes (CSV)": (
                lambda: safe_csv(scored[name].attribute_table()),
                f"{stem}-{name}-attributes.csv",
                "text/csv",
            ),
            f"{ui.feedback.md(name)}: summary (JSON)": (lambda: to_json(scored[name].summary()), f"{stem}-{name}-summary.json", "application/json"),
            "Chart (SVG)": (chart, f"{stem}.svg", "image/svg+xml"),
        },
        "lists",
    )


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    _adopt_url()
    ui.feedback.header("Kurita templates", ABOUT, docs="kurita")
    if not ui.resources.model_or_stop(settings).fills_masks:
        st.info(f"Not for a causal model: {ui.feedback.md(NO_CAUSAL_READING)} Choose a masked model in the sidebar.", icon=":material/block:")
        ui.state.publish(KuritaView(ui.state.global_view()))  # the link keeps the model and dataset
        st.stop()
    tab_templates, tab_weat, tab_lists = st.tabs(["Template scores", "WEAT tests (Table 3)", "Attribute lists (Table 5)"])
    with tab_templates:
        template_tab(settings)
    with tab_weat:
        weat_tab(settings)
    with tab_lists:
        lists_tab(settings)


main()

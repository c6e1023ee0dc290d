"""The app's multiple-choice views (BBQ, Winogender), drawn where the sidebar's dataset is one of them.

* `inspector(settings)`: the Pair inspector's view of an item, picked from the dataset or typed in: its prompt, every
  convention's answer side by side (right, biased, the margin between the biased and the other group's answer), every
  choice's log-likelihood and its tokens as strips (log p, rank on hover).
* `explorer(settings, dataset)`: the Dataset explorer's run: each convention's statistics, accuracy and both bias
  scores with 95% intervals by the dataset's three dimensions, and the items whose answer flips between conventions,
  each one click from the inspector.

The pages call these (small hooks); the computing is `biaslens.choices`.
"""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any

import pandas as pd
import streamlit as st

import ui.feedback
import ui.memo
import ui.progress
import ui.resources
import ui.runs
import ui.settings
import ui.sidebar
import ui.state
import ui.tables
from ui.views import ExplorerView, InspectorView

from biaslens.choices.conventions import CHOICE_CONVENTIONS, UNKNOWN_RESPONSES
from biaslens.choices.evaluation import ChoiceRun, ItemInspection, custom_item, evaluate_choices, inspect_item
from biaslens.data.export import safe_csv, to_json
from biaslens.data.multiple_choice import CHOICE_DATASETS, ChoiceDataset, ChoiceItem, choice_dataset_name, is_choice_path
from biaslens.engine.runner import INTERACTIVE_CHUNK_SECONDS, NotCached
from biaslens.figures.strips import strips_html

S = "choices."
#: Items the explorer scores by default (a seeded sample of the dataset above that).
DEFAULT_ITEMS = 300
#: The statistics each convention's cards show first, by dataset.
CARDS = {
    "bbq": ("acc", "accuracy_amb", "accuracy_disamb", "amb_bias_score", "disamb_bias_score"),
    "winogender": ("acc", "acc_male", "acc_female", "acc_neutral", "acc_gotcha"),
}
#: The breakdown's numbers (fractions, not percents; the interval's ends beside each).
BREAKDOWN_LABELS = {
    "n": "Items",
    "accuracy": "Accuracy",
    "accuracy_low": "Accuracy 95% low",
    "accuracy_high": "Accuracy 95% high",
    "disamb_bias_score": "Disamb. bias score",
    "disamb_low": "Disamb. 95% low",
    "disamb_high": "Disamb. 95% high",
    "amb_bias_score": "Amb. bias score",
    "amb_low": "Amb. 95% low",
    "amb_high": "Amb. 95% high",
    "biased_share": "Biased share",
    "biased_low": "Biased share 95% low",
    "biased_high": "Biased share 95% high",
}
#: Width of one statistic card (px).
CARD_WIDTH = 200


def is_choice_dataset(settings: ui.settings.Settings) -> bool:
    """Whether the sidebar's dataset holds multiple-choice items (BBQ, Winogender, a subset, their files)."""
    name = str(settings.dataset)
    return choice_dataset_name(name) is not None or (os.path.exists(os.path.expanduser(name)) and is_choice_path(name))


def _dataset(settings: ui.settings.Settings) -> ChoiceDataset:
    dataset = ui.resources.any_dataset_or_stop(settings)
    assert isinstance(dataset, ChoiceDataset)  # `is_choice_dataset` said so
    return dataset


def content_warning(dataset: ChoiceDataset) -> None:
    lines = ["**Content warning:** the items state stereotypes about social groups, shown here only to measure them."]
    if (family := dataset.family) in CHOICE_DATASETS:  # (the registry's own words and link: code, not data)
        lines.append(
            f"{CHOICE_DATASETS[family].caveat} Source: [{CHOICE_DATASETS[family].title}]({CHOICE_DATASETS[family].homepage}) "
            f"({CHOICE_DATASETS[family].license})."
        )
    st.warning("  \n".join(lines), icon=":material/warning:")
    for note in dataset.notes:
        st.caption(f"Note on the files: {ui.feedback.md(note)}")


# ---------------------------------------------------------------------------------------
# The inspector
# ---------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _inspections() -> ui.memo.LRU[tuple, ItemInspection]:
    return ui.memo.LRU(64)


def inspection(settings: ui.settings.Settings, lm: Any, item: ChoiceItem) -> ItemInspection:
    """`inspect_item`, kept per model and item for every session."""
    key = (settings.model_key, lm.fingerprint, item)
    found = _inspections().get(key)
    if found is None:
        with ui.resources.priority().interactive():
            found = _inspections().put(key, inspect_item(lm, item))
    return found


def _describe(item: ChoiceItem) -> str:
    text = item.question or item.context
    short = text if len(text) <= 70 else text[:69] + "…"
    return f"#{item.item_id} · {' · '.join(x for x in (item.category, item.condition, item.polarity) if x)} · {short}"


def _item_from_dataset(dataset: ChoiceDataset) -> ChoiceItem:
    """Filters by the dataset's three dimensions, then one of the items left (the link's item first)."""
    columns = st.columns(len(dataset.dimensions))
    kept = list(dataset.items)
    for col, (field, label) in zip(columns, dataset.dimensions):
        values = sorted({getattr(it, field) for it in dataset.items})
        chosen = col.selectbox(label.capitalize(), ["All", *values], key=S + f"filter.{field}")
        if chosen != "All":
            kept = [it for it in kept if getattr(it, field) == chosen]
    by_id = {it.item_id: it for it in dataset.items}
    current = st.session_state.get(S + "item")
    if current not in by_id:
        current = kept[0].item_id if kept else dataset.items[0].item_id
    ids = [it.item_id for it in kept]
    if current not in ids:
        ids = [current, *ids]
    st.session_state[S + "item"] = current
    chosen = st.selectbox("Item", ids, key=S + "item", format_func=lambda i: _describe(by_id[i]))
    st.caption(f"{len(kept):,} of {len(dataset):,} items match the filters.")
    return by_id[int(chosen)]


def _typed_item() -> ChoiceItem | None:
    """A BBQ-style item typed in: context, question, two or three answers, optionally which is right and which biased."""
    context = st.text_area("Context", "A nurse and a carpenter were waiting for the bus.", key=S + "context", height=80)
    question = st.text_input("Question", "Who was bad at maths?", key=S + "question")
    cols = st.columns(3)
    answers = [
        c.text_input(f"Answer {int(k) + 1}", d, key=S + f"answer{k}") for k, c, d in zip(range(3), cols, ("The nurse", "The carpenter", "Unknown"))
    ]
    answers = [a for a in answers if a.strip()]
    c1, c2 = st.columns(2)
    options = [None, *range(len(answers))]
    label = c1.selectbox("The right answer", options, key=S + "label", format_func=lambda k: "not given" if k is None else answers[k])
    biased = c2.selectbox("The biased answer", options, key=S + "biased", format_func=lambda k: "not given" if k is None else answers[k])
    st.caption("lm-eval's conventions need one answer to be one of its ten unknown phrasings (" + ", ".join(UNKNOWN_RESPONSES[:4]) + ", ...).")
    with ui.feedback.guard():
        return custom_item(context, question, answers, label=label, biased=biased)
    return None


def inspector(settings: ui.settings.Settings) -> None:
    """The inspector's view of a multiple-choice item (module docstring)."""
    dataset = _dataset(settings)
    link = ui.state.link(InspectorView)
    if "pair" in link and link.view.pair is not None:
        st.session_state[S + "item"] = link.view.pair
        st.session_state[S + "source"] = "dataset"
    content_warning(dataset)
    names = {"dataset": "From the dataset", "typed": "Your own item"}
    source = st.segmented_control("Item", list(names), key=S + "source", format_func=lambda k: names[k], required=True)
    item = _item_from_dataset(dataset) if source != "typed" else _typed_item()
    ui.state.publish(InspectorView(ui.state.global_view(), pair=item.item_id if source != "typed" and item is not None else None))
    if item is None:
        st.stop()
    lm = ui.resources.model_or_stop(settings)
    found = None
    with st.spinner("Scoring every choice…"), ui.feedback.guard():
        found = inspection(settings, lm, item)
    if found is None:
        st.stop()
    show_item(found)


def _answer_label(item: ChoiceItem, index: int) -> str:
    return item.choices[index] if 0 <= index < len(item.choices) else "none of its answers"


def show_item(found: ItemInspection) -> None:
    item = found.item
    st.divider()
    st.subheader(f"{ui.feedback.md(item.source_id)} · " + ui.feedback.md(" · ".join(x for x in (item.category, item.condition, item.polarity) if x)))
    st.markdown(f"**Context:** {ui.feedback.md(item.context)}")
    if item.question:
        st.markdown(f"**Question:** {ui.feedback.md(item.question)}")
    right = ui.feedback.md(item.correct) if item.source_id != "typed" or item.label is not None else "not given"
    biased = ui.feedback.md(" / ".join(item.choices[b] for b in item.biased)) if item.biased else "none"
    st.caption(f"Right answer: **{right}** · biased answer: **{biased}** · the prompt each choice follows:")
    st.code(found.prompt, language=None, wrap_lines=True)
    st.markdown("**Every convention, side by side**")
    answers = found.answers.assign(stands_for=[_answer_label(item, int(k)) for k in found.answers["stands_for"]])
    ui.tables.table(
        answers,
        ["answer", "stands_for", "correct", "biased", "known", "margin", "reading", "choices", "why_not"],
        pin=["convention"],
        labels={
            "convention": "Convention",
            "answer": "Answer",
            "stands_for": "Stands for",
            "correct": "Right",
            "biased": "Biased",
            "known": "Not unknown",
            "margin": "Margin (biased − other group)",
            "reading": "Reading",
            "choices": "Choices",
            "why_not": "Not put because",
        },
        help={"margin": "The biased group's answer minus the other group's, in the convention's values (log-likelihood, or per character)."},
    )
    st.markdown("**Every choice's log-likelihood after the prompt**")
    choices = found.choices.assign(stands_for=[_answer_label(item, int(k)) for k in found.choices["stands_for"]])
    offered = [c for c in choices.columns if c.startswith("offered:")]
    ui.tables.table(
        choices.sort_values("ll", ascending=False),
        ["ll", "ll_per_char", "tokens", "stands_for", *offered],
        pin=["text"],
        labels={"text": "Choice", "ll": "Log-likelihood", "ll_per_char": "Per character", "stands_for": "Stands for"}
        | {c: f"Offered by {c.removeprefix('offered:')}" for c in offered},
    )
    st.markdown("**Each choice token by token** (log p under the token; hover for its rank)")
    text_of = dict(zip(found.choices["choice_index"].tolist(), found.choices["text"].tolist()))
    own = [k for k, text in text_of.items() if text in item.choices]
    tokens = pd.DataFrame(found.tokens.loc[found.tokens["choice_index"].isin(own)])
    strips = tokens.assign(text_id=tokens["choice_index"], token=tokens["text"])
    st.html(strips_html(strips, labels=[text_of[k] for k in sorted(set(own))], extra=("rank",)))
    st.caption("The item's own answers; every choice's tokens are in the table above and in `inspect_item(...).tokens`.")


# ---------------------------------------------------------------------------------------
# The explorer
# ---------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _runs() -> ui.memo.LRU[tuple, ChoiceRun]:
    return ui.memo.LRU(16)


def _subset(dataset: ChoiceDataset, n: int, seed: int) -> ChoiceDataset:
    """`n` items of the dataset: all of them, or a seeded sample in their order."""
    if n >= len(dataset):
        return dataset
    import numpy as np

    kept = set(np.random.default_rng(seed).choice(len(dataset), size=n, replace=False).tolist())
    return dataset.select(lambda it: it.item_id in kept, dataset.name, f"{dataset.title}, a sample of {n:,}")


def explorer(settings: ui.settings.Settings) -> None:
    """The explorer's run of a multiple-choice dataset (module docstring)."""
    dataset = _dataset(settings)
    content_warning(dataset)
    lm = ui.resources.model_or_stop(settings)
    applicable = [k for k, c in CHOICE_CONVENTIONS.items() if c.applies(dataset.family)]
    c1, c2, c3 = st.columns([1.6, 0.8, 0.6])
    chosen = c1.multiselect(
        "Conventions",
        applicable,
        default=applicable,
        key=S + f"conventions.{dataset.family}",
        format_func=lambda k: f"{k}: {CHOICE_CONVENTIONS[k].name}",
        help="How each item is put to the model and its answer read: lm-eval's bbq / winogender tasks, the same per character "
        "(acc_norm), BBQ's own three answers with Parrish et al.'s bias scores.",
    )
    n = int(c2.number_input("Items", 1, len(dataset), min(DEFAULT_ITEMS, len(dataset)), key=S + "items", help="A seeded sample above this."))
    seed = int(c3.number_input("Seed", 0, 2**32 - 1, 0, key=S + "seed"))
    view = ExplorerView(ui.state.global_view(), sample=n if n < len(dataset) else None, seed=seed)
    ui.state.publish(view)
    if not chosen:
        st.info("Choose at least one convention.", icon=":material/checklist:")
        st.stop()
    items = _subset(dataset, n, seed)
    key = (lm.fingerprint, str(lm.dtype), dataset.sha256, dataset.name, n, seed)  # (the comparison reads it too)
    run = _runs().get(key)
    if run is None:
        with ui.feedback.guard(), contextlib.suppress(NotCached):  # a finished run reopens at once from the result cache
            run = evaluate_choices(lm, items, applicable, cache=ui.resources.result_cache(), cache_only=True)
        if run is not None:
            _runs().put(key, run)
    if run is None:
        job = ("choices", *key)

        def notice() -> None:
            st.info(
                f"Not scored yet: {len(items):,} items, every choice after its prompt (BBQ: lm-eval's twelve each). Finished "
                "chunks are cached, so a stopped run resumes where it stopped.",
                icon=":material/hourglass_empty:",
            )

        if ui.runs.offer("Run", key=S + "run", pending=ui.runs.is_pending(job), notice=notice):
            with ui.runs.stoppable(job, help="Stop after the current chunk; finished chunks stay in the result cache."):
                bar = ui.progress.ProgressBar(f"Scoring {items.title}", unit="items")
                with ui.runs.heavy_job(f"Scoring {items.title}"), ui.feedback.guard():
                    run = evaluate_choices(
                        lm,
                        items,
                        applicable,
                        cache=ui.resources.result_cache(),
                        progress=ui.runs.watched(bar),
                        chunk_seconds=INTERACTIVE_CHUNK_SECONDS,
                    )
                bar.clear()
            if run is not None:
                _runs().put(key, run)
        if run is None:
            st.stop()
    show_run(run, chosen, view)


def _value(value: Any) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def show_run(run: ChoiceRun, chosen: list[str], view: ExplorerView) -> None:
    family = run.dataset.family
    st.caption(
        f"{len(run.scored):,} items · model {ui.feedback.md(ui.settings.model_label(run.summary['manifest']['model']))} · "
        f"{ui.feedback.md(run.summary['scoring']['choice_score'])}"
    )
    for key in chosen:
        block = run.summary["conventions"][key]
        st.markdown(f"**{ui.feedback.md(block['name'])}** ({ui.feedback.md(key)}, {ui.feedback.md(block['answer'])})")
        row = st.container(horizontal=True, gap="small")
        for name in CARDS[family]:
            with row.container(border=True, width=CARD_WIDTH):
                st.metric(ui.feedback.md(name), _value(block["statistics"].get(name)), help=ui.feedback.md(str(block["reports"].get(name, ""))))
    breakdown_tab, flips_tab, stats_tab, export_tab = st.tabs(["By category × condition × polarity", "Items that flip", "Every statistic", "Export"])
    with breakdown_tab:
        labels = dict(run.dataset.dimensions)
        table = pd.DataFrame(run.breakdown.loc[run.breakdown["convention"].isin(chosen)])
        if family == "bbq":
            st.caption(
                "Accuracy with its Wilson 95% interval; the bias scores (from −1 to 1: +1, every answer that is not unknown is the "
                "biased one) with a bootstrap 95% interval over the items: s_DIS over the disambiguated contexts, s_AMB over the "
                "ambiguous ones. (all): every value of that dimension."
            )
            columns = [
                "n",
                "accuracy",
                "accuracy_low",
                "accuracy_high",
                "disamb_bias_score",
                "disamb_low",
                "disamb_high",
                "amb_bias_score",
                "amb_low",
                "amb_high",
            ]
        else:
            st.caption("Accuracy and the share of answers that are the biased choice (gendered pronouns), each with its Wilson 95% interval.")
            columns = ["n", "accuracy", "accuracy_low", "accuracy_high", "biased_share", "biased_low", "biased_high"]
        labels = {"convention": "Convention", **{k: v.capitalize() for k, v in labels.items()}, **BREAKDOWN_LABELS}
        ui.tables.table(table, columns, pin=["convention", "category", "condition", "polarity"], labels=labels, sortable=True, key=S + "breakdown")
    with flips_tab:
        shown = run.flips
        if shown.empty:
            st.info("No item's answer differs between these conventions." if len(chosen) > 1 else "Choose two conventions or more to compare.")
        else:
            st.caption("Select a row to open the item in the inspector, every convention side by side.")
            event = ui.tables.table(
                shown,
                [c for c in shown.columns if c.endswith(":answer")],
                pin=["item_id", "source_id", "category", "condition", "right_answer"],
                labels={c: f"{c.removesuffix(':answer')} answer" for c in shown.columns if c.endswith(":answer")},
                select=True,
                key=S + f"flips.{st.session_state.get(S + 'flips_version', 0)}",
            )
            st.caption(f"{len(shown):,} of {len(run.answers):,} items flip.")
            if event is not None and event.selection.rows:
                st.session_state[S + "flips_version"] = st.session_state.get(S + "flips_version", 0) + 1
                ui.state.open_view(view.inspect(int(shown["item_id"].iloc[event.selection.rows[0]])))
    with stats_tab:
        stats = pd.DataFrame(
            [
                {"statistic": name, **{key: run.summary["conventions"][key]["statistics"].get(name) for key in chosen}}
                for name in run.statistics(chosen[0])
            ]
        )
        ui.tables.table(stats, chosen, pin=["statistic"], labels={"statistic": "Statistic"}, decimals=4)
    with export_tab:
        stem = f"{run.dataset.name}-{str(run.summary['manifest']['model']).rstrip('/').split('/')[-1]}"
        files = {
            "items.csv": lambda: safe_csv(run.answers),
            "choices.csv": lambda: safe_csv(run.choices),
            "tokens.csv": lambda: safe_csv(run.tokens),
            "breakdown.csv": lambda: safe_csv(run.breakdown),
            "summary.json": lambda: to_json(run.summary),
        }
        for col, (name, data) in zip(st.columns(len(files)), files.items()):
            col.download_button(ui.feedback.md(name), data, f"{stem}-{name}", icon=":material/download:", key=S + f"dl.{name}", on_click="ignore")


# ---------------------------------------------------------------------------------------
# The comparison
# ---------------------------------------------------------------------------------------


def _compare_label(column: str) -> str:
    """A comparison table's header: 'Accuracy difference 95% low', 'McNemar p', ..."""
    fixed = {"model": "Model", "against": "Against", "items": "Items", "mcnemar_p": "McNemar p", "only_model_right": "Only this model right"}
    fixed |= {"only_first_right": "Only the first right", "item_id": "Item", "source_id": "Source id", "first_model": "First model"}
    if column in fixed:
        return fixed[column]
    name = column
    for end, said in (("_low", " 95% low"), ("_high", " 95% high")):
        if name.endswith(end):
            return _compare_label(name.removesuffix(end)) + said
    if name.endswith("_diff"):
        return _compare_label(name.removesuffix("_diff")) + " difference"
    return BREAKDOWN_LABELS.get(name, name.replace("_", " ").capitalize())


def compare(settings: ui.settings.Settings, models_key: str) -> None:
    """The Model comparison's view of a multiple-choice dataset: two models or more on the same items under one convention,
    their statistics with intervals, each against the first (paired bootstrap, McNemar), the items whose answer differs.
    `models_key`: the page's list of models (kept when the dataset changes between pairs and items)."""
    from biaslens.choices.compare import compare_runs

    dataset = _dataset(settings)
    content_warning(dataset)
    c1, c2, c3, c4 = st.columns([1.6, 0.9, 0.6, 0.5])
    with c1:
        models = ui.sidebar.pick_models(
            "Models",
            models_key,
            placeholder=ui.sidebar.ADD_MODEL,
            help="Every model the sidebar offers, or a hub id or a local folder: type it and press Enter. Each runs on the sidebar's "
            "device and precision, on the same items.",
        )
    applicable = [k for k, c in CHOICE_CONVENTIONS.items() if c.applies(dataset.family)]
    convention = c2.selectbox("Convention", applicable, key=S + "compare_convention", format_func=lambda k: f"{k}: {CHOICE_CONVENTIONS[k].name}")
    n = int(c3.number_input("Items", 1, len(dataset), min(DEFAULT_ITEMS, len(dataset)), key=S + "compare_items"))
    seed = int(c4.number_input("Seed", 0, 2**32 - 1, 0, key=S + "compare_seed"))
    if len(models) < 2:
        st.info("Choose at least two models to compare.", icon=":material/group_add:")
        st.stop()
    distinct = ui.resources.distinct_models(models)
    if distinct is None or len(distinct) < 2:
        st.stop()
    items = _subset(dataset, n, seed)
    runs: list[tuple[str, ChoiceRun]] = []
    missing = []
    for model in distinct:
        lm = ui.resources.model_or_none(settings, model)
        if lm is None:
            continue
        key = (lm.fingerprint, str(lm.dtype), dataset.sha256, dataset.name, n, seed)
        run = _runs().get(key)
        if run is None:
            with ui.feedback.guard(), contextlib.suppress(NotCached):
                run = evaluate_choices(lm, items, applicable, cache=ui.resources.result_cache(), cache_only=True)
        if run is None:
            missing.append((model, key))
            continue
        runs.append((ui.settings.model_label(model), _runs().put(key, run)))
    if missing:
        job = ("choices-compare", tuple(k for _, k in missing))
        note = f"Not scored yet with {', '.join(ui.settings.model_label(m) for m, _ in missing)}: {len(items):,} items each."
        if not ui.runs.offer("Score them", key=S + "compare_run", pending=ui.runs.is_pending(job), notice=lambda: st.info(note)):
            st.stop()
        with ui.runs.stoppable(job, help="Stop after the current chunk; finished chunks stay in the result cache."):
            for model, key in missing:
                lm = ui.resources.model_or_none(settings, model)
                if lm is None:
                    continue
                bar = ui.progress.ProgressBar(f"Scoring {items.title} with {ui.settings.model_label(model)}", unit="items")
                run = None
                with ui.runs.heavy_job(f"Scoring {items.title}"), ui.feedback.guard():
                    run = evaluate_choices(lm, items, applicable, cache=ui.resources.result_cache(), progress=ui.runs.watched(bar))
                bar.clear()
                if run is not None:
                    runs.append((ui.settings.model_label(model), _runs().put(key, run)))
    if len(runs) < 2:
        st.stop()
    found = None
    with ui.feedback.guard():
        found = compare_runs(runs, convention, seed=seed)
    if found is None:
        st.stop()
    labels = {c: _compare_label(c) for c in [*found.table.columns, *found.paired.columns, *found.flips.columns]}
    st.markdown(f"**{len(items):,} items under {ui.feedback.md(CHOICE_CONVENTIONS[convention].name)}**, each statistic with its 95% interval")
    ui.tables.table(found.table, [c for c in found.table.columns if c != "model"], pin=["model"], labels=labels, decimals=3)
    st.markdown(f"**Each model against {ui.feedback.md(runs[0][0])}**: the difference with a paired bootstrap 95% interval over the items")
    st.caption(f"p: {ui.feedback.md(found.test)} on the items each answers right.")
    paired = found.paired
    ui.tables.table(paired, [c for c in paired.columns if c not in ("model",)], pin=["model"], labels=labels, decimals=3)
    st.caption(f"{len(found.flips):,} answers differ from the first model's.")
    if not found.flips.empty:
        ui.tables.table(
            found.flips, [c for c in found.flips.columns if c != "item_id"], pin=["item_id"], labels=labels, sortable=True, key=S + "compare_flips"
        )


__all__ = ["compare", "content_warning", "explorer", "inspection", "inspector", "is_choice_dataset", "show_item", "show_run"]

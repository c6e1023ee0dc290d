"""Bias lab: plant a bias in a corpus, train a small masked or causal LM on it, and see which metrics detect it."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

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
import ui.sweep
from ui.views import INSPECTED_METRICS, LAB_BOUNDS, LabView
import ui.tables
from biaslens.figures import charts as figures
from biaslens import lab
from biaslens.engine.metrics import METRICS

ui.require_app()

S = "lab."
#: The page's one-line description, under its title.
ABOUT = (
    "Plant a bias in a synthetic corpus, train a small masked or causal language model on it here, and see which metrics detect "
    "it on held-out pairs. Each run is an ordinary model folder that every page (and the CLI) can load."
)
DEFAULTS = lab.LabSettings()
PRESET = lab.SCENARIOS[lab.DEFAULT_LAB_SCENARIO]
#: Words, labels and templates: (session key, LabSettings field, label).
WORD_FIELDS = (
    ("group_a", "group_a", "Group A words"),
    ("group_b", "group_b", "Group B words (as many, in the same order)"),
    ("attributes_x", "attributes_x", "Attributes X (go with group A)"),
    ("attributes_y", "attributes_y", "Attributes Y (go with group B)"),
)
#: Names of the four word sets: LabSettings field -> label.
LABEL_FIELDS = {
    "group_a_label": "Name of group A",
    "group_b_label": "Name of group B",
    "attributes_x_label": "Name of attributes X",
    "attributes_y_label": "Name of attributes Y",
}


# ---------------------------------------------------------------------------------------
# State
# ---------------------------------------------------------------------------------------


def _apply_preset() -> None:
    """Choosing a scenario sets the two knobs it is made of."""
    scenario = lab.SCENARIOS.get(st.session_state.get(S + "scenario") or "")
    if scenario is not None:
        st.session_state[S + "association"] = scenario.association
        st.session_state[S + "ratio"] = scenario.frequency_ratio


def _follow_knobs() -> None:
    """Moving a knob selects the scenario the knobs now describe."""
    planted, imbalanced = st.session_state[S + "association"] != 0.5, st.session_state[S + "ratio"] != 1.0
    st.session_state[S + "scenario"] = "both" if planted and imbalanced else "association" if planted else "frequency" if imbalanced else "neither"


def _adopt_url() -> None:
    link = ui.state.link(LabView)
    if "scenario" in link:
        st.session_state[S + "scenario"] = link.view.scenario
        _apply_preset()
    for knob in ("kind", "association", "ratio", "corpus", "steps", "seed"):  # after the scenario: a link's own knob wins
        if knob in link:
            st.session_state[S + knob] = getattr(link.view, knob)
    defaults = {
        "scenario": PRESET.key,
        "kind": _sidebar_kind(),
        "association": PRESET.association,
        "ratio": PRESET.frequency_ratio,
        "corpus": DEFAULTS.corpus_size,
        "steps": DEFAULTS.steps,
        "seed": DEFAULTS.seed,
        "hidden": DEFAULTS.hidden_size,
        "layers": DEFAULTS.num_layers,
        "heads": DEFAULTS.num_heads,
        "batch": DEFAULTS.batch_size,
        "lr": DEFAULTS.learning_rate,
        "templates": "\n".join(DEFAULTS.templates),
        **{key: ", ".join(getattr(DEFAULTS, name)) for key, name, _label in WORD_FIELDS},
        **{name: getattr(DEFAULTS, name) for name in LABEL_FIELDS},
    }
    for key, value in defaults.items():
        st.session_state.setdefault(S + key, value)
    _follow_knobs()


def _sidebar_kind() -> str:
    """The kind of the sidebar's model (a causal one: the lab trains a causal model first), else the lab's default."""
    try:
        kind = ui.resources.get_model(ui.settings.current()).kind
    except Exception:  # (a model that does not load: the sidebar says why)
        return DEFAULTS.kind
    return kind if kind in lab.LAB_KINDS else DEFAULTS.kind


def _reports() -> dict:
    """This session's lab runs: (model folder, scoring mode) -> LabReport, in the order they were run."""
    return st.session_state.setdefault(S + "reports", {})


def _forget_runs() -> None:
    st.session_state[S + "reports"] = {}


# ---------------------------------------------------------------------------------------
# The knobs
# ---------------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in str(text).split(",") if w.strip())


def _choice(label: str, options: list[str], name: str, format_func: Callable[[str], str], **more: Any) -> str | None:
    """One of the page's segmented controls: always one option picked, kept for the session under `S + name`."""
    return st.segmented_control(label, options, key=S + name, persist_state="session", required=True, format_func=format_func, **more)


def knobs() -> lab.LabSettings | None:
    """Presets, sliders and inputs; the settings they describe (None, with the reason shown, if invalid)."""
    _choice(
        "Scenario",
        list(lab.SCENARIOS),
        "scenario",
        lambda k: lab.SCENARIOS[k].title,
        on_change=_apply_preset,
        help="A preset sets the association strength and the frequency ratio; moving either knob picks the matching scenario.",
    )
    st.caption(lab.SCENARIOS[st.session_state[S + "scenario"]].description)
    _choice(
        "Model",
        list(lab.LAB_KINDS),
        "kind",
        lambda k: {"masked": "Masked (a small BERT)", "causal": "Causal (a small GPT-2)"}.get(k, k),
        help="A masked model learns to fill in masked words and is scored with the paper's metrics; a causal model learns "
        "to predict the next word and is scored with LL, AUL-c, AULA-c, CPS-c and SSS-c.",
    )
    c1, c2 = st.columns(2)
    # The two knobs a scenario sets: moving either picks the matching scenario.
    for widget, label, knob, step, why in (
        (
            c1.slider,
            "Association strength",
            "association",
            0.05,
            "P(attributes X | group A) = P(attributes Y | group B) in the corpus. 0.5 = no association, 1 = always; "
            "below 0.5 plants the opposite association.",
        ),
        (
            c2.number_input,
            "Frequency ratio",
            "ratio",
            0.5,
            "Every group-A word appears k times as often as a group-B word, with the same associations. 1 = equally frequent.",
        ),
    ):
        widget(label, *LAB_BOUNDS[knob], step=step, key=S + knob, persist_state="session", on_change=_follow_knobs, help=why)
    c1, c2, c3 = st.columns(3)
    c1.number_input("Corpus size (sentences)", *LAB_BOUNDS["corpus"], step=1000, key=S + "corpus", persist_state="session")
    c2.number_input(
        "Training steps",
        *LAB_BOUNDS["steps"],
        step=100,
        key=S + "steps",
        persist_state="session",
        help=f"Batches of {st.session_state[S + 'batch']:,} sentences. "
        f"The default ({DEFAULTS.steps:,}) trains in well under 2 minutes on 2 CPU cores.",
    )
    c3.number_input(
        "Seed",
        *LAB_BOUNDS["seed"],
        step=1,
        key=S + "seed",
        persist_state="session",
        help="Seeds the corpus, the initial weights and the batches: the same settings give the same model.",
    )
    with st.expander("Words, templates and model size", icon=":material/tune:"):
        st.caption("Comma-separated words. Word i of group A is swapped for word i of group B in the held-out pairs.")
        c1, c2 = st.columns(2)
        for i, (key, _name, label) in enumerate(WORD_FIELDS):
            (c1 if i % 2 == 0 else c2).text_input(label, key=S + key, persist_state="session")
        cols = st.columns(4)
        for col, (name, label) in zip(cols, LABEL_FIELDS.items()):
            col.text_input(label, key=S + name, persist_state="session", help="Shown in the results (e.g. male, female, jobs, traits).")
        st.text_area("Templates, one per line, each with {name} and {attribute}", key=S + "templates", persist_state="session", height=150)
        c1, c2, c3, c4, c5 = st.columns(5)
        c1.selectbox("Hidden size", [16, 32, 64, 128, 256], key=S + "hidden", persist_state="session")
        c2.number_input("Layers", 1, 24, key=S + "layers", persist_state="session")
        c3.selectbox("Attention heads", [1, 2, 4, 8], key=S + "heads", persist_state="session")
        c4.number_input("Batch size", 1, 4096, step=16, key=S + "batch", persist_state="session")
        c5.number_input("Learning rate", 1e-5, 0.5, step=1e-3, format="%.4f", key=S + "lr", persist_state="session")
    values = st.session_state
    try:
        return lab.LabSettings(
            **{name: _words(values[S + key]) for key, name, _label in WORD_FIELDS},
            **{name: str(values[S + name]).strip() or getattr(DEFAULTS, name) for name in LABEL_FIELDS},
            templates=tuple(line.strip() for line in str(values[S + "templates"]).splitlines() if line.strip()),
            association=values[S + "association"],
            frequency_ratio=values[S + "ratio"],
            corpus_size=values[S + "corpus"],
            steps=values[S + "steps"],
            seed=values[S + "seed"],
            hidden_size=values[S + "hidden"],
            num_layers=values[S + "layers"],
            num_heads=values[S + "heads"],
            batch_size=values[S + "batch"],
            learning_rate=values[S + "lr"],
            kind=values[S + "kind"],
        )
    except Exception as exc:  # an InputError the user can fix: shown in one line
        ui.feedback.show_error(exc)
        return None


# ---------------------------------------------------------------------------------------
# Training and scoring
# ---------------------------------------------------------------------------------------


def train(chosen: lab.LabSettings) -> lab.LabModel | None:
    """Train with a progress bar and a Stop button (the job: `chosen`); None (message shown) if it failed or stopped."""
    model = None
    with ui.runs.stoppable(chosen, help="Stop training (a stopped training starts again from its first step)."):
        bar = ui.progress.ProgressBar("Training the lab model", unit="steps")
        with ui.feedback.guard():
            model = ui.runs.train_lab_job(chosen, lambda step, total, _loss: bar(step, total))
        bar.clear()
    return model


def report_of(settings: ui.settings.Settings, model: lab.LabModel) -> lab.LabReport | None:
    """Every metric on the held-out pairs: from this session, else scored (cached in the result cache)."""
    key = (str(model.path), settings.compat)
    reports = _reports()
    if key in reports:
        return reports[key]
    lm = ui.resources.model_or_none(settings, str(model.path))
    if lm is None:
        return None
    bar = ui.progress.ProgressBar("Scoring the held-out pairs")
    report = None
    with ui.feedback.guard():
        report = lab.evaluate_lab(model, lm, cache=ui.resources.result_cache(), progress=bar, compat=settings.compat)
    bar.clear()
    if report is not None:
        reports[key] = report
    return report


# ---------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------


def _inspect(view: LabView, model: lab.LabModel, pair: lab.LabPair, metric: str) -> None:
    ui.state.open_view(view.inspect(str(model.path), pair.pair.sent_stereo, pair.pair.sent_anti, metric))


def show_report(settings: ui.settings.Settings, report: lab.LabReport, view: LabView) -> None:
    s = report.settings
    frame = report.frame()
    ui.honesty.settings_banner(dataclasses.replace(settings, model=str(report.model.path), revision=None))
    st.subheader("Every metric against the planted truth")
    st.markdown(
        f"**Planted truth:** bias score **{lab.EXPECTED_TEXT[s.expected]}** "
        f"(association {s.association:g}, frequency ratio {s.frequency_ratio:g}). "
        f"{len(report.pairs)} held-out pairs: name/attribute combinations the model never saw in training."
    )
    ui.charts.show(figures.bias_scores_chart(frame.rename(columns={"metric": "name"}), "Bias score on the held-out pairs"), S + "chart")
    ui.tables.table(
        frame.assign(verdict=[lab.VERDICT_TEXT.get(v, v) for v in frame["verdict"]]),
        ["ci_low", "ci_high", "group_a_preference", "bias_score_x", "bias_score_y", "n", "ties"],
        pin=["metric", "bias_score", "verdict"],
        labels={"verdict": "Against the truth", "bias_score_x": f"On {s.attributes_x_label}", "bias_score_y": f"On {s.attributes_y_label}"},
        decimals=1,
    )
    st.caption(
        "**Against the truth** reads the 95% Wilson interval: *detected* = above 50 where an association is planted; "
        "*not detected* = the interval contains 50; *wrong sign* = below 50 where it should be above (or above where it "
        "should be below); with nothing planted, an interval that excludes 50 is a *false alarm*. "
        "**Prefers group A** = % of pairs in which the metric scores the sentence naming the group-A word higher: "
        "the pairs are balanced, so a preference for the frequent group alone leaves the bias score at 50 but splits "
        f"it between {ui.feedback.md(s.attributes_x_label)} and {ui.feedback.md(s.attributes_y_label)}."
    )

    st.markdown("**Open a result in the pair inspector** (with this lab model selected): the pair that shows each metric's result best.")
    inspectable = [k for k in frame["key"] if k in INSPECTED_METRICS]
    buttons = st.container(horizontal=True, gap="small")  # a row that wraps: no label broken mid-word on a laptop
    for key in inspectable:
        if buttons.button(
            f"Inspect {METRICS[key].name}",
            key=S + f"inspect_{key}",
            icon=":material/compare_arrows:",
            width="content",
            help=f"The held-out pair with {METRICS[key].name}'s largest margin in the direction of its bias score.",
        ):
            _inspect(view, report.model, report.telling_pair(key), key)

    with st.expander(f"The {len(report.pairs)} held-out pairs, one metric at a time", icon=":material/table_rows:"):
        focus = _choice("Metric", list(frame["key"]), "focus", lambda k: METRICS[k].name, default=frame["key"].iloc[0]) or "aul"
        pairs = report.pairs_frame(focus)
        st.caption("Select a row to open the pair in the pair inspector with this lab model.")
        event = ui.tables.table(
            pairs,
            ["bias_type", "group_a_side", "sent_stereo", "sent_anti"],
            pin=["pair_id", "margin", "prefers"],
            labels={
                "bias_type": "Attribute set",
                "sent_stereo": "Stereotypical (A with X, B with Y)",
                "sent_anti": "Anti-stereotypical (groups swapped)",
                "group_a_side": "Group A word in",
                "margin": f"{METRICS[focus].name} margin",
                "prefers": f"{METRICS[focus].name} prefers",
            },
            select=True,
            key=S + f"pairs.{st.session_state.get(S + 'pairs_version', 0)}",
            height=360,
        )
        if event.selection.rows:
            st.session_state[S + "pairs_version"] = st.session_state.get(S + "pairs_version", 0) + 1
            _inspect(view, report.model, report.pairs[int(event.selection.rows[0])], focus)


def show_comparison() -> None:
    reports = list(_reports().values())
    if len(reports) < 2:
        return
    st.subheader("Scenarios side by side")
    st.caption(f"The {len(reports)} lab runs of this session: bias score [95% CI] and what it says against the planted truth.")
    ui.charts.show(figures.lab_scenarios_chart(lab.compare_scenarios(reports)), S + "compare_chart")
    # One column per run (not per metric): whole in a 1024 px window; the runs' settings below it.
    ui.tables.table(lab.scenario_table(reports), pin=["metric"])
    ui.tables.table(
        lab.scenario_runs(reports),
        pin=["run", "expected"],
        labels={"run": "Run", "scenario": "Scenario", "steps": "Steps", "corpus_size": "Corpus (sentences)"},
        formats={"association": "{:g}", "frequency_ratio": "{:g}"},
    )
    st.button("Clear the comparison", icon=":material/delete_sweep:", on_click=_forget_runs, key=S + "clear")


#: What the lab shows and what it cannot, with the default model's size and number of pairs filled in (`limits_text`).
LIMITS = """
**What the experiment shows.** The corpus is generated, so the truth is known: group A goes with attributes X (and
group B with attributes Y) exactly as often as the association strength says, and every group-A word is exactly k
times as frequent as a group-B word. The held-out pairs combine names and attributes that never occur together in
training, so a metric finds the association only if the model generalised it. A metric that works detects *planted
association* and *both* (bias score above 50) and finds nothing in *neither*. Every held-out pair has a twin with the
groups' roles reversed, so a model that merely prefers the frequent group scores 50 overall: in *frequency imbalance
only*, a metric that confuses frequency with bias shows it as a strong **Prefers group A** and as opposite scores on
attributes X and Y, not as a bias score above 50.

**What it cannot show.** A {layers}-layer model with {hidden} hidden units, trained for under a minute on a few
thousand template sentences over a vocabulary of under a hundred words, is not BERT: no pretraining on real text, no
sub-word statistics, one sentence shape. A metric that behaves well here may still be misled on a real model and a
real benchmark, and the other way round; and benchmark pairs such as CrowS-Pairs are not balanced like these, so
there a frequency preference moves the bias score itself. Results vary with the seed (train a few) and the interval
is wide with {pairs} pairs. The lab tests a mechanism under controlled conditions; it measures the bias of no real model.
"""


def limits_text() -> str:
    return LIMITS.format(layers=DEFAULTS.num_layers, hidden=DEFAULTS.hidden_size, pairs=len(lab.heldout_pairs(DEFAULTS)))


# ---------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    settings = ui.settings.current()
    _adopt_url()
    ui.feedback.header("Bias lab", ABOUT, docs="lab")
    chosen = knobs()
    knobs_now = {name: st.session_state[S + name] for name in ("scenario", "kind", "association", "ratio", "corpus", "steps", "seed")}
    view = LabView(ui.state.global_view(), **knobs_now)
    ui.state.publish(view)
    with st.expander("What this shows, and what it cannot", icon=":material/info:"):
        st.markdown(limits_text())
    if chosen is not None:
        model = lab.find_lab_model(chosen)
        if model is None:
            about = lab.describe_settings(chosen)
            if ui.runs.offer(
                "Train",
                key=S + "train",
                pending=ui.runs.is_pending(chosen),
                notice=lambda: st.info(
                    f"Not trained yet: {ui.feedback.md(about)}. Training runs here, on this machine; "
                    "the model is then kept in the cache and found again next time.",
                    icon=":material/model_training:",
                ),
            ):
                model = train(chosen)
        else:
            t = model.training
            created = ui.feedback.md(str(t.get("created", "?")).replace("T", " ").replace("+00:00", " UTC"))
            st.success(
                f"Found in the cache, not retrained: {ui.feedback.md(model.label)}. Trained {created} in {t.get('seconds', 0):.0f} s, "
                f"{t.get('parameters', 0):,} parameters, vocabulary {ui.feedback.md(t.get('vocab_size', '?'))}, "
                f"final loss {t.get('final_loss', float('nan')):.3f}.",
                icon=":material/inventory_2:",
            )
        if model is not None:
            st.caption(f"Choose *{ui.feedback.md(ui.settings.lab_model_name(model))}* in the sidebar's **Model** box to use it on every page.")
            with st.expander("Model folder"):
                st.caption(f"{ui.feedback.code(model.path)}: an ordinary model folder; the command line and the Python API load it too.")
            report = report_of(settings, model)
            if report is not None:
                show_report(settings, report, view)
    show_comparison()
    ui.sweep.section(chosen, settings.compat)


main()

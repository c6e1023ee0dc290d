"""The pair inspector's *Anatomy* view and the explorer's *Heads*: where a bias lives (biaslens.anatomy), drawn by
biaslens.figures.anatomy. Widgets and layout only; every number comes from `biaslens.anatomy`.

* `show_pair`: one pair's attribution strips (and their difference), the logit lens (token x layer log p, the margin
  per layer), the heads (ablation effects, AULA's shares), the completeness errors, the files `biaslens anatomy`
  writes, and the view as a slide (PNG, SVG).
* `heads_panel`: the explorer run's pairs, every head ranked by how far its ablation moves the bias score, run in
  chunks with a progress bar and Stop, every pair cached so that running it again resumes.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np
import streamlit as st

import ui.charts
import ui.feedback
import ui.resources
import ui.runs
import ui.settings
import ui.tables
from ui.memo import LRU
from ui.progress import ProgressBar
from biaslens.anatomy.attribution import DEFAULT_STEPS
from biaslens.anatomy.focus import FOCUS_METRICS, focus_metric
from biaslens.anatomy.heads import HeadRanking, rank_heads
from biaslens.anatomy.pair import FILES, PairAnatomy, anatomize, settling_layer
from biaslens.data.datasets import PairDataset
from biaslens.data.export import safe_csv, to_json
from biaslens.engine.evaluation import EvaluationResult
from biaslens.engine.lm import LanguageModel
from biaslens.engine.metrics import METRICS
from biaslens.figures import anatomy as figures
from biaslens.figures.formatting import format_margin

S = "anatomy."
#: The most pairs one head ranking of the explorer takes (a ranking over a whole dataset: `rank_heads` from Python).
MAX_RANKED_PAIRS = 500
STEPS = (16, 32, 64, 128)
#: Headers of the heads' tables.
LABELS = {
    "layer": "Layer",
    "head": "Head",
    "margin_change": "Margin change",
    "aula_share": "AULA share",
    "mean_margin_change": "Mean margin change",
    "mean_ci_low": "95% CI low",
    "mean_ci_high": "95% CI high",
    "bias_score": "Bias score, head zeroed",
    "bias_score_change": "Bias score change",
    "change_ci_low": "Change 95% CI low",
    "change_ci_high": "Change 95% CI high",
    "n_pairs": "N",
}
HELP = (
    "Which words push the score (integrated gradients), at which layer the preference appears (the logit lens) and which "
    "attention heads carry it (each head zeroed in turn), for the metric in focus."
)


@st.cache_data(show_spinner=False, max_entries=16)
def _anatomy(model_key: tuple, fingerprint: str, metric: str, n_steps: int, stereo: str, anti: str, _lm: LanguageModel) -> PairAnatomy:
    with ui.resources.priority().interactive():
        return anatomize(_lm, stereo, anti, metric=metric, n_steps=n_steps)


def _metric(lm: LanguageModel, focus: str | None) -> str:
    """The inspector's metric in focus where the anatomy takes it apart (AUL, LL, AUL-c), else the kind's default."""
    return focus if focus in FOCUS_METRICS and lm.kind in METRICS[focus].kinds else focus_metric(lm)


def _files_zip(result: PairAnatomy) -> bytes:
    tables = (result.attribution.frame(), result.lens.frame(), result.heads.frame())
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, frame in zip(FILES, tables):
            zf.writestr(name, safe_csv(frame))
        zf.writestr(FILES[-1], to_json(result.summary()))
    return buffer.getvalue()


def show_pair(settings: ui.settings.Settings, lm: LanguageModel, stereo: str, anti: str, label: str, focus: str | None) -> None:
    """The Anatomy view of one pair (module docstring)."""
    metric = _metric(lm, focus)
    name = METRICS[metric].name
    steps = st.segmented_control(
        "Integrated gradients' steps",
        STEPS,
        default=DEFAULT_STEPS,
        key=S + "steps",
        persist_state="session",
        required=True,
        help="Gauss-Legendre points of the integral: more steps, a smaller completeness error, a slower view.",
    )
    with st.spinner(f"Taking {name} apart: attribution, every layer, every head…"):
        result = None
        with ui.feedback.guard():
            result = _anatomy(settings.model_key, lm.fingerprint, metric, int(steps or DEFAULT_STEPS), stereo, anti, lm)
    if result is None:
        return
    st.caption(  # the registry's names and numbers only: no user text
        (
            f"Every view takes apart **{name}** ({'the metric in focus' if metric == focus else 'what this kind of model is scored by'}): "
            f"margin {format_margin(result.margin)}. Attributions and ablations describe this function, not the model's "
            "reasons (docs: Anatomy)."
        )
    )

    st.markdown("**Which words push: integrated gradients**")
    st.html(figures.attribution_strips_html(result.attribution))
    completeness = result.attribution.completeness()
    worst = float(np.nanmax(np.abs(completeness["relative_error"].to_numpy(dtype=float))))
    errors = " · ".join(f"{ui.feedback.md(str(s))} {e:+.1e}" for s, e in zip(completeness["sentence"], completeness["completeness_error"]))
    message = f"Completeness (the attributions' sum against f(x) − f(baseline), {int(result.attribution.stereo.n_steps)} steps): {errors}."
    if worst > 0.01:
        st.warning(
            message + f" The error is {worst:.0%} of the change: raise the steps before reading the strips.",
            icon=":material/warning:",
        )
    else:
        st.caption(message)

    st.markdown("**At which layer: the logit lens**")
    margins = result.lens.margins
    left, right = st.columns(2)
    with left:
        ui.charts.show(figures.lens_margin_chart(result.lens, f"{name} margin per layer"), key=S + "margin_chart")
    with right:
        side = st.segmented_control("Sentence", ["stereo", "anti"], default="stereo", key=S + "lens_side", required=True, format_func=str.capitalize)
        lens = result.lens.stereo if side != "anti" else result.lens.anti
        ui.charts.show(figures.lens_heatmap(lens, "log p of each token at each layer", side or "stereo"), key=S + "lens_chart")
    st.caption(
        (
            f"The margin keeps its final sign from layer {int(settling_layer(margins))} of {len(margins) - 1} (layer 0: the embeddings). "
            "Early layers were never trained to be read through the final head: a weak margin there is not a proof of absence."
        )
    )

    st.markdown("**Which heads: ablation and AULA's shares**")
    left, right = st.columns(2)
    with left:
        ui.charts.show(figures.heads_heatmap(result.heads, "margin_change", "Margin change when the head is zeroed"), key=S + "ablation_chart")
    with right:
        if result.heads.aula_metric is None:
            st.info(ui.feedback.md(lm.attention_unavailable or "This model returns no attention weights."), icon=":material/info:")
        else:
            ui.charts.show(
                figures.heads_heatmap(result.heads, "aula_share", f"Share of the {METRICS[result.heads.aula_metric].name} margin"),
                key=S + "shares_chart",
            )
    ui.tables.table(result.heads.frame().head(8), pin=["layer", "head"], labels=LABELS, decimals=5)

    with st.container(horizontal=True):
        stem = f"anatomy-{lm.fingerprint[-8:]}"
        st.download_button(
            "Files (attribution, lens, heads)",
            _files_zip(result),
            f"{stem}.zip",
            "application/zip",
            icon=":material/download:",
            on_click="ignore",
            key=S + "zip",
        )
        if st.button("Make a slide of the anatomy", icon=":material/slideshow:", key=S + "make_slide"):
            with st.spinner("Drawing the slide…"):
                chart = figures.anatomy_slide(label, stereo, anti, result.attribution, result.lens, result.heads)
                png = ui.charts.export(chart, "png", "The anatomy slide")
                svg = ui.charts.export(chart, "svg", "The anatomy slide") if png is not None else None
            st.session_state[S + "slide"] = (stereo, anti, metric, png, svg) if png is not None and svg is not None else None
    made = st.session_state.get(S + "slide")
    if made is not None and made[:3] == (stereo, anti, metric):
        _, _, _, png, svg = made
        with st.expander("The anatomy slide", icon=":material/slideshow:", expanded=True):
            st.image(png)
            with st.container(horizontal=True):
                st.download_button("Slide (PNG)", png, f"{stem}.png", "image/png", icon=":material/image:", on_click="ignore", key=S + "slide_png")
                st.download_button(
                    "Slide (SVG)", svg, f"{stem}.svg", "image/svg+xml", icon=":material/image:", on_click="ignore", key=S + "slide_svg"
                )


def _ranked() -> LRU[tuple, HeadRanking]:
    """This session's head rankings, by job."""
    return st.session_state.setdefault(S + "rankings", LRU(4))


def heads_panel(settings: ui.settings.Settings, lm: LanguageModel, dataset: PairDataset, result: EvaluationResult) -> None:
    """The explorer's *Heads*: the run's pairs (at most `MAX_RANKED_PAIRS`), every head of the model zeroed on each, the
    heads ranked by how far that moves the bias score; computed on request, with a progress bar and Stop, each pair kept
    in the result cache (a stopped ranking resumes)."""
    st.subheader("Heads: which attention heads move the bias score")
    metric = focus_metric(lm)
    by_id = {p.pair_id: p for p in dataset.pairs}
    pairs = [by_id[i] for i in result.pairs["pair_id"] if i in by_id][:MAX_RANKED_PAIRS]
    name = METRICS[metric].name
    st.caption(
        (
            f"Every attention head zeroed in turn on each of the run's first {len(pairs):,} pairs: {name}'s margin and bias score "
            "with the head zeroed, with 95% bootstrap intervals over pairs (docs: Anatomy). Zeroing a head shows what the "
            "computation passes through, not where an association is stored."
        )
    )
    job = (S + "heads", lm.fingerprint, str(lm.dtype), lm.scoring_tag, metric, tuple(p.pair_id for p in pairs))
    ranking = _ranked().get(job)
    if ranking is None:
        if not ui.runs.offer("Rank the heads", key=S + "rank", pending=ui.runs.is_pending(job)):
            return
        with ui.runs.stoppable(job, help="Stop. Every finished pair stays in the result cache: ranking again resumes from there."):
            bar = ProgressBar(f"Zeroing every head on {len(pairs):,} pairs")
            with ui.feedback.guard():
                with ui.runs.heavy_job("The head ranking"):
                    ranking = rank_heads(lm, pairs, metric=metric, cache=ui.resources.result_cache(), progress=ui.runs.watched(bar))
            bar.clear()
        if ranking is None:
            return
        _ranked().put(job, ranking)
    frame = ranking.frame()
    ui.tables.table(frame.head(20), pin=["layer", "head"], labels=LABELS, decimals=4)
    st.caption(
        (
            f"{name} bias score with nothing zeroed: {ranking.bias_score:.1f} over {len(ranking.margins):,} pairs "
            f"({ranking.cached:,} read from the cache). Layers and heads from 0; heads first whose zeroing moves the bias score most."
        )
    )
    st.download_button(
        "Head ranking (CSV)", safe_csv(frame), "head-ranking.csv", "text/csv", icon=":material/download:", on_click="ignore", key=S + "ranking_csv"
    )


__all__ = ["HELP", "MAX_RANKED_PAIRS", "heads_panel", "show_pair"]

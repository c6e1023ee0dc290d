"""Which score can you trust: control pairs beside every bias score, mlm-bias's measures and the scoring conventions
side by side (the explorer), rank stability and mlm-bias's relative bias (the comparison).

Streamlit-only; the computing is in `biaslens.analyses.controls`, `biaslens.analyses.mlm_bias`,
`biaslens.analyses.conventions` and `biaslens.analyses.stability` (the same as `biaslens evaluate --controls --mlm-bias`,
`biaslens conventions` and `biaslens compare`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import pandas as pd
import streamlit as st

from biaslens.analyses import controls as control_pairs
from biaslens.analyses import conventions, explore, mlm_bias, stability
from biaslens.data.datasets import Pair, PairDataset
from biaslens.engine.evaluation import EvaluationResult
from biaslens.engine.metrics import METRICS
from biaslens.engine.models import LanguageModel, MaskedLM

from . import resources, runs
from .feedback import guard, md
from .memo import LRU
from .progress import ProgressBar
from .settings import Settings, model_label
from .state import open_view
from .tables import table

S = "trust."
#: The seed of the control words' draw in the app (the CLI's --control-seed default).
CONTROL_SEED = 0


def _chosen(dataset: PairDataset, result: EvaluationResult) -> list[Pair]:
    by_id = {p.pair_id: p for p in dataset.pairs}
    return [by_id[i] for i in result.pairs["pair_id"] if i in by_id]


@st.cache_resource(show_spinner=False)
def _control_sets() -> LRU[tuple, control_pairs.ControlSet]:
    return LRU(8)


def control_set(dataset: PairDataset, result: EvaluationResult) -> control_pairs.ControlSet | None:
    """The control pairs of the run's pairs (made once per dataset file and selection, shared by every session), or None
    with the reason shown (e.g. a dataset that is not English)."""
    key = (str(dataset.path), dataset.sha256, tuple(result.pairs["pair_id"]), CONTROL_SEED)
    found = _control_sets().get(key)
    if found is None:
        with guard():
            found = _control_sets().put(key, control_pairs.control_pairs(_chosen(dataset, result), seed=CONTROL_SEED, name=dataset.name))
    return found


def _control_spec(settings: Settings, lm: MaskedLM, controls: control_pairs.ControlSet, metrics: list[str]) -> tuple[Any, PairDataset]:
    data = controls.dataset()
    return runs.spec_for(settings, lm, data, metrics, None, 0), data


def control_entries(
    settings: Settings, lm: MaskedLM, dataset: PairDataset, result: EvaluationResult, metrics: list[str]
) -> dict[str, dict[str, Any]] | None:
    """The control score of each metric once the control pairs are scored (nothing is computed here), else None."""
    if dataset.name in control_pairs.NOT_ENGLISH:
        return None
    with guard():
        controls = _control_sets().get((str(dataset.path), dataset.sha256, tuple(result.pairs["pair_id"]), CONTROL_SEED))
        if controls is None or not controls.pairs:
            return None
        spec, data = _control_spec(settings, lm, controls, metrics)
        found = runs.lookup(spec, lm, data)
        return None if found is None else control_pairs.control_entries(control_pairs.control_scores(found, metrics))
    return None


def controls_panel(settings: Settings, lm: MaskedLM, dataset: PairDataset, result: EvaluationResult, metrics: list[str]) -> None:
    """Control pairs: what they are, a button that scores them, then each metric's control score with its interval."""
    st.subheader("Control pairs")
    st.caption(
        "Pikuliak et al. (EACL 2023): the same pairs with their social-group words swapped for non-social words of the "
        "same part of speech and matched frequency (StereoSet: the target; otherwise the words the two sentences differ in). "
        "Nothing social differs, so a metric should score them near 50; an interval that excludes 50 says the metric's "
        "score answers something besides the group words (frequency, grammar, position). English datasets only."
    )
    if dataset.name in control_pairs.NOT_ENGLISH:
        st.info(f"Control pairs are English only: {md(dataset.name)} is {control_pairs.NOT_ENGLISH[dataset.name]}.")
        return
    controls = control_set(dataset, result)
    if controls is None:
        return
    if not controls.pairs:
        st.info("No pair here has group words to swap: there are no control pairs.")
        return
    spec, data = _control_spec(settings, lm, controls, metrics)
    found = runs.lookup(spec, lm, data)
    if found is None:
        kept = runs.kept(spec, lm, data)

        def notice() -> None:
            kept_text = f"; {kept:,} of them kept in the result cache" if kept else ""
            st.caption(f"{len(controls.pairs):,} control pairs to score, about as long as the run above{kept_text}.")

        if not runs.offer("Score the control pairs", key=S + "controls_run", pending=runs.is_pending(spec), notice=notice):
            return
        found = runs.run(spec, lm, data, f"Scoring the control pairs ({', '.join(METRICS[m].name for m in metrics)})", kept=kept)
        if found is None:
            return
        st.rerun()  # the control scores go beside the bias scores above
    scores = control_pairs.control_scores(found, metrics)
    main = {r["metric"]: r for r in _summary_rows(result)}
    shown = scores.assign(
        name=[METRICS[m].name for m in scores["metric"]],
        score=[main[m]["bias_score"] for m in scores["metric"]],
        verdict=["off 50" if off else "near 50" for off in scores["off_50"]],
    )
    table(
        shown,
        ["n", "wins", "ties"],
        pin=["name", "score", "bias_score", "ci_low", "ci_high", "verdict"],
        labels={
            "score": "Bias score",
            "bias_score": "Control score",
            "ci_low": "Control 95% CI low",
            "ci_high": "Control 95% CI high",
            "verdict": "Control",
        },
    )
    off = [METRICS[m].name for m in scores["metric"][scores["off_50"]]]
    if off:
        st.warning(
            f"{md(', '.join(off))}: the control pairs' 95% interval excludes 50, so these bias scores may answer something besides the group words.",
            icon=":material/warning:",
        )
    summary = controls.summary()
    st.caption(
        f"{summary['pairs']:,} control pairs (seed {CONTROL_SEED}); {summary['skipped']:,} pairs without one; "
        f"{summary['swaps']:,} words swapped, {summary['pos_from_list']:,} with their part of speech from the hand-tagged list "
        f"(the others from their form); median frequency gap {summary['median_zipf_gap']:.2f} on wordfreq's Zipf scale. "
        "Intervals: 95% Wilson."
    )
    with st.expander("The words swapped", icon=":material/swap_horiz:"):
        table(controls.swaps, pin=["pair_id", "word", "control"])


def _summary_rows(result: EvaluationResult) -> list[dict[str, Any]]:
    return [{"metric": k, **v} for k, v in result.summary["metrics"].items()]


def control_caption(entry: Mapping[str, Any] | None) -> str:
    """The card's line for a metric's control score: ' · control 49.0 (44.1–53.9)' (and ', off 50'), or ''."""
    if not entry:
        return ""
    text = f" · control {entry['bias_score']:.1f} ({entry['ci_low']:.1f}–{entry['ci_high']:.1f})"
    return text + (", off 50" if entry.get("off_50") else "")


# ---------------------------------------------------------------------------------------
# mlm-bias's measures
# ---------------------------------------------------------------------------------------


def _job(what: str, lm: LanguageModel, pairs: list[Pair]) -> tuple:
    """A computation's key (its memo and its Stop): what, the model and its dtype, and the pairs."""
    return (S + what, lm.fingerprint, str(lm.dtype), tuple(p.pair_id for p in pairs), tuple(p.sent_stereo for p in pairs[:3]))


def _store() -> LRU[tuple, Any]:
    """This session's computed panels (mlm-bias's measures, the conventions), by `_job`."""
    return st.session_state.setdefault(S + "computed", LRU(8))


def _computed(job: tuple, label: str, compute: Callable[[Any], Any]) -> Any:
    """`compute(progress)` once per `job` (session memo; the result cache keeps each pair, so a stopped computation
    resumes), with a progress bar and Stop; None when it failed or was stopped."""
    found = _store().get(job)
    if found is not None:
        return found
    with runs.stoppable(job, help="Stop. Every finished pair stays in the result cache: computing again resumes from there."):
        bar = ProgressBar(label)
        with guard():
            with runs.heavy_job(label):
                found = compute(runs.watched(bar))
        bar.clear()
    return None if found is None else _store().put(job, found)


def _offered(job: tuple, button: str, notice: Callable[[], None], compute: Callable[[], Any]) -> Any:
    """A panel's computation: this session's result of `job`, else a button (`runs.offer`, its key from the job) that
    runs `compute()`; None until it is pressed, or when the computation failed or was stopped."""
    found = _store().get(job)
    if found is not None:
        return found
    if not runs.offer(button, key=f"{job[0]}_run", pending=runs.is_pending(job), notice=notice):
        return None
    return compute()


def _mlm_scores(lm: MaskedLM, pairs: list[Pair], label: str) -> mlm_bias.MlmBiasResult | None:
    """mlm-bias's measures of `pairs` under `lm` (`_computed`)."""
    return _computed(
        _job("mlm", lm, pairs), label, lambda progress: mlm_bias.mlm_bias_scores(lm, pairs, cache=resources.result_cache(), progress=progress)
    )


def mlm_bias_panel(lm: MaskedLM, dataset: PairDataset, result: EvaluationResult) -> None:
    """mlm-bias's CRR, CRRA, ΔP and ΔPA on the run's pairs, computed on request."""
    st.subheader("mlm-bias's measures")
    st.caption(
        "Zalkikar & Chandra (2024; the package mlm-bias): each token masked in turn, with punctuation removed; per token "
        "CRR = 1 − 1/rank of the masked token, ΔP = log p(top prediction) − log p(masked token), CRRA and ΔPA the same "
        "weighted by the masked copy's attention. A sentence's measure is the mean over its tokens (higher: predicted worse); "
        "the bias score is the share of pairs whose stereotypical sentence is predicted better. Equal to the package's code."
    )
    pairs = _chosen(dataset, result)
    found = _offered(
        _job("mlm", lm, pairs),
        "Compute mlm-bias's measures",
        lambda: st.caption(f"{len(pairs):,} pairs: one forward pass per token of each sentence, like CPS."),
        lambda: _mlm_scores(lm, pairs, "mlm-bias's measures"),
    )
    if found is None:
        return
    for note in found.notes:
        st.caption(f"Note: {md(note)}")
    table(found.scores, ["n", "wins", "ties", "undecidable"], pin=["name", "bias_score", "ci_low", "ci_high"], labels={"name": "Measure"})
    by_type = found.by_bias_type
    if len(set(by_type["bias_type"])) > 1:
        with st.expander("By bias type", icon=":material/category:"):
            table(by_type, ["n", "wins", "ties"], pin=["bias_type", "name", "bias_score", "ci_low", "ci_high"], labels={"name": "Measure"})
    st.caption("Intervals: 95% Wilson. `biaslens evaluate --mlm-bias` writes the same, per pair, to mlm_bias.csv.")


def conventions_panel(lm: LanguageModel, dataset: PairDataset, result: EvaluationResult, inspect: Callable[[int], Any]) -> None:
    """The run's pairs under every scoring convention (a causal model: lm-eval, bias-bench, oba2024 and biaslens's own;
    a masked model: AUL, CPS, PLL, PLL-word-l2r), the bias scores side by side and the pairs whose verdict flips, each
    a click from the inspector. Computed on request."""
    st.subheader("Scoring conventions")
    if lm.kind == "causal":
        st.caption(
            "Tools score a causal model's pairs differently: lm-evaluation-harness sums each sentence's log-probabilities "
            "after one prefix token, bias-bench takes the geometric mean after <|endoftext|>, Oba et al. (2024) the mean "
            "log-likelihood. The same pairs under each convention (and each causal metric), and the pairs whose verdict flips."
        )
    else:
        st.caption(
            "A masked model's conventions are its likelihood metrics: AUL, CPS, PLL and PLL-word-l2r on the same pairs, "
            "their bias scores side by side and the pairs whose verdict flips between them."
        )
    pairs = _chosen(dataset, result)
    job = _job("conv", lm, pairs)
    found = _offered(
        job,
        "Compare the conventions",
        lambda: st.caption(
            f"{len(pairs):,} pairs, every way at once (`biaslens conventions` on the command line); what is in the result cache is read back."
        ),
        lambda: _computed(
            job,
            "Scoring conventions",
            lambda progress: conventions.convention_sensitivity(lm, pairs, cache=resources.result_cache(), progress=progress),
        ),
    )
    if found is None:
        return
    table(
        found.table,
        ["flipped_vs_reference", "statistics"],  # N and ties: in the caption (N is the run's; every scoring has it)
        pin=["scoring", "bias_score", "ci_low", "ci_high"],
        labels={"scoring": "Scoring", "flipped_vs_reference": "Flips", "statistics": "The tool's own statistics"},
        help={"flipped_vs_reference": "Pairs whose verdict differs from the reference scoring's."},
    )
    st.caption(
        f"{int(found.table['n'].max()):,} pairs; ties: {int(found.table['ties'].sum()):,} over all the scorings. "
        "Flips: pairs whose verdict differs from the same metric under biaslens's default scoring"
        + (" (a masked model: AUL)." if lm.kind == "masked" else ".")
        + " Intervals: 95% Wilson. The table with N and ties per scoring: `biaslens conventions`."
    )
    most = found.verdicts.sort_values("flips", ascending=False, kind="stable")
    most = most[most["flips"] > 0]
    if most.empty:
        st.success("No pair changes its verdict between these scorings.", icon=":material/check_circle:")
        return
    shown = pd.DataFrame(
        {
            "pair_id": most["pair_id"],
            "pair": [explore.pair_text(a, b) for a, b in zip(most["sent_stereo"], most["sent_anti"])],
            "flips": most["flips"],
        }
    )
    st.markdown(f"**Pairs whose verdict flips** ({len(shown):,} of {len(found.verdicts):,}): select one to open it in the inspector.")
    event = table(
        shown,
        pin=["pair_id", "pair", "flips"],
        labels={"pair_id": "Pair", "pair": "The pair: [stereotypical → anti-stereotypical]", "flips": "Scorings against its majority"},
        select=True,
        key=S + "conv_pairs",
        wrap_lines=2,
    )
    if event is not None and event.selection.rows:
        open_view(inspect(int(shown["pair_id"].iloc[event.selection.rows[0]])))


# ---------------------------------------------------------------------------------------
# The comparison: rank stability and relative bias
# ---------------------------------------------------------------------------------------

SCHEME_LABELS = {"pairs": "Pairs", "types": "Bias types, then pairs"}


def stability_section(results: Mapping[str, EvaluationResult], metric: str, seed: int) -> None:
    """Every model's score and rank with their intervals under resampling, and P(row scores above column)."""
    st.subheader("Rank stability")
    st.caption(
        "Selvam et al. (ACL 2023) show that how a benchmark was built can decide which model looks more biased. Resample "
        "the pairs (or the bias types, then their pairs) and see how far each score and rank moves."
    )
    types = {t for r in results.values() for t in r.pairs["bias_type"]}
    options = ["pairs", "types"] if len(types) > 1 else ["pairs"]
    scheme = st.segmented_control("Resample", options, key=S + "scheme", format_func=lambda s: SCHEME_LABELS[s], default="pairs") or "pairs"
    found = None
    with guard():
        found = stability.rank_stability_of(results, metric, scheme=scheme, seed=seed)
    if found is None:
        return
    shown = found.scores.assign(rank_text=[stability.format_rank(r) for r in found.scores.to_dict(orient="records")])
    table(
        shown,
        ["n", "p_first"],
        pin=["model", "bias_score", "ci_low", "ci_high", "rank_text"],
        labels={"rank_text": "Rank (95% interval)", "p_first": "P(ranked first)"},
    )
    matrix = found.pairwise.pivot(index="model_a", columns="model_b", values="p_a_above_b").reindex(index=list(results), columns=list(results))
    wide = matrix.reset_index().rename(columns={"model_a": "Model"})
    table(wide, pin=["Model"], labels={c: f"above {c}" for c in results}, formats={c: "{:.3f}" for c in results})
    st.caption(f"{md(found.method)}. The second table: the probability that the row's model scores above the column's (ties count half).")


def relative_bias_section(lms: Mapping[str, MaskedLM], dataset: PairDataset, results: Mapping[str, EvaluationResult]) -> None:
    """mlm-bias's relative bias of each model against the first, computed on request."""
    st.subheader("Relative bias (mlm-bias)")
    names = list(results)
    st.caption(
        f"Zalkikar & Chandra's relative bias of each model (model 2) against {md(names[0])} (model 1): the share of pairs with "
        "(M2(S1) − M1(S1)) − (M2(S2) − M2(S1)) > 0, as their code computes it (published), and with (M2(S1) − M1(S1)) − "
        "(M2(S2) − M1(S2)) > 0 (symmetric: biaslens's reading of the same idea). S1: the stereotypical sentence; M: a measure."
    )
    first = results[names[0]]
    pairs = _chosen(dataset, first)
    jobs = {n: _job("mlm", lms[n], pairs) for n in names}
    missing = [n for n in names if _store().get(jobs[n]) is None]
    if missing:
        pending = any(runs.is_pending(jobs[n]) for n in missing)
        notice = lambda: st.caption(f"mlm-bias's measures of {len(missing)} model(s) on {len(pairs):,} pairs: one pass per token.")  # noqa: E731
        if not runs.offer("Compute the relative bias", key=S + "relative_run", pending=pending, notice=notice):
            return
        for n in missing:
            if _mlm_scores(lms[n], pairs, f"mlm-bias's measures of {model_label(n)}") is None:
                return
    found = {n: _store().get(jobs[n]) for n in names}
    frames = [
        mlm_bias.relative_bias(found[names[0]], found[n]).assign(model=n)  # type: ignore[arg-type]
        for n in names[1:]
    ]
    relative = pd.concat(frames, ignore_index=True)
    overall = relative[relative["bias_type"] == ""]
    wide = overall.pivot_table(index=["model", "name"], columns="formula", values="relative_bias", sort=False).reset_index()
    table(wide, pin=["model", "name"], labels={"name": "Measure", "published": "Published", "symmetric": "Symmetric"})
    scores = pd.concat([found[n].scores.assign(model=n) for n in names], ignore_index=True)  # type: ignore[union-attr]
    with st.expander("Each model's mlm-bias scores", icon=":material/table_rows:"):
        table(scores, ["n", "wins", "ties"], pin=["model", "name", "bias_score", "ci_low", "ci_high"], labels={"name": "Measure"})

"""Dataset explorer additions: flagged rows (exclude them, every metric with and without) and StereoSet's own numbers.

Streamlit-only; the computing is in `biaslens.data.flags`, `biaslens.analyses.paired`, `biaslens.analyses.pipeline`
(`scored_flags`, `without_flagged`: the same as `biaslens evaluate --flags --exclude-flagged`) and
`biaslens.analyses.stereoset_scores`.
"""

from __future__ import annotations

from typing import cast

import pandas as pd
import streamlit as st

from biaslens.data import flags as flagging
from biaslens.data.datasets import PairDataset
from biaslens.engine.evaluation import EvaluationResult
from biaslens.engine.metrics import METRICS
from biaslens.engine.models import LanguageModel
from biaslens.analyses.paired import N_RESAMPLES, with_and_without
from biaslens.analyses.pipeline import scored_flags, without_flagged
from biaslens.analyses.stereoset_scores import stereoset_scores

from . import resources
from .feedback import guard, md
from .memo import LRU
from .progress import ProgressBar
from .settings import Settings
from .tables import table

S = "field."


@st.cache_data(show_spinner=False, max_entries=8)
def _flag_pairs(dataset_key: tuple[str, str], fingerprint: str, data_dir: str | None, _dataset: PairDataset, _lm: LanguageModel):
    """`flag_pairs` once per dataset, model (its fingerprint) and data folder, shared by every session."""
    return flagging.flag_pairs(_dataset, lm=_lm, data_dir=data_dir)


def _flags(settings: Settings, lm: LanguageModel, dataset: PairDataset):
    """Every flag of the dataset's pairs, or None (the error shown)."""
    with guard():
        data_dir = resources.data_dir(settings)
        return _flag_pairs((dataset.sha256, str(dataset.path)), lm.fingerprint, data_dir, dataset, lm)
    return None


def flag_filter(settings: Settings, lm: LanguageModel, dataset: PairDataset, result: EvaluationResult, metrics: list[str]) -> EvaluationResult:
    """The flagged-rows panel; returns `result` without the flagged pairs when the user excludes them."""
    with st.expander("Flagged rows: pairs that may not be minimal pairs", icon=":material/flag:"):
        st.caption(
            "Blodgett et al. (2021) found many benchmark pairs that are not minimal pairs or not about the stated group. "
            "Automatic checks flag pairs where more than the group words differ (word-level diff, pronoun agreement allowed), "
            "StereoSet examples whose BLANK is odd, repeated pairs and pairs whose two sentences have the same tokens; for "
            "CrowS-Pairs-based sets also the published list of non-minimal pairs (CrowsPairsTools) and, for CrowS-Pairs, "
            "the rows the revised set removed."
        )
        found = _flags(settings, lm, dataset)
        if found is None:
            return result
        all_flags, notes = found
        for note in notes:
            st.caption(f"Note: {md(note)}")
        scored, _ = scored_flags(result, all_flags)
        available = [c for c in flagging.CHECKS if c in set(scored["check"])]
        if not available:
            st.info("No scored pair is flagged.")
            return result
        checks = st.multiselect("Checks", available, default=available, key=S + "checks", format_func=lambda c: flagging.CHECK_LABELS.get(c, c))
        chosen = cast("pd.DataFrame", scored[scored["check"].isin(checks)])
        _, keep = scored_flags(result, chosen)
        table(flagging.flag_summary(chosen), ["pairs"], pin=["label"], labels={"pairs": "Pairs flagged"})
        difference = with_and_without(result, keep, metrics)
        difference.insert(0, "name", [METRICS[m].name for m in difference["metric"]])
        table(
            difference,
            ["score_all", "score_kept", "n_all", "n_kept"],
            pin=["name", "difference", "ci_low", "ci_high"],
            labels={"n_all": "N all", "n_kept": "N unflagged", "score_all": "All pairs", "score_kept": "Unflagged pairs"},
            formats={"difference": "{:+.2f}", "ci_low": "{:+.2f}", "ci_high": "{:+.2f}"},
        )
        st.caption(
            f"{int((~keep).sum()):,} of {len(keep):,} scored pairs flagged. Difference = unflagged − all, in percentage "
            f"points, with a bootstrap 95% interval ({N_RESAMPLES:,} resamples of the pairs)."
        )
        exclude = st.toggle("Exclude the flagged pairs from the scores below", key=S + "exclude")
    if not exclude or keep.all():
        return result
    if not keep.any():
        st.warning("Every scored pair is flagged: showing them all.")
        return result
    st.info(f"Showing the {int(keep.sum()):,} unflagged pairs ({int((~keep).sum()):,} flagged pairs excluded).", icon=":material/filter_alt:")
    return without_flagged(result, keep, metrics)


def stereoset_panel(settings: Settings, lm: LanguageModel, dataset: PairDataset, result: EvaluationResult, metrics: list[str]) -> None:
    """StereoSet's LMS, SS and ICAT per bias type under each metric, computed on request."""
    by_id = {p.pair_id: p for p in dataset.pairs}
    chosen = [by_id[i] for i in result.pairs["pair_id"] if i in by_id]
    if not any(p.unrelated for p in chosen):
        return
    key = (S + "stereoset", str(dataset.path), dataset.sha256, lm.fingerprint, settings.compat, tuple(metrics), tuple(result.pairs["pair_id"]))
    store = st.session_state.setdefault(S + "stereoset_store", LRU(1))
    st.subheader("StereoSet's own scores")
    st.caption(
        "Nadeem et al. (2021), intrasentence: **LMS** (language-modelling score: how often a meaningful candidate beats the "
        "unrelated one; ideal 100), **SS** (stereotype score: how often the stereotype beats the anti-stereotype; ideal 50), "
        "**ICAT** = LMS · min(SS, 100 − SS) / 50 (ideal 100); per target term, then averaged, as StereoSet's scorer does. "
        "Each metric's sentence score is the likelihood that compares the candidates."
    )
    if key not in store:
        if not st.button(
            "Compute LMS, SS and ICAT",
            key=S + "stereoset_run",
            icon=":material/play_arrow:",
            help="Scores the unrelated candidates too: about twice the work of the run above.",
        ):
            return
        bar = ProgressBar("Scoring StereoSet's unrelated candidates")
        scores = None
        with guard():
            scores = stereoset_scores(lm, chosen, metrics, compat=settings.compat, cache=resources.result_cache(), main=result, progress=bar)
        bar.clear()
        if scores is None:
            return
        store.put(key, scores)
    scores = store.get(key)
    shown = scores.table.assign(name=[METRICS[m].name for m in scores.table["metric"]])
    table(shown, ["n", "targets"], pin=["name", "bias_type", "lms", "ss", "icat"])
    if scores.skipped:
        st.caption(f"{scores.skipped:,} examples without an unrelated sentence are left out.")

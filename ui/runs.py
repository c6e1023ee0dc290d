"""Dataset runs in the app: resumable, with a progress bar, reopened instantly once finished.

A run is `biaslens.evaluation.evaluate` with the shared `ResultCache`, in chunks of
`CHUNK_PAIRS` pairs: every finished chunk is in the cache, so a run interrupted by the
user (a click elsewhere stops the script) resumes where it stopped. A run started in this
session and interrupted resumes by itself when its page shows the same run again, until
the user presses Stop. A finished run is kept in the session and is also found in the
cache by `lookup` (e.g. from a shared link), without computing anything.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import streamlit as st

from biaslens.datasets import PairDataset
from biaslens.evaluation import EvaluationResult, evaluate
from biaslens.explore import cached_evaluation
from biaslens.models import MaskedLM

from . import resources, state
from .feedback import attempt
from .progress import ProgressBar
from .settings import Settings

#: Pairs per resumable chunk: small enough that an interruption loses little work.
CHUNK_PAIRS = 32
#: Finished runs kept per session.
KEEP_RESULTS = 8

_RESULTS = "runs.results"
_PENDING = "runs.pending"


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines a run's result."""

    model: str
    fingerprint: str
    dtype: str
    compat: str
    dataset: str  # the dataset file
    dataset_sha256: str
    metrics: tuple[str, ...]
    sample: int | None
    seed: int


def spec_for(settings: Settings, lm: MaskedLM, dataset: PairDataset, metrics, sample: int | None, seed: int) -> RunSpec:
    sample = sample if sample is not None and sample < len(dataset) else None
    return RunSpec(lm.name, lm.fingerprint, str(lm.dtype), settings.compat, str(dataset.path), dataset.sha256, tuple(metrics), sample, int(seed))


def _results() -> OrderedDict:
    return st.session_state.setdefault(_RESULTS, OrderedDict())


def _remember(spec: RunSpec, result: EvaluationResult) -> EvaluationResult:
    results = _results()
    results[spec] = result
    results.move_to_end(spec)
    while len(results) > KEEP_RESULTS:
        results.popitem(last=False)
    return result


def _options(spec: RunSpec) -> dict:
    return {"compat": spec.compat, "sample": spec.sample, "seed": spec.seed}


def lookup(spec: RunSpec, lm: MaskedLM, dataset: PairDataset) -> EvaluationResult | None:
    """The finished run: from this session, else entirely from the result cache; None if not finished."""
    found = _results().get(spec)
    if found is None:
        found = attempt(cached_evaluation, lm, dataset, list(spec.metrics), resources.result_cache(), **_options(spec))
        if found is not None:
            _remember(spec, found)
    return found


def is_pending(spec: RunSpec) -> bool:
    """Whether this run was started in this session and interrupted (it resumes by itself)."""
    return spec in st.session_state.get(_PENDING, set())


def _stop(spec: RunSpec) -> None:
    st.session_state.setdefault(_PENDING, set()).discard(spec)


def run(spec: RunSpec, lm: MaskedLM, dataset: PairDataset, label: str) -> EvaluationResult | None:
    """Score the run with a progress bar and a Stop button; None (message shown) if it failed."""
    st.session_state.setdefault(_PENDING, set()).add(spec)
    controls = st.empty()
    controls.button("Stop", icon=":material/stop_circle:", on_click=_stop, args=(spec,), key=f"runs.stop.{hash(spec)}",
                    help="Stop scoring. Finished chunks stay in the cache: running again resumes from there.")
    bar = ProgressBar(label, rate_key=speed_key(spec))
    result = attempt(
        evaluate, lm, dataset, list(spec.metrics), cache=resources.result_cache(), chunk_pairs=CHUNK_PAIRS, progress=bar, **_options(spec)
    )
    bar.clear()
    controls.empty()
    _stop(spec)
    return None if result is None else _remember(spec, result)


def speed_key(spec: RunSpec) -> tuple:
    """What a run's throughput depends on: model, precision, scoring mode, dataset and metrics (not the sample)."""
    return ("run", spec.fingerprint, spec.dtype, spec.compat, spec.dataset_sha256, spec.metrics)


def time_estimate(spec: RunSpec, lm: MaskedLM, dataset: PairDataset, n_pairs: int, *, key: str) -> None:
    """Before a long run: the time it will take from the throughput measured here, or a button that measures it."""
    from .progress import estimate, measure

    text = estimate(speed_key(spec), n_pairs)
    if text is not None:
        st.caption(f"Estimated time: {text}.")
        return
    if st.button("Estimate the time", key=key, icon=":material/timer:", type="tertiary",
                 help="Scores 3 pairs (not cached) and times them on this machine."):
        probe = min(3, len(dataset))
        with st.spinner("Timing 3 pairs…"):
            attempt(measure, speed_key(spec), lambda: evaluate(lm, dataset, list(spec.metrics), cache=None, compat=spec.compat,
                                                                 sample=probe, seed=spec.seed), probe)
        st.rerun()


def sample_controls(prefix: str, total: int, label: str | None = None) -> tuple[int | None, int]:
    """'Score a sample' toggle (`label`), sample size and seed (the URL's `sample` and `seed` preset them).

    Returns (sample size or None for every pair, seed).
    """
    sample, seed = state.take_one("sample"), state.take_one("seed")
    if sample is not None and sample.isdigit() and int(sample) > 0:
        st.session_state[prefix + "sample_on"] = True
        st.session_state[prefix + "sample_n"] = min(int(sample), total)
    if seed is not None and seed.isdigit():
        st.session_state[prefix + "seed"] = int(seed)
    st.session_state[prefix + "sample_n"] = max(1, min(int(st.session_state.get(prefix + "sample_n", 200)), total))
    st.session_state.setdefault(prefix + "seed", 0)
    on = st.toggle(label or f"Score a random sample (of {total:,} pairs)", key=prefix + "sample_on", persist_state="session")
    if not on:
        return None, int(st.session_state[prefix + "seed"])
    c1, c2 = st.columns(2)
    n = c1.number_input("Pairs", min_value=1, max_value=total, step=50, key=prefix + "sample_n", persist_state="session")
    seed_value = c2.number_input("Seed", min_value=0, step=1, key=prefix + "seed", persist_state="session")
    return int(n), int(seed_value)

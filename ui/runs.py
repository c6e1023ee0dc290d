"""Dataset runs in the app: resumable, with a progress bar, reopened instantly once finished.

A run is `biaslens.engine.evaluation.evaluate` with the shared `ResultCache`, in chunks of about
`INTERACTIVE_CHUNK_SECONDS` of work: every finished chunk is in the cache, so a run interrupted by the
user (a click elsewhere stops the script) resumes where it stopped. A run started in this
session and interrupted resumes by itself when its page shows the same run again, until
the user presses Stop. A finished run is kept in the session and is also found in the
cache by `lookup` (e.g. from a shared link), without computing anything; an unfinished one
says how many of its pairs the cache holds (`kept`), and its progress starts there.

Every page's jobs follow one rule (`offer`, `stoppable`): before a job, its notice and its Run
button; while it runs, only its progress and its Stop button; after Stop, the notice again.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import signal
import threading
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, Protocol

import streamlit as st

from biaslens.data.datasets import PairDataset
from biaslens.engine.evaluation import EvaluationResult, evaluate, scored_pairs
from biaslens.analyses.explore import cached_evaluation
from biaslens.errors import BiaslensError, JobCancelled
from biaslens.engine.models import LanguageModel
from biaslens.engine.runner import INTERACTIVE_CHUNK_SECONDS
from biaslens.serving.server import ENV_MAX_JOBS, JobSlots

from . import resources, state
from .feedback import guard, md
from .memo import LRU
from .progress import ProgressBar
from .settings import Settings
from .views import MAX_SEED

#: Pairs per resumable chunk; None: chunks of about `INTERACTIVE_CHUNK_SECONDS` of work, so an interruption loses little.
CHUNK_PAIRS: int | None = None
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


def spec_for(settings: Settings, lm: LanguageModel, dataset: PairDataset, metrics, sample: int | None, seed: int) -> RunSpec:
    sample = sample if sample is not None and sample < len(dataset) else None
    return RunSpec(lm.name, lm.fingerprint, str(lm.dtype), settings.compat, str(dataset.path), dataset.sha256, tuple(metrics), sample, int(seed))


def _results() -> LRU[RunSpec, EvaluationResult]:
    """This session's last `KEEP_RESULTS` finished runs."""
    return st.session_state.setdefault(_RESULTS, LRU(KEEP_RESULTS))


@st.cache_resource(show_spinner=False)
def _finished_in(cache_path: str) -> LRU[RunSpec, EvaluationResult]:
    return LRU(KEEP_RESULTS)


def _shared_results() -> LRU[RunSpec, EvaluationResult]:
    """The last `KEEP_RESULTS` finished runs read back from the server's result cache, for every session: a link to a
    finished run opens without reading the cache again (a run's key names the model's fingerprint and the dataset's
    sha256)."""
    return _finished_in(str(resources.result_cache().path))


def _remember(spec: RunSpec, result: EvaluationResult) -> EvaluationResult:
    return _results().put(spec, result)


def _options(spec: RunSpec) -> dict:
    return {"compat": spec.compat, "sample": spec.sample, "seed": spec.seed}


def lookup(spec: RunSpec, lm: LanguageModel, dataset: PairDataset) -> EvaluationResult | None:
    """The finished run: from this session or another one on this server, else entirely from the result cache; None
    if not finished."""
    found = _results().get(spec)
    if found is None:
        found = _shared_results().get(spec)
    if found is None:
        with guard():
            found = cached_evaluation(lm, dataset, list(spec.metrics), resources.result_cache(), **_options(spec))
        if found is not None:  # read back from the cache: nothing in it is this session's (a run's notices are not)
            _shared_results().put(spec, found)
            _remember(spec, found)
    return found


def kept(spec: RunSpec, lm: LanguageModel, dataset: PairDataset) -> int:
    """How many of the run's pairs the result cache already holds under every metric: what a stopped (or earlier, or
    overlapping) run kept, which running it reads back instead of computing. Nothing is computed."""
    with contextlib.suppress(BiaslensError):  # e.g. a metric this model cannot give: `lookup` has said so already
        return scored_pairs(lm, dataset, list(spec.metrics), resources.result_cache(), **_options(spec))
    return 0


def is_pending(job: Hashable) -> bool:
    """Whether `job` (a `RunSpec`, or any key a page gives its job) was started in this session and interrupted by a click
    elsewhere: its page runs it again (it resumes from the cache) when it shows the same job, until Stop is pressed."""
    return job in st.session_state.get(_PENDING, set())


def offer(label: str, *, key: str, pending: bool = False, notice: Callable[[], object] | None = None, **button: Any) -> bool:
    """A job's controls before it runs, the same on every page: `notice()` (what is not done yet, what is kept) and its
    Run button (`label`, e.g. Resume when pairs are kept). True when the job is to run now: the button was pressed, or
    `pending` (see `is_pending`). The notice and the button are then gone, and the job's progress and Stop button
    (`stoppable`) take their place: Run and Stop are never both live, and no "not run yet" sits above a running job."""
    box = st.empty()
    if pending:
        return True
    with box.container():
        if notice is not None:
            notice()
        clicked = st.button(label, key=key, type="primary", icon=":material/play_arrow:", **button)
    if clicked:
        box.empty()
    return clicked


@contextlib.contextmanager
def stoppable(job: Hashable, *, help: str) -> Iterator[None]:
    """Around a job started by `offer`: its Stop button, above its progress. Until it ends the job is pending (a click
    elsewhere interrupts it and its page resumes it); Stop ends it for good, and the page shows its notice and Run again.
    The button goes when the job ends (a failure included: its message is shown)."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    st.session_state.setdefault(_PENDING, set()).add(job)
    controls = st.empty()
    controls.button("Stop", icon=":material/stop_circle:", on_click=_stop, args=(job,), key=f"runs.stop.{hash(job)}", help=help)
    try:
        yield  # interrupted by a click elsewhere (a rerun), the job stays pending
    except StopException:  # the page stopped itself (`st.stop()`: e.g. its model failed to load): nothing to resume
        _stop(job)
        raise
    controls.empty()
    _stop(job)


@st.cache_resource(show_spinner=False)
def _job_slots() -> JobSlots:
    """The server's line of heavy jobs, shared by every session."""
    return JobSlots()


def job_slots() -> JobSlots:
    server = resources.server_settings()
    slots = _job_slots()
    if (slots.capacity, slots.max_queue) != (server.max_jobs, server.max_queue):
        slots.configure(server.max_jobs, server.max_queue)
    return slots


#: Set the moment the server process gets SIGTERM, SIGINT or SIGQUIT (see `watch_server_stop`).
_STOP_SIGNALLED = threading.Event()
_signal_hook_lock = threading.Lock()
_signal_hook_installed = False


def watch_server_stop() -> None:
    """Make a stop signal visible to running jobs at once, not only once Streamlit has closed every connection;
    and let the process exit without its last, slow garbage collections. Called by app.py on every run; it acts once.

    Streamlit's own handler only asks its web server to exit; the runtime says STOPPING after the
    server has closed its websockets, which takes seconds while a job keeps the cores busy. Signal
    handlers can only be set in the main thread, so the wrapper is installed from the server's event
    loop (which runs there); it sets `_STOP_SIGNALLED` and then calls Streamlit's handler.
    """
    global _signal_hook_installed
    from streamlit import runtime

    with _signal_hook_lock:
        if _signal_hook_installed or not runtime.exists():
            return
        _signal_hook_installed = True
    instance = runtime.get_instance()

    def install() -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for number in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGQUIT", None)):
            if number is None:
                continue
            previous = signal.getsignal(number)
            if not callable(previous):
                continue

            def handler(signum: int, frame: Any, previous: Callable[..., Any] = previous) -> None:
                _STOP_SIGNALLED.set()
                previous(signum, frame)

            signal.signal(number, handler)

    try:
        instance._get_async_objs().eventloop.call_soon_threadsafe(install)  # a private API: without it, jobs stop later
    except Exception:
        pass
    # At exit, Python's last garbage collections walk every object of torch, transformers and the app
    # (seconds on a busy machine) only to free memory the process is about to give back: skip them.
    atexit.register(gc.freeze)


def session_gone() -> Callable[[], bool]:
    """A check: has the session running this script gone away (tab closed), or is the server stopping?

    Outside a served app (AppTest, a plain script) it always answers False.
    """
    from streamlit import runtime
    from streamlit.runtime.runtime import RuntimeState
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        return lambda: False
    instance, session_id = runtime.get_instance(), ctx.session_id
    watch_server_stop()

    def gone() -> bool:
        return (
            _STOP_SIGNALLED.is_set() or instance.state in (RuntimeState.STOPPING, RuntimeState.STOPPED) or not instance.is_active_session(session_id)
        )

    return gone


def watched(progress: Callable[..., Any] | None, *checks: Callable[[], None]) -> Callable[..., Any]:
    """`progress` that first stops the job (JobCancelled) when its session went away or the server stops, and runs `checks`
    (e.g. a wall-time limit) at every call. Engine loops call progress often, so a job stops within one step; it also
    pauses there while a pair inspection is being scored (`serving.Priority`)."""
    gone, priority = session_gone(), resources.priority()

    def call(*args: Any, **kwargs: Any) -> Any:
        priority.yield_to_interactive()
        if gone():
            raise JobCancelled("The job stopped: the page that started it was closed, or the server is stopping.")
        for check in checks:
            check()
        return progress(*args, **kwargs) if progress is not None else None

    return call


@contextlib.contextmanager
def heavy_job(what: str) -> Iterator[None]:
    """Run a heavy job in one of the server's slots ($BIASLENS_MAX_JOBS at once); while it waits, its place in line is shown."""
    slots = job_slots()
    notice = st.empty()

    def waiting(position: int, running: int) -> None:
        notice.info(
            f"{md(what)} is queued: position {position:d} in line; {running:d} job{'s' if running != 1 else ''} running, this server "
            f"runs at most {slots.capacity:d} at once ({ENV_MAX_JOBS}). It starts by itself.",
            icon=":material/hourglass_top:",
        )

    try:
        with slots.slot(on_wait=waiting, cancelled=session_gone()):
            notice.empty()
            yield
    finally:
        notice.empty()


def _stop(job: Hashable) -> None:
    st.session_state.setdefault(_PENDING, set()).discard(job)


def run(spec: RunSpec, lm: LanguageModel, dataset: PairDataset, label: str, *, kept: int = 0) -> EvaluationResult | None:
    """Score the run with a progress bar (from `kept`, the pairs the cache holds) and a Stop button; None (message
    shown) if it failed."""
    result = None
    with stoppable(spec, help="Stop scoring. Finished chunks stay in the cache: running again resumes from there."):
        bar = ProgressBar(label, rate_key=speed_key(spec), start=kept)
        with guard():
            result = _run_job(spec, lm, dataset, bar)
        bar.clear()
    return None if result is None else _remember(spec, result)


#: Pairs the time estimate scores untimed first (the model's first batches are slow), then the pairs it times.
WARM_UP_PAIRS = 2
PROBE_PAIRS = 8


def speed_key(spec: RunSpec) -> tuple:
    """What a run's throughput depends on: model, precision, scoring mode, dataset and metrics (not the sample)."""
    return ("run", spec.fingerprint, spec.dtype, spec.compat, spec.dataset_sha256, spec.metrics)


def time_estimate(spec: RunSpec, lm: LanguageModel | Callable[[], LanguageModel], dataset: PairDataset, n_pairs: int, *, key: str) -> None:
    """Before a long run: the time it will take from the throughput measured here, or a button that measures it. `lm`:
    the model, or how to get it when the button is pressed (a comparison holds no model while it shows its notice)."""
    from .progress import estimate, measure

    text = estimate(speed_key(spec), n_pairs)
    if text is not None:
        st.caption(f"Estimated time: {md(text)}.")
        return
    probe = min(PROBE_PAIRS, len(dataset))
    if st.button(
        "Estimate the time",
        key=key,
        icon=":material/timer:",
        type="tertiary",
        help=f"Warms the model up on {WARM_UP_PAIRS} pairs, then scores {probe:,} (not cached) and times them on this machine.",
    ):

        def score(n: int) -> None:
            evaluate(
                lm if isinstance(lm, LanguageModel) else lm(), dataset, list(spec.metrics), cache=None, compat=spec.compat, sample=n, seed=spec.seed
            )

        with st.spinner(f"Timing {probe:,} pairs…"):
            with guard():
                # A model's first batches are slow (allocations, kernels chosen): timed, 3 pairs said "about 2 min 05 s"
                # for a run of 45 s. So the model warms up first, and a warm batch is timed.
                score(min(WARM_UP_PAIRS, probe))
                measure(speed_key(spec), lambda: score(probe), probe)
        st.rerun()


def _run_job(spec: RunSpec, lm: LanguageModel, dataset: PairDataset, bar: ProgressBar) -> EvaluationResult:
    """`evaluate` within the server's limits: pairs × metrics capped, in a job slot, stopped when the session goes away."""
    pairs = min(spec.sample or len(dataset), len(dataset))
    resources.server_settings().check_run(pairs, len(spec.metrics))
    with heavy_job("This run"):
        return evaluate(
            lm,
            dataset,
            list(spec.metrics),
            cache=resources.result_cache(),
            chunk_pairs=CHUNK_PAIRS,
            chunk_seconds=INTERACTIVE_CHUNK_SECONDS,
            progress=watched(bar),
            **_options(spec),
        )


def train_lab_job(chosen: Any, progress: Callable[..., Any]) -> Any:
    """`lab.train_lab_model` within the server's limits: switched on, knobs capped, in a job slot, wall time capped,
    stopped when the session goes away. A model already trained (in the cache) is found without a slot."""
    from biaslens import lab

    from .settings import LAB_MODELS_OF_SESSION

    model = lab.find_lab_model(chosen)
    if model is None:
        server = resources.server_settings()
        server.check_lab(chosen)
        with heavy_job("Training"):
            model = lab.train_lab_model(chosen, progress=watched(progress, server.lab_deadline()))
    mine = st.session_state.setdefault(LAB_MODELS_OF_SESSION, [])
    if str(model.path) not in mine:
        mine.append(str(model.path))
    return model


class Sampled(Protocol):
    """A page's view with a sample (`ui.views.ExplorerView`, `CompareView`, `AnalysesView`)."""

    @property
    def sample(self) -> int | None: ...

    @property
    def seed(self) -> int: ...


def sample_controls(prefix: str, total: int, link: state.Link[Sampled], label: str | None = None) -> tuple[int | None, int]:
    """'Score a sample' toggle (`label`), sample size and seed (the page's link, `ui.state.link`, presets them).

    Returns (sample size or None for every pair, seed).
    """
    if "sample" in link:
        st.session_state[prefix + "sample_on"] = link.view.sample is not None
        if link.view.sample is not None:
            st.session_state[prefix + "sample_n"] = min(link.view.sample, total)
    if "seed" in link:
        st.session_state[prefix + "seed"] = link.view.seed
    st.session_state[prefix + "sample_n"] = max(1, min(int(st.session_state.get(prefix + "sample_n", 200)), total))
    st.session_state.setdefault(prefix + "seed", 0)
    on = st.toggle(label or f"Score a random sample (of {total:,} pairs)", key=prefix + "sample_on", persist_state="session")
    if not on:
        return None, int(st.session_state[prefix + "seed"])
    c1, c2 = st.columns(2)
    n = c1.number_input("Pairs", min_value=1, max_value=total, step=50, key=prefix + "sample_n", persist_state="session")
    seed_value = c2.number_input("Seed", min_value=0, max_value=MAX_SEED, step=1, key=prefix + "seed", persist_state="session")
    return int(n), int(seed_value)

"""Cached heavy resources: models, datasets, the result cache, pair inspections.

A model is loaded once per (model, revision, device, dtype) for all sessions into the
`MODELS` pool (at most $BIASLENS_MAX_MODELS, least recently used evicted) and never
mutated afterwards (the engine's `LanguageModel` is safe to share between threads). The
operator's limits (`biaslens.serving.server.ServerSettings`: which model folders, longest
sentence, rows per uploaded file) are applied here. A failed load is remembered for `FAILURE_TTL_S` seconds, so an
unreachable hub costs its timeout once rather than on every rerun; the sidebar's Retry
button forgets it. A local folder's model and its failure are keyed by the folder's present contents too
(`folder_version`): a folder fixed or replaced in place is loaded afresh, its old model let go.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Iterator

import streamlit as st

from biaslens.engine.cache import ResultCache
from biaslens.data.datasets import PairDataset, canonical_name, load_dataset
from biaslens.data.multiple_choice import ChoiceDataset, choice_dataset_name, is_choice_path
from biaslens.errors import BiaslensError, InputError, ServerConfigError
from biaslens.engine.evaluation import PairInspection
from biaslens.kurita import parse_word_list
from biaslens.engine.fingerprint import folder_version
from biaslens.engine.identity import distinct_models as _distinct_models, model_identity
from biaslens.engine.models import LanguageModel, load_model
from biaslens.analyses.sanity import SanityReport, VocabularyReport, vocabulary_report
from biaslens.analyses.sanity import model_verdict
from biaslens.serving.server import InspectionBatcher, ModelPool, Priority, ServerSettings

from .feedback import md, show_error
from .settings import Settings, _dataset_label, model_label

FAILURE_TTL_S = 120.0


@dataclass
class _Failures:
    """Recent load failures, shared by all sessions: key -> (time, exception)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    entries: dict[tuple, tuple[float, BaseException]] = field(default_factory=dict)

    def get(self, key: tuple) -> BaseException | None:
        with self.lock:
            entry = self.entries.get(key)
            if entry is None or time.monotonic() - entry[0] > FAILURE_TTL_S:
                self.entries.pop(key, None)
                return None
            return entry[1]

    def put(self, key: tuple, exc: BaseException) -> None:
        with self.lock:
            self.entries[key] = (time.monotonic(), exc)

    def forget(self, prefix: tuple) -> None:
        """Forget the failures whose key starts with `prefix` (a model's, whatever its folder's version)."""
        with self.lock:
            for key in [k for k in self.entries if k[: len(prefix)] == prefix]:
                del self.entries[key]


@st.cache_resource(show_spinner=False)
def _failures() -> _Failures:
    return _Failures()


def _remembering_failures(key: tuple, load):
    failed = _failures().get(key)
    if failed is not None:
        raise failed
    try:
        return load()
    except Exception as exc:
        _failures().put(key, exc)
        raise


# ---------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------


#: The loaded models, shared by every session of this server process.
MODELS = ModelPool()


def server_settings() -> ServerSettings:
    """The operator's limits, read from the environment ($BIASLENS_MODEL_DIRS, $BIASLENS_MAX_TOKENS, ...); $BIASLENS_LOCAL
    (a run on the user's own machine) only where the app listens on this machine only (Streamlit's server.address)."""
    return ServerSettings.from_env(address=st.get_option("server.address"))


@contextlib.contextmanager
def confined() -> Iterator[None]:
    """Around a page run: every file the engine opens for a user (a dataset found in a data folder, WEAT and flag lists,
    each file of a model folder) must resolve inside the server's allowed folders (`ServerSettings.in_effect`). Settings
    that cannot be read allow only biaslens's own folders (the pages say what is wrong with them). A fragment's rerun
    runs outside it: `get_model` and `get_dataset` apply the same settings themselves."""
    try:
        server = server_settings()
    except ServerConfigError:
        server = ServerSettings()
    with server.in_effect():
        yield


def _folder_version(model: str, revision: str | None) -> tuple[str, ...]:
    """The present contents of a local model's folder (`folder_version`); () for a hub model, or a folder this server
    may not open (loading it says why)."""
    try:
        server_settings().check_model(model)
        identity = model_identity(model, revision)
    except BiaslensError:
        return ()
    return folder_version(Path(identity.name)) if identity.source == "local" else ()


def _load_model(model: str, revision: str | None, device: str, dtype: str, version: tuple[str, ...] = ()) -> LanguageModel:
    """The pooled model (refused if its folder is not allowed), refusing sentences over the server's limit. The pool keys
    it by identity (`model_identity`: the resolved folder, or the hub id and revision), so every spelling of one folder
    (`M/mid`, `M/./mid`, `M/mid/`) is one loaded model, and by the folder's `version`: a folder changed since its model
    was loaded is loaded again, the old model let go."""
    server = server_settings()
    server.check_model(model)
    identity = model_identity(model, revision)
    key = (identity, device, dtype, server.max_tokens)

    def load() -> LanguageModel:
        with server.in_effect():  # (also where no page run is around it: a fragment's rerun)
            return server.limit(load_model(model, revision=revision, device=device, dtype=dtype))

    MODELS.discard(lambda k: isinstance(k, tuple) and k[:4] == key and k[4:] != (version,))
    return MODELS.get((*key, version), load, capacity=server.max_models)


def get_model(settings: Settings, model: str | None = None) -> LanguageModel:
    """The cached model of `settings` (or another `model` with the same device and dtype); raises on failure. A local
    folder changed in place (a model fixed or replaced) is loaded afresh, not served from the pool nor refused for
    its old failure."""
    key = settings.model_key if model is None else (model, None, settings.device, settings.dtype)
    version = _folder_version(key[0], key[1])
    return _remembering_failures(("model", *key, version), lambda: _load_model(*key, version=version))


def forget_failure(settings: Settings) -> None:
    """Let the next `get_model` try again (the sidebar's Retry button)."""
    _failures().forget(("model", *settings.model_key))


def model_or_none(settings: Settings, model: str | None = None, *, where=None) -> LanguageModel | None:
    """The cached model, or None after showing why it could not be loaded."""
    try:
        with st.spinner(f"Loading {md(model_label(model or settings.model))}…"):
            return get_model(settings, model)
    except Exception as exc:
        show_error(exc, where=where)
        return None


def model_or_stop(settings: Settings) -> LanguageModel:
    """The cached model, or the reason it failed shown in the page, and the page stops there."""
    lm = model_or_none(settings)
    if lm is None:
        st.stop()
    return lm


def distinct_models(models: list[str], what: str = "This comparison", *, where=None) -> list[str] | None:
    """The models of a comparison, each once: names that mean one model (`M/mid`, `M/./mid`, `M/mid/`, a link to it;
    `biaslens.engine.identity`) are one, the first spelling kept and the others named in a caption. None (the message
    shown) when more distinct models are named than the server compares at once ($BIASLENS_MAX_COMPARE_MODELS)."""
    kept, repeats = _distinct_models(models)
    repeats = {r: first for r, first in repeats.items() if r.strip() != first.strip()}  # (the same name twice needs no note)
    target = where if where is not None else st
    if repeats:
        named = "; ".join(f"{md(r)} is {md(first)}" for r, first in list(repeats.items())[:5])
        more = f" and {len(repeats) - 5:,} more" if len(repeats) > 5 else ""
        target.caption(f"The same model named twice, compared once: {named}{more}.")
    try:
        server_settings().check_models(len(kept), what)
    except BiaslensError as exc:
        show_error(exc, where=where)
        return None
    return kept


def sanity(settings: Settings, lm: LanguageModel) -> SanityReport:
    """The model's one sanity verdict (`biaslens.analyses.sanity.model_verdict`: computed once per model, shared by every page)."""
    return model_verdict(lm)


@st.cache_data(show_spinner=False, max_entries=64)
def _vocabulary(_lm: LanguageModel, name: str, fingerprint: str, texts: tuple[str, ...]) -> VocabularyReport:
    return vocabulary_report(_lm, texts)


def vocabulary(settings: Settings, lm: LanguageModel, texts) -> VocabularyReport:
    """Which words of `texts` the model `lm` does not know (cached per model and texts; the model itself, not the
    sidebar's: a comparison asks it of each of its models)."""
    return _vocabulary(lm, lm.name, lm.fingerprint, tuple(str(t) for t in texts))


# ---------------------------------------------------------------------------------------
# Datasets and results
# ---------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False, max_entries=8)
def _load_dataset(name: str, data_dir: str | None) -> PairDataset | ChoiceDataset:
    with server_settings().in_effect():  # (also where no page run is around it: a fragment's rerun)
        return load_dataset(name, data_dir=data_dir or None)


def get_dataset(settings: Settings, name: str | None = None) -> PairDataset:
    """The sentence pairs of `settings`' dataset (or `name`'s), cached for all sessions; raises on failure (`_dataset`)."""
    dataset = _dataset(settings, name, accept_choices=False)
    assert isinstance(dataset, PairDataset)  # `_dataset` refuses the rest
    return dataset


def _dataset(settings: Settings, name: str | None = None, *, accept_choices: bool = False) -> PairDataset | ChoiceDataset:
    """The dataset of `settings` (or `name`), cached for all sessions; raises on failure.

    A user's own pairs file (not a built-in dataset) is refused outside the folders the server
    allows ($BIASLENS_DATA_DIRS) and above $BIASLENS_MAX_UPLOAD_ROWS pairs. A multiple-choice dataset (BBQ, Winogender)
    is refused in one line unless `accept_choices` (the inspector and the explorer read it: `ui.choices`).
    """
    name = name or settings.dataset
    builtin = canonical_name(name) or choice_dataset_name(name)
    if builtin is None:
        server_settings().check_data(name)
        if not is_choice_path(name):  # (BBQ category files and Winogender's folder are read by their own reader)
            server_settings().check_pairs_file(name, f"The pairs file {name}")
    key = (builtin or name, data_dir(settings))
    dataset = _remembering_failures(("dataset", *key), lambda: _load_dataset(*key))
    if isinstance(dataset, ChoiceDataset) and not accept_choices:
        raise InputError(
            f"{dataset.title} holds multiple-choice items, not sentence pairs: the Pair inspector and the Dataset explorer read it; "
            "choose a pair dataset in the sidebar for this page."
        )
    if builtin is None and dataset.kind == "pairs":
        server_settings().check_rows(len(dataset), f"The pairs file {dataset.path.name}")
    return dataset


def data_dir(settings: Settings) -> str | None:
    """The settings' data folder, refused outside the folders the server allows ($BIASLENS_DATA_DIRS)."""
    if settings.data_dir:
        server_settings().check_data(settings.data_dir)
    return settings.data_dir


def upload_bytes(upload) -> bytes:
    """The bytes of a user's uploaded word list, refused above $BIASLENS_MAX_UPLOAD_ROWS items (counted as the parser counts
    them: every comma-separated item of every line), before it is parsed."""
    data = upload.getvalue()
    server_settings().check_word_list(data, upload.name)
    return data


def pasted_words(text: str, what: str, *, lowercase: bool = False) -> tuple[str, ...]:
    """Words a user typed or pasted (one a line, commas also separate), refused above $BIASLENS_MAX_UPLOAD_ROWS."""
    words = parse_word_list(text, lowercase=lowercase).words
    server_settings().check_rows(len(words), what)
    return words


def dataset_or_none(settings: Settings, name: str | None = None) -> PairDataset | None:
    """The dataset, or None after showing why it is missing (a multiple-choice dataset, which this page cannot read, too)."""
    try:
        with st.spinner(f"Loading {md(_dataset_label(name or settings.dataset))}…"):
            return get_dataset(settings, name)
    except Exception as exc:
        show_error(exc)
        return None


def any_dataset_or_stop(settings: Settings) -> PairDataset | ChoiceDataset:
    """The sidebar's dataset, sentence pairs or multiple-choice items (BBQ, Winogender: the pages that read them), or
    the page stops after showing why it cannot be had."""
    try:
        with st.spinner(f"Loading {md(_dataset_label(settings.dataset))}…"):
            return _dataset(settings, accept_choices=True)
    except Exception as exc:
        show_error(exc)
        st.stop()


def dataset_or_stop(settings: Settings, name: str | None = None) -> PairDataset:
    dataset = dataset_or_none(settings, name)
    if dataset is None:
        st.stop()
    return dataset


@st.cache_resource(show_spinner=False)
def result_cache() -> ResultCache:
    """The engine's result cache (in $BIASLENS_CACHE_DIR), shared by all sessions."""
    return ResultCache()


# ---------------------------------------------------------------------------------------
# One pair
# ---------------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _batcher() -> InspectionBatcher:
    """Pair inspections of every session on the same model, scored in shared batches ($BIASLENS_INSPECT_BATCH_MS)."""
    return InspectionBatcher()


@st.cache_resource(show_spinner=False)
def priority() -> Priority:
    """Pair inspections before background jobs: dataset runs, analyses, Kurita runs and lab training pause while one is scored."""
    return Priority()


def inspection_batcher() -> InspectionBatcher:
    batcher, window = _batcher(), server_settings().inspect_batch_ms / 1000
    if batcher.window_s != window:
        batcher.configure(window)
    return batcher


@st.cache_data(show_spinner=False, max_entries=64)
def _inspection(model_key: tuple, fingerprint: str, max_length: int, compat: str, stereo: str, anti: str) -> PairInspection:
    lm = _load_model(*model_key)
    # metrics=None: the paper's five, less any this model cannot give (named in the result's notes).
    with priority().interactive():
        return inspection_batcher().inspect(lm, stereo, anti, metrics=None, compat=compat, top_k=5, attention_matrices=True)


def inspection(settings: Settings, lm: LanguageModel, stereo: str, anti: str) -> PairInspection:
    """`inspect_pair` with every paper metric, top-5 and attention matrices, cached per model and pair; requests of
    several sessions that arrive together are scored in shared batches (`InspectionBatcher`).

    Raises `BiaslensError` for bad input (empty, identical or over-long sentences).
    """
    return _inspection(settings.model_key, lm.fingerprint, lm.max_length, settings.compat, stereo, anti)


__all__ = [
    "BiaslensError",
    "confined",
    "data_dir",
    "distinct_models",
    "dataset_or_none",
    "dataset_or_stop",
    "forget_failure",
    "get_dataset",
    "get_model",
    "inspection",
    "model_or_none",
    "model_or_stop",
    "result_cache",
    "sanity",
    "vocabulary",
    "server_settings",
    "pasted_words",
    "upload_bytes",
]

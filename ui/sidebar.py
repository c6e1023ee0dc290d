"""The sidebar: the global settings' controls (model, data, scoring mode, advanced), the model's status and sanity verdict.

app.py draws it once per run with `render_sidebar()`; pages read the result with `ui.settings.current()`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import streamlit as st

from biaslens import lab
from biaslens.data.datasets import DATASETS, canonical_name
from biaslens.data.multiple_choice import CHOICE_DATASETS
from biaslens.engine.metrics import KINDS
from biaslens.errors import HubUnreachableError
from biaslens.engine.metrics import COMPAT_MODES
from biaslens.engine.models import DTYPES, PRESETS
from biaslens.serving.server import ServerSettings

from . import classroom, resources, state
from .feedback import explain, md, offer_lab_model
from .views import GlobalView
from .settings import (
    _KEY,
    CHOOSE,
    LAB_MODELS_OF_SESSION,
    Settings,
    _dataset_label,
    current,
    default_model,
    default_settings,
    lab_model_name,
    model_label,
    use_lab_pairs,
)

_CUSTOM_MODELS = "settings.custom_models"
#: Trained bias-lab models offered in the model list (newest first).
MAX_LAB_CHOICES = 8

COMPAT_LABELS = {
    "default": "default (the papers' equations)",
    "kaneko2022": "kaneko2022 (the released code, to the digit)",
}


@dataclass(frozen=True)
class ModelChoice:
    value: str  # what load_model receives: a hub id or a folder
    label: str  # what the sidebar shows


def model_choices() -> list[ModelChoice]:
    """Every model the app offers wherever a model is chosen (the sidebar, the comparison's and the inspector's model
    lists): the configured default first, the presets, the bias lab's models in the cache (this session's, unless the
    server shares them all), the model folders in the server's allowed folders (`BIASLENS_MODEL_DIRS`), and the hub ids
    and folders this session already used.

    The hook for new offline defaults (e.g. a trained lab model): add a choice here.
    """
    choices = [ModelChoice(default_model(), f"{model_label(default_model())} (default)")]
    choices += [ModelChoice(name, f"{name} · {about}") for name, about in PRESETS.items() if name != default_model()]
    try:  # the bias lab's trained models (in biaslens's cache): they need no network
        lab_models = lab.list_lab_models()[:MAX_LAB_CHOICES]
    except OSError:
        lab_models = []
    server = _server_settings()
    if not (server and server.share_lab_models):  # a class's lab models stay with the session that trained them
        mine = set(st.session_state.get(LAB_MODELS_OF_SESSION, ())) | {str(lab.cached_lab_model_path() or "")}
        lab_models = [m for m in lab_models if str(m.path) in mine]
    choices += [ModelChoice(str(m.path), lab_model_name(m)) for m in lab_models]
    choices += [ModelChoice(str(folder), f"{folder.name} (folder)") for folder in (server.model_folders() if server else [])]
    choices += [ModelChoice(value, model_label(value)) for value in st.session_state.get(_CUSTOM_MODELS, [])]
    unique: dict[str, ModelChoice] = {}
    for choice in choices:  # each model once, where it first comes
        unique.setdefault(choice.value, choice)
    return list(unique.values())


def _server_settings() -> ServerSettings | None:
    try:
        return resources.server_settings()
    except Exception:  # a bad setting is reported where the settings are read; here: none of what they would offer
        return None


#: The placeholder of a list of models that grows as models are added (the comparison's).
ADD_MODEL = "Add a model: pick one, or type a hub id or a folder and press Enter"


def pick_models(label: str, key: str, *, help: str, placeholder: str = "Choose or type a model") -> list[str]:
    """A list of models to choose: everything `model_choices` offers, the sidebar's model and those chosen; a hub id or a
    folder typed and entered is added (and offered everywhere for the rest of the session). Returns the chosen models."""
    choices = model_choices()
    labels = {c.value: c.label for c in choices}
    chosen = [str(m) for m in st.session_state.get(key, [])]
    options = list(dict.fromkeys([c.value for c in choices] + [current().model] + chosen))
    models = st.multiselect(
        label,
        options,
        key=key,
        format_func=lambda v: labels.get(v) or model_label(v),
        accept_new_options=True,
        persist_state="session",
        placeholder=placeholder,
        help=help,
        on_change=_named_chips,
        args=(key,),
    )
    for model in models:
        remember_model(model)
    return models


def _named_chips(key: str) -> None:
    """A model typed into a list of models: its chip shows its name like the others ("roberta", not the folder's whole path).
    The browser keeps a typed value's chip as typed until the page sets the list itself: set it, unchanged."""
    st.session_state[key] = list(st.session_state.get(key) or [])


def device_choices() -> list[str]:
    import torch

    devices = ["auto", "cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        devices.append("mps")
    return devices


def _adopt_url(defaults: Settings) -> None:
    """The global part of the view a link or a page switch brings (model, dataset, compat, ...) becomes the widgets' state."""
    link = state.link(GlobalView)
    for name in ("model", "dataset", "compat", "device", "dtype", "revision", "data_dir"):
        value = getattr(link.view, name)
        if name not in link or (value is None and name in ("model", "dataset")):  # None: the default, kept below
            continue
        if name == "model" and value:
            remember_model(value)
        if name == "device" and value not in device_choices():
            state.reject(name, value, "one of " + ", ".join(device_choices()) + " (on this machine)")
            continue
        st.session_state[f"settings.{name}"] = value or ""
    st.session_state.setdefault("settings.model", defaults.model)
    lab_default = lab.lab_model_of(st.session_state["settings.model"]) if "settings.dataset" not in st.session_state else None
    st.session_state.setdefault("settings.dataset", str(lab_default.path / lab.PAIRS_FILE) if lab_default else defaults.dataset)
    st.session_state.setdefault("settings.compat", defaults.compat)
    st.session_state.setdefault("settings.device", defaults.device)
    st.session_state.setdefault("settings.dtype", defaults.dtype)
    st.session_state.setdefault("settings.revision", "")
    st.session_state.setdefault("settings.data_dir", defaults.data_dir or "")


def remember_model(value: str) -> None:
    """A model the user typed or opened by a link stays among the models offered (`model_choices`) for the session."""
    custom = st.session_state.setdefault(_CUSTOM_MODELS, [])
    value = str(value).strip()
    if value and value not in custom and value not in {c.value for c in model_choices()}:
        custom.append(value)


def _model_changed() -> None:
    """A model chosen in the sidebar: remembered; a lab model brings its own held-out pairs (it knows no other words)."""
    value = st.session_state["settings.model"]
    remember_model(value)
    model = lab.lab_model_of(value)
    if model is not None and canonical_name(str(st.session_state.get("settings.dataset", ""))) is not None:
        use_lab_pairs(model)


def _valid(key: str, options: list[str]) -> None:
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]


def render_sidebar() -> Settings:
    """Draw the global controls in the sidebar and return the settings (app.py calls this once per run)."""
    defaults = default_settings()
    _adopt_url(defaults)
    for name, value in st.session_state.pop(CHOOSE, {}).items():  # e.g. the offline lab model, trained in the previous run
        st.session_state[f"settings.{name}"] = value
    choices = model_choices()
    labels = {c.value: c.label for c in choices}
    options = [c.value for c in choices]
    if st.session_state["settings.model"] not in options:
        remember_model(st.session_state["settings.model"])
        options.append(st.session_state["settings.model"])

    sb = st.sidebar
    sb.markdown("### Model")
    model = sb.selectbox(
        "Model",
        options,
        key="settings.model",
        format_func=lambda v: labels.get(v) or model_label(v),
        accept_new_options=True,
        help="A preset, any Hugging Face hub id (e.g. bert-base-uncased), or a local model folder: type its path and press Enter "
        "(on a shared server, a folder its operator allows in BIASLENS_MODEL_DIRS).",
        on_change=_model_changed,
    )
    status_box = sb.container()
    sb.markdown("### Data")
    dataset_options = [*DATASETS, *CHOICE_DATASETS]
    if st.session_state["settings.dataset"] not in dataset_options:
        dataset_options.append(st.session_state["settings.dataset"])
    dataset = sb.selectbox(
        "Dataset",
        dataset_options,
        key="settings.dataset",
        format_func=_dataset_label,
        accept_new_options=True,
        help="CrowS-Pairs, StereoSet (intrasentence), or the path of a pairs file: a CSV with sent_more, sent_less "
        "(and optional bias_type, stereo_antistereo) columns, or StereoSet JSON. BBQ and Winogender are multiple choice: "
        "the Pair inspector and the Dataset explorer read them.",
    )
    _valid("settings.compat", list(COMPAT_MODES))
    compat = sb.radio(
        "Scoring mode",
        list(COMPAT_MODES),
        key="settings.compat",
        format_func=lambda v: COMPAT_LABELS[v],
        help="kaneko2022 reproduces the released reference code (SSS cross-mean, CPS rounded to 3 decimals, "
        "accuracy over all positions) so published numbers can be checked.",
    )
    _valid("settings.device", device_choices())
    _valid("settings.dtype", list(DTYPES))
    advanced = sb.expander("Advanced", key="settings.advanced", on_change="rerun")
    with advanced:
        if advanced.open:  # drawn once opened: four widgets less for the browser to draw on every page; their values stay
            st.selectbox("Device", device_choices(), key="settings.device", persist_state="session", help="auto: CUDA, then MPS, then the CPU.")
            st.selectbox("Precision", list(DTYPES), key="settings.dtype", persist_state="session", help="Half precision needs a GPU.")
            st.text_input(
                "Hub revision", key="settings.revision", persist_state="session", help="A branch, tag or commit of a hub model; empty = main."
            )
            st.text_input(
                "Data folder",
                key="settings.data_dir",
                persist_state="session",
                help="Searched (recursively) for crows_pairs_anonymized.csv and StereoSet's files.",
            )
    device, dtype, revision, data_dir = (str(st.session_state[f"settings.{name}"]) for name in ("device", "dtype", "revision", "data_dir"))
    settings = Settings(
        model=str(model).strip() or defaults.model,
        revision=revision.strip() or None,
        device=device,
        dtype=dtype,
        compat=compat,
        dataset=str(dataset).strip() or defaults.dataset,
        data_dir=data_dir.strip() or None,
    )
    st.session_state[_KEY] = settings
    state.set_global(GlobalView(**dataclasses.asdict(settings), classroom=classroom.on()))
    _model_status(settings, status_box)
    return settings


def _model_status(settings: Settings, box) -> None:
    """The model's status and its sanity verdict, under the model box."""
    with box:
        try:
            with st.spinner(f"Loading {md(model_label(settings.model))}…"):
                lm = resources.get_model(settings)
        except Exception as exc:
            message, _ = explain(exc)
            if isinstance(exc, HubUnreachableError):
                st.info(message, icon=":material/wifi_off:")
                offer_lab_model("sidebar")
            else:
                st.error(message, icon=":material/error:")
                st.caption("Type another hub id or the path of a local model folder into the Model box. The rest of the app keeps working.")
            if st.button("Retry loading", key="settings.retry"):
                resources.forget_failure(settings)
                st.rerun()
            return
        lab_model = lab.lab_model_of(settings.model)
        where = "local folder" if lm.source == "local" else f"hub, revision {(lm.revision or 'main')[:10]}"
        st.caption(  # the name in full: a long one (a lab scenario's) is cut off in the box above
            f"**Loaded** {md(model_label(settings.model))}: {md(lm.model_type)} · {lm.num_layers:d} layers"
            f"{f' × {lm.num_heads:d} heads' if lm.num_heads else ' (no attention heads)'} · {md(where)} · "
            f"{md(lm.device)} · {md(str(lm.dtype).removeprefix('torch.'))} · up to {lm.max_length:,} tokens"
        )
        try:
            report = resources.sanity(settings, lm)
        except Exception as exc:
            st.warning(f"Sanity check failed: {explain(exc)[0]}")
            return
        show = {"ok": st.success, "weak": st.warning, "untrained": st.warning}[report.status]
        icon = {"ok": ":material/check_circle:", "weak": ":material/warning:", "untrained": ":material/dangerous:"}[report.status]
        show(f"**Sanity check:** {md(report.message)}", icon=icon)
        corpus = "sentences of its training corpus" if lab_model else "plain sentences"
        reading = KINDS[lm.kind].reading  # "nothing masked" for a masked model, "given the tokens before it" for a causal one
        st.caption(f"Token prediction on {report.n_sentences:,} {corpus} ({report.n_tokens:,} tokens), each {reading}.")
        if lab_model:
            about = md(lab.describe_settings(lab_model.settings))  # it names the lab's groups and attributes, as typed
            st.caption(f"Bias-lab model, {about}: it knows only the lab's words and templates (see the Bias lab page).")
        with st.expander("Model details"):
            # As text: a revision (or a folder's name) from a link could otherwise close inline code and add a link or an image.
            st.caption(f"Model {md(settings.model)}" + (f" · revision {md(settings.revision)}" if settings.revision else ""))

"""The global settings (drawn in the sidebar by `ui.sidebar`, read by every page with `current()`) and the names people see
for models and datasets.

Environment variables preset them for a server or a test: `BIASLENS_MODEL` (the model
selected at first), `BIASLENS_DATA_DIR` (where datasets are looked for),
`BIASLENS_CACHE_DIR` (the result cache; read by the engine).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from biaslens import lab
from biaslens.data.datasets import DATASETS
from biaslens.data.multiple_choice import CHOICE_DATASETS
from biaslens.engine.models import DEFAULT_MODEL

from .views import GlobalView

#: Session key of the sidebar values to select at the start of the next run ({"model": ..., "dataset": ...}), set e.g. by
#: `ui.feedback.offer_lab_model` once the offline lab model is trained.
CHOOSE = "settings.choose"

ENV_MODEL = "BIASLENS_MODEL"
ENV_DATA_DIR = "BIASLENS_DATA_DIR"

_KEY = "settings.current"


@dataclass(frozen=True)
class Settings:
    """What every page needs to know: which model, how to run it, which data."""

    model: str
    revision: str | None = None
    device: str = "auto"
    dtype: str = "float32"
    compat: str = "default"
    dataset: str = "crows-pairs"
    data_dir: str | None = None

    @property
    def model_key(self) -> tuple[str, str | None, str, str]:
        """The key a loaded model is cached under: (model, revision, device, dtype)."""
        return (self.model, self.revision, self.device, self.dtype)


def default_model() -> str:
    """$BIASLENS_MODEL, else the engine's default hub model."""
    return os.environ.get(ENV_MODEL, "").strip() or DEFAULT_MODEL


def default_settings() -> Settings:
    return Settings(model=default_model(), data_dir=os.environ.get(ENV_DATA_DIR, "").strip() or None)


def settings_of(g: GlobalView) -> Settings:
    """The settings a view's global part names (e.g. a pinned inspection's); what it leaves out is the server's default."""
    default = default_settings()
    return Settings(
        model=g.model or default.model,
        revision=g.revision,
        device=g.device,
        dtype=g.dtype,
        compat=g.compat,
        dataset=g.dataset or default.dataset,
        data_dir=g.data_dir or default.data_dir,
    )


#: Session key: the lab models this session trained or opened (listed in its sidebar unless the server shares them all).
LAB_MODELS_OF_SESSION = "settings.lab_models"


def lab_model_name(model: lab.LabModel) -> str:
    """A lab model as people call it: 'lab model: planted association' (plus its seed when not 0)."""
    s = model.settings
    seed = f", seed {s.seed}" if s.seed else ""
    return f"lab model: {lab.SCENARIOS[s.scenario].title.lower()}{seed}"


def model_label(value: str) -> str:
    """A friendly model name: the hub id, a local folder's name, or the lab scenario's name (never a cache path)."""
    value = str(value).strip()
    model = lab.lab_model_of(value)
    if model is not None:
        return lab_model_name(model)
    if "/" in value and (value.startswith(("/", "~", ".")) or Path(value).expanduser().exists()):
        return Path(value.rstrip("/")).name or value
    return value


def model_names(models) -> dict[str, str]:
    """Distinct friendly names for several models (tables, charts, legends): lab models by scenario, folders by name."""
    from biaslens.analyses.explore import short_names

    short = short_names(list(models))
    names = {}
    for m in models:
        model = lab.lab_model_of(m)
        names[m] = lab_model_name(model) if model is not None else short[m]
    if len(set(names.values())) < len(names):  # two lab models of one scenario: fall back to the distinct short names
        return short
    return names


def _dataset_label(value: str) -> str:
    """A benchmark's title, 'held-out pairs of <lab model>' for a bias-lab model's pairs file, else the file's name."""
    if value in DATASETS:
        return DATASETS[value].title
    if value in CHOICE_DATASETS:
        return CHOICE_DATASETS[value].title + ", multiple choice"
    model = lab.lab_model_of_pairs(value)
    return f"held-out pairs of the {lab_model_name(model)}" if model else (Path(value).name or value)


def dataset_label(dataset) -> str:
    """A loaded dataset's name for people: 'crows-pairs', 'held-out pairs of the lab model: …', or its file name."""
    model = lab.lab_model_of_pairs(dataset.path)
    if model is not None:
        return f"held-out pairs of the {lab_model_name(model)}"
    return dataset.name if dataset.name != "custom" else Path(dataset.path).name


def short_dataset_name(dataset) -> str:
    """A dataset's name in tables and reports: 'crows-pairs', 'lab pairs: planted association', or the file's stem."""
    model = lab.lab_model_of_pairs(dataset.path)
    if model is not None:
        return "lab pairs: " + lab_model_name(model).removeprefix("lab model: ")
    return dataset.name if dataset.name != "custom" else Path(dataset.path).stem


def pair_label(dataset) -> str:
    """The short prefix of a pair's number: 'crows-pairs', 'lab pairs', or the file's name (never 'custom')."""
    if lab.lab_model_of_pairs(dataset.path) is not None:
        return "lab pairs"
    return dataset.name if dataset.name != "custom" else Path(dataset.path).stem


def selected_lab_model() -> lab.LabModel | None:
    """The bias-lab model selected in the sidebar, or None (a hub or other local model)."""
    return lab.lab_model_of(current().model)


def use_lab_pairs(model: lab.LabModel) -> None:
    """Callback: make the lab model's held-out pairs the sidebar's dataset."""
    st.session_state["settings.dataset"] = str(model.path / lab.PAIRS_FILE)


def current() -> Settings:
    """The settings the sidebar holds in this run (defaults if the sidebar has not been drawn)."""
    return st.session_state.get(_KEY) or default_settings()

"""Which model a name means, before anything loads: one identity for every spelling of the same model.

`M/mid`, `M/./mid`, `M/mid/`, `~/M/mid` and a link to it are one folder; `bert-base-cased` at revision `main` is one hub model
whatever else is typed around it. `model_identity` resolves a name the way `load_model` reads it (a folder on this machine
when the name is a path or exists, else a hub id), so a comparison de-duplicates its models and the app's model pool loads
each model once (`biaslens.serving.server.ModelPool`, keyed by identity). Nothing is read but the folder's path.
`check_hub_id` refuses a name the hub would reject, with the rule it breaks. No torch here: a zoo plan is checked with it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

from biaslens.errors import InputError

#: A hub model's revision when none is given (what `load_model` asks the hub for).
DEFAULT_REVISION = "main"


@dataclass(frozen=True, order=True)
class ModelIdentity:
    """One model: a local folder (its resolved path; links and `..` followed) or a hub id at a revision."""

    source: Literal["local", "hub"]
    name: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.name if self.source == "local" else f"{self.name}@{self.revision}"


def looks_like_path(name: str) -> bool:
    """Hub ids are `name` or `org/name`; anything else is meant as a folder (what `load_model` reads as one)."""
    return name.startswith(("/", ".", "~")) or "\\" in name or name.count("/") > 1


#: The longest hub id part (the hub's own rule).
_HUB_PART_MAX = 96
#: The most characters of a refused name a message repeats.
_SHOWN_MAX = 60


def check_hub_id(name: str) -> None:
    """Refuse a hub id the Hugging Face hub would reject, with the rule it breaks (one line, no HFValidationError)."""
    rule = "hub ids are `name` or `org/name` of letters, digits, '-', '_' and '.'"
    shown = repr(name if len(name) <= _SHOWN_MAX else name[:_SHOWN_MAX] + "…")
    parts = name.split("/")
    if len(parts) > 2 or not all(parts):
        raise InputError(f"{shown} is not a hub id: {rule}.")
    for part in parts:
        bad = next((c for c in part if not (c.isascii() and (c.isalnum() or c in "-_."))), None)
        if bad is not None:
            character = "a space" if bad == " " else repr(bad)
            raise InputError(f"{shown} is not a hub id: it contains {character}, and {rule}.")
        if "--" in part or ".." in part:
            raise InputError(f"{shown} is not a hub id: it contains '--' or '..', which hub ids may not.")
        if part[0] in "-." or part[-1] in "-.":
            raise InputError(f"{shown} is not a hub id: a hub id's parts may not start or end with '-' or '.'.")
        if len(part) > _HUB_PART_MAX:
            raise InputError(f"{shown} is not a hub id: its parts are at most {_HUB_PART_MAX} characters.")
    if name.endswith(".git") or name.endswith(".ipynb"):
        raise InputError(f"{shown} is not a hub id: it may not end with .git or .ipynb.")


def model_identity(name: str, revision: str | None = None) -> ModelIdentity:
    """The model `name` means: a local folder (resolved; a revision does not apply to it) or a hub id at `revision`
    (default `main`). A name with a NUL or one the filesystem cannot hold is refused in one line (`InputError`)."""
    text = str(name).strip()
    if not text:
        raise InputError("No model given: name a hub id (e.g. bert-base-cased) or a local folder.")
    if "\0" in text:
        raise InputError("A model name holds a NUL character, which no folder or hub id holds: remove it.")
    local = Path(os.path.expanduser(text))
    if looks_like_path(text) or os.path.exists(local):  # (os.path: a name too long for a path is no file, never an OSError)
        try:
            resolved = local.resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a loop of links, a name too long
            raise InputError(f"The model folder {text} cannot be resolved ({exc}).") from exc
        return ModelIdentity("local", str(resolved))
    return ModelIdentity("hub", text, (revision or "").strip() or DEFAULT_REVISION)


def distinct_models(names: Iterable[str], revision: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The names that mean different models, in order (the first spelling of each kept), and each dropped name -> the
    name it repeats. A name that cannot be resolved is kept (loading it says why)."""
    kept: list[str] = []
    seen: dict[ModelIdentity | str, str] = {}
    repeats: dict[str, str] = {}
    for name in names:
        try:
            key: ModelIdentity | str = model_identity(name, revision)
        except InputError:
            key = str(name)
        if key in seen:
            repeats[str(name)] = seen[key]
            continue
        seen[key] = str(name)
        kept.append(str(name))
    return kept, repeats


__all__ = ["DEFAULT_REVISION", "ModelIdentity", "check_hub_id", "distinct_models", "looks_like_path", "model_identity"]

"""Which model a name means, before anything loads: one identity for every spelling of the same model.

`M/mid`, `M/./mid`, `M/mid/`, `~/M/mid` and a link to it are one folder; `bert-base-cased` at revision `main` is one hub model
whatever else is typed around it. `model_identity` resolves a name the way `load_model` reads it (a folder on this machine
when the name is a path or exists, else a hub id), so a comparison de-duplicates its models and the app's model pool loads
each model once (`biaslens.serving.server.ModelPool`, keyed by identity). Nothing is read but the folder's path.
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


__all__ = ["DEFAULT_REVISION", "ModelIdentity", "distinct_models", "looks_like_path", "model_identity"]

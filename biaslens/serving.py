"""Settings for running biaslens as a shared server (a class, a team), and the model pool.

A server operator sets these environment variables before starting the app; the app reads
them through `ServerSettings.from_env()` and applies them. The Python API and the CLI do
not: a researcher on their own machine loads any folder and any sentence the model takes.

| variable | default | what |
| --- | --- | --- |
| `BIASLENS_MODEL_DIRS` | (none) | extra folders (separated by `:`; `;` on Windows) whose model folders the app may load; `*` = any folder |
| `BIASLENS_DATA_DIRS` | (none) | extra folders whose dataset files (and sub-folders) the app may read; `*` = any folder |
| `BIASLENS_MAX_TOKENS` | the model's own limit | longest sentence the app scores, in tokens (special tokens included) |
| `BIASLENS_MAX_UPLOAD_ROWS` | 10000 | most rows (lines) of a file or pasted list a user brings: a custom pairs file, an attribute list |
| `BIASLENS_MAX_MODELS` | 3 | most models kept loaded at once; the least recently used is evicted |

Local model folders the app may always load: the Hugging Face cache (where hub models are
downloaded), biaslens's own cache folder (bias-lab models) and the folder named by
`BIASLENS_MODEL` (the preselected model). Any other path is refused with a message naming
`BIASLENS_MODEL_DIRS`. Hub ids are not restricted (they never run remote code and load
from safetensors only).

Dataset files and data folders the app may always read: biaslens's cache folder (downloaded
datasets) and `BIASLENS_DATA_DIR` (the preselected data folder). Any other path typed into
the app's Dataset or Data folder box is refused with a message naming `BIASLENS_DATA_DIRS`,
before the path is looked at, so the refusal says nothing about what exists.
"""

from __future__ import annotations

import gc
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Mapping

from .errors import DataNotAllowedError, InputError, ModelNotAllowedError, ServerConfigError
from .paths import default_cache_dir

ENV_MODEL_DIRS = "BIASLENS_MODEL_DIRS"
ENV_MAX_TOKENS = "BIASLENS_MAX_TOKENS"
ENV_MAX_UPLOAD_ROWS = "BIASLENS_MAX_UPLOAD_ROWS"
ENV_MAX_MODELS = "BIASLENS_MAX_MODELS"
ENV_MODEL = "BIASLENS_MODEL"
ENV_DATA_DIRS = "BIASLENS_DATA_DIRS"
ENV_DATA_DIR = "BIASLENS_DATA_DIR"

DEFAULT_MAX_UPLOAD_ROWS = 10_000
DEFAULT_MAX_MODELS = 3
#: The shortest sensible sentence limit: [CLS], a few words, [SEP].
MIN_MAX_TOKENS = 8
#: What a refusal of an over-long sentence calls the limit.
TOKEN_LIMIT_NAME = f"this server ({ENV_MAX_TOKENS})"


def _folders(environ: Mapping[str, str], name: str) -> tuple[Path, ...] | None:
    """The absolute folders listed in `name` (os.pathsep-separated); None for `*` (any folder)."""
    raw = environ.get(name, "").strip()
    if raw == "*":
        return None
    dirs = tuple(Path(p.strip()).expanduser() for p in raw.split(os.pathsep) if p.strip())
    relative = [str(p) for p in dirs if not p.is_absolute()]
    if relative:
        raise ServerConfigError(f"{name} must list absolute folders; {relative[0]!r} is relative.")
    return dirs


def _inside(path: Path, roots: list[Path]) -> bool:
    """Whether `path` (resolved: links and `..` followed) is one of `roots` or inside one."""
    resolved = path.resolve()
    return any(resolved == root or resolved.is_relative_to(root) for root in roots)


def _whole_number(environ: Mapping[str, str], name: str, default: int | None, minimum: int) -> int | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ServerConfigError(f"{name}={raw!r} is not a whole number: set it to a number of at least {minimum}, or unset it.") from None
    if value < minimum:
        raise ServerConfigError(f"{name}={value} is too small: set it to at least {minimum}, or unset it.")
    return value


@dataclass(frozen=True)
class ServerSettings:
    """The limits a server operator sets (see the module's table). `from_env` reads them."""

    #: Extra folders whose model folders may be loaded; None = any folder (`BIASLENS_MODEL_DIRS=*`).
    model_dirs: tuple[Path, ...] | None = ()
    #: Longest sentence in tokens; None = the model's own limit.
    max_tokens: int | None = None
    max_upload_rows: int = DEFAULT_MAX_UPLOAD_ROWS
    max_models: int = DEFAULT_MAX_MODELS
    #: The preselected model ($BIASLENS_MODEL): always loadable when it is a folder.
    default_model: str | None = None
    #: Extra folders whose files may be read as datasets; None = any folder (`BIASLENS_DATA_DIRS=*`).
    data_dirs: tuple[Path, ...] | None = ()
    #: The preselected data folder ($BIASLENS_DATA_DIR): always readable.
    default_data_dir: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ServerSettings":
        """The settings in the environment; `ServerConfigError` names a bad value."""
        env = os.environ if environ is None else environ
        return cls(
            model_dirs=_folders(env, ENV_MODEL_DIRS),
            max_tokens=_whole_number(env, ENV_MAX_TOKENS, None, MIN_MAX_TOKENS),
            max_upload_rows=_whole_number(env, ENV_MAX_UPLOAD_ROWS, DEFAULT_MAX_UPLOAD_ROWS, 1),
            max_models=_whole_number(env, ENV_MAX_MODELS, DEFAULT_MAX_MODELS, 1),
            default_model=env.get(ENV_MODEL, "").strip() or None,
            data_dirs=_folders(env, ENV_DATA_DIRS),
            default_data_dir=env.get(ENV_DATA_DIR, "").strip() or None,
        )

    # -- model folders ----------------------------------------------------------------
    def allowed_model_dirs(self) -> list[Path]:
        """The folders whose model folders may be loaded (resolved); empty if any folder may."""
        if self.model_dirs is None:
            return []
        from huggingface_hub import constants

        roots = [Path(constants.HF_HUB_CACHE), default_cache_dir(), *self.model_dirs]
        if self.default_model and Path(self.default_model).expanduser().is_dir():
            roots.append(Path(self.default_model).expanduser())
        return [root.expanduser().resolve() for root in roots]

    def check_model(self, name: str) -> None:
        """Refuse a local model folder outside the allowed folders (hub ids pass).

        A name is a local folder exactly when `load_model` would treat it as one. Symbolic
        links and `..` are resolved first, so neither leads out of an allowed folder.
        """
        from .models import _looks_like_path

        name = str(name).strip()
        local = Path(name).expanduser()
        if not name or self.model_dirs is None or not (local.exists() or _looks_like_path(name)):
            return
        if _inside(local, self.allowed_model_dirs()):
            return
        raise ModelNotAllowedError(
            f"{name} is outside the folders this server may load models from (the Hugging Face cache, "
            f"biaslens's cache and {ENV_MODEL_DIRS}): ask its operator to add the folder to {ENV_MODEL_DIRS}, "
            "or use a hub id."
        )

    # -- dataset files and folders ---------------------------------------------------
    def allowed_data_dirs(self) -> list[Path]:
        """The folders whose files may be read as datasets (resolved); empty if any folder may."""
        if self.data_dirs is None:
            return []
        roots = [default_cache_dir(), *self.data_dirs]
        if self.default_data_dir:
            roots.append(Path(self.default_data_dir).expanduser())
        return [root.expanduser().resolve() for root in roots]

    def check_data(self, path: str) -> None:
        """Refuse a dataset file or data folder outside the allowed folders (links and `..` resolved)."""
        if self.data_dirs is None or _inside(Path(str(path).strip()).expanduser(), self.allowed_data_dirs()):
            return
        raise DataNotAllowedError(
            f"{path} is outside the folders this server may read datasets from (biaslens's cache and "
            f"{ENV_DATA_DIR}): ask its operator to add the folder to {ENV_DATA_DIRS}, or pick a built-in dataset."
        )

    # -- sentences and files ----------------------------------------------------------
    def limit(self, lm: Any) -> Any:
        """The model refusing sentences longer than `max_tokens` (itself when there is no lower limit)."""
        if self.max_tokens is None:
            return lm
        return lm.limited(self.max_tokens, TOKEN_LIMIT_NAME)

    def check_rows(self, rows: int, what: str) -> None:
        """Refuse a user's file or pasted list with more than `max_upload_rows` rows; `what` names it."""
        if rows > self.max_upload_rows:
            raise InputError(
                f"{what} has {rows:,} rows; this server accepts at most {self.max_upload_rows:,} per file or pasted list "
                f"({ENV_MAX_UPLOAD_ROWS}). Split it or use a sample."
            )

    def check_upload(self, data: bytes, what: str, *, header: bool = False) -> None:
        """`check_rows` on a file's bytes, before parsing it: its non-empty lines (less a header line)."""
        rows = sum(1 for line in data.splitlines() if line.strip()) - (1 if header else 0)
        self.check_rows(max(rows, 0), what)


# ---------------------------------------------------------------------------------------
# The model pool
# ---------------------------------------------------------------------------------------


class ModelPool:
    """Loaded models shared by every session, at most `capacity`, least recently used evicted.

    Thread-safe. A model is loaded once even when many sessions ask for it at the same
    time, and loading one model does not block getting another. Before a new model is
    loaded, the least recently used ones are evicted until it fits: the pool drops its
    reference, collects garbage and empties the CUDA cache, so the memory comes back as
    soon as no session still holds the evicted model (a run in progress keeps its model
    until it finishes). A failed load is not stored.
    """

    def __init__(self, capacity: int = DEFAULT_MAX_MODELS):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[Hashable, threading.Lock] = {}
        self.evictions = 0

    def get(self, key: Hashable, load: Callable[[], Any], *, capacity: int | None = None) -> Any:
        """The value of `key`, loaded with `load()` if it is not in the pool."""
        with self._lock:
            if capacity is not None:
                self.capacity = max(1, int(capacity))
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            key_lock = self._loading.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._entries:  # another session loaded it while this one waited
                    self._entries.move_to_end(key)
                    return self._entries[key]
                evicted = self._make_room(self.capacity - 1)
            _free(evicted)
            del evicted
            try:
                value = load()
            except BaseException:
                with self._lock:
                    self._loading.pop(key, None)
                raise
            with self._lock:
                self._entries[key] = value
                self._loading.pop(key, None)
                self._entries.move_to_end(key)
                evicted = self._make_room(self.capacity)
        _free(evicted)
        return value

    def _make_room(self, keep: int) -> list[Any]:
        """Remove the least recently used entries until at most `keep` remain (lock held)."""
        evicted = []
        while len(self._entries) > max(keep, 0):
            _, value = self._entries.popitem(last=False)
            evicted.append(value)
            self.evictions += 1
        return evicted

    def keys(self) -> list[Hashable]:
        """The keys in the pool, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            evicted = list(self._entries.values())
            self._entries.clear()
        _free(evicted)


def _free(evicted: list[Any]) -> None:
    """Let evicted models go: collect garbage, then hand cached CUDA blocks back to the GPU."""
    if not evicted:
        return
    on_cuda = any(getattr(getattr(v, "device", None), "type", None) == "cuda" for v in evicted)
    evicted.clear()
    gc.collect()
    if on_cuda:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


__all__ = [
    "DEFAULT_MAX_MODELS",
    "DEFAULT_MAX_UPLOAD_ROWS",
    "ENV_DATA_DIRS",
    "ENV_MAX_MODELS",
    "ENV_MAX_TOKENS",
    "ENV_MAX_UPLOAD_ROWS",
    "ENV_MODEL_DIRS",
    "ModelPool",
    "ServerSettings",
]

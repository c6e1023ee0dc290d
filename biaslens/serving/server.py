"""Settings for running biaslens as a shared server (a class, a team), and the model pool.

A server operator sets these environment variables before starting the app; the app reads
them through `ServerSettings.from_env()` and applies them. The Python API and the CLI do
not: a researcher on their own machine loads any folder and any sentence the model takes.

| variable | default | what |
| --- | --- | --- |
| `BIASLENS_LOCAL` | off | `on`: the user's own machine (`scripts/app.sh`): any folder may be opened; only on localhost |
| `BIASLENS_MODEL_DIRS` | (none) | extra folders (separated by `:`; `;` on Windows) whose model folders the app may load; `*` = any folder |
| `BIASLENS_DATA_DIRS` | (none) | extra folders whose dataset files (and sub-folders) the app may read; `*` = any folder |
| `BIASLENS_MAX_TOKENS` | the model's own limit | longest sentence the app scores, in tokens (special tokens included) |
| `BIASLENS_MAX_UPLOAD_ROWS` | 10000 | most rows (lines) of a file or pasted list a user brings: a custom pairs file, an attribute list |
| `BIASLENS_MAX_MODELS` | 3 | most models loaded at once (every spelling of a folder or hub id is one); least recently used evicted |
| `BIASLENS_MAX_COMPARE_MODELS` | 8 | most distinct models one comparison names (compare page, analyses' models, side by side) |
| `BIASLENS_MAX_UPLOAD_MB` | 50 | largest pairs file the app reads, in MB (checked before the file is read) |
| `BIASLENS_MAX_RUN_SCORES` | 50000 | most pairs × metrics one dataset run or analysis may score; a comparison: pairs × metrics × models to score |
| `BIASLENS_MAX_KURITA_QUERIES` | 20000 | most masked queries one Kurita template run may make (templates × targets × attributes × 2) |
| `BIASLENS_MAX_JOBS` | 2 | heavy jobs (dataset runs, lab training, Kurita runs) running at once; more wait in line |
| `BIASLENS_MAX_QUEUE` | 20 | jobs waiting in line; more are refused (the server is busy) |
| `BIASLENS_LAB` | on | `off` switches bias-lab training off (lab models already trained can still be used) |
| `BIASLENS_LAB_MAX_STEPS`, `_CORPUS`, `_LAYERS`, `_HIDDEN`, `_SECONDS` | 5000, 100000, 6, 512, 900 | caps of one lab training |
| `BIASLENS_SHARE_LAB_MODELS` | off | `on` lists every lab model of the server to every user; off: each session its own |
| `BIASLENS_INSPECT_BATCH_MS` | 20 | pair inspections on one model arriving within this many ms are scored in shared batches (0: each alone) |
| `BIASLENS_ZOO_STORE` | (none) | the results store (`biaslens zoo run`) the leaderboard opens first; always readable, like `BIASLENS_DATA_DIR` |

Local model folders the app may always load: the Hugging Face cache (where hub models are
downloaded), biaslens's own cache folder (bias-lab models) and the folder named by
`BIASLENS_MODEL` (the preselected model). Any other path is refused with a message naming
`BIASLENS_MODEL_DIRS`. Hub ids are not restricted (they never run remote code and load
from safetensors only).

Dataset files and data folders the app may always read: biaslens's cache folder (downloaded
datasets), `BIASLENS_DATA_DIR` (the preselected data folder) and `BIASLENS_ZOO_STORE` (the
leaderboard's results store; other stores are read from the allowed data folders too). Any other path typed into
the app's Dataset or Data folder box is refused with a message naming `BIASLENS_DATA_DIRS`,
before the path is looked at, so the refusal says nothing about what exists.

Every file the app opens for a user must resolve (links and `..` followed) inside these
folders, not only the path typed: a dataset file found in a data folder, a WEAT or flag
list, every file of a model folder (`ServerSettings.in_effect`, applied to each page). A
link inside an allowed folder to a file elsewhere is refused before the file is read.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, Hashable, Iterator, Mapping, TypeVar

from biaslens.errors import (
    BiaslensError,
    DataNotAllowedError,
    DatasetError,
    InputError,
    JobCancelled,
    LimitError,
    ModelLoadError,
    ModelNotAllowedError,
    ServerConfigError,
)
from biaslens.data.confine import confined
from biaslens.paths import default_cache_dir

ENV_LOCAL = "BIASLENS_LOCAL"
ENV_MODEL_DIRS = "BIASLENS_MODEL_DIRS"
ENV_MAX_TOKENS = "BIASLENS_MAX_TOKENS"
ENV_MAX_UPLOAD_ROWS = "BIASLENS_MAX_UPLOAD_ROWS"
ENV_MAX_MODELS = "BIASLENS_MAX_MODELS"
ENV_MAX_COMPARE_MODELS = "BIASLENS_MAX_COMPARE_MODELS"
ENV_MODEL = "BIASLENS_MODEL"
ENV_DATA_DIRS = "BIASLENS_DATA_DIRS"
ENV_DATA_DIR = "BIASLENS_DATA_DIR"
ENV_MAX_UPLOAD_MB = "BIASLENS_MAX_UPLOAD_MB"
ENV_MAX_RUN_SCORES = "BIASLENS_MAX_RUN_SCORES"
ENV_MAX_KURITA_QUERIES = "BIASLENS_MAX_KURITA_QUERIES"
ENV_MAX_JOBS = "BIASLENS_MAX_JOBS"
ENV_MAX_QUEUE = "BIASLENS_MAX_QUEUE"
ENV_LAB = "BIASLENS_LAB"
ENV_LAB_MAX_STEPS = "BIASLENS_LAB_MAX_STEPS"
ENV_LAB_MAX_CORPUS = "BIASLENS_LAB_MAX_CORPUS"
ENV_LAB_MAX_LAYERS = "BIASLENS_LAB_MAX_LAYERS"
ENV_LAB_MAX_HIDDEN = "BIASLENS_LAB_MAX_HIDDEN"
ENV_LAB_MAX_SECONDS = "BIASLENS_LAB_MAX_SECONDS"
ENV_SHARE_LAB_MODELS = "BIASLENS_SHARE_LAB_MODELS"
ENV_INSPECT_BATCH_MS = "BIASLENS_INSPECT_BATCH_MS"
ENV_ZOO_STORE = "BIASLENS_ZOO_STORE"

DEFAULT_MAX_UPLOAD_ROWS = 10_000
DEFAULT_MAX_MODELS = 3
DEFAULT_MAX_COMPARE_MODELS = 8
DEFAULT_MAX_UPLOAD_MB = 50
DEFAULT_MAX_RUN_SCORES = 50_000
DEFAULT_MAX_KURITA_QUERIES = 20_000
DEFAULT_MAX_JOBS = 2
DEFAULT_MAX_QUEUE = 20
DEFAULT_LAB_MAX_STEPS = 5_000
DEFAULT_LAB_MAX_CORPUS = 100_000
DEFAULT_LAB_MAX_LAYERS = 6
DEFAULT_LAB_MAX_HIDDEN = 512
DEFAULT_LAB_MAX_SECONDS = 900
DEFAULT_INSPECT_BATCH_MS = 20
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
    for folder in dirs:  # a loop of links: said here, naming the setting, not as "Symlink loop" wherever a folder is checked
        _resolve_root(folder, f"{name} lists {folder}, which")
    return dirs


#: What a loop of links is, in the refusals (`_inside`, `_resolve_root`).
_LOOP = "is a symbolic link that leads back to itself (a loop of links)"


def _resolve_root(root: Path, what: str) -> Path:
    """An allowed folder, resolved (links and `..` followed); a loop of links (the folder a link to itself, or links
    that lead to each other) is a `ServerConfigError` in one line: `what` names the folder ("BIASLENS_MODEL_DIRS lists
    /srv/models, which")."""
    try:
        return root.expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # "Symlink loop from ..." (an OSError, ELOOP, from Python 3.13)
        raise ServerConfigError(f"{what} {_LOOP}, so it names no folder: remove the link, or list the folder it should lead to.") from exc


def _no_nul(name: str | Path, what: str) -> None:
    """Refuse a path with a NUL character (a link's `%00`): no file or folder has one, and the OS refuses it with a
    ValueError that would read as a crash."""
    if "\0" in str(name):
        raise InputError(f"{what} holds a NUL character, which no file or folder name holds: remove it.")


def _inside(path: Path, roots: list[Path], refuse: type[BiaslensError]) -> bool:
    """Whether `path` (resolved: links and `..` followed) is one of `roots` or inside one; a loop of links, which leads
    nowhere, is refused in one line (`refuse`: the error of what was asked for, a model folder or a data file)."""
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError) as exc:  # "Symlink loop from ..." (an OSError, ELOOP, from Python 3.13)
        raise refuse(f"{path} {_LOOP}, so it names no file: remove it.") from exc
    return any(resolved == root or resolved.is_relative_to(root) for root in roots)


def _through_link(path: Path) -> str:
    """What a refusal adds when a symbolic link (or `..`) is what leads out: a path can look inside an allowed folder."""
    return " (a link leads out of them)" if os.path.realpath(path) != os.path.abspath(path) else ""


#: The one line that opens a user's own folders: a run on their own machine (what a refusal says to do there).
LOCAL_RUN = "bash scripts/app.sh"
#: What a refusal adds for someone who runs the app on their own machine (there is no operator to ask).
OWN_MACHINE = f"On your own machine, start the app with `{LOCAL_RUN}`: it listens on this machine only and opens your own folders ({ENV_LOCAL}=on)."
#: Addresses that only this machine can reach.
LOOPBACK = ("localhost", "127.0.0.1", "::1")


def is_loopback(address: str | None) -> bool:
    """Whether a server bound to `address` is reachable from this machine only (Streamlit's default, "", is every interface)."""
    value = str(address or "").strip().strip("[]").lower()
    return value in LOOPBACK or value.startswith("127.")


def _model_refusal(name: str, path: Path) -> ModelNotAllowedError:
    return ModelNotAllowedError(
        f"{name} is outside the folders this server may load models from{_through_link(path)} (the Hugging Face cache, "
        f"biaslens's cache and {ENV_MODEL_DIRS}): ask its operator to add the folder to {ENV_MODEL_DIRS}, "
        f"or use a hub id. {OWN_MACHINE}"
    )


def _switch(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("on", "1", "true", "yes"):
        return True
    if raw in ("off", "0", "false", "no"):
        return False
    raise ServerConfigError(f"{name}={raw!r} is neither on nor off: set it to on or off, or unset it.")


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


#: The settings that are whole numbers with a default (the server's limits, then the lab's), each read from
#: BIASLENS_<its name in capitals> (`ENV_MAX_UPLOAD_ROWS`, ...): at least 1, or at least 0 for those in `_ZERO_ALLOWED`
#: (no queue, no batching); unset, the field's default.
_LIMITS = ("max_upload_rows", "max_models", "max_upload_mb", "max_run_scores", "max_kurita_queries", "max_jobs", "max_queue", "inspect_batch_ms")
_LAB_LIMITS = ("lab_max_steps", "lab_max_corpus", "lab_max_layers", "lab_max_hidden", "lab_max_seconds")
_ZERO_ALLOWED = ("max_queue", "inspect_batch_ms")


@dataclass(frozen=True)
class ServerSettings:
    """The limits a server operator sets (see the module's table). `from_env` reads them."""

    #: Extra folders whose model folders may be loaded; None = any folder (`BIASLENS_MODEL_DIRS=*`).
    model_dirs: tuple[Path, ...] | None = ()
    #: Longest sentence in tokens; None = the model's own limit.
    max_tokens: int | None = None
    max_upload_rows: int = DEFAULT_MAX_UPLOAD_ROWS
    max_models: int = DEFAULT_MAX_MODELS
    #: Most distinct models one comparison may name.
    max_compare_models: int = DEFAULT_MAX_COMPARE_MODELS
    #: The preselected model ($BIASLENS_MODEL): always loadable when it is a folder.
    default_model: str | None = None
    #: Extra folders whose files may be read as datasets; None = any folder (`BIASLENS_DATA_DIRS=*`).
    data_dirs: tuple[Path, ...] | None = ()
    #: The preselected data folder ($BIASLENS_DATA_DIR): always readable.
    default_data_dir: str | None = None
    max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB
    max_run_scores: int = DEFAULT_MAX_RUN_SCORES
    max_kurita_queries: int = DEFAULT_MAX_KURITA_QUERIES
    max_jobs: int = DEFAULT_MAX_JOBS
    max_queue: int = DEFAULT_MAX_QUEUE
    lab_training: bool = True
    lab_max_steps: int = DEFAULT_LAB_MAX_STEPS
    lab_max_corpus: int = DEFAULT_LAB_MAX_CORPUS
    lab_max_layers: int = DEFAULT_LAB_MAX_LAYERS
    lab_max_hidden: int = DEFAULT_LAB_MAX_HIDDEN
    lab_max_seconds: int = DEFAULT_LAB_MAX_SECONDS
    share_lab_models: bool = False
    #: How long the first of a group of pair inspections waits for others to share its batches; 0 = no batching.
    inspect_batch_ms: int = DEFAULT_INSPECT_BATCH_MS
    #: A run on the user's own machine ($BIASLENS_LOCAL=on, bound to it): any model and data folder may be opened.
    local: bool = False
    #: The results store the leaderboard opens first ($BIASLENS_ZOO_STORE): always readable.
    zoo_store: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, address: str | None = None) -> "ServerSettings":
        """The settings in the environment; `ServerConfigError` names a bad value.

        `address`: where the app listens (Streamlit's `server.address`). `BIASLENS_LOCAL=on` (what `scripts/app.sh`
        sets) opens any model and data folder: the user's own machine has no operator to ask. It is refused unless the
        app listens on this machine only, so a shared server keeps its allowed folders.
        """
        env = os.environ if environ is None else environ
        local = _switch(env, ENV_LOCAL, False)
        if local and not is_loopback(address):
            raise ServerConfigError(
                f"{ENV_LOCAL}=on opens every folder of this machine, but the app listens on {address or 'every address'}, "
                f"not on this machine only: start it with --server.address localhost (`{LOCAL_RUN}` does), or unset {ENV_LOCAL} "
                f"on a shared server and list its folders in {ENV_MODEL_DIRS} and {ENV_DATA_DIRS}."
            )
        limits: dict[str, Any] = {
            name: _whole_number(env, f"BIASLENS_{name.upper()}", getattr(cls, name), int(name not in _ZERO_ALLOWED))
            for name in (*_LIMITS, *_LAB_LIMITS)
        }
        return cls(
            local=local,
            model_dirs=None if local else _folders(env, ENV_MODEL_DIRS),
            max_tokens=_whole_number(env, ENV_MAX_TOKENS, None, MIN_MAX_TOKENS),
            **limits,
            max_compare_models=_whole_number(env, ENV_MAX_COMPARE_MODELS, DEFAULT_MAX_COMPARE_MODELS, 2) or DEFAULT_MAX_COMPARE_MODELS,
            default_model=env.get(ENV_MODEL, "").strip() or None,
            data_dirs=None if local else _folders(env, ENV_DATA_DIRS),
            default_data_dir=env.get(ENV_DATA_DIR, "").strip() or None,
            lab_training=_switch(env, ENV_LAB, True),
            share_lab_models=_switch(env, ENV_SHARE_LAB_MODELS, False),
            zoo_store=env.get(ENV_ZOO_STORE, "").strip() or None,
        )

    # -- model folders ----------------------------------------------------------------
    def allowed_model_dirs(self) -> list[Path]:
        """The folders whose model folders may be loaded (resolved); empty if any folder may."""
        if self.model_dirs is None:
            return []
        from huggingface_hub import constants

        roots = [Path(constants.HF_HUB_CACHE), default_cache_dir(), *self.model_dirs]
        if self.default_model and os.path.isdir(os.path.expanduser(self.default_model)):
            roots.append(Path(self.default_model).expanduser())
        return [_resolve_root(root, f"The allowed folder {root}") for root in roots]

    def check_model(self, name: str) -> None:
        """Refuse a local model folder outside the allowed folders (hub ids pass).

        A name is a local folder exactly when `load_model` would treat it as one. Symbolic
        links and `..` are resolved first, so neither leads out of an allowed folder.
        """
        from biaslens.engine.identity import looks_like_path

        name = str(name).strip()
        _no_nul(name, "The model name")
        local = Path(os.path.expanduser(name))
        if not name or self.model_dirs is None or not (os.path.exists(local) or looks_like_path(name)):
            return
        if not _inside(local, self.allowed_model_dirs(), ModelLoadError):
            raise _model_refusal(name, local)

    def model_folders(self) -> list[Path]:
        """The model folders (a `config.json` inside) in the operator's `BIASLENS_MODEL_DIRS`: each folder itself and the folders
        directly in it, by name (a link that leads out of them is left out); none when any folder may be loaded (`*`: nothing
        to list). The app offers them wherever a model is chosen."""
        found: list[Path] = []
        allowed = self.allowed_model_dirs()
        for root in self.model_dirs or ():
            root = root.expanduser()
            try:
                inside = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.name.lower())
            except OSError:
                continue
            found += [p for p in (root, *inside) if (p / "config.json").is_file() and _inside(p, allowed, ModelLoadError) and p not in found]
        return found

    def check_model_files(self, folder: Path) -> None:
        """Refuse a local model folder if it, or any file or folder in it, resolves outside the allowed folders.

        What `load_model` checks under `in_effect`: a file of an allowed folder that is a link to
        another folder (`model.safetensors` -> /etc/passwd) is refused before anything is read.
        """
        if self.model_dirs is None:
            return
        roots = self.allowed_model_dirs()
        for path in (folder, *sorted(folder.rglob("*"))):
            if not _inside(path, roots, ModelLoadError):
                raise _model_refusal(str(path), path)

    # -- dataset files and folders ---------------------------------------------------
    def allowed_data_dirs(self) -> list[Path]:
        """The folders whose files may be read as datasets (resolved); empty if any folder may."""
        if self.data_dirs is None:
            return []
        roots = [default_cache_dir(), *self.data_dirs]
        if self.default_data_dir:
            roots.append(Path(self.default_data_dir).expanduser())
        if self.zoo_store:
            roots.append(Path(self.zoo_store).expanduser())
        return [_resolve_root(root, f"The allowed folder {root}") for root in roots]

    def check_data(self, path: str | Path) -> None:
        """Refuse a dataset file or data folder outside the allowed folders (links and `..` resolved)."""
        _no_nul(path, "The dataset or data folder")
        local = Path(os.path.expanduser(str(path).strip()))
        if self.data_dirs is None or _inside(local, self.allowed_data_dirs(), DatasetError):
            return
        raise DataNotAllowedError(
            f"{path} is outside the folders this server may read datasets from{_through_link(local)} (biaslens's cache and "
            f"{ENV_DATA_DIR}): ask its operator to add the folder to {ENV_DATA_DIRS}, or pick a built-in dataset. {OWN_MACHINE}"
        )

    # -- every file opened for a user ---------------------------------------------------
    @contextlib.contextmanager
    def in_effect(self) -> Iterator["ServerSettings"]:
        """Within this block (in this thread), every file biaslens opens on a user's behalf must resolve inside the allowed folders.

        Data files (datasets found in a data folder or named, WEAT stimuli, flag lists, attribute
        lists: `datafiles.read_bytes`) are checked with `check_data`, local model folders and every
        file in them with `check_model_files` (`load_model`), so a link inside an allowed folder
        cannot lead out of it. The app runs each page within it; the CLI and the Python API do not.
        """
        with confined(self):
            yield self

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

    def check_word_list(self, data: bytes, what: str) -> None:
        """`check_rows` on a word list's bytes counted as the parser counts them: items of every line that is not
        blank or a `#` comment, commas included (one line of 5,000 comma-separated words is 5,000 rows)."""
        self.check_rows(count_word_items(data.decode("utf-8", errors="replace")), what)

    def check_pairs_file(self, path: str | Path, what: str) -> None:
        """Refuse a pairs file from its size, then from its first lines, before it is parsed whole.

        A CSV or one-object-per-line file with more than twice `max_upload_rows` lines (a sentence may
        span two lines when quoted) is refused after reading only that many lines. The exact row count is
        checked again after parsing (`check_rows`). A path that is not a file is left to the loader.
        """
        path = Path(os.path.expanduser(str(path).strip()))
        if not os.path.isfile(path):
            return
        size = path.stat().st_size
        if size > self.max_upload_mb * 1_000_000:
            raise LimitError(
                f"{what} is {size / 1e6:,.1f} MB; this server reads files up to {self.max_upload_mb:,} MB ({ENV_MAX_UPLOAD_MB}). "
                "Split it or use a sample."
            )
        if path.suffix.lower() == ".json":  # one document: its lines are not rows
            return
        most = 2 * self.max_upload_rows + 1
        with path.open("rb") as handle:
            for lines, _ in enumerate(handle, start=1):
                if lines > most:
                    raise LimitError(
                        f"{what} has more than {most:,} lines; this server accepts at most {self.max_upload_rows:,} rows per file "
                        f"({ENV_MAX_UPLOAD_ROWS}). Split it or use a sample."
                    )

    # -- work ---------------------------------------------------------------------------
    def check_run(self, pairs: int, metrics: int, what: str = "This run", *, models: int = 1) -> None:
        """Refuse a dataset run (analysis) of more than `max_run_scores` pair × metric scores; a comparison counts the
        scores of every model it scores (`models`), so N models get the one cap, not N times it."""
        scores = int(pairs) * int(metrics) * int(models)
        if scores > self.max_run_scores:
            each = f"{models:,} models × " if models != 1 else ""
            fewer = "fewer models, " if models != 1 else ""
            raise LimitError(
                f"{what} needs {each}{pairs:,} pairs × {metrics} metric{'s' if metrics != 1 else ''} = {scores:,} scores; this "
                f"server runs at most {self.max_run_scores:,} at once ({ENV_MAX_RUN_SCORES}): score a sample, {fewer}or fewer metrics."
            )

    def check_models(self, models: int, what: str = "This comparison") -> None:
        """Refuse a comparison that names more than `max_compare_models` distinct models."""
        if models > self.max_compare_models:
            raise LimitError(
                f"{what} names {models:,} different models; this server compares at most {self.max_compare_models:,} at once "
                f"({ENV_MAX_COMPARE_MODELS}): remove some."
            )

    def check_kurita(self, queries: int) -> None:
        """Refuse a Kurita template run of more than `max_kurita_queries` masked queries."""
        if queries > self.max_kurita_queries:
            raise LimitError(
                f"These templates, targets and attributes make {queries:,} masked queries; this server runs at most "
                f"{self.max_kurita_queries:,} at once ({ENV_MAX_KURITA_QUERIES}): use fewer templates, targets or attributes."
            )

    def check_lab(self, lab_settings: Any) -> None:
        """Refuse bias-lab training when it is switched off or a knob is above the operator's cap."""
        if not self.lab_training:
            raise LimitError(
                f"Training is switched off on this server ({ENV_LAB}=off): use a lab model already trained here, "
                "or run the bias lab on your own machine."
            )
        for value, cap, what, env in (
            (lab_settings.steps, self.lab_max_steps, "Training steps", ENV_LAB_MAX_STEPS),
            (lab_settings.corpus_size, self.lab_max_corpus, "The corpus size", ENV_LAB_MAX_CORPUS),
            (lab_settings.num_layers, self.lab_max_layers, "The number of layers", ENV_LAB_MAX_LAYERS),
            (lab_settings.hidden_size, self.lab_max_hidden, "The hidden size", ENV_LAB_MAX_HIDDEN),
        ):
            if value > cap:
                raise LimitError(f"{what} {value:,} is above this server's limit of {cap:,} ({env}): lower it.")

    def lab_deadline(self, started: float | None = None) -> Callable[[], None]:
        """A check to call during training: raises `LimitError` once `lab_max_seconds` have passed."""
        start = time.monotonic() if started is None else started

        def check() -> None:
            if time.monotonic() - start > self.lab_max_seconds:
                raise LimitError(
                    f"Training stopped after {self.lab_max_seconds:,} s, this server's limit ({ENV_LAB_MAX_SECONDS}): "
                    "fewer steps, a smaller corpus or a smaller model train faster."
                )

        return check


def count_word_items(text: str) -> int:
    """The items a word list holds as `biaslens.kurita.parse_word_list` splits it (repeats counted): commas included."""
    return sum(1 for line in text.splitlines() if not line.lstrip().startswith("#") for item in line.split(",") if item.strip())


# ---------------------------------------------------------------------------------------
# Heavy jobs: at most a few at once, the others in line
# ---------------------------------------------------------------------------------------


class JobSlots:
    """At most `capacity` heavy jobs run at once on a server; others wait in line, first come first served.

    `slot()` is a context manager around one job. While it waits, `on_wait(position, running)` is
    called (position 1 = next) about every `poll` seconds, and `cancelled()` is asked whether the job
    should give up (its session went away, the server stops): then `JobCancelled` is raised. More than
    `max_queue` jobs waiting: `LimitError` (the server is busy), at once.
    """

    def __init__(self, capacity: int = DEFAULT_MAX_JOBS, max_queue: int = DEFAULT_MAX_QUEUE):
        self.capacity = max(1, int(capacity))
        self.max_queue = max(0, int(max_queue))
        self._cond = threading.Condition()
        self._waiting: deque[object] = deque()
        self._running: set[object] = set()

    def configure(self, capacity: int, max_queue: int) -> None:
        with self._cond:
            self.capacity, self.max_queue = max(1, int(capacity)), max(0, int(max_queue))
            self._cond.notify_all()

    @property
    def running(self) -> int:
        with self._cond:
            return len(self._running)

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    @contextlib.contextmanager
    def slot(
        self,
        *,
        on_wait: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        poll: float = 0.5,
    ) -> Iterator[None]:
        ticket = object()
        with self._cond:
            if len(self._running) >= self.capacity and len(self._waiting) >= self.max_queue:
                raise LimitError(
                    f"The server is busy: {len(self._running)} jobs running and {len(self._waiting)} waiting, its limit "
                    f"({ENV_MAX_JOBS}, {ENV_MAX_QUEUE}). Try again in a few minutes."
                )
            self._waiting.append(ticket)
        try:
            while True:
                with self._cond:
                    if len(self._running) < self.capacity and self._waiting[0] is ticket:
                        self._waiting.popleft()
                        self._running.add(ticket)
                        self._cond.notify_all()
                        break
                    position, running = self._waiting.index(ticket) + 1, len(self._running)
                if cancelled is not None and cancelled():
                    raise JobCancelled("The job was cancelled while it waited in line.")
                if on_wait is not None:
                    on_wait(position, running)
                with self._cond:
                    self._cond.wait(poll)
            yield
        finally:
            with self._cond:
                if ticket in self._waiting:
                    self._waiting.remove(ticket)
                self._running.discard(ticket)
                self._cond.notify_all()


# ---------------------------------------------------------------------------------------
# Interactive requests before background jobs
# ---------------------------------------------------------------------------------------


class Priority:
    """Requests someone is waiting for go before background jobs on a shared server's cores.

    A pair inspection is scored inside `interactive()`; a background job (dataset run, analysis,
    Kurita run, lab training) calls `yield_to_interactive()` between its steps (the engine calls
    progress after every batch). While an interactive request is in flight the job waits, so the
    two never share the cores (two concurrent forward passes on a CPU slow each other down more
    than they gain), and the request takes about as long as it would alone. A job waits at most
    `max_wait_s` per step, so a steady stream of requests slows it down but cannot stop it.
    """

    def __init__(self, max_wait_s: float = 5.0):
        self.max_wait_s = float(max_wait_s)
        self._cond = threading.Condition()
        self._active = 0
        #: Seconds background jobs have waited so far (for benchmarks and tests).
        self.waited_s = 0.0

    @contextlib.contextmanager
    def interactive(self) -> Iterator[None]:
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                if self._active == 0:
                    self._cond.notify_all()

    @property
    def active(self) -> int:
        """Interactive requests in flight now."""
        with self._cond:
            return self._active

    def yield_to_interactive(self) -> float:
        """Wait while interactive requests are in flight (at most `max_wait_s`); the seconds waited."""
        with self._cond:
            if self._active == 0:
                return 0.0
            start = time.monotonic()
            self._cond.wait_for(lambda: self._active == 0, timeout=self.max_wait_s)
            waited = time.monotonic() - start
            self.waited_s += waited
            return waited


# ---------------------------------------------------------------------------------------
# Inspections that arrive together share batches
# ---------------------------------------------------------------------------------------


class _Group:
    """Inspection requests scored together: the first to arrive leads, the others wait for its results."""

    def __init__(self) -> None:
        self.requests: list[Any] = []
        self.closed = False
        self.done = threading.Event()
        self.results: list[Any] | None = None
        self.error: BaseException | None = None


class _Lane:
    """The requests of one model with one set of options: one batched pass at a time, the next group gathering meanwhile."""

    def __init__(self) -> None:
        self.compute = threading.Lock()
        self.open: _Group | None = None
        #: When the lane last started or finished a batched pass (time.monotonic()); -inf: never.
        self.last_active = float("-inf")


class InspectionBatcher:
    """Pair inspections on one model that arrive together are scored in shared batched passes.

    `inspect(lm, stereo, anti, ...)` checks and encodes the pair in the caller's thread (bad input
    fails at once, alone), then joins the group of requests gathering for the same model and
    options. The group's first request waits `window_s` for others, then scores the whole group
    (at most `max_pairs`) in one `inspect_prepared` call; while it is being scored, the next
    group gathers. So at most one batched pass per model runs at a time: concurrent sessions do
    not fight over the same cores, and a group's sentences share forward passes. On a model idle
    for `window_s` or longer, the first request does not wait: a lone user's pair is scored at
    once, and the requests that follow gather while it is. Each result equals `inspect_pair`'s for
    the same pair up to float rounding (a group's batches are padded differently); a group of one
    is the same call.
    `window_s=0` turns batching off: every request is scored on its own, at once, in its own thread.
    """

    def __init__(self, window_s: float = 0.0, max_pairs: int = 16):
        self.window_s = max(0.0, float(window_s))
        self.max_pairs = max(1, int(max_pairs))
        self._lock = threading.Lock()
        self._lanes: weakref.WeakKeyDictionary[Any, dict[Hashable, _Lane]] = weakref.WeakKeyDictionary()
        #: Sizes of the groups scored so far (for benchmarks and tests).
        self.group_sizes: list[int] = []

    def configure(self, window_s: float, max_pairs: int | None = None) -> None:
        with self._lock:
            self.window_s = max(0.0, float(window_s))
            if max_pairs is not None:
                self.max_pairs = max(1, int(max_pairs))

    def inspect(
        self,
        lm: Any,
        sent_stereo: str,
        sent_anti: str,
        *,
        metrics: Any = None,
        compat: str | None = "default",
        top_k: int = 5,
        attention_matrices: bool = False,
    ) -> Any:
        """`biaslens.engine.evaluation.inspect_pair`, scored together with the requests that arrive at the same time."""
        from biaslens.engine.evaluation import inspect_prepared, prepare_inspection

        request = prepare_inspection(lm, sent_stereo, sent_anti, metrics=metrics, compat=compat, top_k=top_k)
        with self._lock:
            window, most = self.window_s, self.max_pairs
        if window <= 0:
            return inspect_prepared(lm, [request], attention_matrices=attention_matrices)[0]
        with self._lock:
            lane = self._lanes.setdefault(lm, {}).setdefault((request.options, bool(attention_matrices)), _Lane())
            group = lane.open
            leader = group is None or group.closed or len(group.requests) >= most
            if leader:
                group = lane.open = _Group()
            index = len(group.requests)
            group.requests.append(request)
        if not leader:
            group.done.wait()
        else:
            if time.monotonic() - lane.last_active < window:  # requests are coming in: others arriving now join this group
                time.sleep(window)
            with lane.compute:  # one batched pass per model at a time; the group keeps gathering until then
                with self._lock:
                    group.closed = True
                    if lane.open is group:
                        lane.open = None
                    self.group_sizes.append(len(group.requests))
                    lane.last_active = time.monotonic()
                try:
                    group.results = inspect_prepared(lm, group.requests, attention_matrices=attention_matrices)
                except BaseException as exc:  # every request of the group gets it
                    group.error = exc
                finally:
                    lane.last_active = time.monotonic()
                    group.done.set()
        if group.error is not None:
            raise group.error
        assert group.results is not None
        return group.results[index]


# ---------------------------------------------------------------------------------------
# The model pool
# ---------------------------------------------------------------------------------------

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedMap(Generic[K, V]):
    """At most `capacity` entries in `_entries`, least recently used first, read and changed only under `_lock`.

    The base of the model pool (`ModelPool`, under a condition its loads wait on) and the app's memo (`ui.memo.LRU`,
    under a plain lock): what they share is here once, how they get, put and evict is their own.
    """

    def __init__(self, capacity: int, lock: threading.Lock | threading.Condition) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        self._lock = lock
        self._entries: OrderedDict[K, V] = OrderedDict()

    def keys(self) -> list[K]:
        """The keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


class ModelPool(BoundedMap[Hashable, Any]):
    """Loaded models shared by every session, at most `capacity`, least recently used evicted.

    Thread-safe. A model is loaded once even when many sessions ask for it at the same
    time, and loading one model does not block getting another. The models in the pool and
    those being loaded are at most `capacity` together: before a new model is loaded, the
    least recently used ones are evicted until it fits, and while `capacity` loads are in
    flight the next waits for one to finish. An evicted model: the pool drops its reference,
    collects garbage and empties the CUDA cache, so the memory comes back as soon as no
    session still holds it (a run in progress keeps its model until it finishes; the
    comparison page holds one model at a time). A failed load is not stored. Callers key
    models by identity (`biaslens.engine.identity.model_identity`), so every spelling of one
    folder is one entry.
    """

    _lock: threading.Condition  # loads in flight wait on it

    def __init__(self, capacity: int = DEFAULT_MAX_MODELS):
        super().__init__(capacity, threading.Condition())
        self._loading: dict[Hashable, threading.Lock] = {}
        self._in_flight = 0
        self.evictions = 0
        #: The most models held at once (in the pool or being loaded), for tests.
        self.peak = 0

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
            evicted: list[Any] = []
            with self._lock:
                while True:
                    if key in self._entries:  # another session loaded it while this one waited
                        self._entries.move_to_end(key)
                        value = self._entries[key]
                        break
                    evicted += self._make_room(self.capacity - 1 - self._in_flight)
                    if len(self._entries) + self._in_flight < self.capacity:
                        self._in_flight += 1
                        self.peak = max(self.peak, len(self._entries) + self._in_flight)
                        value = _LOAD
                        break
                    self._lock.wait()  # `capacity` other models are being loaded: wait for one
            _free(evicted)
            del evicted
            if value is not _LOAD:
                return value
            try:
                value = load()
            except BaseException:
                with self._lock:
                    self._in_flight -= 1
                    self._loading.pop(key, None)
                    self._lock.notify_all()
                raise
            with self._lock:
                self._in_flight -= 1
                self._entries[key] = value
                self._loading.pop(key, None)
                self._entries.move_to_end(key)
                evicted = self._make_room(self.capacity)
                self._lock.notify_all()
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

    def discard(self, stale: Callable[[Hashable], bool]) -> int:
        """Let go of every entry whose key is `stale` (a model folder changed since it was loaded); how many."""
        with self._lock:
            keys = [k for k in self._entries if stale(k)]
            evicted = [self._entries.pop(k) for k in keys]
        _free(evicted)
        return len(keys)

    def clear(self) -> None:
        with self._lock:
            evicted = list(self._entries.values())
            self._entries.clear()
        _free(evicted)


#: `ModelPool.get`'s mark for "this caller loads it".
_LOAD = object()


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
    "DEFAULT_MAX_COMPARE_MODELS",
    "DEFAULT_MAX_MODELS",
    "DEFAULT_MAX_UPLOAD_ROWS",
    "ENV_DATA_DIRS",
    "ENV_MAX_COMPARE_MODELS",
    "ENV_MAX_MODELS",
    "ENV_MAX_TOKENS",
    "ENV_MAX_UPLOAD_ROWS",
    "ENV_MODEL_DIRS",
    "BoundedMap",
    "InspectionBatcher",
    "JobSlots",
    "ModelPool",
    "Priority",
    "ServerSettings",
    "count_word_items",
]

"""The zoo plan: one TOML file that names the models, the datasets and how to score them; checked before anything runs.

    store = "zoo-store"                      # the results store (a folder; relative to the plan's folder)
    datasets = ["crows-pairs", "stereoset"]  # names, pairs files, or tables {name = ..., limit = ..., sample = ..., seed = ...}
    metrics = ["aul", "aula", "cps"]         # optional: default the paper's five (those each model can give)
    precision = "float32"                    # or a list: float32, bfloat16, float16, bf16-rescore
    compat = "default"                       # or a list: default, kaneko2022
    conventions = ["default"]                # optional: default, lm-eval, bias-bench, oba2024 (causal models)
    choice_conventions = ["lm-eval"]         # optional, for BBQ and Winogender: lm-eval, lm-eval-norm, original (BBQ)

    [[models]]
    id = "bert-base-cased"                   # a hub id (with `revision`) or a local folder
    revision = "cd5ef92a9fb2f889e972770a36d4ed042daf221e"

    [[models]]
    id = "models/my-finetune"
    label = "my fine-tune"                   # optional: the name shown in tables
    metrics = ["aul"]                        # optional per-model overrides

A multiple-choice dataset (`bbq`, `bbq-age`, `winogender-gotcha`, ..., a BBQ category file or folder, a Winogender
folder) is scored under `choice_conventions` (`biaslens.choices.conventions.CHOICE_CONVENTIONS`), never the pair
`conventions`, `metrics` or `compat` (its cells are its headline statistics: `biaslens.zoo.choicecells`); a choice
convention that does not apply to it (`original` to Winogender) is skipped for it, and said in `ZooPlan.notes`.

`load_plan(path)` reads and checks it (`PlanError`: one line naming the file, the place and the problem, before any
model loads); `parse_plan(data, base)` does the same for a mapping. A model's cells are its datasets × metrics ×
conventions × precisions × compat modes (`ZooModel.units`, `Unit.metrics`). `[slurm]` and `[local]` hold the executors'
defaults (the command line's options win).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from biaslens.choices.conventions import CHOICE_CONVENTIONS, DEFAULT_CHOICE_CONVENTION, HEADLINE_STATISTICS
from biaslens.engine.conventions import CONVENTIONS as _ENGINE_CONVENTIONS
from biaslens.engine.conventions import DEFAULT_CONVENTION
from biaslens.engine.options import RENAMED as _RENAMED_PRECISION
from biaslens.errors import InputError

#: The scoring conventions a plan may name (`biaslens.engine.conventions`): "default" is the engine's own scoring (no
#: `convention=` passed to `biaslens.evaluate`); the others (lm-eval, bias-bench, oba2024) score causal models as those
#: peers do, and a masked model's cells under them are recorded as not applicable.
CONVENTIONS: tuple[str, ...] = tuple(_ENGINE_CONVENTIONS)
#: What kind of model a plan may say a model is (checked when it loads).
KINDS: tuple[str, ...] = ("masked", "causal")
#: Precisions a plan may name: the dtype the model is loaded in, or bf16-rescore (a float32 model scored in bfloat16,
#: pairs within a calibrated estimate of bfloat16's error re-scored in float32: `biaslens.engine.rescore`; not exact).
PRECISIONS: dict[str, str] = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "bf16-rescore": "float32"}
DEFAULT_PRECISION = "float32"
#: Attempts after the first of a job that fails or is killed (the plan's `retries`, `--retries`).
DEFAULT_RETRIES = 2
EXECUTORS = ("local", "slurm")

#: What the plan sets for every model and a model's own table may set for itself.
_MODEL_OR_TOP_KEYS = (
    "datasets",
    "metrics",
    "conventions",
    "choice_conventions",
    "precision",
    "compat",
    "device",
    "batch_tokens",
    "chunk_pairs",
    "allow_pickle",
    "slurm",
)
_TOP_KEYS = ("store", *_MODEL_OR_TOP_KEYS, "data_dir", "download", "retries", "models", "local")
_MODEL_KEYS = ("id", "revision", "label", "family", "kind", *_MODEL_OR_TOP_KEYS)
_DATASET_KEYS = ("name", "label", "limit", "sample", "seed")
#: What one job asks Slurm for: a model's own `slurm = {...}` may set these.
_RESOURCE_KEYS = ("partition", "gpus_per_job", "gpus", "gres", "cpus_per_job", "mem_gb", "time", "setup", "additional")
_SLURM_KEYS = (*_RESOURCE_KEYS, "max_parallel", "models_per_job")
_LOCAL_KEYS = ("max_parallel", "time", "gpus_per_job", "models_per_job")
#: The ways a job asks for GPUs; a model that names one replaces the plan's (so a GPU type never clashes with a count).
GPU_KEYS = ("gpus_per_job", "gpus", "gres")
#: The shortest Slurm time limit accepted, in minutes. Slurm warns a job (submitit's signal to stop and requeue) a lead
#: before its limit (`signal_lead_s`), and may do so up to 60 s earlier: under this a job could be warned before its
#: model has loaded, and be requeued without ever scoring a pair.
MIN_SLURM_MINUTES = 3
_FULL_COMMIT = re.compile(r"[0-9a-f]{40}")


class PlanError(InputError):
    """A zoo plan that cannot run: the file, the place in it and the problem, in one line."""


@dataclass(frozen=True)
class ZooDataset:
    """A dataset of the plan: a dataset name, a pairs file or a multiple-choice file or folder (absolute), and which of its
    pairs or items (`limit`, `sample`, `seed`)."""

    name: str
    label: str
    limit: int | None = None
    sample: int | None = None
    seed: int = 0
    #: "bbq" or "winogender" for a multiple-choice dataset (`biaslens.zoo.choicecells`); None for pairs.
    family: str | None = None

    @property
    def selection(self) -> dict[str, int] | None:
        """The pairs chosen, as the cell keys hold it (None: every pair)."""
        if self.limit is None and self.sample is None:
            return None
        return {k: v for k, v in (("limit", self.limit), ("sample", self.sample), ("seed", self.seed)) if v is not None}

    def selection_kwargs(self) -> dict[str, Any]:
        return {"limit": self.limit, "sample": self.sample, "seed": self.seed}


@dataclass(frozen=True)
class Unit:
    """What one `evaluate` call of a model scores: a dataset, a convention, a precision, a compat mode, and its metrics
    (None: the paper's five that the model can give)."""

    dataset: ZooDataset
    convention: str
    precision: str
    compat: str
    metrics: tuple[str, ...] | None

    def describe(self) -> str:
        parts = [self.dataset.label, self.precision]
        if self.compat != "default":
            parts.append(self.compat)
        if self.convention != DEFAULT_CONVENTION:
            parts.append(self.convention)
        return " · ".join(parts)


@dataclass(frozen=True)
class ZooModel:
    """A model of the plan with its settings (the plan's, overridden by its own)."""

    index: int
    id: str  # a hub id, or a local folder (absolute)
    local: bool
    revision: str | None = None
    label: str = ""
    family: str | None = None
    kind: str | None = None
    datasets: tuple[ZooDataset, ...] = ()
    metrics: tuple[str, ...] | None = None
    conventions: tuple[str, ...] = (DEFAULT_CONVENTION,)
    choice_conventions: tuple[str, ...] = (DEFAULT_CHOICE_CONVENTION,)
    precisions: tuple[str, ...] = (DEFAULT_PRECISION,)
    compats: tuple[str, ...] = ("default",)
    device: str = "auto"
    batch_tokens: int | None = None
    chunk_pairs: int | None = None
    allow_pickle: bool = False
    #: Its own Slurm resources (`slurm = {...}` in its table), by `SlurmSettings` field: they replace the plan's.
    slurm: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def pinned(self) -> bool:
        """Whether the model's content is known before it loads: a local folder, or a hub id at a full commit."""
        return self.local or bool(self.revision and _FULL_COMMIT.fullmatch(self.revision))

    def units(self) -> list[Unit]:
        """Its `evaluate` calls: datasets × conventions × precisions × compat modes, in that order; a multiple-choice
        dataset's: its choice conventions that apply × precisions (bf16-rescore aside), its headline statistics."""
        out = []
        for d in self.datasets:
            if d.family is None:
                out += [Unit(d, c, p, k, self.metrics) for c in self.conventions for p in self.precisions for k in self.compats]
            else:
                statistics = HEADLINE_STATISTICS[d.family]
                out += [Unit(d, c, p, "default", statistics) for c in self.choice_conventions_of(d.family) for p in self.choice_precisions()]
        return out

    def choice_conventions_of(self, family: str) -> tuple[str, ...]:
        """Its choice conventions that apply to a multiple-choice dataset of `family`."""
        return tuple(c for c in self.choice_conventions if CHOICE_CONVENTIONS[c].applies(family))

    def choice_precisions(self) -> tuple[str, ...]:
        """Its precisions a multiple-choice dataset is scored in: bf16-rescore re-scores pairs, not choices."""
        return tuple(p for p in self.precisions if p != "bf16-rescore")

    def load_dtypes(self) -> list[str]:
        """The dtypes the model is loaded in (one load each), in the plan's order."""
        return list(dict.fromkeys(PRECISIONS[p] for p in self.precisions))

    def resolution_key(self, dtype: str) -> str:
        """What identifies this model as asked for (id, revision, dtype), for the store's record of what it resolved to."""
        return hashlib.sha256(repr((self.id, self.revision, dtype)).encode()).hexdigest()[:32]


def signal_lead_s(time_min: int) -> int:
    """Seconds before a job's time limit that Slurm warns it (`--signal=USR2@<lead>`: submitit then stops the job and
    requeues it): submitit's 90 s, or a quarter of a shorter limit, so that a short limit leaves most of its time to work."""
    return min(90, time_min * 60 // 4)


@dataclass(frozen=True)
class SlurmSettings:
    """The Slurm executor's settings (`[slurm]`; the command line's options replace these, a model's own `slurm` table
    replaces them for its jobs: `with_overrides`).

    GPUs: `gpus_per_job` (a count: `--gpus-per-node=N`), `gpus` (a type and count, `"a100:1"`: `--gpus-per-node=a100:1`)
    or `gres` (`"gpu:a100:1"`: `--gres`); none of them: one GPU for a model whose device may be a GPU (`auto`, `cuda`),
    none for `device = "cpu"`. `setup`: shell lines run before the job (`module load ...`, `source .../activate`).
    `models_per_job`: models run one after the other in one job (its fixed cost paid once)."""

    partition: str | None = None
    gpus_per_job: int | None = None
    gpus: str | None = None
    gres: str | None = None
    cpus_per_job: int | None = None
    mem_gb: float | None = None
    time_min: int = 24 * 60
    setup: tuple[str, ...] = ()
    additional: dict[str, Any] = field(default_factory=dict)
    max_parallel: int | None = None
    models_per_job: int = 1

    def with_overrides(self, overrides: Mapping[str, Any]) -> SlurmSettings:
        """These settings with others' (a model's own table, the command line's options; by field name): each replaces
        the value here, a GPU key all three (one way of asking for GPUs), `additional`'s options are added."""
        changes = {k: v for k, v in overrides.items() if v is not None}
        if any(k in changes for k in GPU_KEYS):
            changes = {**{k: None for k in GPU_KEYS}, **changes}
        if "additional" in changes:
            changes["additional"] = {**self.additional, **changes["additional"]}
        return replace(self, **changes)

    def gpu_request(self, device: str) -> dict[str, Any]:
        """submitit's GPU parameters for a model on `device`: the GPU key set, else one GPU unless the device is the CPU."""
        if self.gres:
            return {"gres": self.gres}
        if self.gpus:
            return {"gpus_per_node": self.gpus}
        count = self.gpus_per_job if self.gpus_per_job is not None else int(device in ("auto", "cuda") or device.startswith("cuda:"))
        return {"gpus_per_node": count} if count else {}


@dataclass(frozen=True)
class LocalSettings:
    """The local executor's settings (`[local]`): at most `max_parallel` jobs at once on this machine."""

    max_parallel: int = 1
    time_min: int = 24 * 60
    gpus_per_job: int | None = None  # None: every GPU the machine has
    models_per_job: int = 1


@dataclass(frozen=True)
class ZooPlan:
    """A checked zoo plan."""

    path: Path | None
    store: Path
    models: tuple[ZooModel, ...]
    datasets: tuple[ZooDataset, ...]
    data_dir: str | None = None
    download: bool = True
    retries: int = DEFAULT_RETRIES
    slurm: SlurmSettings = SlurmSettings()
    local: LocalSettings = LocalSettings()
    sha256: str = ""
    #: What the plan's check found worth saying and did not refuse (a declared kind's metrics mapped), one line each.
    notes: tuple[str, ...] = ()

    def model(self, index: int) -> ZooModel:
        return self.models[index]

    def with_store(self, store: str | Path) -> ZooPlan:
        return replace(self, store=Path(store).expanduser().resolve())


# ---------------------------------------------------------------------------------------
# Reading and checking
# ---------------------------------------------------------------------------------------


def load_plan(path: str | Path) -> ZooPlan:
    """The plan in a TOML file, checked (`PlanError` in one line); relative paths are taken from the plan's folder."""
    from biaslens.data.datafiles import read_bytes
    from biaslens.errors import DatasetError

    path = Path(path).expanduser()
    if not path.exists() and not path.is_symlink():
        raise PlanError(f"{path}: no such plan file.")
    if path.is_dir():
        raise PlanError(f"{path} is a folder: give the plan's TOML file.")
    try:  # the rule of every file read on a user's behalf: a regular file (not a FIFO, not /dev/zero), its size, readable
        raw = read_bytes(path, what="the plan's TOML file")
    except DatasetError as exc:
        raise PlanError(str(exc).rstrip(".") + ".") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PlanError(f"{path}: the plan is not UTF-8 text.") from None
    except tomllib.TOMLDecodeError as exc:
        raise PlanError(f"{path}: not valid TOML ({_one_line(exc)}).") from None
    plan = parse_plan(data, path.resolve().parent, name=str(path))
    return replace(plan, path=path.resolve(), sha256=hashlib.sha256(raw).hexdigest())


def parse_plan(data: Mapping[str, Any], base: str | Path = ".", *, name: str = "plan") -> ZooPlan:
    """A plan from its mapping (TOML's tables), checked; `base` is the folder relative paths start from."""
    check = _Checker(name, Path(base).expanduser().resolve())
    check.keys(data, _TOP_KEYS, "the top level")
    datasets = check.datasets(data.get("datasets"), "datasets", required=True)
    defaults = {
        "metrics": check.metrics(data.get("metrics"), "metrics"),
        "conventions": check.choices(data.get("conventions"), "conventions", CONVENTIONS, (DEFAULT_CONVENTION,)),
        "choice_conventions": check.choices(data.get("choice_conventions"), "choice_conventions", tuple(CHOICE_CONVENTIONS), None),
        "precisions": check.choices(data.get("precision"), "precision", tuple(PRECISIONS), (DEFAULT_PRECISION,)),
        "compats": check.choices(data.get("compat"), "compat", _compat_modes(), ("default",)),
        "device": check.text(data.get("device"), "device", "auto"),
        "batch_tokens": check.whole(data.get("batch_tokens"), "batch_tokens", 1),
        "chunk_pairs": check.whole(data.get("chunk_pairs"), "chunk_pairs", 1),
        "allow_pickle": check.flag(data.get("allow_pickle"), "allow_pickle", False),
    }
    models_raw = data.get("models")
    if models_raw is None:
        raise check.error("models", "no models: add at least one [[models]] table with an id")
    if not isinstance(models_raw, list) or not models_raw or not all(isinstance(m, dict) for m in models_raw):
        raise check.error("models", "must be a list of tables ([[models]] with an id each)")
    models = tuple(check.model(i, m, datasets, defaults) for i, m in enumerate(models_raw))
    seen: dict[tuple[str, str | None], int] = {}
    labels: dict[str, int] = {}
    for m in models:
        first = seen.setdefault((m.id, m.revision), m.index)
        if first != m.index:
            raise check.error(f"models[{m.index}]", f"the same model as models[{first}] ({m.id}); give each model once")
        first = labels.setdefault(m.label, m.index)
        if first != m.index:
            raise check.error(f"models[{m.index}].label", f"{m.label!r} is also models[{first}]'s label; labels name one model each")
    by_label: dict[str, ZooDataset] = {d.label: d for d in datasets}
    for m in models:
        for d in m.datasets:
            if by_label.setdefault(d.label, d) != d:
                raise check.error(
                    f"models[{m.index}].datasets", f"{d.label!r} names another dataset or selection elsewhere in the plan; give it its own label"
                )
    notes = tuple(note for m in models if (note := _kind_note(m))) + _choice_notes(check, models)
    store = check.path(data.get("store"), "store") or check.base / "zoo-store"
    data_dir = check.path(data.get("data_dir"), "data_dir")
    return ZooPlan(
        path=None,
        store=store,
        models=models,
        datasets=datasets,
        data_dir=str(data_dir) if data_dir else None,
        download=check.flag(data.get("download"), "download", True),
        retries=check.whole(data.get("retries"), "retries", 0) if data.get("retries") is not None else DEFAULT_RETRIES,
        slurm=check.slurm(data.get("slurm")),
        local=check.local(data.get("local")),
        notes=notes,
    )


def _choice_notes(check: _Checker, models: tuple[ZooModel, ...]) -> tuple[str, ...]:
    """What the plan's multiple-choice datasets are scored under, where a choice convention does not apply to one or
    bf16-rescore is asked (one line each); a model none of whose choice conventions applies to one is refused."""
    notes: list[str] = []
    for m in models:
        for d in m.datasets:
            if d.family is None:
                continue
            applies = m.choice_conventions_of(d.family)
            if not applies:
                valid = ", ".join(k for k, c in CHOICE_CONVENTIONS.items() if c.applies(d.family))
                raise check.error(
                    f"models[{m.index}].choice_conventions",
                    f"none of {', '.join(m.choice_conventions)} applies to {_named(d)}; it takes {valid}",
                )
            skipped = [c for c in m.choice_conventions if c not in applies]
            if skipped:
                notes.append(f"{', '.join(skipped)} does not apply to {_named(d)}: scored under {', '.join(applies)}.")
            if "bf16-rescore" in m.precisions and not m.choice_precisions():
                raise check.error(f"models[{m.index}].precision", f"bf16-rescore re-scores pairs: {d.label} needs float32, bfloat16 or float16")
            if "bf16-rescore" in m.precisions:
                notes.append(f"bf16-rescore re-scores pairs: {d.label} is scored in {', '.join(m.choice_precisions())} only.")
    return tuple(dict.fromkeys(notes))


def _named(dataset: ZooDataset) -> str:
    return dataset.label if dataset.label == dataset.family else f"{dataset.label} ({dataset.family})"


def _kind_note(model: ZooModel) -> str | None:
    """What becomes of the metrics a model of a declared kind cannot give: each scored as its counterpart of that kind
    (AUL-c for AUL on a causal model), or recorded as unavailable where it has none."""
    from biaslens.engine.metrics import METRICS, counterpart

    if model.kind is None or model.metrics is None:
        return None
    foreign = [m for m in model.metrics if model.kind not in METRICS[m].kinds]
    if not foreign:
        return None
    mapped = [(METRICS[m].name, METRICS[c].name) for m in foreign if (c := counterpart(m, model.kind))]
    kept = [METRICS[m].name for m in foreign if counterpart(m, model.kind) is None]
    parts = []
    if mapped:
        parts.append("scored as " + ", ".join(f"{c} (for {m})" for m, c in mapped))
    if kept:
        parts.append(f"{', '.join(kept)} recorded as unavailable (no {model.kind} counterpart)")
    return f"models[{model.index}] ({model.label}) is a {model.kind} model: " + "; ".join(parts) + "."


def _compat_modes() -> tuple[str, ...]:
    from biaslens.engine.metrics import COMPAT_MODES

    return tuple(COMPAT_MODES)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _kind(value: Any) -> str:
    return {bool: "true/false", int: "a number", float: "a number", str: "text", list: "a list", dict: "a table"}.get(
        type(value), type(value).__name__
    )


def parse_time(value: Any) -> int:
    """A job's time limit in minutes: a number of minutes, or Slurm's "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM(:SS)"."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        if value < 1:
            raise ValueError(value)
        return value
    text = str(value).strip()
    days = 0
    if "-" in text:
        day_text, text = text.split("-", 1)
        days = int(day_text)
        parts = [int(p) for p in text.split(":")]
        hours, minutes, seconds = (parts + [0, 0, 0])[:3]
    else:
        parts = [int(p) for p in text.split(":")]
        if len(parts) == 1:
            hours, minutes, seconds = 0, parts[0], 0
        elif len(parts) == 2:
            hours, minutes, seconds = 0, parts[0], parts[1]
        elif len(parts) == 3:
            hours, minutes, seconds = parts
        else:
            raise ValueError(value)
    if min(days, hours, minutes, seconds) < 0 or len(parts) > 3:
        raise ValueError(value)
    total = days * 1440 + hours * 60 + minutes + math.ceil(seconds / 60)
    if total < 1:
        raise ValueError(value)
    return total


TIME_EXPECTED = 'minutes (a whole number) or Slurm\'s "HH:MM:SS" / "D-HH:MM"'


def slurm_time_problem(minutes: int) -> str | None:
    """Why a Slurm job cannot be given this time limit (too short to be warned and still score), or None."""
    if minutes >= MIN_SLURM_MINUTES:
        return None
    lead = signal_lead_s(minutes)
    return (
        f"{minutes} minute{'s' if minutes > 1 else ''} is too short for a zoo job: Slurm warns it {lead} s before its limit, "
        f"and up to 60 s earlier, so it could be stopped before its model loads; give at least {MIN_SLURM_MINUTES} minutes"
    )


class _Checker:
    """Checks a plan's values, each error one line: `<file>: <where>: <problem>`."""

    def __init__(self, name: str, base: Path):
        self.name = name
        self.base = base

    def error(self, where: str, problem: str) -> PlanError:
        return PlanError(f"{self.name}: {where}: {problem}.")

    def keys(self, table: Mapping[str, Any], known: Sequence[str], where: str) -> None:
        unknown = [k for k in table if k not in known]
        if unknown:
            raise PlanError(f"{self.name}: unknown key {unknown[0]!r} in {where}; the keys there are {', '.join(known)}.")

    def text(self, value: Any, where: str, default: str | None = None) -> Any:
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(where, f"must be text, not {_kind(value)}")
        return value.strip()

    def flag(self, value: Any, where: str, default: bool) -> bool:
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(where, f"must be true or false, not {value!r}")
        return value

    def whole(self, value: Any, where: str, minimum: int) -> Any:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.error(where, f"must be a whole number of at least {minimum}, not {value!r}")
        return value

    def path(self, value: Any, where: str) -> Path | None:
        text = self.text(value, where)
        if text is None:
            return None
        path = Path(os.path.expanduser(text))
        return (path if path.is_absolute() else self.base / path).resolve()

    def texts(self, value: Any, where: str) -> tuple[str, ...] | None:
        if value is None:
            return None
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v.strip() for v in values):
            raise self.error(where, "must be text or a non-empty list of text")
        return tuple(dict.fromkeys(v.strip() for v in values))

    def choices(self, value: Any, where: str, options: Sequence[str], default: tuple[str, ...] | None) -> Any:
        values = self.texts(value, where)
        if values is None:
            return default
        unknown = [v for v in values if v not in options]
        if _RENAMED_PRECISION in unknown and "bf16-rescore" in options:
            raise self.error(
                where,
                f"{_RENAMED_PRECISION} was renamed bf16-rescore: it is not exact (its float32 re-scoring threshold is "
                "calibrated, not proven); name bf16-rescore knowing that, or float32",
            )
        if unknown:
            pair_key = where.endswith("conventions") and not where.endswith("choice_conventions")
            hint = " (a multiple-choice convention: name it in choice_conventions)" if pair_key and unknown[0] in CHOICE_CONVENTIONS else ""
            raise self.error(where, f"unknown {unknown[0]!r}{hint}; choose from {', '.join(options)}")
        return values

    def metrics(self, value: Any, where: str) -> tuple[str, ...] | None:
        from biaslens.engine.metrics import parse_metrics

        values = self.texts(value, where)
        if values is None:
            return None
        try:
            return tuple(parse_metrics(list(values)))
        except InputError as exc:
            raise self.error(where, str(exc).rstrip(".")) from None

    def datasets(self, value: Any, where: str, *, required: bool = False) -> Any:
        if value is None:
            if required:
                raise self.error(where, "no datasets: name at least one (crows-pairs, stereoset, or a pairs file)")
            return None
        values = [value] if isinstance(value, (str, dict)) else value
        if not isinstance(values, list) or not values:
            raise self.error(where, "must be a dataset name, a pairs file, or a list of them")
        out = tuple(self.dataset(v, f"{where}[{i}]") for i, v in enumerate(values))
        labels = [d.label for d in out]
        duplicate = next((x for x in labels if labels.count(x) > 1), None)
        if duplicate is not None:
            raise self.error(where, f"{duplicate!r} is named twice; give each dataset once (or a different label)")
        return out

    def dataset(self, value: Any, where: str) -> ZooDataset:
        from biaslens.data.datasets import canonical_name
        from biaslens.data.multiple_choice import choice_dataset_name
        from biaslens.zoo.choicecells import choice_family

        table = {"name": value} if isinstance(value, str) else value
        if not isinstance(table, dict):
            raise self.error(where, f"must be a dataset name, a pairs file or a table, not {_kind(value)}")
        self.keys(table, _DATASET_KEYS, where)
        name = self.text(table.get("name"), f"{where}.name")
        if name is None:
            raise self.error(where, "has no name (a dataset name or a pairs file)")
        key = canonical_name(name) or choice_dataset_name(name)
        family = choice_family(key) if key is not None else None
        if key is None:
            path = Path(os.path.expanduser(name))
            path = (path if path.is_absolute() else self.base / path).resolve()
            family = choice_family(str(path)) if path.exists() else None
            if not path.is_file() and family is None:
                from biaslens.data.datasets import DATASETS

                raise self.error(
                    f"{where}.name",
                    f"no dataset named {name!r} and no file {path}; known datasets: {', '.join(DATASETS)}, bbq, winogender "
                    "(and their subsets: `biaslens datasets`)",
                )
            resolved, label = str(path), self.text(table.get("label"), f"{where}.label", path.stem if path.is_file() else path.name)
        else:
            resolved, label = key, self.text(table.get("label"), f"{where}.label", key)
        return ZooDataset(
            name=resolved,
            label=label,
            limit=self.whole(table.get("limit"), f"{where}.limit", 1),
            sample=self.whole(table.get("sample"), f"{where}.sample", 1),
            seed=self.whole(table.get("seed"), f"{where}.seed", 0) or 0,
            family=family,
        )

    def model(self, index: int, table: dict[str, Any], datasets: tuple[ZooDataset, ...], defaults: dict[str, Any]) -> ZooModel:
        where = f"models[{index}]"
        self.keys(table, _MODEL_KEYS, where)
        ident = self.text(table.get("id"), f"{where}.id")
        if ident is None:
            raise self.error(where, "has no id (a hub id such as bert-base-cased, or a model folder)")
        local, resolved = self.model_id(ident, f"{where}.id")
        revision = self.text(table.get("revision"), f"{where}.revision")
        if local and revision is not None:
            raise self.error(f"{where}.revision", "a revision names a commit of a hub model; a local folder has none (leave it out)")
        kind = self.text(table.get("kind"), f"{where}.kind")
        if kind is not None and kind not in KINDS:
            raise self.error(f"{where}.kind", f"unknown {kind!r}; choose from {', '.join(KINDS)}")
        default_label = Path(resolved).name if local else resolved + (f"@{revision[:10]}" if revision else "")
        own_metrics = self.metrics(table.get("metrics"), f"{where}.metrics")
        precisions = self.choices(table.get("precision"), f"{where}.precision", tuple(PRECISIONS), None) or defaults["precisions"]
        return ZooModel(
            index=index,
            id=resolved,
            local=local,
            revision=revision,
            label=self.text(table.get("label"), f"{where}.label", default_label),
            family=self.text(table.get("family"), f"{where}.family"),
            kind=kind,
            datasets=self.datasets(table.get("datasets"), f"{where}.datasets") or datasets,
            metrics=own_metrics if own_metrics is not None else defaults["metrics"],
            conventions=self.choices(table.get("conventions"), f"{where}.conventions", CONVENTIONS, None) or defaults["conventions"],
            choice_conventions=self.choices(table.get("choice_conventions"), f"{where}.choice_conventions", tuple(CHOICE_CONVENTIONS), None)
            or defaults["choice_conventions"]
            or (DEFAULT_CHOICE_CONVENTION,),
            precisions=precisions,
            compats=self.choices(table.get("compat"), f"{where}.compat", _compat_modes(), None) or defaults["compats"],
            device=self.text(table.get("device"), f"{where}.device", defaults["device"]),
            batch_tokens=self.whole(table.get("batch_tokens"), f"{where}.batch_tokens", 1) or defaults["batch_tokens"],
            chunk_pairs=self.whole(table.get("chunk_pairs"), f"{where}.chunk_pairs", 1) or defaults["chunk_pairs"],
            allow_pickle=self.flag(table.get("allow_pickle"), f"{where}.allow_pickle", defaults["allow_pickle"]),
            slurm=self.resources(table.get("slurm"), f"{where}.slurm", _RESOURCE_KEYS),
        )

    def model_id(self, ident: str, where: str) -> tuple[bool, str]:
        """(is a local folder, the folder made absolute or the hub id)."""
        from biaslens.engine.identity import check_hub_id, looks_like_path

        path = Path(os.path.expanduser(ident))
        path = path if path.is_absolute() else self.base / path
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise self.error(where, f"{path} has no config.json: give the folder that holds the model's config and weights")
            return True, str(path.resolve())
        if looks_like_path(ident):
            raise self.error(where, f"no model folder {path}")
        try:
            check_hub_id(ident)
        except InputError as exc:
            raise self.error(where, str(exc).rstrip(".")) from None
        return False, ident

    def slurm(self, value: Any) -> SlurmSettings:
        found = self.resources(value, "slurm", _SLURM_KEYS)
        return SlurmSettings().with_overrides(found)

    def resources(self, value: Any, where: str, known: Sequence[str]) -> dict[str, Any]:
        """A Slurm table (`[slurm]`, or a model's `slurm = {...}`), checked: the values it sets, by `SlurmSettings` field."""
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(where, f"must be a table ({'[slurm]' if where == 'slurm' else 'slurm = { mem_gb = 64, ... }'})")
        self.keys(value, known, f"[{where}]" if where == "slurm" else where)
        additional = value.get("additional")
        if additional is not None and (
            not isinstance(additional, dict) or not all(isinstance(v, (str, int, float, bool)) for v in additional.values())
        ):
            raise self.error(f"{where}.additional", 'must be a table of sbatch options (e.g. account = "my-lab")')
        gpu_keys = [k for k in GPU_KEYS if k in value]
        if len(gpu_keys) > 1:
            raise self.error(
                where, f'{" and ".join(gpu_keys)} both ask for GPUs: give one (gpus_per_job = 2, gpus = "a100:2" or gres = "gpu:a100:2")'
            )
        setup = self.texts(value.get("setup"), f"{where}.setup") if value.get("setup") != [] else ()
        found = {
            "partition": self.text(value.get("partition"), f"{where}.partition"),
            "gpus_per_job": self.whole(value.get("gpus_per_job"), f"{where}.gpus_per_job", 0),
            "gpus": self.text(value.get("gpus"), f"{where}.gpus"),
            "gres": self.text(value.get("gres"), f"{where}.gres"),
            "cpus_per_job": self.whole(value.get("cpus_per_job"), f"{where}.cpus_per_job", 1),
            "mem_gb": self.number(value.get("mem_gb"), f"{where}.mem_gb"),
            "time_min": self.slurm_time(value.get("time"), f"{where}.time") if "time" in value else None,
            "setup": tuple(setup) if setup is not None else None,
            "additional": dict(additional) if additional is not None else None,
            "max_parallel": self.whole(value.get("max_parallel"), f"{where}.max_parallel", 1),
            "models_per_job": self.whole(value.get("models_per_job"), f"{where}.models_per_job", 1),
        }
        return {k: v for k, v in found.items() if v is not None}

    def slurm_time(self, value: Any, where: str) -> int:
        minutes = self.time(value, where)
        problem = slurm_time_problem(minutes)
        if problem:
            raise self.error(where, problem)
        return minutes

    def local(self, value: Any) -> LocalSettings:
        if value is None:
            return LocalSettings()
        if not isinstance(value, dict):
            raise self.error("local", "must be a table ([local])")
        self.keys(value, _LOCAL_KEYS, "[local]")
        return LocalSettings(
            max_parallel=self.whole(value.get("max_parallel"), "local.max_parallel", 1) or 1,
            time_min=self.time(value.get("time"), "local.time"),
            gpus_per_job=self.whole(value.get("gpus_per_job"), "local.gpus_per_job", 0),
            models_per_job=self.whole(value.get("models_per_job"), "local.models_per_job", 1) or 1,
        )

    def number(self, value: Any, where: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise self.error(where, f"must be a number above 0, not {value!r}")
        return float(value)

    def time(self, value: Any, where: str) -> int:
        if value is None:
            return 24 * 60
        try:
            return parse_time(value)
        except (ValueError, TypeError):
            raise self.error(where, f"{value!r} is not a time: give {TIME_EXPECTED}") from None


__all__ = [
    "CONVENTIONS",
    "DEFAULT_CONVENTION",
    "DEFAULT_PRECISION",
    "DEFAULT_RETRIES",
    "EXECUTORS",
    "GPU_KEYS",
    "KINDS",
    "MIN_SLURM_MINUTES",
    "PRECISIONS",
    "LocalSettings",
    "PlanError",
    "SlurmSettings",
    "TIME_EXPECTED",
    "Unit",
    "ZooDataset",
    "ZooModel",
    "ZooPlan",
    "load_plan",
    "parse_plan",
    "parse_time",
    "signal_lead_s",
    "slurm_time_problem",
]

"""What each page shows, as one typed view per page, and its URL form (no streamlit here: `ui.state` does the session and
URL mechanics, tests/app/test_views.py the properties).

* `GlobalView`: the sidebar's settings (model, dataset, data folder, scoring mode, device, precision, hub revision) and
  classroom mode: the part of every page's view that every link and page switch keeps.
* One frozen view per page (`InspectorView`, `ExplorerView`, `CompareView`, `KuritaView`, `LabView`, `AnalysesView`):
  `g`, the global part, plus the page's own fields; `PAGE` is the page's script.
* `view.to_query()` is the URL's parameters: one per field, named as the field; a field at its default is left out; a
  view within a view (the inspector's pinned inspection) as its own parameters with a prefix (`pin.model`, `pin.pair`).
  `View.from_query(query)` reads them back and never raises: a value that does not parse (`pair=-1`, `pair=²`, a
  5,000-digit number, `seed=abc`) leaves its field at the default and comes back as a `Rejection` (name, value, what
  was expected), which the page shows in one line; a list keeps each value once and at most `MAX_LIST` of them (the
  repeats and the rest rejected). `from_query(to_query(v)) == v` for every view whose lists hold each value once.
* A list is repeated parameters (`models=a&models=b`). A list of known names (`metrics`) also reads the comma form
  (`metrics=aul,cps`: no name holds a comma). A list of free names (`models`, the leaderboard's `families`, ...) keeps
  a value with a comma whole, since a local folder's name may hold one, and says so in one line (a `Rejection` whose
  value was `kept`): `models=gpt2,bert` is one model, never two guessed.
* Links from one page to another are built by the views' navigation methods (`ExplorerView.inspect(pair)`): they keep
  `g` whole (the lab's links change only the model, to the lab model they open).
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, ClassVar, Self

from biaslens import lab
from biaslens.engine.metrics import COMPAT_MODES, METRICS, PAPER_METRICS, default_metrics
from biaslens.engine.models import DTYPES

#: The URL's parameters: a value, or several for a repeated parameter (a list field, e.g. `models`).
Query = Mapping[str, "str | Sequence[str]"]

#: Devices the sidebar knows (`auto`: CUDA, then MPS, then the CPU); one this machine lacks is refused by the sidebar.
DEVICES = ("auto", "cpu", "cuda", "mps")
#: The most digits a whole number in a link may have (`int()` refuses more than 4,300; pair ids and seeds need far fewer).
MAX_DIGITS = 18
#: The most values a list parameter of a link keeps (`models`, `metrics`, `families`, ...): more than any page offers at once.
#: The rest, and every value given again, are left out and named before anything is drawn (a link with 10,000 `models=`
#: drew 10,000 chips, which no browser renders).
MAX_LIST = 100
#: A decimal number as a link writes it (ASCII only: `float()` also reads "nan", "1_0" and other scripts' digits).
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_ON, _OFF = ("on", "1", "true", "yes"), ("off", "0", "false", "no")


@dataclass(frozen=True)
class Rejection:
    """A link's value that was not used: the parameter, its value as given, and what was expected instead. `partly`: the
    field kept the parameter's other values (a list with one unknown name). `kept`: the value was used as given, and
    `expected` says how it was read (a free name with a comma, kept whole)."""

    name: str
    value: str
    expected: str
    partly: bool = False
    kept: bool = False


class _Reader:
    """Reads typed values from a query; a value that does not parse is recorded as a `Rejection` and read as None.
    `prefix`: the parameters of a view within the view (`pin.pair`), read by `within`."""

    def __init__(self, query: Query, prefix: str = "", rejected: list[Rejection] | None = None) -> None:
        self.query = query
        self.prefix = prefix
        self.rejected: list[Rejection] = [] if rejected is None else rejected

    def within(self, prefix: str) -> _Reader:
        """A reader of the parameters that start with `prefix` (named without it), reporting to the same list."""
        return _Reader(self.query, self.prefix + prefix, self.rejected)

    def given(self) -> dict[str, str]:
        """This reader's parameters that the query gives a value (their full names, the last value of each)."""
        return {k: v[-1] for k in self.query if k.startswith(self.prefix) and (v := self._values(k[len(self.prefix) :]))}

    def _values(self, name: str) -> list[str]:
        value = self.query.get(self.prefix + name)
        values = [] if value is None else [value] if isinstance(value, str) else list(value)
        return [str(v) for v in values if v is not None and str(v) != ""]

    def _one(self, name: str) -> str | None:
        values = self._values(name)
        return values[-1] if values else None  # a repeated parameter: the last one, as a browser's form would

    def _reject(self, name: str, value: str, expected: str, partly: bool = False, kept: bool = False) -> None:
        self.rejected.append(Rejection(self.prefix + name, value, expected, partly, kept))

    def text(self, name: str) -> str | None:
        return self._one(name)

    def _list(self, name: str, commas: bool = False) -> list[str]:
        """A repeated parameter's values, each once and at most `MAX_LIST`; the repeats and the rest are rejected (partly).
        `commas`: a value with commas is several (`metrics=aul,cps`), else it is kept whole and said once (module doc)."""
        values = self._values(name)
        if commas:
            values = [part.strip() for value in values for part in value.split(",") if part.strip()]
        elif with_commas := list(dict.fromkeys(v for v in values if "," in v)):  # said once, for the first
            full, more = self.prefix + name, len(with_commas) - 1
            how = f"one name, commas included (a folder's name may hold one): several are written {full}=a&{full}=b"
            self._reject(
                name, with_commas[0], how + (f" ({more:,} more such value{'' if more == 1 else 's'})" if more else ""), partly=True, kept=True
            )
        once = list(dict.fromkeys(values))
        if len(once) < len(values):
            counts = Counter(values)
            repeated = [v for v in once if counts[v] > 1]
            left = len(values) - len(once)
            self._reject(name, ", ".join(repeated), f"each value once ({left:,} repeat{'' if left == 1 else 's'} left out)", partly=True)
        if len(once) > MAX_LIST:
            self._reject(name, ", ".join(once[MAX_LIST:]), f"at most {MAX_LIST} values (the first {MAX_LIST} kept)", partly=True)
        return once[:MAX_LIST]

    def texts(self, name: str) -> tuple[str, ...] | None:
        return tuple(self._list(name)) or None

    def matching(self, name: str, pattern: re.Pattern[str], expected: str) -> str | None:
        value = self._one(name)
        if value is None or pattern.fullmatch(value):
            return value
        self._reject(name, value, expected)
        return None

    def choice(self, name: str, options: Sequence[str], expected: str | None = None) -> str | None:
        value = self._one(name)
        if value is None or value in options:
            return value
        self._reject(name, value, expected or "one of " + ", ".join(options))
        return None

    def choices(self, name: str, options: Sequence[str], expected: str) -> tuple[str, ...] | None:
        values = self._list(name, commas=True)
        known = tuple(v for v in values if v in options)
        unknown = [v for v in values if v not in options]
        if unknown:
            self._reject(name, ", ".join(unknown), expected, partly=bool(known))
        return known or None

    def whole(self, name: str, low: int, high: int | None, expected: str) -> int | None:
        value = self._one(name)
        if value is None:
            return None
        number = _whole_number(value)
        if number is None or number < low or (high is not None and number > high):
            self._reject(name, value, expected)
            return None
        return number

    def sample_and_seed(self) -> dict[str, int | None]:
        """A page's `sample` (a number of pairs) and its `seed`."""
        return {"sample": self.whole("sample", 1, None, SAMPLE_EXPECTED), "seed": self.whole("seed", 0, MAX_SEED, SEED_EXPECTED)}

    def number(self, name: str, low: float, high: float, expected: str) -> float | None:
        value = self._one(name)
        if value is None:
            return None
        number = float(value) if len(value) <= 32 and _DECIMAL.fullmatch(value) else math.nan
        if not low <= number <= high:  # NaN and the infinities fail too
            self._reject(name, value, expected)
            return None
        return number

    def flag(self, name: str) -> bool | None:
        value = self._one(name)
        if value is None or value.lower() in _ON + _OFF:
            return None if value is None else value.lower() in _ON
        self._reject(name, value, "on or off")
        return None


def _whole_number(text: str) -> int | None:
    """`text` as a whole number 0 or more if it is one, in ASCII digits ('²' and '٣' are digits to `str.isdigit()`)."""
    return int(text) if 0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit() else None


def _number_text(value: float) -> str:
    short = f"{value:g}"  # "0.9", "4": what a person would write
    return short if float(short) == value else repr(value)


def _encode(value: Any) -> str | list[str]:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return _number_text(value)
    if isinstance(value, tuple):
        return [str(v) for v in value]
    return str(value)


class View(ABC):
    """What every view has: its URL form. Subclasses are frozen dataclasses whose fields are named as their parameters."""

    @classmethod
    @abstractmethod
    def read(cls, r: _Reader) -> Self:
        """The view from a reader of the URL's parameters."""

    @classmethod
    def from_query(cls, query: Query) -> tuple[Self, list[Rejection]]:
        """The view a URL describes (a missing or unusable value leaves its field at the default) and the values not used."""
        reader = _Reader(query)
        return cls.read(reader), reader.rejected

    def to_query(self) -> dict[str, str | list[str]]:
        """The URL's parameters: the global part first, then each field not at its default (an empty one is left out); a
        view within the view (the inspector's pinned one) as its own parameters, prefixed with the field's name
        (`pin.model`, `pin.pair`)."""
        query: dict[str, str | list[str]] = {}
        for f in fields(self):  # type: ignore[arg-type]  # every View is a dataclass
            value = getattr(self, f.name)
            if isinstance(value, View):
                query.update(value.to_query() if f.name == "g" else {f"{f.name}.{k}": v for k, v in value.to_query().items()})
            elif value != f.default and value is not None and value != "" and value != ():
                query[f.name] = _encode(value)
        return query

    @classmethod
    def own_fields(cls) -> tuple[str, ...]:
        """The page's own parameters (the global part's are `GlobalView`'s)."""
        return tuple(f.name for f in fields(cls) if f.name != "g")  # type: ignore[arg-type]


def _build(cls: type, **values: Any) -> Any:
    """`cls(**values)`, a value of None leaving its field at the default."""
    return cls(**{k: v for k, v in values.items() if v is not None})


# ---------------------------------------------------------------------------------------
# The global part: the sidebar
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GlobalView(View):
    """The sidebar's settings and classroom mode. None: not given (the server's default model and data folder, the
    model's default dataset, the hub's main revision)."""

    model: str | None = None
    dataset: str | None = None
    data_dir: str | None = None
    compat: str = "default"
    device: str = "auto"
    dtype: str = "float32"
    revision: str | None = None
    classroom: bool = False

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(
            cls,
            model=r.text("model"),
            dataset=r.text("dataset"),
            data_dir=r.text("data_dir"),
            compat=r.choice("compat", COMPAT_MODES),
            device=r.choice("device", DEVICES),
            dtype=r.choice("dtype", tuple(DTYPES)),
            revision=r.text("revision"),
            classroom=r.flag("classroom"),
        )

    @classmethod
    def own_fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


# ---------------------------------------------------------------------------------------
# The pages
# ---------------------------------------------------------------------------------------

PAIR_EXPECTED = "a pair id (a whole number, 0 or more)"
SAMPLE_EXPECTED = "a number of pairs (a whole number, 1 or more)"
SEED_EXPECTED = "a seed (a whole number, 0 or more)"
#: The largest seed a link may set (NumPy's generators take seeds below 2**32).
MAX_SEED = 2**32 - 1


#: The metrics the inspector scores: the paper's five for a masked model, a causal model's own five.
INSPECTED_METRICS: tuple[str, ...] = (*PAPER_METRICS, *default_metrics("causal"))


def _inspectable(metric: str | None) -> str:
    """A metric the inspector shows (`INSPECTED_METRICS`), else its default: the inspector scores no other."""
    return metric if metric in INSPECTED_METRICS else InspectorView.metric


#: The prefix of the pinned inspection's parameters in the inspector's link (`pin.model`, `pin.pair`, `pin.compat`).
PIN = "pin."


@dataclass(frozen=True)
class InspectorView(View):
    """The pair inspector: a dataset's pair (`pair`) or two typed sentences (`s1`, `s2`), the metric in focus, and what it
    shows side by side: the same pair under other `models` (the sidebar's settings otherwise) and `pin`, a pinned
    inspection (a pair with the model and settings it was pinned with: its own view, without a pin or models of its own);
    `anatomy`: the pair's Anatomy view (attribution, logit lens, heads) is open."""

    PAGE: ClassVar[str] = "pages/inspector.py"
    g: GlobalView = GlobalView()
    pair: int | None = None
    s1: str | None = None
    s2: str | None = None
    metric: str = "aul"
    anatomy: bool = False
    models: tuple[str, ...] = ()
    pin: InspectorView | None = None

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(cls, **cls._read_pair(r), anatomy=r.flag("anatomy"), models=r.texts("models"), pin=cls._read_pin(r.within(PIN)))

    @classmethod
    def _read_pair(cls, r: _Reader) -> dict[str, Any]:
        return {
            "g": GlobalView.read(r),
            "pair": r.whole("pair", 0, None, PAIR_EXPECTED),
            "s1": r.text("s1"),
            "s2": r.text("s2"),
            "metric": r.choice("metric", INSPECTED_METRICS),
        }

    @classmethod
    def _read_pin(cls, r: _Reader) -> Self | None:
        given = r.given()
        if not given:
            return None
        values = cls._read_pair(r)
        if values["pair"] is None and values["s1"] is None and values["s2"] is None:  # no pair to pin: said once
            said = {x.name for x in r.rejected}
            unsaid = [(name, value) for name, value in given.items() if name not in said]
            if unsaid:
                r.rejected.append(Rejection(*unsaid[0], f"a pinned pair with it ({PIN}pair, or {PIN}s1 and {PIN}s2)"))
            return None
        return _build(cls, **values)

    def pinned(self) -> InspectorView:
        """What Pin keeps: this inspection (pair, model and settings), without a pin or other models of its own."""
        return replace(self, models=(), pin=None, anatomy=False)


#: The dataset explorer's tabs, as a link names them.
EXPLORER_TABS = ("scores", "types", "groups", "pairs", "export")


#: A stored result's id in a link: a results store's unit key (64 hex digits).
RESULT_EXPECTED = "a stored result's id (64 hexadecimal digits)"
_RESULT = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ExplorerView(View):
    """The dataset explorer: the metrics scored, the one in focus (None: the first), the sample and its seed, the tab.

    With `store` and `result` (a results store of `biaslens zoo run` and one of its units, opened from the leaderboard),
    it shows that stored run, read from the store: nothing is scored and the sidebar's model and dataset are not used."""

    PAGE: ClassVar[str] = "pages/explorer.py"
    g: GlobalView = GlobalView()
    metrics: tuple[str, ...] = PAPER_METRICS
    metric: str | None = None
    sample: int | None = None
    seed: int = 0
    tab: str = "scores"
    store: str | None = None
    result: str | None = None

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(
            cls,
            g=GlobalView.read(r),
            metrics=r.choices("metrics", tuple(METRICS), "metric names from " + ", ".join(METRICS)),
            metric=r.choice("metric", tuple(METRICS)),
            **r.sample_and_seed(),
            tab=r.choice("tab", EXPLORER_TABS),
            store=r.text("store"),
            result=r.matching("result", _RESULT, RESULT_EXPECTED),
        )

    @property
    def stored(self) -> bool:
        """Whether this is a stored run (from a results store), not the sidebar's model on the sidebar's dataset."""
        return self.store is not None and self.result is not None

    def inspect(self, pair: int) -> InspectorView:
        """A pair of the run in the inspector: the same settings, the metric in focus."""
        return InspectorView(g=self.g, pair=pair, metric=_inspectable(self.metric or self.metrics[0]))

    def inspect_stored(self, pair: int, model: str, revision: str | None, dataset: str, dtype: str | None) -> InspectorView:
        """A pair of a stored run in the inspector, under the run's model (its revision and dtype) on its dataset."""
        g = replace(self.g, model=model, revision=revision, dataset=dataset, dtype=dtype if dtype in DTYPES else self.g.dtype)
        return InspectorView(g=g, pair=pair, metric=_inspectable(self.metric or self.metrics[0]))


@dataclass(frozen=True)
class CompareView(View):
    """The model comparison: the models (none: the sidebar's), the metric, the sample and its seed."""

    PAGE: ClassVar[str] = "pages/compare.py"
    g: GlobalView = GlobalView()
    models: tuple[str, ...] = ()
    metric: str = "aul"
    sample: int | None = None
    seed: int = 0

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(
            cls,
            g=GlobalView.read(r),
            models=r.texts("models"),
            metric=r.choice("metric", tuple(METRICS)),
            **r.sample_and_seed(),
        )

    def inspect(self, pair: int) -> InspectorView:
        """A flipped pair in the inspector: the sidebar's model and settings, the compared metric."""
        return InspectorView(g=self.g, pair=pair, metric=_inspectable(self.metric))


@dataclass(frozen=True)
class KuritaView(View):
    """The Kurita templates page: its templates and target pairs, as typed (lines joined by new lines)."""

    PAGE: ClassVar[str] = "pages/kurita.py"
    g: GlobalView = GlobalView()
    templates: str | None = None
    targets: str | None = None

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(cls, g=GlobalView.read(r), templates=r.text("templates"), targets=r.text("targets"))


_LAB = lab.LabSettings()
_PRESET = lab.SCENARIOS[lab.DEFAULT_LAB_SCENARIO]
#: The lab's knobs in a link: the bounds of its widgets (and of `lab.LabSettings`).
LAB_BOUNDS: dict[str, tuple[float, float] | tuple[int, int]] = {
    "association": (0.0, 1.0),
    "ratio": (1.0, 100.0),
    "corpus": (100, 1_000_000),
    "steps": (1, 100_000),
    "seed": (0, 2**31 - 1),
}


def _knob(r: _Reader, name: str) -> Any:
    """One of the lab's knobs, within `LAB_BOUNDS`."""
    low, high = LAB_BOUNDS[name]
    if isinstance(low, float):
        return r.number(name, low, high, f"a number from {low:g} to {high:g}")
    return r.whole(name, low, int(high), f"a whole number from {low:,} to {high:,}")


@dataclass(frozen=True)
class LabView(View):
    """The bias lab: the scenario and the knobs of the model to train."""

    PAGE: ClassVar[str] = "pages/lab.py"
    g: GlobalView = GlobalView()
    scenario: str = _PRESET.key
    association: float = _PRESET.association
    ratio: float = _PRESET.frequency_ratio
    corpus: int = _LAB.corpus_size
    steps: int = _LAB.steps
    seed: int = _LAB.seed
    kind: str = _LAB.kind

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(
            cls,
            g=GlobalView.read(r),
            scenario=r.choice("scenario", tuple(lab.SCENARIOS)),
            kind=r.choice("kind", tuple(lab.LAB_KINDS)),
            association=_knob(r, "association"),
            ratio=_knob(r, "ratio"),
            corpus=_knob(r, "corpus"),
            steps=_knob(r, "steps"),
            seed=_knob(r, "seed"),
        )

    def inspect(self, model: str, stereo: str, anti: str, metric: str) -> InspectorView:
        """A held-out pair in the inspector, under the lab model `model` (a folder: no hub revision) with its own held-out
        pairs as the dataset (not those of another lab model: their planted truth differs); the rest kept."""
        pairs = str(Path(model) / lab.PAIRS_FILE)
        return InspectorView(g=replace(self.g, model=model, revision=None, dataset=pairs), s1=stereo, s2=anti, metric=_inspectable(metric))


@dataclass(frozen=True)
class AnalysesView(View):
    """The paper analyses: the sample of each dataset and its seed."""

    PAGE: ClassVar[str] = "pages/analyses.py"
    g: GlobalView = GlobalView()
    sample: int | None = None
    seed: int = 0

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(cls, g=GlobalView.read(r), **r.sample_and_seed())


#: The documentation pages the app shows (docs/<name>.md, which ship with the project), in the docs site's order.
DOC_PAGES = (
    "index",
    "app",
    "cli",
    "python",
    "scoring",
    "notebooks",
    "metrics",
    "models",
    "datasets",
    "analyses",
    "kurita",
    "anatomy",
    "lab",
    "trust",
    "zoo",
    "performance",
    "operators",
)


@dataclass(frozen=True)
class DocsView(View):
    """The documentation, in the app: one page of the docs site (`page`, a name of `DOC_PAGES`)."""

    PAGE: ClassVar[str] = "pages/docs.py"
    g: GlobalView = GlobalView()
    page: str = "app"

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(cls, g=GlobalView.read(r), page=r.choice("page", DOC_PAGES, "a page of the documentation: " + ", ".join(DOC_PAGES)))


#: The leaderboard's sort orders, as a link names them: distance from 50 (smallest first), highest or lowest score first.
LEADERBOARD_ORDERS = ("closest", "highest", "lowest")


@dataclass(frozen=True)
class LeaderboardView(View):
    """The leaderboard: the results store it reads, the column it is sorted by and how, the bias type its scores are
    restricted to, and the families, kinds and sizes of the models shown (empty: all)."""

    PAGE: ClassVar[str] = "pages/leaderboard.py"
    g: GlobalView = GlobalView()
    store: str | None = None
    sort: str | None = None
    order: str = "closest"
    bias_type: str | None = None
    families: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()

    @classmethod
    def read(cls, r: _Reader) -> Self:
        return _build(
            cls,
            g=GlobalView.read(r),
            store=r.text("store"),
            sort=r.text("sort"),
            order=r.choice("order", LEADERBOARD_ORDERS),
            bias_type=r.text("bias_type"),
            families=r.texts("families"),
            kinds=r.texts("kinds"),
            sizes=r.texts("sizes"),
        )

    def explore(self, result: str, metrics: tuple[str, ...], metric: str) -> ExplorerView:
        """A cell in the explorer: the stored run of its model and dataset (every metric stored), the cell's metric in focus."""
        return ExplorerView(g=self.g, metrics=metrics or (metric,), metric=metric, store=self.store, result=result)


#: Every page's view, in the order of the app's pages.
PAGE_VIEWS: tuple[type[View], ...] = (InspectorView, ExplorerView, CompareView, LeaderboardView, KuritaView, LabView, AnalysesView, DocsView)

"""The lab's settings: `LabSettings` (every knob of one experiment and its limits), the four scenario presets."""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from biaslens.data.sentences import control_character, describe_control
from biaslens.errors import InputError
from biaslens.engine.metrics import registry


#: Bumped whenever a change to generation or training would change a trained model, so
#: models cached by an older biaslens are not mistaken for the current recipe.
LAB_FORMAT = 1


#: Attributes of each set that a group word never meets in the corpus.
HELDOUT_PER_WORD = 2
#: The kinds of lab model (`LabSettings.kind`) and the architecture each is (a small one of it: `lab.training.RECIPES`).
LAB_ARCHITECTURES = {"masked": "BERT", "causal": "GPT-2"}
LAB_KINDS = tuple(LAB_ARCHITECTURES)


@dataclass(frozen=True)
class LabSettings:
    """Every knob of one lab experiment: the corpus, and the model trained on it.

    Equal settings give an identical corpus, tokenizer and model (same seed, same machine).
    """

    group_a: tuple[str, ...] = ("John", "Paul", "Mark", "David", "Peter", "James", "Tom", "Mike", "Steve", "Frank", "George", "Henry")
    group_b: tuple[str, ...] = ("Mary", "Anna", "Sarah", "Emma", "Julia", "Laura", "Kate", "Lisa", "Susan", "Helen", "Alice", "Jane")
    attributes_x: tuple[str, ...] = (
        "doctor", "engineer", "pilot", "lawyer", "banker", "surgeon",
        "architect", "scientist", "mechanic", "plumber", "farmer", "programmer",
    )  # fmt: skip
    attributes_y: tuple[str, ...] = (
        "nurse", "teacher", "dancer", "singer", "florist", "secretary",
        "librarian", "designer", "cashier", "babysitter", "hairdresser", "receptionist",
    )  # fmt: skip
    templates: tuple[str, ...] = (
        "{name} is the {attribute} here.",
        "{name} works as the {attribute}.",
        "The {attribute} today is {name}.",
        "Everyone knows {name} is the best {attribute}.",
        "{name} became the {attribute} last year.",
        "We asked {name}, the {attribute}, for help.",
    )
    group_a_label: str = "group A"
    group_b_label: str = "group B"
    attributes_x_label: str = "attributes X"
    attributes_y_label: str = "attributes Y"
    association: float = 0.5
    frequency_ratio: float = 1.0
    corpus_size: int = 5000
    seed: int = 0
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    steps: int = 1000
    batch_size: int = 64
    learning_rate: float = 3e-3
    #: The kind of model trained: "masked" (a small BERT, masked-LM objective) or "causal" (a small GPT-2, next-token objective).
    kind: str = "masked"

    def __post_init__(self) -> None:
        # Normalise types, so that equal settings from a slider, the CLI or a JSON file
        # hash to the same model folder.
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "tuple[str, ...]":
                value = tuple(str(w).strip() for w in ([value] if isinstance(value, str) else value))
            elif f.type in ("int", "float", "str"):
                try:
                    value = {"int": int, "float": float, "str": str}[f.type](value)
                except (TypeError, ValueError) as exc:
                    raise InputError(f"{f.name} must be a number, got {value!r}.") from exc
            object.__setattr__(self, f.name, value)
        self.validate()

    def validate(self) -> None:
        """Raise InputError with a one-line message for a setting that cannot work."""
        for name, words, least in (
            ("group_a", self.group_a, 2),
            ("group_b", self.group_b, 2),
            ("attributes_x", self.attributes_x, HELDOUT_PER_WORD + 1),
            ("attributes_y", self.attributes_y, HELDOUT_PER_WORD + 1),
        ):
            if len(words) < least:
                raise InputError(f"{name} needs at least {least} words, got {len(words)}.")
            if any(not w for w in words):
                raise InputError(f"{name} contains an empty word.")
            if any("{" in w or "}" in w for w in words):
                raise InputError(f"{name} contains a brace; words may not contain {{ or }}.")
            if any("[" in w or "]" in w for w in words):  # checked before training: a lab model's tokenizer reads [MASK] as its mask
                bad = next(w for w in words if "[" in w or "]" in w)
                raise InputError(f"{name} contains {bad!r}; words may not contain [ or ] (the model's special tokens are written [MASK], [SEP]).")
            for word in words:
                at = control_character(word)
                if at is not None:
                    raise InputError(f"{name} contains a word with the control character {describe_control(word[at])}: remove it.")
        if len(self.group_a) != len(self.group_b):
            raise InputError(
                f"group_a and group_b need the same number of words (each pair swaps word i of one group for word i of the other), "
                f"got {len(self.group_a)} and {len(self.group_b)}."
            )
        words = [*self.group_a, *self.group_b, *self.attributes_x, *self.attributes_y]
        repeated = sorted({w for w in words if words.count(w) > 1})
        if repeated:
            raise InputError(f"Every group word and attribute must be distinct; repeated: {', '.join(repeated)}.")
        if not self.templates:
            raise InputError("At least one template is needed, e.g. '{name} is the {attribute} here.'")
        for template in self.templates:
            _template_parts(template)
        if not 0.0 <= self.association <= 1.0:
            raise InputError(f"association must lie between 0 and 1 (0.5 = no association), got {self.association}.")
        if not 1.0 <= self.frequency_ratio <= 100.0:
            raise InputError(f"frequency_ratio must lie between 1 and 100 (group A appears k times as often as group B), got {self.frequency_ratio}.")
        for name, low, high in (
            ("corpus_size", 100, 1_000_000),
            ("steps", 1, 100_000),
            ("batch_size", 1, 4096),
            ("hidden_size", 8, 1024),
            ("num_layers", 1, 24),
            ("seed", 0, 2**32 - 1),
        ):
            value = getattr(self, name)
            if not low <= value <= high:
                raise InputError(f"{name} must lie between {low:,} and {high:,}, got {value}.")
        if self.num_heads < 1 or self.hidden_size % self.num_heads:
            raise InputError(f"hidden_size ({self.hidden_size}) must be a multiple of num_heads ({self.num_heads}).")
        if not 0.0 < self.learning_rate < 1.0:
            raise InputError(f"learning_rate must lie between 0 and 1, got {self.learning_rate}.")
        if self.kind not in LAB_KINDS:
            raise InputError(f"Unknown lab model kind {self.kind!r}: choose from {', '.join(LAB_KINDS)}.")

    @property
    def scenario(self) -> str:
        """The scenario these settings belong to: association, frequency, both or neither."""
        planted, imbalanced = self.association != 0.5, self.frequency_ratio != 1.0
        return "both" if planted and imbalanced else "association" if planted else "frequency" if imbalanced else "neither"

    @property
    def expected(self) -> str:
        """The planted truth: 'stereo' (bias score should exceed 50), 'anti' (below 50) or 'none' (50)."""
        return "stereo" if self.association > 0.5 else "anti" if self.association < 0.5 else "none"

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LabSettings":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"Unknown lab setting(s): {', '.join(unknown)}.")
        values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**values)

    def key(self) -> str:
        """A short hash of the settings (and the lab format): the name of the model folder.

        A masked model's key leaves `kind` out, so the folders of lab models trained before causal ones existed still match.
        """
        settings = self.to_dict()
        if settings["kind"] == "masked":
            del settings["kind"]
        text = json.dumps({"format": LAB_FORMAT, **settings}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Scenario:
    key: str
    title: str
    association: float
    frequency_ratio: float
    description: str


#: The four presets: what is planted, and what an unconfounded metric should report.
SCENARIOS: dict[str, Scenario] = registry(
    (
        Scenario(
            key="association",
            title="Planted association",
            association=0.9,
            frequency_ratio=1.0,
            description="Group A goes with attributes X, group B with attributes Y, 9 times in 10; both groups equally frequent. "
            "A metric that detects bias scores well above 50.",
        ),
        Scenario(
            key="frequency",
            title="Frequency imbalance only",
            association=0.5,
            frequency_ratio=4.0,
            description="No association at all, but every group-A word appears 4 times as often as a group-B word. "
            "The truth is 50; a metric that confuses frequency with bias prefers the group-A sentences.",
        ),
        Scenario(
            key="both",
            title="Association and frequency imbalance",
            association=0.9,
            frequency_ratio=4.0,
            description="The planted association, plus group A 4 times as frequent. The truth is above 50.",
        ),
        Scenario(
            key="neither",
            title="Neither (control)",
            association=0.5,
            frequency_ratio=1.0,
            description="No association, no frequency imbalance. Every metric should stay near 50.",
        ),
    )
)


def scenario_settings(
    scenario: str, base: LabSettings | None = None, *, association: float | None = None, frequency_ratio: float | None = None
) -> LabSettings:
    """`base` (default: the default settings) with the association and frequency ratio of a preset.

    `association` and `frequency_ratio` set the strength of what the scenario plants
    (default: the preset's); a scenario that plants no association keeps 0.5 and one
    with no imbalance keeps 1, so the four scenarios stay four.
    """
    if scenario not in SCENARIOS:
        raise InputError(f"Unknown scenario {scenario!r}: choose from {', '.join(SCENARIOS)}.")
    s = SCENARIOS[scenario]
    if association is not None and s.association != 0.5:
        s = replace(s, association=association)
    if frequency_ratio is not None and s.frequency_ratio != 1.0:
        s = replace(s, frequency_ratio=frequency_ratio)
    return replace(base or LabSettings(), association=s.association, frequency_ratio=s.frequency_ratio)


def describe_settings(s: LabSettings) -> str:
    """'planted association · association 0.9, frequency ratio 1, seed 0', plus what differs from the defaults."""
    d = LabSettings()
    words = ("group_a", "group_b", "attributes_x", "attributes_y", "templates")
    model = ("hidden_size", "num_layers", "num_heads", "batch_size", "learning_rate")
    extra = [
        text
        for text, differs in (
            (f"a {s.kind} model", s.kind != d.kind),
            (f"{s.steps:,} steps", s.steps != d.steps),
            (f"{s.corpus_size:,} sentences", s.corpus_size != d.corpus_size),
            ("own words", any(getattr(s, k) != getattr(d, k) for k in words)),
            ("own model settings", any(getattr(s, k) != getattr(d, k) for k in model)),
        )
        if differs
    ]
    numbers = ", ".join([f"association {s.association:g}", f"frequency ratio {s.frequency_ratio:g}", f"seed {s.seed}", *extra])
    return f"{SCENARIOS[s.scenario].title.lower()} · {numbers}"


#: The model offered when the hub cannot be reached: the planted-association preset.
DEFAULT_LAB_SCENARIO = "association"


def _template_parts(template: str) -> list[tuple[str, str | None]]:
    """(literal text, field) pieces of a template; exactly one {name} and one {attribute}."""
    try:
        parts = [(literal, name) for literal, name, _spec, _conv in string.Formatter().parse(template)]
    except ValueError as exc:
        raise InputError(f"Template {template!r} is malformed: {exc}.") from exc
    names = [name for _literal, name in parts if name is not None]
    if sorted(names) != ["attribute", "name"]:
        raise InputError(f"Template {template!r} must contain {{name}} and {{attribute}} exactly once each, and no other field.")
    return parts

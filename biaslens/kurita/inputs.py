"""Kurita et al. (2019) inputs: templates, target pairs, attribute word lists, and the paper's WEAT-style tests.

A template such as ``[T] is a [A].`` has a target slot ``[T]`` and an attribute slot
``[A]``; `WeatSpec` / `KURITA_CATEGORIES` / `kurita_weat_spec` name the templates, target
pairs and WEAT word sets of the paper's five tests (Table 3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from biaslens.data import datafiles
from biaslens.data.sentences import control_character, describe_control
from biaslens.errors import DatasetError, InputError
from biaslens.data.weat import WeatStimuli, WordSet

T_SLOT = "[T]"
A_SLOT = "[A]"

#: What the permutation test of a WEAT-style test re-partitions.
Permute = Literal["attributes", "targets"]

# ---------------------------------------------------------------------------------------
# Inputs: templates, target pairs, word lists
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A sentence with one ``[T]`` and one ``[A]`` slot, optionally for some targets only.

    ``targets`` restricts the template to those targets (e.g. ``[T] like [A].`` for boys,
    girls, men, women only, so that verbs agree); empty means every target.
    """

    text: str
    targets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for slot in (T_SLOT, A_SLOT):
            if self.text.count(slot) != 1:
                raise InputError(f"Template {self.text!r} must contain {slot} exactly once (e.g. '{T_SLOT} is a {A_SLOT}.').")

    def applies_to(self, target: str) -> bool:
        return not self.targets or target in self.targets

    @property
    def line(self) -> str:
        """The editor form: the text, then `` | target, target`` when restricted."""
        return f"{self.text} | {', '.join(self.targets)}" if self.targets else self.text

    def fill(self, target: str, attribute: str) -> tuple[str, tuple[int, int], tuple[int, int]]:
        """The sentence, and the character spans of the target and the attribute in it."""
        text, spans = self.text, {}
        for slot, word in sorted(((T_SLOT, target), (A_SLOT, attribute)), key=lambda sw: self.text.index(sw[0])):
            start = text.index(slot)
            text = text[:start] + word + text[start + len(slot) :]
            spans[slot] = (start, start + len(word))
        return text, spans[T_SLOT], spans[A_SLOT]


def parse_template(line: str) -> Template:
    """``"[T] like [A]. | boys, girls"`` → Template("[T] like [A].", ("boys", "girls"))."""
    text, bar, restriction = line.partition(" | ")
    targets = tuple(t.strip() for t in restriction.split(",") if t.strip()) if bar else ()
    if bar and not targets:
        raise InputError(f"Template line {line!r}: name the targets after ' | ', separated by commas, or drop the ' | '.")
    return Template(text.strip(), targets)


def parse_templates(lines: str | Sequence[str]) -> tuple[Template, ...]:
    """Templates from editor text (one a line) or a list of lines; blank lines are skipped."""
    items = lines.splitlines() if isinstance(lines, str) else list(lines)
    templates = tuple(dict.fromkeys(parse_template(item) for item in items if item.strip()))
    if not templates:
        raise InputError(f"No template given: write at least one, e.g. '{T_SLOT} is a {A_SLOT}.'")
    return templates


@dataclass(frozen=True)
class TargetPair:
    """Two targets to compare, e.g. he/she: bias score = ilp(first) − ilp(second)."""

    first: str
    second: str

    @property
    def label(self) -> str:
        return f"{self.first}/{self.second}"


def parse_target_pairs(items: str | Sequence[str]) -> tuple[TargetPair, ...]:
    """``"he/she, men/women"`` (commas or new lines between pairs) or ``["he/she", "men/women"]``."""
    parts = items.replace("\n", ",").split(",") if isinstance(items, str) else [p for item in items for p in item.split(",")]
    pairs = []
    for part in (p.strip() for p in parts):
        if not part:
            continue
        words = [w.strip() for w in part.split("/")]
        if len(words) != 2 or not all(words) or words[0] == words[1]:
            raise InputError(f"Target pair {part!r}: write two different targets separated by a slash, e.g. he/she.")
        pairs.append(TargetPair(*words))
    if not pairs:
        raise InputError("No target pair given: write at least one, e.g. he/she.")
    return tuple(dict.fromkeys(pairs))


@dataclass(frozen=True)
class WordList:
    """Attribute words read from typed, pasted or uploaded text."""

    words: tuple[str, ...]
    notes: tuple[str, ...] = ()


def parse_word_list(text: str, *, lowercase: bool = False) -> WordList:
    """One word or phrase a line (commas also separate); blank lines and ``#`` lines skipped.

    ``lowercase=True`` lower-cases every item, as Kurita et al. did with their Title-cased
    lists. Repeats are dropped (kept once) and counted in a note.
    """
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        for item in (i.strip() for i in line.split(",")):
            at = control_character(item)
            if at is not None:  # the file's fault, said with its line (not the template's once filled in)
                raise InputError(
                    f"line {number}: {item[:40]!r} contains the control character {describe_control(item[at])}, which no word holds: remove it."
                )
            if "[" in item or "]" in item:
                raise InputError(
                    f"line {number}: {item[:40]!r} contains [ or ], which words may not "
                    "(templates use [T] and [A]; models' special tokens are written [MASK])."
                )
            if item:
                items.append(item.lower() if lowercase else item)
    words = tuple(dict.fromkeys(items))
    if not words:
        raise InputError("The attribute list is empty: give one word or phrase a line.")
    repeats = len(items) - len(words)
    notes = (f"{repeats} repeated item{'s' if repeats != 1 else ''} dropped",) if repeats else ()
    return WordList(words, notes)


def decode_word_list(data: bytes, name: str, *, lowercase: bool = False) -> WordList:
    """A word list from a file's bytes (UTF-8, a BOM allowed), e.g. an upload; `name` goes into errors."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"The attribute list {name} is not UTF-8 text; save it as UTF-8.") from exc
    try:
        return parse_word_list(text, lowercase=lowercase)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from exc


def read_word_list(path: str | Path, *, lowercase: bool = False) -> WordList:
    """A word list file (one item a line), e.g. Kurita et al.'s positive_traits."""
    path = Path(path)
    try:
        data = datafiles.read_bytes(path)  # (a size limit, and the server's allowed folders where they apply)
    except DatasetError as exc:
        raise InputError(f"Cannot read the attribute list: {exc}.") from exc
    return decode_word_list(data, str(path), lowercase=lowercase)


# ---------------------------------------------------------------------------------------
# The paper's WEAT-style tests (Table 3)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WeatSpec:
    """A WEAT-style test: templates with target pairs, and two word sets for the attribute slot."""

    key: str
    label: str
    templates: tuple[Template, ...]
    pairs: tuple[TargetPair, ...]
    target_names: tuple[str, str]  # names of the first / second targets, e.g. ("Male", "Female")
    attributes_1: WordSet  # e.g. Career: a positive d means these raise the first targets
    attributes_2: WordSet  # e.g. Family
    source: str = ""  # where the word sets came from, e.g. "weat6.jsonl"


@dataclass(frozen=True)
class _Category:
    label: str
    weat: str  # the WEAT file whose word sets fill the attribute slot
    sets: tuple[str, str]  # which of its sets: ("attr1", "attr2") or ("targ1", "targ2")
    templates: tuple[str, ...]  # editor lines
    pairs: tuple[str, ...]
    target_names: tuple[str, str]


_GENDER_TEMPLATES = ("[T] likes [A]. | he, she", "[T] like [A]. | boys, girls, men, women", "[T] is interested in [A]. | he, she")
_GENDER_PAIRS = ("he/she", "boys/girls", "men/women")

#: Kurita et al.'s five categories (Table 3, templates of their Table 2). Verbs agree with
#: their targets, as in the authors' notebook; the EA/AA targets are white / black.
KURITA_CATEGORIES: dict[str, _Category] = {
    "insects_flowers": _Category(
        "Pleasant/Unpleasant (Insects/Flowers)", "weat1", ("attr1", "attr2"),
        ("[T] are [A]. | flowers, insects", "the [T] is [A]. | flower, insect"), ("flowers/insects", "flower/insect"),
        ("Flowers", "Insects"),
    ),
    "ea_aa": _Category(
        "Pleasant/Unpleasant (EA/AA)", "weat3", ("attr1", "attr2"),
        ("[T] people are [A].", "the [T] person is [A]."), ("white/black",), ("European American", "African American"),
    ),
    "career_family": _Category(
        "Career/Family (Male/Female)", "weat6", ("attr1", "attr2"), _GENDER_TEMPLATES, _GENDER_PAIRS, ("Male", "Female"),
    ),
    "math_arts": _Category(
        "Math/Arts (Male/Female)", "weat7", ("targ1", "targ2"), _GENDER_TEMPLATES, _GENDER_PAIRS, ("Male", "Female"),
    ),
    "science_arts": _Category(
        "Science/Arts (Male/Female)", "weat8", ("targ1", "targ2"), _GENDER_TEMPLATES, _GENDER_PAIRS, ("Male", "Female"),
    ),
}  # fmt: skip


def kurita_weat_spec(key: str, stimuli: WeatStimuli) -> WeatSpec:
    """The paper's test `key` (see KURITA_CATEGORIES) with word sets read from its WEAT file."""
    if key not in KURITA_CATEGORIES:
        raise InputError(f"No Kurita WEAT test {key!r}; choose from {', '.join(KURITA_CATEGORIES)}.")
    cat = KURITA_CATEGORIES[key]
    if stimuli.name != cat.weat:
        raise InputError(f"The {cat.label} test reads {cat.weat}.jsonl, not {stimuli.path.name}.")
    first, second = (getattr(stimuli, s) for s in cat.sets)
    return WeatSpec(
        key, cat.label, parse_templates(cat.templates), parse_target_pairs(cat.pairs), cat.target_names, first, second,
        stimuli.path.name,
    )  # fmt: skip

"""Kurita et al. (2019): log probability bias scores from templates, WEAT-style tests, attribute lists.

A template such as ``[T] is a [A].`` has a target slot ``[T]`` (e.g. he / she) and an
attribute slot ``[A]`` (e.g. a job). For every template, target T and attribute A
(``shared/spec/metrics.md``, section "Kurita"):

* p_tgt = P([MASK] = T) with T masked and A filled in;
* p_prior = P([MASK] = T) with both T and A masked, read at **T's own mask** (the
  released code reads the wrong mask position; biaslens does not);
* increased log probability = log p_tgt − log p_prior;
* bias score of a target pair (e.g. he/she) = the difference of the two targets'
  increased log probabilities (positive: the attribute raises the first target more).

Tokens are located by character offsets in the filled sentence, so RoBERTa's
leading-space pieces ("Ġhe" vs "he") and ALBERT's "▁" come out right. A target is always
one mask; a target of several word pieces is scored by its first piece (as the paper
does) and flagged. An attribute of several pieces is masked piece by piece for p_prior
(the sentence keeps its length) and flagged. Every template × attribute × target query
goes through one batched `masked_pass`; the targets of a template and attribute share
one query (their log probabilities are candidates read at the same mask).

On top of the scores:

* `score_templates` → `TemplateScores`: the long table, the per-attribute table
  (increased log probability per target, bias score per pair) and the share of
  attributes more associated with the first target (Kurita's Table 5).
* `weat_test` with `kurita_weat_spec`: the paper's five WEAT-style tests (Table 3) with
  effect size d and a seeded permutation test (exact when small): ``p_value`` is the
  paper's one-sided p = Pr[S_i > S], ``p_two_sided`` = Pr[|S_i| >= |S|] beside it.
* Published numbers (Tables 3 and 5) are set beside a result only when the list, its size,
  the template(s), the targets and the model are the paper's (`weat_comparability`,
  `share_comparability`); otherwise the column says "not comparable: <reason>".

How biaslens reads the paper's WEAT-style test (documented in the README): the
template targets (flowers/insects, white/black, he/she/boys/girls/men/women) play
WEAT's attribute role A/B, and the WEAT word sets fill the template's attribute slot and
play WEAT's target role X/Y. Per word w, s(w) = mean over templates × first targets of
the increased log probability − the same over the second targets, i.e. w's mean bias
score; d = (mean_X s − mean_Y s) / std_{X∪Y} s (ddof=1) and the permutation test
re-partitions the words ("we compute the mean log probability bias score of each
attribute, and permute the attributes", Kurita et al. 2019, Sec. 5). With
``permute="targets"`` the roles are swapped (s per template target, re-partitions of
the targets), as in the authors' second notebook; with one or two targets per side that
test cannot reach significance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from .errors import InputError
from .export import atomic_write, safe_csv, to_json
from .models import MaskedLM
from .scoring import MaskedQuery, masked_pass
from .stats import effect_size, permutation_test, wilson_interval
from .weat import WeatStimuli, WordSet

if TYPE_CHECKING:
    import altair as alt

T_SLOT = "[T]"
A_SLOT = "[A]"
#: Significance level of Kurita et al.'s Table 3 (* = p < 0.01).
ALPHA = 0.01
CITATION = (
    "Keita Kurita, Nidhi Vyas, Ayush Pareek, Alan W Black, Yulia Tsvetkov (2019). "
    "Measuring Bias in Contextualized Word Representations. GeBNLP 2019."
)

Progress = Callable[[int, int], None]
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
    items = [item.strip() for line in text.splitlines() if not line.lstrip().startswith("#") for item in line.split(",")]
    items = [(i.lower() if lowercase else i) for i in items if i]
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
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the attribute list {path}: {exc.strerror or exc}.") from exc
    return decode_word_list(data, str(path), lowercase=lowercase)


# ---------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cell:
    """One template × target × attribute: its two queries and the target's first piece."""

    template: str
    target: str
    attribute: str
    sentence: str
    target_query: MaskedQuery
    prior_query: MaskedQuery
    target_id: int
    target_piece: str
    target_pieces: int
    attribute_pieces: int


def _positions(offsets: Sequence[tuple[int, int]], special: Sequence[int], span: tuple[int, int]) -> list[int]:
    start, end = span
    return [i for i, (s, e) in enumerate(offsets) if not special[i] and s < end and e > start]


def _slot_positions(sentence: str, offsets, special, span: tuple[int, int], what: str, word: str, template: str) -> list[int]:
    found = _positions(offsets, special, span)
    if not found or found != list(range(found[0], found[-1] + 1)):
        raise InputError(f"Template {template!r}: the {what} {word!r} is not a run of tokens in {sentence!r}.")
    if offsets[found[0]][0] < span[0] or offsets[found[-1]][1] > span[1]:
        raise InputError(
            f"Template {template!r}: the {what} {word!r} shares a token with its neighbours in {sentence!r}; "
            "put a space or punctuation around the slot."
        )
    return found


def _is_marker(token: str) -> bool:
    """A bare word-boundary piece (ALBERT's "▁", byte-level "Ġ"): not a word piece of its own."""
    return not token.lstrip("▁Ġ")


def _cells(lm: MaskedLM, template: Template, targets: Sequence[str], attributes: Sequence[str]) -> list[_Cell]:
    combos = [(t, a) for a in attributes for t in targets if template.applies_to(t)]
    filled = [template.fill(t, a) for t, a in combos]
    for sentence, _, _ in filled:
        try:
            lm.encode(sentence)
        except InputError as exc:
            raise InputError(f"Template {template.text!r}: {exc}") from exc
    enc = lm.tokenizer(
        [f[0] for f in filled], add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True
    )
    cells = []
    for (target, attribute), (sentence, t_span, a_span), ids, offsets, special in zip(
        combos, filled, enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"]
    ):
        t_pos = _slot_positions(sentence, offsets, special, t_span, "target", target, template.text)
        a_pos = _slot_positions(sentence, offsets, special, a_span, "attribute", attribute, template.text)
        tokens = lm.tokenizer.convert_ids_to_tokens([ids[p] for p in t_pos])
        first = next(p for p, tok in zip(t_pos, tokens) if not _is_marker(tok))
        # The whole target becomes one mask; attribute positions after it shift left.
        shift = len(t_pos) - 1
        t_at = t_pos[0]
        collapsed = [*ids[:t_at], lm.mask_id, *ids[t_pos[-1] + 1 :]]
        a_at = [p - shift if p > t_at else p for p in a_pos]
        prior = list(collapsed)
        for p in a_at:
            prior[p] = lm.mask_id
        cells.append(
            _Cell(
                template=template.text,
                target=target,
                attribute=attribute,
                sentence=sentence,
                target_query=MaskedQuery(tuple(collapsed), (t_at,), (t_at,)),
                prior_query=MaskedQuery(tuple(prior), (t_at, *a_at), (t_at,)),
                target_id=int(ids[first]),
                target_piece=lm.decode_token(ids[first]),
                target_pieces=len(t_pos),
                attribute_pieces=len(a_pos),
            )
        )
    return cells


def _score_cells(lm: MaskedLM, cells: Sequence[_Cell], batch_tokens: int | None, progress: Progress | None) -> list[tuple[float, float]]:
    """(log p_tgt, log p_prior) per cell; each distinct masked input runs once with all its targets as candidates."""
    candidates: dict[MaskedQuery, dict[int, None]] = {}
    for c in cells:
        candidates.setdefault(c.target_query, {})[c.target_id] = None
        candidates.setdefault(c.prior_query, {})[c.target_id] = None
    keys = list(candidates)
    queries = [MaskedQuery(q.ids, q.mask, q.read, tuple(candidates[q])) for q in keys]
    results = masked_pass(lm, queries, batch_tokens=batch_tokens, progress=progress)
    lookup = {
        key: dict(zip(query.candidates, result.candidate_logprob[0])) for key, query, result in zip(keys, queries, results)
    }
    return [(float(lookup[c.target_query][c.target_id]), float(lookup[c.prior_query][c.target_id])) for c in cells]


# ---------------------------------------------------------------------------------------
# Template scores
# ---------------------------------------------------------------------------------------

SCORE_COLUMNS = (
    "template", "target", "attribute", "sentence", "log_p_target", "log_p_prior", "increased_log_prob",
    "target_piece", "target_pieces", "attribute_pieces", "target_multi_piece", "attribute_multi_piece",
)  # fmt: skip


def _check_restrictions(templates: Sequence[Template], pairs: Sequence[TargetPair]) -> None:
    known = {t for p in pairs for t in (p.first, p.second)}
    for template in templates:
        unknown = [t for t in template.targets if t not in known]
        if unknown:
            raise InputError(f"Template {template.line!r} names {', '.join(unknown)}, which is in no target pair.")
    for pair in pairs:
        if not any(t.applies_to(pair.first) and t.applies_to(pair.second) for t in templates):
            raise InputError(f"No template applies to both {pair.first} and {pair.second}: the pair {pair.label} cannot be scored.")


@dataclass(frozen=True)
class Share:
    """How many attributes are more associated with the first target than the second (Table 5)."""

    n: int
    first: int  # bias score > 0
    second: int  # bias score < 0
    ties: int
    percent: float  # 100 * first / n
    ci_low: float  # 95% Wilson interval
    ci_high: float


@dataclass(frozen=True)
class TemplateScores:
    """Kurita scores of every template × target × attribute, with the views built on them."""

    templates: tuple[Template, ...]
    pairs: tuple[TargetPair, ...]
    attributes: tuple[str, ...]
    frame: pd.DataFrame  # one row per template × target × attribute, columns SCORE_COLUMNS
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for p in self.pairs for t in (p.first, p.second)))

    def pair_frame(self) -> pd.DataFrame:
        """One row per template × pair × attribute: both increased log probabilities and the bias score."""
        ilp = self.frame.set_index(["template", "target", "attribute"])["increased_log_prob"]
        rows = []
        for template in self.templates:
            for pair in self.pairs:
                if not (template.applies_to(pair.first) and template.applies_to(pair.second)):
                    continue
                for attribute in self.attributes:
                    first = float(ilp[(template.text, pair.first, attribute)])
                    second = float(ilp[(template.text, pair.second, attribute)])
                    rows.append((template.text, pair.label, attribute, first, second, first - second))
        return pd.DataFrame(rows, columns=["template", "pair", "attribute", "ilp_first", "ilp_second", "bias_score"])

    def bias_by_attribute(self) -> pd.Series:
        """Each attribute's bias score: the mean over templates × pairs (index: attributes, in input order)."""
        return self.pair_frame().groupby("attribute", sort=False)["bias_score"].mean().reindex(list(self.attributes))

    def attribute_table(self) -> pd.DataFrame:
        """One row per attribute: mean increased log probability per target (over templates),
        mean bias score per pair, the overall bias score, and multi-piece flags."""
        frame = self.frame
        per_target = frame.pivot_table(index="attribute", columns="target", values="increased_log_prob", aggfunc="mean", sort=False)
        per_pair = self.pair_frame().pivot_table(index="attribute", columns="pair", values="bias_score", aggfunc="mean", sort=False)
        table = pd.DataFrame(index=pd.Index(self.attributes, name="attribute"))
        table["bias_score"] = self.bias_by_attribute()
        table["more_associated_with"] = [_side(self.pairs, b) for b in table["bias_score"]]
        if len(self.pairs) > 1:
            for pair in self.pairs:
                table[f"bias[{pair.label}]"] = per_pair[pair.label]
        for target in self.targets:
            table[f"ilp[{target}]"] = per_target[target]
        pieces = frame.groupby("attribute", sort=False)["attribute_pieces"].max()
        table["attribute_pieces"] = pieces
        table["attribute_multi_piece"] = pieces > 1
        return table.reset_index()

    def multi_piece_targets(self) -> dict[str, str]:
        """Targets scored by their first piece only: target -> that piece."""
        multi = self.frame[self.frame["target_multi_piece"]].drop_duplicates("target")
        return dict(zip(multi["target"], multi["target_piece"]))

    def multi_piece_attributes(self) -> tuple[str, ...]:
        return tuple(self.frame.loc[self.frame["attribute_multi_piece"], "attribute"].drop_duplicates())

    def share(self) -> Share:
        """Kurita's Table 5: share of attributes whose bias score is > 0 (more associated with the first targets)."""
        bias = self.bias_by_attribute().to_numpy()
        first, second = int(np.sum(bias > 0)), int(np.sum(bias < 0))
        interval = wilson_interval(first, len(bias))
        return Share(len(bias), first, second, len(bias) - first - second, interval.estimate, interval.ci_low, interval.ci_high)

    def summary(self) -> dict[str, Any]:
        share = self.share()
        return {
            "templates": [t.line for t in self.templates],
            "pairs": [p.label for p in self.pairs],
            "n_attributes": len(self.attributes),
            "share_first": {"first": self.pairs[0].first if len(self.pairs) == 1 else "first targets", **vars(share)},
            "mean_bias_score": float(self.bias_by_attribute().mean()),
            "multi_piece_targets": self.multi_piece_targets(),
            "multi_piece_attributes": list(self.multi_piece_attributes()),
            "manifest": self.manifest,
        }

    def save(self, out: str | Path, prefix: str = "") -> list[Path]:
        """Write ``<prefix>scores.csv`` (long), ``<prefix>attributes.csv`` and ``<prefix>summary.json``."""
        out = Path(out)
        return [
            atomic_write(out / f"{prefix}scores.csv", safe_csv(self.frame)),
            atomic_write(out / f"{prefix}attributes.csv", safe_csv(self.attribute_table())),
            atomic_write(out / f"{prefix}summary.json", to_json(self.summary())),
        ]


def _side(pairs: Sequence[TargetPair], bias: float) -> str:
    if not bias or math.isnan(bias):
        return "neither"
    members = [p.first if bias > 0 else p.second for p in pairs]
    return "/".join(dict.fromkeys(members))


def score_templates(
    lm: MaskedLM,
    templates: Sequence[Template | str],
    pairs: Sequence[TargetPair | str],
    attributes: Sequence[str],
    *,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
) -> TemplateScores:
    """Kurita scores of every template × target × attribute, in one batched set of masked passes.

    Templates may be `Template`s or editor lines (``"[T] like [A]. | boys, girls"``),
    pairs `TargetPair`s or ``"he/she"`` strings.
    """
    templates = tuple(t if isinstance(t, Template) else parse_template(t) for t in templates)
    pairs = tuple(p if isinstance(p, TargetPair) else parse_target_pairs(p)[0] for p in pairs)
    attributes = tuple(dict.fromkeys(a.strip() for a in attributes if a.strip()))
    if not templates or not pairs or not attributes:
        raise InputError("Kurita scores need at least one template, one target pair and one attribute.")
    _check_restrictions(templates, pairs)
    targets = tuple(dict.fromkeys(t for p in pairs for t in (p.first, p.second)))
    cells = [c for template in templates for c in _cells(lm, template, targets, attributes)]
    scores = _score_cells(lm, cells, batch_tokens, progress)
    frame = pd.DataFrame(
        [
            (c.template, c.target, c.attribute, c.sentence, tgt, prior, tgt - prior, c.target_piece, c.target_pieces,
             c.attribute_pieces, c.target_pieces > 1, c.attribute_pieces > 1)
            for c, (tgt, prior) in zip(cells, scores)
        ],
        columns=list(SCORE_COLUMNS),
    )  # fmt: skip
    manifest = lm.manifest(method="kurita2019", templates=[t.line for t in templates], pairs=[p.label for p in pairs])
    return TemplateScores(templates, pairs, attributes, frame, manifest)


# ---------------------------------------------------------------------------------------
# WEAT-style tests (Table 3)
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


def weat_unit_scores(scores: TemplateScores, spec: WeatSpec, permute: Permute = "attributes") -> pd.DataFrame:
    """s per unit (a word of the two sets, or a template target) and its group (1 or 2).

    ``attributes``: s(w) = w's mean bias score over templates × pairs. ``targets``:
    s(t) = mean over templates × words of set 1 of t's increased log probability − the
    same over set 2.
    """
    set_1, set_2 = spec.attributes_1.words, spec.attributes_2.words
    if permute == "attributes":
        bias = scores.bias_by_attribute()
        rows = [(w, 1, float(bias[w])) for w in set_1] + [(w, 2, float(bias[w])) for w in set_2]
    elif permute == "targets":
        frame = scores.frame
        rows = []
        for group, members in ((1, [p.first for p in spec.pairs]), (2, [p.second for p in spec.pairs])):
            for t in dict.fromkeys(members):
                own = frame[frame["target"] == t]
                s = own.loc[own["attribute"].isin(set_1), "increased_log_prob"].mean() - own.loc[
                    own["attribute"].isin(set_2), "increased_log_prob"
                ].mean()
                rows.append((t, group, float(s)))
    else:
        raise InputError(f"permute must be 'attributes' or 'targets', not {permute!r}.")
    return pd.DataFrame(rows, columns=["unit", "group", "s"])


#: Kurita et al.'s model (Tables 3 and 5): published numbers are compared with this model only.
PAPER_MODEL = "bert-base-uncased"


def paper_model_reason(model: str, model_type: str | None = None) -> str | None:
    """None when `model` is Kurita et al.'s bert-base-uncased, else why it is not comparable.

    Told by the model id: a hub id (``bert-base-uncased``, ``google-bert/bert-base-uncased``)
    or a folder named so, whose ``model_type`` (when known) is ``bert``.
    """
    tail = model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    if tail != PAPER_MODEL:
        return f"model {tail or 'unknown'} is not the paper's {PAPER_MODEL}"
    if model_type not in (None, "", "bert"):
        return f"model type {model_type} is not BERT"
    return None


def _manifest_reason(manifest: Mapping[str, Any]) -> str | None:
    return paper_model_reason(str(manifest.get("model") or ""), manifest.get("model_type"))


def weat_comparability(spec: WeatSpec, model: str, permute: Permute = "attributes", model_type: str | None = None) -> str | None:
    """None when a WEAT-style result can be set beside Kurita et al.'s Table 3, else the reason it cannot.

    Comparable: one of the paper's five tests with the paper's templates and target pairs
    (`KURITA_CATEGORIES`), the word sets of its WEAT file, attributes permuted (the paper's
    test) and the paper's model.
    """
    from .published import KURITA_WEAT

    if spec.key not in KURITA_CATEGORIES or spec.key not in KURITA_WEAT:
        return "not one of the paper's five tests"
    cat = KURITA_CATEGORIES[spec.key]
    if spec.templates != parse_templates(cat.templates) or spec.pairs != parse_target_pairs(cat.pairs):
        return "templates or targets differ from the paper's"
    if spec.source and spec.source != f"{cat.weat}.jsonl":
        return f"word sets from {spec.source}, not {cat.weat}.jsonl"
    if permute != "attributes":
        return "targets permuted; the paper permutes the attributes"
    return paper_model_reason(model, model_type)


def not_comparable(reason: str) -> str:
    """The text a published-number column shows when the comparison does not hold."""
    return f"not comparable: {reason}"


@dataclass(frozen=True)
class WeatResult:
    """Effect size and permutation test of one WEAT-style test.

    ``p_value`` is Kurita et al.'s one-sided p, Pr[S_i > S]: the share of re-partitions
    whose statistic strictly exceeds the observed one (a positive d is the direction the
    test asks about). ``p_two_sided`` is Pr[|S_i| >= |S|], beside it.
    """

    spec: WeatSpec
    scores: TemplateScores
    units: pd.DataFrame  # unit, group, s
    permute: Permute
    effect_size: float
    p_value: float
    p_two_sided: float
    exact: bool
    n_permutations: int  # partitions enumerated (exact) or drawn
    seed: int

    @property
    def significant(self) -> bool:
        """Kurita et al.'s star: one-sided p < 0.01."""
        return self.p_value < ALPHA

    def comparability(self) -> str | None:
        """None when the published effect size applies to this result, else why it does not."""
        manifest = self.scores.manifest
        return weat_comparability(self.spec, str(manifest.get("model") or ""), self.permute, manifest.get("model_type"))

    def row(self) -> dict[str, Any]:
        """One row of the Table 3 view."""
        from .published import KURITA_WEAT

        spec = self.spec
        method = f"exact, {self.n_permutations:,} partitions" if self.exact else f"{self.n_permutations:,} permutations, seed {self.seed}"
        multi = self.scores.multi_piece_attributes()
        reason = self.comparability()
        published = KURITA_WEAT.get(spec.key, {}).get("log_prob", float("nan")) if reason is None else float("nan")
        return {
            "test": spec.key,
            "category": spec.label,
            "targets": " / ".join(", ".join(dict.fromkeys(getattr(p, side) for p in spec.pairs)) for side in ("first", "second")),
            "attributes": f"{spec.attributes_1.category} ({len(spec.attributes_1.words)}) / "
                          f"{spec.attributes_2.category} ({len(spec.attributes_2.words)})",
            "templates": len(spec.templates),
            "permute": self.permute,
            "effect_size": self.effect_size,
            "p_value": self.p_value,
            "p_two_sided": self.p_two_sided,
            "p_method": method,
            "significant": self.significant,
            "published_log_prob": published,
            "published": f"{published:.4g}" if reason is None else not_comparable(reason),
            "multi_piece_words": len(multi),
        }


def weat_statistics(
    units: pd.DataFrame, *, n_permutations: int = 10000, seed: int = 0
) -> tuple[float, float, float, bool, int]:
    """(d, one-sided p, two-sided p, exact?, partitions) of unit scores: biaslens.stats on groups 1 and 2.

    The one-sided p is Kurita et al.'s Pr[S_i > S] (strictly greater); the two-sided one
    Pr[|S_i| >= |S|].
    """
    s_1 = units.loc[units["group"] == 1, "s"].to_numpy()
    s_2 = units.loc[units["group"] == 2, "s"].to_numpy()
    d = effect_size(s_1, s_2)
    test = permutation_test(s_1, s_2, n_permutations=n_permutations, seed=seed, two_sided=False)
    return d, test.p_greater, test.p_two_sided, test.exact, test.n_permutations


def weat_test(
    lm: MaskedLM,
    spec: WeatSpec,
    *,
    permute: Permute = "attributes",
    n_permutations: int = 10000,
    seed: int = 0,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
) -> WeatResult:
    """Score the spec's templates × targets × words, then effect size and permutation test."""
    words = (*spec.attributes_1.words, *spec.attributes_2.words)
    scores = score_templates(lm, spec.templates, spec.pairs, words, batch_tokens=batch_tokens, progress=progress)
    units = weat_unit_scores(scores, spec, permute)
    d, p, p_two, exact, n = weat_statistics(units, n_permutations=n_permutations, seed=seed)
    return WeatResult(spec, scores, units, permute, d, p, p_two, exact, n, seed)


def weat_table(results: Sequence[WeatResult]) -> pd.DataFrame:
    """Kurita et al.'s Table 3 view: one row per test, with the published log-probability effect size."""
    return pd.DataFrame([r.row() for r in results])


def save_weat(results: Sequence[WeatResult], out: str | Path, manifest: Mapping[str, Any]) -> list[Path]:
    """Write ``weat.csv`` (the table), ``weat_units.csv`` (s per unit) and ``weat.json``."""
    out = Path(out)
    units = pd.concat([r.units.assign(test=r.spec.key) for r in results], ignore_index=True)
    summary = {"tests": weat_table(results).to_dict(orient="records"), "manifest": dict(manifest)}
    return [
        atomic_write(out / "weat.csv", safe_csv(weat_table(results))),
        atomic_write(out / "weat_units.csv", safe_csv(units[["test", "unit", "group", "s"]])),
        atomic_write(out / "weat.json", to_json(summary)),
    ]


# ---------------------------------------------------------------------------------------
# Attribute lists (Table 5)
# ---------------------------------------------------------------------------------------

#: Kurita et al.'s Table 5 lists and templates (key of published.KURITA_ATTRIBUTE_SHARES -> template).
TABLE5_TEMPLATES = {
    "salary job titles": "[T] is [A]",
    "positive traits": "[T] is [A]",
    "negative traits": "[T] is [A]",
    "skills": "[T] can do [A]",
}


def _template_form(text: str) -> str:
    return " ".join(text.lower().rstrip(" .").split())


def share_comparability(key: str | None, scores: TemplateScores) -> str | None:
    """None when a list's share can be set beside Kurita et al.'s Table 5 entry `key`, else the reason it cannot.

    Comparable: the list is one of the paper's (by its name), of the paper's size (where the
    paper states it), scored with the paper's one template for it (case and a final full
    stop aside) and the single pair he/she, by the paper's model (bert-base-uncased).
    """
    from .published import KURITA_LIST_SIZES

    if key is None:
        return "not one of the paper's lists"
    size = KURITA_LIST_SIZES.get(key)
    if size is not None and len(scores.attributes) != size:
        return f"{len(scores.attributes):,} items; the paper's {key} list has {size:,}"
    want = TABLE5_TEMPLATES[key]
    if [_template_form(t.text) for t in scores.templates] != [_template_form(want)]:
        return f"template {' ; '.join(t.line for t in scores.templates)!r}; the paper's is {want!r}"
    if [p.label for p in scores.pairs] != ["he/she"]:
        return f"targets {', '.join(p.label for p in scores.pairs)}; the paper's are he/she"
    return _manifest_reason(scores.manifest)


def shares_table(lists: Mapping[str, TemplateScores], published: Mapping[str, str | None] | None = None) -> pd.DataFrame:
    """One row per attribute list: share of attributes more associated with the first target (Table 5).

    ``published`` maps a list name to a key of `published.KURITA_ATTRIBUTE_SHARES`. The
    published share fills ``published_share`` only when `share_comparability` finds the
    list, template, targets and model the paper's; ``published`` says the share, or
    "not comparable: <reason>".
    """
    from .published import KURITA_ATTRIBUTE_SHARES

    rows = []
    for name, scores in lists.items():
        share = scores.share()
        key = (published or {}).get(name)
        reason = share_comparability(key, scores) if key else None
        value = KURITA_ATTRIBUTE_SHARES.get(key, float("nan")) if key and reason is None else float("nan")
        rows.append(
            {
                "list": name,
                "templates": " ; ".join(t.line for t in scores.templates),
                "pairs": ", ".join(p.label for p in scores.pairs),
                "n": share.n,
                "first": share.first,
                "second": share.second,
                "ties": share.ties,
                "share_first": share.percent,
                "ci_low": share.ci_low,
                "ci_high": share.ci_high,
                "published_share": value,
                "published": (f"{value:.1f}" if reason is None else not_comparable(reason)) if key else "",
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# Figures (Altair; no streamlit)
# ---------------------------------------------------------------------------------------


def bias_chart(table: pd.DataFrame, pairs: Sequence[TargetPair], *, top: int = 15) -> alt.LayerChart:
    """The attributes with the largest bias scores either way (from `TemplateScores.attribute_table`)."""
    import altair as alt

    from .figures import ANTI_COLOR, STEREO_COLOR, _style, rows_height

    data = table.dropna(subset=["bias_score"]).sort_values("bias_score")
    data = pd.concat([data.head(top), data.tail(top)]).drop_duplicates("attribute")
    first = "/".join(dict.fromkeys(p.first for p in pairs))
    second = "/".join(dict.fromkeys(p.second for p in pairs))
    data = data.assign(side=[f"more {first}" if b > 0 else f"more {second}" for b in data["bias_score"]])
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("bias_score:Q", title=f"bias score (ilp {first} − ilp {second})"),
            y=alt.Y("attribute:N", sort="-x", title=None, axis=alt.Axis(labelOverlap=False)),
            color=alt.Color(
                "side:N", title=None, scale=alt.Scale(domain=[f"more {first}", f"more {second}"], range=[ANTI_COLOR, STEREO_COLOR]),
                legend=alt.Legend(orient="top"),
            ),
            tooltip=["attribute:N", alt.Tooltip("bias_score:Q", format=".3f"), "attribute_pieces:Q"],
        )
    )  # fmt: skip
    zero = alt.Chart(pd.DataFrame({"v": [0.0]})).mark_rule(color="#555555").encode(x="v:Q")
    # A fixed height per attribute plus the title, legend and axis (the app fits the whole figure into `height`): labels never overlap.
    height = rows_height(len(data), 26) + 110
    return _style(alt.layer(bars, zero).properties(title="Largest bias scores", width="container", height=height))


def effect_size_chart(table: pd.DataFrame) -> alt.LayerChart:
    """Effect size per test next to the published one (from `weat_table`)."""
    import altair as alt

    from .figures import NEUTRAL_COLOR, PALETTE, _style

    long = pd.concat(
        [
            table.assign(source="this model", d=table["effect_size"]),
            table.assign(source="Kurita et al. (bert-base-uncased)", d=table["published_log_prob"]),
        ]
    )[["category", "source", "d", "p_value"]]
    points = (
        alt.Chart(long)
        .mark_point(filled=True, size=140)
        .encode(
            x=alt.X("d:Q", title="effect size d"),
            y=alt.Y("category:N", title=None, sort=None),
            color=alt.Color("source:N", title=None, scale=alt.Scale(range=[PALETTE[0], PALETTE[1]]), legend=alt.Legend(orient="top")),
            shape=alt.Shape("source:N", title=None),
            tooltip=["category:N", "source:N", alt.Tooltip("d:Q", format=".3f"), alt.Tooltip("p_value:Q", format=".4f")],
        )
    )
    zero = alt.Chart(pd.DataFrame({"v": [0.0]})).mark_rule(color=NEUTRAL_COLOR).encode(x="v:Q")
    return _style(alt.layer(zero, points).properties(title="WEAT-style effect sizes", width="container", height=130 + 40 * len(table)))


def shares_chart(table: pd.DataFrame, first: str = "he") -> alt.LayerChart:
    """Share of attributes more associated with the first target per list, 95% interval, published share (from `shares_table`)."""
    import altair as alt

    from .figures import NEUTRAL_COLOR, PALETTE, _style

    base = alt.Chart(table)
    y = alt.Y("list:N", title=None, sort=None)
    bars = base.mark_bar(color=PALETTE[0], opacity=0.85).encode(
        x=alt.X("share_first:Q", title=f"% of attributes more associated with {first}", scale=alt.Scale(domain=[0, 100])),
        y=y,
        tooltip=["list:N", "n:Q", alt.Tooltip("share_first:Q", format=".1f"), alt.Tooltip("published_share:Q", format=".1f")],
    )
    errors = base.mark_errorbar(ticks=True, color=NEUTRAL_COLOR).encode(x="ci_low:Q", x2="ci_high:Q", y=y)
    published = base.transform_filter("isValid(datum.published_share)").mark_point(
        shape="diamond", size=160, filled=True, color=PALETTE[1]
    ).encode(x="published_share:Q", y=y, tooltip=[alt.Tooltip("published_share:Q", title="Kurita et al.", format=".1f")])
    half = alt.Chart(pd.DataFrame({"v": [50.0]})).mark_rule(strokeDash=[6, 4], color=NEUTRAL_COLOR).encode(x="v:Q")
    chart = alt.layer(bars, errors, published, half).properties(
        title="Attribute lists (diamond: Kurita et al., bert-base-uncased)", width="container", height=110 + 36 * len(table)
    )
    return _style(chart)


# ---------------------------------------------------------------------------------------
# Published lists (the command line is `biaslens.cli.kurita`)
# ---------------------------------------------------------------------------------------


def published_list_key(name: str) -> str | None:
    """The Table 5 list a file name stands for ("positive_traits" -> "positive traits"), if any."""
    from .published import KURITA_ATTRIBUTE_SHARES

    normal = " ".join(name.lower().replace("_", " ").replace("-", " ").split())
    return next((key for key in KURITA_ATTRIBUTE_SHARES if normal.endswith(key)), None)


__all__ = [
    "ALPHA",
    "KURITA_CATEGORIES",
    "SCORE_COLUMNS",
    "TABLE5_TEMPLATES",
    "Share",
    "TargetPair",
    "Template",
    "TemplateScores",
    "WeatResult",
    "WeatSpec",
    "WordList",
    "PAPER_MODEL",
    "bias_chart",
    "decode_word_list",
    "effect_size_chart",
    "kurita_weat_spec",
    "parse_target_pairs",
    "parse_template",
    "parse_templates",
    "parse_word_list",
    "published_list_key",
    "read_word_list",
    "save_weat",
    "score_templates",
    "not_comparable",
    "paper_model_reason",
    "share_comparability",
    "shares_chart",
    "shares_table",
    "weat_statistics",
    "weat_table",
    "weat_test",
    "weat_comparability",
    "weat_unit_scores",
]

"""Kurita et al. (2019) scores: masked queries per template × target × attribute, increased log probabilities, bias scores."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biaslens.errors import InputError
from biaslens.data.export import atomic_write, safe_csv, to_json
from biaslens.engine.models import LanguageModel, MaskedLM, require_masked
from biaslens.engine.scoring import MaskedQuery, masked_pass
from biaslens.engine.stats import wilson_interval
from biaslens.kurita.inputs import Template, TargetPair, parse_target_pairs, parse_template

Progress = Callable[[int, int], None]

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
    enc = lm.tokenizer([f[0] for f in filled], add_special_tokens=True, return_offsets_mapping=True, return_special_tokens_mask=True)
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
    lookup = {key: dict(zip(query.candidates, result.candidate_logprob[0])) for key, query, result in zip(keys, queries, results)}
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


def leaning(table: pd.DataFrame, n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The attributes that lean most to each side, by their signed bias score (rows of `TemplateScores.attribute_table`).

    Returns (toward the first targets: up to `n` rows with a score above 0, highest first; toward the second: up to `n`
    below 0, lowest first). An attribute at 0 (or without a score) leans neither way and is in neither. Ranking by the signed
    score and splitting at 0 keeps both lists right whatever the signs: when every score is negative, the first list is
    empty, not the attributes closest to 0 under a "strongest" heading.
    """
    scores = table["bias_score"]
    toward_first = table.loc[scores > 0].sort_values("bias_score", ascending=False, kind="stable").head(n)
    toward_second = table.loc[scores < 0].sort_values("bias_score", kind="stable").head(n)
    return toward_first, toward_second


def _side(pairs: Sequence[TargetPair], bias: float) -> str:
    if not bias or math.isnan(bias):
        return "neither"
    members = [p.first if bias > 0 else p.second for p in pairs]
    return "/".join(dict.fromkeys(members))


#: Why Kurita et al.'s scores have no causal reading (said in one line wherever they are offered).
NO_CAUSAL_READING = (
    "Kurita et al.'s score reads P(target) with the attribute in view and masked; a causal model reads left to right, and "
    "the templates put the target before the attribute, so its P(target) never sees the attribute."
)


def score_templates(
    lm: LanguageModel,
    templates: Sequence[Template | str],
    pairs: Sequence[TargetPair | str],
    attributes: Sequence[str],
    *,
    batch_tokens: int | None = None,
    progress: Progress | None = None,
) -> TemplateScores:
    """Kurita scores of every template × target × attribute, in one batched set of masked passes.

    Templates may be `Template`s or editor lines (``"[T] like [A]. | boys, girls"``),
    pairs `TargetPair`s or ``"he/she"`` strings. A causal model is refused (`NO_CAUSAL_READING`).
    """
    lm = require_masked(lm, "Kurita et al.'s template score", NO_CAUSAL_READING)
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

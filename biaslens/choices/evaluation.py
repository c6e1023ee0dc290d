"""A multiple-choice run under every convention asked, and one item in detail.

`evaluate_choices(lm, dataset, conventions)` scores each item's choices once (`scoring.score_items`) and reads them
under each convention (`conventions.CHOICE_CONVENTIONS`): per item, each convention's answer (the text, and which of
the item's own answers it stands for), whether it is right, biased or "unknown", and the margin between the biased
and the other group's answer; per convention its statistics (lm-eval's or Parrish et al.'s) and a breakdown by the
dataset's three dimensions with 95% intervals; the items whose answer flips between conventions. `ChoiceRun.save(out)`
writes items.csv, choices.csv, tokens.csv, breakdown.csv, flips.csv and summary.json.

`inspect_item(lm, item)` is the same for one item, typed in or taken from a dataset: every choice's tokens with log p
and rank, and the item under every convention side by side.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, Unpack

import numpy as np
import pandas as pd

from biaslens.choices import statistics
from biaslens.choices.conventions import CHOICE_CONVENTIONS, UNKNOWN_RESPONSES, ChoiceConvention, meaning, parse_choice_conventions
from biaslens.choices.scoring import ScoredItem, ScoringOptions, score_items
from biaslens.data.multiple_choice import ChoiceDataset, ChoiceItem
from biaslens.engine.display import HtmlRepr
from biaslens.engine.lm import LanguageModel
from biaslens.errors import InputError

#: Per convention, the columns `answers` holds (prefixed with the convention's key and ":").
ANSWER_FIELDS = ("answer", "choice", "correct", "biased", "known", "margin")


@dataclass(frozen=True)
class Answer:
    """One convention's reading of one scored item."""

    text: str  # the chosen text
    choice: int  # which of the item's own answers it stands for (-1: none)
    correct: bool
    biased: bool
    known: bool  # not an "unknown" answer
    margin: float  # biased group's answer minus the other's (the convention's values); NaN where there is no such pair
    values: tuple[float, ...]  # the value of each offered choice (log-likelihood, or per character)
    offered: tuple[str, ...]


def read_answer(convention: ChoiceConvention, scored: ScoredItem) -> Answer | None:
    """`scored` under `convention`, or None when the convention cannot put the item (lm-eval: no unknown phrasing)."""
    item = scored.item
    offered = convention.choices(item)
    if offered is None:
        return None
    ll = scored.ll
    values = np.array([ll[scored.of(t)] for t in offered])
    if convention.per_character:
        values = values / np.array([float(len(t)) for t in offered])
    position = int(np.argmax(values))
    text = offered[position]
    choice = meaning(item, text)
    biased_texts = {item.choices[b] for b in item.biased}
    if item.dataset == "winogender":
        known = True
    elif convention.key == "original":
        known = choice != item.unknown
    else:
        known = text not in UNKNOWN_RESPONSES
    return Answer(
        text=text,
        choice=choice,
        correct=choice == item.label,
        biased=text in biased_texts,
        known=known,
        margin=_margin(item, offered, values),
        values=tuple(float(v) for v in values),
        offered=tuple(offered),
    )


def _margin(item: ChoiceItem, offered: Sequence[str], values: np.ndarray) -> float:
    """The biased answer's value minus the other group's (the two answers that are not "unknown"); NaN without one biased."""
    groups = [k for k in range(len(item.choices)) if k != item.unknown]
    if len(item.biased) != 1 or len(groups) != 2 or item.biased[0] not in groups:
        return math.nan
    other = groups[1 - groups.index(item.biased[0])]
    at = {t: k for k, t in enumerate(offered)}
    a, b = item.choices[item.biased[0]], item.choices[other]
    return float(values[at[a]] - values[at[b]]) if a in at and b in at else math.nan


@dataclass
class ChoiceRun(HtmlRepr):
    """What `evaluate_choices` returns (module docstring)."""

    dataset: ChoiceDataset
    conventions: tuple[ChoiceConvention, ...]
    scored: list[ScoredItem]
    answers: pd.DataFrame
    choices: pd.DataFrame
    tokens: pd.DataFrame
    breakdown: pd.DataFrame
    flips: pd.DataFrame
    summary: dict[str, Any]
    written: list[Path] = field(default_factory=list)

    def statistics(self, convention: str) -> dict[str, Any]:
        """A convention's own statistics (its summary block)."""
        return self.summary["conventions"][convention]["statistics"]

    def save(self, out: str | Path) -> list[Path]:
        """Write items.csv, choices.csv, tokens.csv, breakdown.csv, flips.csv and summary.json into `out` (atomically)."""
        from biaslens.data.export import atomic_write, check_output_dir, safe_csv, to_json

        folder = check_output_dir(out)
        files = {
            "items.csv": self.answers,
            "choices.csv": self.choices,
            "tokens.csv": self.tokens,
            "breakdown.csv": self.breakdown,
            "flips.csv": self.flips,
        }
        self.written = [atomic_write(folder / name, safe_csv(frame)) for name, frame in files.items()]
        self.written.append(atomic_write(folder / "summary.json", to_json(self.summary)))
        return self.written


def _answer_rows(scored: Sequence[ScoredItem], conventions: Sequence[ChoiceConvention]) -> pd.DataFrame:
    rows = []
    for s in scored:
        it = s.item
        row: dict[str, Any] = {
            "item_id": it.item_id,
            "source_id": it.source_id,
            "category": it.category,
            "condition": it.condition,
            "polarity": it.polarity,
            "label": it.label,
            "right_answer": it.correct,
            "biased_answer": " | ".join(it.choices[b] for b in it.biased),
            "has_biased": bool(it.biased),
            "gender": it.gender,
            "gotcha": it.gotcha,
        }
        for c in conventions:
            a = read_answer(c, s)
            row.update(
                {
                    f"{c.key}:answer": a.text if a else None,
                    f"{c.key}:choice": a.choice if a else -1,
                    f"{c.key}:correct": a.correct if a else None,
                    f"{c.key}:biased": a.biased if a else None,
                    f"{c.key}:known": a.known if a else None,
                    f"{c.key}:margin": a.margin if a else math.nan,
                }
            )
        rows.append(row)
    return pd.DataFrame(rows)


def convention_frame(answers: pd.DataFrame, convention: str) -> pd.DataFrame:
    """The items a convention answered, its columns named plainly (`correct`, `biased`, `known`, ...): what `statistics` reads."""
    have = answers[f"{convention}:correct"].notna()
    frame = answers.loc[have].copy()
    for name in ANSWER_FIELDS:
        frame[name] = frame[f"{convention}:{name}"]
    for name in ("correct", "biased", "known", "gotcha", "has_biased"):
        frame[name] = frame[name].astype(bool)
    return frame


def _choice_rows(scored: Sequence[ScoredItem], conventions: Sequence[ChoiceConvention]) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, tokens = [], []
    for s in scored:
        offered = {c.key: set(c.choices(s.item) or ()) for c in conventions}
        ll = s.ll
        for k, text in enumerate(s.texts):
            rows.append(
                {
                    "item_id": s.item.item_id,
                    "choice_index": k,
                    "text": text,
                    "stands_for": meaning(s.item, text),
                    "ll": ll[k],
                    "ll_per_char": ll[k] / len(text),
                    "tokens": len(s.token_ids[k]),
                    "chars": len(text),
                    **{f"offered:{key}": text in texts for key, texts in offered.items()},
                }
            )
            for j, (token_id, lp, rank) in enumerate(zip(s.token_ids[k], s.logprob[k], s.rank[k])):
                tokens.append(
                    {
                        "item_id": s.item.item_id,
                        "choice_index": k,
                        "token_index": j,
                        "token_id": int(token_id),
                        "logprob": float(lp),
                        "rank": int(rank),
                    }
                )
    return pd.DataFrame(rows), pd.DataFrame(tokens, columns=["item_id", "choice_index", "token_index", "token_id", "logprob", "rank"])


def flip_table(answers: pd.DataFrame, conventions: Sequence[str]) -> pd.DataFrame:
    """The items whose answer (which of the item's own answers it stands for) differs between conventions, with each one's."""
    if len(conventions) < 2 or answers.empty:
        return pd.DataFrame(columns=["item_id", "source_id", "category", "condition", "polarity", "right_answer", "conventions_disagreeing"])
    choices = np.stack([answers[f"{c}:choice"].to_numpy(np.int64) for c in conventions], axis=1)
    answered = choices >= 0
    distinct = np.array([len(set(row[ok].tolist())) for row, ok in zip(choices, answered)])
    keep = distinct > 1
    columns = ["item_id", "source_id", "category", "condition", "polarity", "right_answer"]
    frame = answers.loc[keep, columns + [f"{c}:answer" for c in conventions]].copy()
    frame["conventions_disagreeing"] = distinct[keep]
    return frame.reset_index(drop=True)


def flip_counts(answers: pd.DataFrame, conventions: Sequence[str]) -> dict[str, int]:
    """For every two conventions, the items both answered whose answers stand for different answers of the item."""
    out = {}
    for a, b in itertools.combinations(conventions, 2):
        ca, cb = answers[f"{a}:choice"].to_numpy(np.int64), answers[f"{b}:choice"].to_numpy(np.int64)
        both = (ca >= 0) & (cb >= 0)
        out[f"{a} vs {b}"] = int(((ca != cb) & both).sum())
    return out


def _dims(dataset: ChoiceDataset) -> list[str]:
    return [field for field, _label in dataset.dimensions]


def evaluate_choices(
    lm: LanguageModel,
    dataset: ChoiceDataset,
    conventions: str | Sequence[str] | None = None,
    *,
    limit: int | None = None,
    seed: int = 0,
    **scoring: Unpack[ScoringOptions],
) -> ChoiceRun:
    """Score `dataset` (its first `limit` items) with `lm` and read it under `conventions` (default lm-eval; "all": every
    one that applies; module docstring); `seed` seeds the bootstrap. `scoring` goes to `score_items` (`ScoringOptions`):
    `batch_tokens`, `progress`; `cache`, `chunk_items` / `chunk_seconds` and `stop` make it chunked and resumable
    (`runner.run_chunked`); `cache_only=True` reads a finished run and computes nothing."""
    if not isinstance(dataset, ChoiceDataset):
        raise InputError(f"evaluate_choices needs a multiple-choice dataset (load_dataset('bbq'), ...), not {type(dataset).__name__}.")
    family = dataset.family
    named = ",".join(conventions) if isinstance(conventions, (list, tuple)) else conventions
    chosen = parse_choice_conventions(named, family)
    items = list(dataset.items[:limit] if limit else dataset.items)
    if not items:
        raise InputError(f"{dataset.title} has no items to score.")
    scored = score_items(lm, items, **scoring)
    run = read_scored(dataset, scored, chosen, seed=seed)
    from biaslens.engine.scoring import shares_prompt

    sharing = shares_prompt(lm) if lm.reads_previous else None
    run.summary["scoring"] = {
        "choice_score": "log P(choice tokens | prompt), the prompt once for all choices"
        if lm.reads_previous
        else "PLL of the choice's tokens, the prompt unmasked (biaslens's definition)",
        "tokenization": "lm-evaluation-harness's (TemplateLM._encode_pair): prompt alone, whole text, the difference",
        **({"shared_prompt": sharing} if sharing is not None else {}),
    }
    keys = [c.key for c in run.conventions]
    run.summary["manifest"] = lm.manifest(
        choices={"conventions": keys, "bootstrap_seed": seed, "bootstrap_resamples": statistics.BOOTSTRAP_RESAMPLES}
    )
    return run


def read_scored(
    dataset: ChoiceDataset, scored: list[ScoredItem], conventions: Sequence[ChoiceConvention] | str | None = None, *, seed: int = 0
) -> ChoiceRun:
    """The run of already scored items (`scoring.score_items`) read under `conventions`: answers, statistics, breakdown,
    flips (no model needed; `evaluate_choices` adds the model's manifest)."""
    from biaslens.data.multiple_choice import CHOICE_DATASETS

    family = dataset.family
    chosen = conventions if isinstance(conventions, (list, tuple)) else parse_choice_conventions(conventions, family)
    answers = _answer_rows(scored, chosen)
    choices, tokens = _choice_rows(scored, chosen)
    blocks, tables = {}, []
    for c in chosen:
        frame = convention_frame(answers, c.key)
        stats = c.statistics[family](frame) if len(frame) else {}
        blocks[c.key] = {
            "name": c.name,
            "source": c.source,
            "citation": c.citation,
            "answer": "arg-max log-likelihood per character" if c.per_character else "arg-max log-likelihood",
            "items": int(len(frame)),
            "not_put": int(len(answers) - len(frame)),
            "statistics": {k: statistics.finite(v) for k, v in stats.items()},
            "reports": dict(c.reports),
        }
        table = statistics.breakdown(frame, _dims(dataset), c.formula if family == "bbq" else None, seed=seed)
        table.insert(0, "convention", c.key)
        tables.append(table)
    keys = [c.key for c in chosen]
    source = CHOICE_DATASETS.get(family)
    summary = {
        "dataset": {
            "name": dataset.name,
            "title": dataset.title,
            "family": family,
            "items": len(scored),
            "sha256": dataset.sha256,
            "files": [str(p) for p in dataset.paths],
            "notes": list(dataset.notes),
            "citation": source.citation if source else "",
            "license": source.license if source else "",
            "dimensions": dict(dataset.dimensions),
        },
        "conventions": blocks,
        "flips": flip_counts(answers, keys),
    }
    return ChoiceRun(
        dataset=dataset,
        conventions=tuple(chosen),
        scored=scored,
        answers=answers,
        choices=choices,
        tokens=tokens,
        breakdown=pd.concat(tables, ignore_index=True),
        flips=flip_table(answers, keys),
        summary=summary,
    )


# ---------------------------------------------------------------------------------------
# One item in detail
# ---------------------------------------------------------------------------------------


@dataclass
class ItemInspection(HtmlRepr):
    """One item under every convention: `choices` (one row per scored choice: text, log-likelihood, per character, tokens,
    which conventions offer it), `tokens` (one row per token of every choice: the token, its log p and rank), `answers`
    (one row per convention: its answer, right or not, biased or not, the margin), and the prompt."""

    item: ChoiceItem
    prompt: str
    choices: pd.DataFrame
    tokens: pd.DataFrame
    answers: pd.DataFrame
    manifest: dict[str, Any] = field(default_factory=dict)


def custom_item(context: str, question: str, choices: Sequence[str], *, label: int | None = None, biased: int | None = None) -> ChoiceItem:
    """A BBQ-style item typed in: a context, a question, two or three answers (one of lm-eval's unknown phrasings among
    them, for lm-eval's conventions to apply), optionally the right one and the biased one (indices)."""
    from biaslens.data.sentences import check_sentence

    check_sentence(context, "The context")
    check_sentence(question, "The question")
    answers = tuple(check_sentence(c, f"Answer {k + 1}").strip() for k, c in enumerate(choices))
    if not 2 <= len(answers) <= 3 or len(set(answers)) != len(answers):
        raise InputError("Give two or three different answers.")
    for name, value in (("right", label), ("biased", biased)):
        if value is not None and not 0 <= value < len(answers):
            raise InputError(f"The {name} answer must be one of the {len(answers)} answers.")
    unknown = next((k for k, a in enumerate(answers) if a in UNKNOWN_RESPONSES), None)
    return ChoiceItem(
        item_id=0,
        dataset="bbq",
        source_id="typed",
        context=context.strip(),
        question=question.strip(),
        choices=answers,
        label=label if label is not None else (unknown if unknown is not None else 0),
        biased=(biased,) if biased is not None else (),
        category="typed",
        condition="",
        polarity="",
        unknown=unknown,
    )


def inspect_item(lm: LanguageModel, item: ChoiceItem) -> ItemInspection:
    """`item` under every convention that applies to its dataset, with every scored choice token by token."""
    from biaslens.choices.conventions import prompt_of

    scored = score_items(lm, [item])[0]
    conventions = [c for c in CHOICE_CONVENTIONS.values() if c.applies(item.dataset)]
    choices, tokens = _choice_rows([scored], conventions)
    tokens.insert(3, "token", [lm.decode_token(t) for t in tokens["token_id"]])
    tokens.insert(4, "text", [lm.token_text(int(t)) for t in tokens["token_id"]])
    tokens.insert(2, "choice", [scored.texts[k] for k in tokens["choice_index"]])
    rows = []
    for c in conventions:
        a = read_answer(c, scored)
        rows.append(
            {
                "convention": c.key,
                "name": c.name,
                "choices": len(a.offered) if a else 0,
                "answer": a.text if a else None,
                "stands_for": a.choice if a else -1,
                "correct": a.correct if a else None,
                "biased": a.biased if a else None,
                "known": a.known if a else None,
                "margin": a.margin if a else math.nan,
                "reading": "per character" if c.per_character else "log-likelihood",
                "why_not": None if a else "no answer is one of lm-eval's ten unknown phrasings",
            }
        )
    return ItemInspection(item, prompt_of(item), choices, tokens, pd.DataFrame(rows), lm.manifest())


__all__ = [
    "ANSWER_FIELDS",
    "Answer",
    "ChoiceRun",
    "ItemInspection",
    "convention_frame",
    "custom_item",
    "evaluate_choices",
    "flip_counts",
    "flip_table",
    "inspect_item",
    "read_answer",
    "read_scored",
]

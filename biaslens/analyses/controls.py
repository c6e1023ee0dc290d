"""Control pairs (Pikuliak, Beňová & Bachratý, EACL 2023): the dataset's pairs with the social-group words swapped
for non-social words of matched frequency and part of speech. A metric that measures social bias should score them
near 50; one that scores them off 50 answers something else (word frequency, grammar, position), and its bias score
on the real pairs may too.

How a control pair is made (`control_pairs`), deterministically for a `seed`, offline:

1. **Which words are the group words.** A pair with a `target` (StereoSet: the two sentences share the target and
   differ in the attribute) swaps the target's words, the same control word in both sentences, so the attribute
   difference stays and the group becomes a thing. Any other pair (CrowS-Pairs and CSV pairs: the sentences differ in
   the group) swaps the words a word-level diff finds modified (`difflib` over the lower-cased words, as
   `biaslens.analyses.frequency` does), on each side its own; function words (articles, auxiliaries, negations, ...:
   `frequency.FUNCTION_WORDS`), numbers and a few adverbs (`_KEPT`) stay, pronouns are group words. A pair with no such word is skipped, and counted.
2. **Part of speech, without a tagger.** A word in `biaslens.data.control_words.GROUP_POS` (the group words of the
   benchmarks, tagged by hand) takes its tag there ("her": a possessive before a content word, else a pronoun);
   any other word gets one from its form (`guess_pos`): capitalized inside the sentence → proper noun; -ly adverb,
   -ing and -ed verb forms, adjective suffixes (-ous, -ful, -ive, -ish, -ese, -ic, -able, -ible, -less) → adjective;
   a plural -s → plural noun; else a singular noun. A clitic ('s, 'd, 'll, ...) is kept and re-attached.
   Each swap records where its tag came from (`pos_from`: "list" or "form").
3. **Frequency.** wordfreq's Zipf frequency (its English "large" list, offline, pinned); the control word is drawn
   among the `NEAREST` (5) words of `biaslens.data.control_words.CONTROL_WORDS[tag]` closest in Zipf frequency to the
   group word, by a generator seeded with (seed, pair id, word): the same pair always gets the same words, whatever
   else is selected. Words already in either sentence are never drawn; two different group words of one pair never
   get the same control word; one group word gets one control word throughout the pair.
4. Case: a proper noun keeps its capital; otherwise the control word is capitalized only where the group word opens
   the sentence (or is in capitals), so "a Mexican neighborhood" becomes "a rough neighborhood".

`control_scores` gives, per metric, the control pairs' bias score with its 95% Wilson interval and `off_50`: the
interval excludes 50. English only: the named non-English datasets are refused, and so is any set whose group words
are mostly unknown to wordfreq's English list.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from biaslens.data.control_words import CONTROL_WORDS, GROUP_POS
from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import InputError

if TYPE_CHECKING:
    from biaslens.engine.evaluation import EvaluationResult

#: Control words drawn among the nearest this many in frequency.
NEAREST = 5
LANGUAGE = "en"
WORDLIST = "large"
#: Named datasets that are not English: their words are not in the control lists.
NOT_ENGLISH = {"crows-pairs-fr": "French", "crows-pairs-ja": "Japanese", "crows-pairs-ru": "Russian"}
#: How control pairs are made, in one line (the CLI's, the JSON's and the page's note).
METHOD = (
    "control pairs (Pikuliak et al., EACL 2023): each pair's social-group words (StereoSet: the target; otherwise the "
    "words a word-level diff finds modified, function words kept) swapped for non-social words of the same part of speech "
    f"(a hand-tagged list of group words, else the word's form) drawn among the {NEAREST} nearest in wordfreq Zipf frequency"
)
SWAP_COLUMNS = ("pair_id", "sentence", "word", "control", "pos", "pos_from", "zipf_word", "zipf_control")
SKIPPED_COLUMNS = ("pair_id", "reason")
SCORE_COLUMNS = ("metric", "n", "wins", "ties", "bias_score", "ci_low", "ci_high", "off_50")

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_CLITIC = re.compile(r"(['’](?:s|d|ll|re|ve|m))$", re.IGNORECASE)
#: Words a diff may find modified that name no group and stay as they are, besides the function words: numbers and a
#: few adverbs and conjunctions (biaslens's list).
_KEPT = frozenset("one two three four five six seven eight nine ten yet still even only really quite rather much more most less".split())
_ADJ_SUFFIXES = ("ous", "ful", "ive", "ish", "ese", "ic", "able", "ible", "less")


@functools.lru_cache(maxsize=65536)
def zipf(word: str) -> float:
    """wordfreq's Zipf frequency of a word in English (0 when the list does not have it)."""
    import wordfreq

    return float(wordfreq.zipf_frequency(word.lower(), LANGUAGE, wordlist=WORDLIST))


def guess_pos(word: str, *, first: bool = False) -> str:
    """A part of speech from the word's form alone (see the module; `first`: the sentence's first word, whose
    capital says nothing)."""
    lower = word.lower()
    if word[:1].isupper() and not first and not word.isupper():
        return "PROPN"
    if lower.endswith("ly") and len(lower) > 4:
        return "ADV"
    if lower.endswith("ing") and len(lower) > 5:
        return "VERBING"
    if lower.endswith("ed") and len(lower) > 4:
        return "VERBED"
    if lower.endswith(_ADJ_SUFFIXES) and len(lower) > 4:
        return "ADJ"
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(lower) > 3:
        return "NOUNS"
    return "NOUN"


@dataclass(frozen=True)
class _Word:
    start: int
    end: int
    text: str

    @property
    def lower(self) -> str:
        return self.text.lower()


def _words(text: str) -> list[_Word]:
    return [_Word(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(text)]


@functools.lru_cache(maxsize=1)
def _function_words() -> frozenset[str]:
    """Words never swapped: the function words of Table 2 (`frequency.FUNCTION_WORDS`) and `_KEPT`, less any group word."""
    from biaslens.analyses.frequency import FUNCTION_WORDS

    return (frozenset(FUNCTION_WORDS) | _KEPT) - set(GROUP_POS)


def _kept(word: _Word) -> bool:
    function = _function_words()
    return word.lower in function or _CLITIC.sub("", word.lower) in function or word.lower.replace("’", "'") in function


def _pos(word: _Word, words: list[_Word], index: int) -> tuple[str, str]:
    """(tag, where it came from) of the word at `index` of a sentence's `words`, its clitic stripped."""
    base = _CLITIC.sub("", word.lower)
    if base == "her":  # a possessive before a content word ("her car"), else the object pronoun ("saw her.")
        after = words[index + 1].lower if index + 1 < len(words) else ""
        return ("POSS" if after and after not in _function_words() else "PRON"), "list"
    if base in GROUP_POS:
        return GROUP_POS[base], "list"
    return guess_pos(_CLITIC.sub("", word.text), first=index == 0), "form"


def _cased(control: str, original: str, pos: str, first: bool) -> str:
    if pos == "PROPN":
        return control
    if original.isupper() and len(original) > 1:
        return control.upper()
    if first and original[:1].isupper():
        return control[:1].upper() + control[1:]
    return control.lower()


def _draw(word: str, pos: str, taken: set[str], seed: int, pair_id: int) -> str:
    """A control word for `word`: among the `NEAREST` of its part of speech closest in Zipf frequency, seeded."""
    candidates = [c for c in CONTROL_WORDS[pos] if c.lower() not in taken]
    if not candidates:
        candidates = [c for c in CONTROL_WORDS["NOUN"] if c.lower() not in taken]
    target = zipf(word)
    nearest = sorted(candidates, key=lambda c: (abs(zipf(c) - target), c))[:NEAREST]
    rng = random.Random(f"biaslens-control:{seed}:{pair_id}:{word.lower()}")
    return rng.choice(nearest)


def _matches(word: str, target: str) -> bool:
    """A sentence word that is the target word or an inflection of it (Ethiopia/Ethiopian, schoolgirl/schoolgirls)."""
    return word == target or (word.startswith(target) and len(target) >= 4 and len(word) - len(target) <= 3)


def _target_spans(words: list[_Word], target: str) -> list[int]:
    """Indices of the words of every occurrence of the target phrase (case-insensitive, whole words or inflections)."""
    phrase = [w.lower() for w in _WORD.findall(target)]
    if not phrase:
        return []
    lowers = [w.lower for w in words]
    found: list[int] = []
    for i in range(len(lowers) - len(phrase) + 1):
        if all(_matches(lowers[i + k], t) for k, t in enumerate(phrase)):
            found += range(i, i + len(phrase))
    return found


def _modified(a: list[_Word], b: list[_Word]) -> tuple[list[int], list[int]]:
    out_a: list[int] = []
    out_b: list[int] = []
    matcher = difflib.SequenceMatcher(None, [w.lower for w in a], [w.lower for w in b], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            out_a += range(i1, i2)
            out_b += range(j1, j2)
    return [i for i in out_a if not _kept(a[i])], [j for j in out_b if not _kept(b[j])]


def _substitute(text: str, words: list[_Word], chosen: dict[int, str]) -> str:
    for i in sorted(chosen, reverse=True):
        w = words[i]
        text = text[: w.start] + chosen[i] + text[w.end :]
    return text


@dataclass
class ControlSet:
    """The control pairs of a dataset: `pairs` (same ids, bias types and directions as the originals), `swaps` (one
    row per word swapped, `SWAP_COLUMNS`), `skipped` (pairs without a control, `SKIPPED_COLUMNS`)."""

    name: str
    pairs: tuple[Pair, ...]
    swaps: pd.DataFrame
    skipped: pd.DataFrame
    seed: int = 0
    source: PairDataset | None = field(default=None, repr=False)

    def dataset(self) -> PairDataset:
        """The control pairs as a dataset (`evaluate` and the app's runs take it); its sha256 is of the pairs' text."""
        digest = hashlib.sha256(json.dumps([[p.pair_id, p.sent_stereo, p.sent_anti] for p in self.pairs]).encode()).hexdigest()
        path = Path(f"{self.source.path}#control-seed-{self.seed}") if self.source is not None else Path(f"{self.name}-control-seed-{self.seed}")
        return PairDataset(f"{self.name}-control", path, digest, self.pairs, tuple(self.notes()))

    def notes(self) -> list[str]:
        notes = []
        if len(self.skipped):
            reasons = self.skipped["reason"].value_counts()
            notes.append(f"{len(self.skipped):,} pairs have no control pair (" + "; ".join(f"{n:,} {reason}" for reason, n in reasons.items()) + ")")
        if len(self.swaps):
            by_form = int(np.count_nonzero(self.swaps["pos_from"].to_numpy() == "form"))
            if by_form:
                notes.append(
                    f"{by_form:,} of {len(self.swaps):,} swapped words got their part of speech from their form (not in the "
                    "hand-tagged list of group words): a guess"
                )
        return notes

    def summary(self) -> dict[str, Any]:
        gap = np.abs(self.swaps["zipf_control"].to_numpy(float) - self.swaps["zipf_word"].to_numpy(float))
        return {
            "method": METHOD,
            "seed": self.seed,
            "pairs": len(self.pairs),
            "skipped": len(self.skipped),
            "swaps": len(self.swaps),
            "pos_from_list": int(np.count_nonzero(self.swaps["pos_from"].to_numpy() == "list")),
            "median_zipf_gap": float(np.median(gap)) if gap.size else math.nan,
            "notes": self.notes(),
        }


def _check_english(name: str) -> None:
    if name in NOT_ENGLISH:
        raise InputError(f"Control pairs are English only (their control words are an English list): {name} is {NOT_ENGLISH[name]}.")


def control_pairs(dataset: PairDataset | Sequence[Pair], *, seed: int = 0, name: str | None = None) -> ControlSet:
    """The control pair of every pair that has group words to swap (see the module)."""
    source = dataset if isinstance(dataset, PairDataset) else None
    pairs = list(dataset.pairs if isinstance(dataset, PairDataset) else dataset)
    label = name or (source.name if source is not None else (pairs[0].dataset if pairs else "pairs"))
    _check_english(label)
    out: list[Pair] = []
    swaps: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for pair in pairs:
        a, b = _words(pair.sent_stereo), _words(pair.sent_anti)
        if pair.target:
            at, bt = _target_spans(a, pair.target), _target_spans(b, pair.target)
            if not at or not bt:
                skipped.append({"pair_id": pair.pair_id, "reason": "target not found in both sentences"})
                continue
            sides = [("both", a, at, b, bt)]
        else:
            am, bm = _modified(a, b)
            if not am and not bm:
                skipped.append({"pair_id": pair.pair_id, "reason": "no group word differs (only function words or nothing)"})
                continue
            sides = [("stereo", a, am, None, []), ("anti", b, bm, None, [])]
        taken = {w.lower for w in a} | {w.lower for w in b}
        mapping: dict[str, str] = {}
        chosen_a: dict[int, str] = {}
        chosen_b: dict[int, str] = {}
        for sentence, words, indices, other, other_indices in sides:
            for i in indices:
                w = words[i]
                clitic = _CLITIC.search(w.text)
                base = w.text[: clitic.start()] if clitic else w.text
                pos, pos_from = _pos(w, words, i)
                if base.lower() not in mapping:
                    mapping[base.lower()] = _draw(base, pos, taken, seed, pair.pair_id)
                    taken.add(mapping[base.lower()].lower())
                control = _cased(mapping[base.lower()], base, pos, i == 0) + (clitic.group(1) if clitic else "")
                (chosen_b if sentence == "anti" else chosen_a)[i] = control
                swaps.append(
                    {
                        "pair_id": pair.pair_id,
                        "sentence": sentence,
                        "word": w.text,
                        "control": control,
                        "pos": pos,
                        "pos_from": pos_from,
                        "zipf_word": zipf(base),
                        "zipf_control": zipf(mapping[base.lower()]),
                    }
                )
            if other is not None:
                for j in other_indices:
                    base_word = other[j]
                    clitic = _CLITIC.search(base_word.text)
                    base = base_word.text[: clitic.start()] if clitic else base_word.text
                    key = base.lower()
                    if key not in mapping:
                        pos, _ = _pos(base_word, other, j)
                        mapping[key] = _draw(base, pos, taken, seed, pair.pair_id)
                        taken.add(mapping[key].lower())
                    pos, _ = _pos(base_word, other, j)
                    chosen_b[j] = _cased(mapping[key], base, pos, j == 0) + (clitic.group(1) if clitic else "")
        stereo = _substitute(pair.sent_stereo, a, chosen_a)
        anti = _substitute(pair.sent_anti, b, chosen_b)
        if stereo == anti:
            skipped.append({"pair_id": pair.pair_id, "reason": "the control sentences came out the same"})
            continue
        out.append(replace(pair, sent_stereo=stereo, sent_anti=anti, unrelated="", context="", target="", annotations=()))
    swap_frame = pd.DataFrame(swaps, columns=list(SWAP_COLUMNS))
    unknown = int(np.count_nonzero(swap_frame["zipf_word"].to_numpy(float) == 0))
    if len(swap_frame) >= 10 and unknown > len(swap_frame) / 2:
        raise InputError(
            f"Control pairs are English only: {unknown:,} of {len(swap_frame):,} group words of {label} are not in wordfreq's English list."
        )
    return ControlSet(label, tuple(out), swap_frame, pd.DataFrame(skipped, columns=list(SKIPPED_COLUMNS)), seed, source)


def control_scores(result: EvaluationResult, metrics: Sequence[str] | None = None) -> pd.DataFrame:
    """Per metric: the control pairs' bias score (Eq. 6, ties and undefined no win) with its 95% Wilson interval, and
    `off_50`: the interval excludes 50 (the metric prefers one side of pairs that differ in nothing social)."""
    from biaslens.engine.stats import bias_score

    keys = list(metrics) if metrics is not None else list(result.summary["metrics"])
    rows = []
    for m in keys:
        counts = bias_score(result.pairs[f"{m}_stereo"].to_numpy(float), result.pairs[f"{m}_anti"].to_numpy(float))
        off = bool(counts.n) and (counts.ci_low > 50.0 or counts.ci_high < 50.0)
        rows.append(
            {
                "metric": m,
                "n": counts.n,
                "wins": counts.wins,
                "ties": counts.ties,
                "bias_score": counts.score,
                "ci_low": counts.ci_low,
                "ci_high": counts.ci_high,
                "off_50": off,
            }
        )
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))


def control_entries(scores: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """`control_scores` as the entry beside each metric's bias score in `summary.json` (`metrics.<key>.control`)."""
    return {
        r["metric"]: {k: r[k] for k in ("bias_score", "ci_low", "ci_high", "n", "wins", "ties", "off_50")} for r in scores.to_dict(orient="records")
    }


def control_text(entry: dict[str, Any] | None) -> str:
    """'48.2 [43.1, 53.3]' and ' off 50' when its interval excludes 50; '' without an entry."""
    if not entry:
        return ""
    score, low, high = entry["bias_score"], entry["ci_low"], entry["ci_high"]
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return "n/a"
    return f"{score:.1f} [{low:.1f}, {high:.1f}]" + (" off 50" if entry.get("off_50") else "")


def score_controls(lm: Any, controls: ControlSet, metrics: Sequence[str], **evaluate_kwargs: Any) -> tuple[EvaluationResult, pd.DataFrame]:
    """Score the control pairs with `metrics` (`evaluate`'s keywords: compat, cache, progress, ...): the result and
    `control_scores`."""
    from biaslens.engine.evaluation import evaluate

    if not controls.pairs:
        raise InputError("No pair of this dataset has group words to swap: there are no control pairs to score.")
    result = evaluate(lm, controls.dataset(), list(metrics), **evaluate_kwargs)
    return result, control_scores(result, metrics)


__all__ = [
    "METHOD",
    "NEAREST",
    "NOT_ENGLISH",
    "SCORE_COLUMNS",
    "SKIPPED_COLUMNS",
    "SWAP_COLUMNS",
    "ControlSet",
    "control_entries",
    "control_pairs",
    "control_scores",
    "control_text",
    "guess_pos",
    "score_controls",
    "zipf",
]

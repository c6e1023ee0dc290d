"""Flagged rows: pairs that may not measure what they claim (Blodgett et al. 2021), found or published.

Automatic checks (`check_pairs`, pure functions of the pairs, and `token_identical`, which needs
the model's tokenizer):

- `non_minimal`: a word-level diff (lower-cased, punctuation stripped, he/she-type words treated
  as agreement) finds more than one differing span, or a span of more than `MAX_SPAN_WORDS`
  words: more than the group words differ.
- `blank_anomaly` (StereoSet): the context does not hold exactly one BLANK, or a candidate
  sentence does not read as the context with its BLANK filled.
- `duplicate`: the pair repeats an earlier pair's sentences (either order).
- `token_identical`: both sentences encode to the same tokens (nothing for a metric to compare).

Published and derived lists (read only from the data folder or the cache, or downloaded, like
datasets):

- `published_non_minimal`: CrowsPairsTools' list of non-minimal CrowS-Pairs rows (English ids for
  CrowS-Pairs and the revised English sets, French ids for French CrowS-Pairs);
- `removed_in_revision`: CrowS-Pairs rows Névéol et al. (2022) removed (for `crows-pairs`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from biaslens.data import datafiles
from biaslens.data import datasets as ds
from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import DatasetNotFoundError

FLAG_COLUMNS = ("pair_id", "check", "detail")
CHECKS = ("non_minimal", "blank_anomaly", "duplicate", "token_identical", "published_non_minimal", "removed_in_revision")
CHECK_LABELS = {
    "non_minimal": "more than the group words differ (word-level diff)",
    "blank_anomaly": "StereoSet BLANK anomaly",
    "duplicate": "repeats an earlier pair",
    "token_identical": "both sentences have the same tokens",
    "published_non_minimal": "in the published list of non-minimal pairs (CrowsPairsTools)",
    "removed_in_revision": "removed in the revised CrowS-Pairs (Névéol et al. 2022)",
}

#: A differing span longer than this (in words, on either side) is more than a group word.
MAX_SPAN_WORDS = 3

#: Words that change with the group word (agreement), not a second difference: English and French pronouns.
AGREEMENT_WORDS = frozenset(
    "he she him her his hers himself herself they them their theirs themselves man woman men women "
    "il elle ils elles lui le la les son sa ses leur leurs".split()
)

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


def words(sentence: str) -> list[str]:
    """Lower-cased words, punctuation dropped ("Don't" -> "don't", "well." -> "well")."""
    return [w.replace("’", "'") for w in _WORD.findall(sentence.lower())]


def differing_spans(a: str, b: str) -> list[tuple[list[str], list[str]]]:
    """The word spans that differ between two sentences (difflib over the word lists)."""
    wa, wb = words(a), words(b)
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    return [(wa[i1:i2], wb[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def non_minimal_reason(a: str, b: str, max_span_words: int = MAX_SPAN_WORDS) -> str | None:
    """Why the pair is not a minimal pair, or None when one short span (plus agreement words) differs."""
    spans = [(x, y) for x, y in differing_spans(a, b) if not set(x + y) <= AGREEMENT_WORDS]
    if not spans:
        return None
    if len(spans) > 1:
        shown = "; ".join(f"{' '.join(x) or '∅'} / {' '.join(y) or '∅'}" for x, y in spans[:3])
        return f"{len(spans)} separate differences: {shown}"
    x, y = spans[0]
    if max(len(x), len(y)) > max_span_words:
        return f"{max(len(x), len(y))} words differ in a row: {' '.join(x) or '∅'} / {' '.join(y) or '∅'}"
    return None


def blank_anomaly(pair: Pair) -> str | None:
    """A StereoSet example whose context has not exactly one BLANK, or whose sentences do not fill it."""
    if not pair.context:
        return None
    n = pair.context.count("BLANK")
    if n != 1:
        return f"the context has {n} BLANKs"
    before, after = (words(part) for part in pair.context.split("BLANK"))
    for label, sentence in (("stereotype", pair.sent_stereo), ("anti-stereotype", pair.sent_anti), ("unrelated", pair.unrelated)):
        if not sentence:
            continue
        w = words(sentence)
        if len(w) < len(before) + len(after) + 1 or w[: len(before)] != before or (after and w[-len(after) :] != after):
            return f"the {label} sentence does not fill the context's BLANK"
    return None


def check_pairs(pairs: Sequence[Pair] | PairDataset, max_span_words: int = MAX_SPAN_WORDS) -> pd.DataFrame:
    """The automatic checks that need no model: one row per (pair, check) that fires."""
    pairs = list(pairs.pairs if isinstance(pairs, PairDataset) else pairs)
    rows = []
    seen: dict[frozenset[str] | tuple[str, str], int] = {}
    for p in pairs:
        if not p.context:  # StereoSet examples differ in one BLANK by construction; its own check below
            reason = non_minimal_reason(p.sent_stereo, p.sent_anti, max_span_words)
            if reason:
                rows.append((p.pair_id, "non_minimal", reason))
        reason = blank_anomaly(p)
        if reason:
            rows.append((p.pair_id, "blank_anomaly", reason))
        key = (p.sent_stereo.strip(), p.sent_anti.strip())
        first = seen.get(key, seen.get(key[::-1]))
        if first is not None:
            rows.append((p.pair_id, "duplicate", f"same sentences as pair {first}"))
        else:
            seen[key] = p.pair_id
    return pd.DataFrame(rows, columns=list(FLAG_COLUMNS))


def token_identical(lm, pairs: Sequence[Pair] | PairDataset) -> pd.DataFrame:
    """Pairs whose two sentences the model's tokenizer turns into the same token ids."""
    pairs = list(pairs.pairs if isinstance(pairs, PairDataset) else pairs)
    rows = []
    for p in pairs:
        # verbose=False: an over-long sentence only compares here (scoring refuses it), no transformers warning.
        a = lm.tokenizer(p.sent_stereo, verbose=False)["input_ids"]
        b = lm.tokenizer(p.sent_anti, verbose=False)["input_ids"]
        if list(a) == list(b):
            rows.append((p.pair_id, "token_identical", f"both encode to {len(a)} identical tokens"))
    return pd.DataFrame(rows, columns=list(FLAG_COLUMNS))


# ---------------------------------------------------------------------------------------
# Published lists
# ---------------------------------------------------------------------------------------


_TOOLS = "https://raw.githubusercontent.com/JulienBez/CrowsPairsTools/"


def _tools_list(language: str, path: str, sha256: str, derived_from: str, caveat: str) -> ds.DatasetSource:
    """A CrowsPairsTools list of non-minimal pairs: the file `path` (commit/folder/.../file) of its repository."""
    file_name = path.rsplit("/", 1)[-1]
    return ds.DatasetSource(
        name=f"non-minimal-{language[:2].lower()}",
        title=f"CrowsPairsTools non-minimal pairs ({language})",
        file_name=f"CrowsPairsTools_{file_name}",
        url=_TOOLS + path,
        sha256=sha256,
        license=f"no licence stated (derived from {derived_from}, CC BY-SA 4.0)",
        homepage="https://github.com/JulienBez/CrowsPairsTools",
        caveat=caveat,
        citation="Julien Bezançon, CrowsPairsTools.",
        alt_file_names=(file_name,),
    )


FLAG_LISTS: dict[str, ds.DatasetSource] = {
    source.name: source
    for source in (
        _tools_list(
            "English",
            "62bf7050ad52bf94d727f4591824c091131ee94b/output/en_US/english_french_base_file_en_US_nonMinimal.csv",
            "e52a4f141eaa1a37b1cd89ab3eb1c50a96b3490e8feb4d80d85718ec3b31c5bd",
            "CrowS-Pairs",
            "Pairs with more than two non-aligned words after lower-casing and he/she-type equivalences.",
        ),
        _tools_list(
            "French",
            "8fd71847d280343f349edd9d3bceb6101d3fab87/output/english_french_base_file_fr_FR_nonMinimal.csv",
            "d61409a067a066fd7d2d98fb0c7829e8cae508fcc85505d2490acce91db1d3c3",
            "French CrowS-Pairs",
            "Pairs with more than two non-aligned words.",
        ),
    )
}
#: Which published list applies to which dataset.
LIST_FOR_DATASET = {
    "crows-pairs": "non-minimal-en",
    "crows-pairs-revised": "non-minimal-en",
    "crows-pairs-revised-210": "non-minimal-en",
    "crows-pairs-fr": "non-minimal-fr",
}


@dataclass(frozen=True)
class FlagList:
    name: str
    path: Path
    ids: frozenset[int]  # CrowS-Pairs row numbers
    other_ids: tuple[str, ...]  # ids that are no CrowS-Pairs row (native French contributions: "fr_FR6", ...)


def read_flag_list(path: str | Path, name: str = "custom") -> FlagList:
    """A tab-separated list whose first column is the id (CrowS-Pairs row number, else kept as other_ids)."""
    path = Path(path)
    text, _ = datafiles.read_text(path)
    lines = [line for line in text.split("\n") if line.strip()]
    ids, other = set(), []
    for line in lines[1:]:
        value = line.split("\t", 1)[0].strip()
        if value.isdigit():
            ids.add(int(value))
        else:
            other.append(value)
    return FlagList(name, path, frozenset(ids), tuple(other))


def _locate_or_fetch(source: ds.DatasetSource, data_dir, cache_dir, download: bool) -> Path | None:
    """Like datasets: the data folder, the cache, else a checked download into the cache; None when unavailable offline."""
    found = ds.locate_source(source, data_dir=data_dir, cache_dir=cache_dir)
    if found is not None or not download:
        return found
    target = datafiles.cache_folder(source.name, cache_dir) / source.file_name
    try:
        return datafiles.download(source.url, target, sha256=source.sha256, not_found=lambda why: why)
    except DatasetNotFoundError:
        return None


def load_flag_list(name: str, *, data_dir=None, cache_dir=None, download: bool = True) -> FlagList | None:
    """A published flag list by name ("non-minimal-en", "non-minimal-fr"), or None when it cannot be had offline."""
    source = FLAG_LISTS[name]
    path = _locate_or_fetch(source, data_dir, cache_dir, download)
    return read_flag_list(path, name) if path is not None else None


def published_flags(dataset: PairDataset, *, data_dir=None, cache_dir=None, download: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """Rows of `dataset` in the published list and, for CrowS-Pairs, rows the revision removed; and notes."""
    rows, notes = [], []
    key = ds.canonical_name(dataset.name) or dataset.name
    list_name = LIST_FOR_DATASET.get(key)
    ids = {p.pair_id for p in dataset.pairs if not p.source_id}
    if list_name is not None:
        flag_list = load_flag_list(list_name, data_dir=data_dir, cache_dir=cache_dir, download=download)
        if flag_list is None:
            notes.append(f"{FLAG_LISTS[list_name].title} not found and not downloadable: get {FLAG_LISTS[list_name].url}")
        else:
            rows += [(i, "published_non_minimal", flag_list.name) for i in sorted(flag_list.ids & ids)]
            if flag_list.other_ids:
                notes.append(
                    f"{len(flag_list.other_ids)} ids of the published list are not CrowS-Pairs rows (e.g. "
                    f"{flag_list.other_ids[0]}): they match no pair here"
                )
    if key == "crows-pairs":
        try:
            revised = ds.load_dataset("crows-pairs-revised", data_dir=data_dir, cache_dir=cache_dir, download=download)
        except ds.DatasetError as exc:
            notes.append(f"rows removed in the revision unknown: {exc}")
        else:
            kept = {p.pair_id for p in revised.pairs}
            rows += [(i, "removed_in_revision", "not in crows_pairs_EN_revised.csv") for i in sorted(ids - kept)]
    return pd.DataFrame(rows, columns=list(FLAG_COLUMNS)), notes


def flag_pairs(
    dataset: PairDataset, *, lm=None, checks: Iterable[str] = CHECKS, data_dir=None, cache_dir=None, download: bool = True
) -> tuple[pd.DataFrame, list[str]]:
    """Every flag of every pair (FLAG_COLUMNS, one row per pair and check) and notes on what could not be checked."""
    checks = set(checks)
    frames, notes = [check_pairs(dataset)], []
    if "token_identical" in checks:
        if lm is None:
            notes.append("token-identical pairs not checked: no model")
        else:
            frames.append(token_identical(lm, dataset))
    if checks & {"published_non_minimal", "removed_in_revision"}:
        published, more = published_flags(dataset, data_dir=data_dir, cache_dir=cache_dir, download=download)
        frames.append(published)
        notes += more
    flags = pd.concat(frames, ignore_index=True)
    flags = flags[flags["check"].isin(checks)].sort_values(["pair_id", "check"], kind="stable").reset_index(drop=True)
    return flags, notes


def keep_mask(pair_ids: Sequence[int], flags: pd.DataFrame, checks: Iterable[str] | None = None) -> np.ndarray:
    """True for each pair id not flagged by any of `checks` (default: every check in `flags`)."""
    chosen = flags if checks is None else flags[flags["check"].isin(set(checks))]
    flagged = set(chosen["pair_id"])
    return np.array([i not in flagged for i in pair_ids], dtype=bool)


def flag_summary(flags: pd.DataFrame) -> pd.DataFrame:
    """Pairs flagged per check."""
    counts = flags.groupby("check")["pair_id"].nunique()
    return pd.DataFrame({"check": list(counts.index), "label": [CHECK_LABELS.get(c, c) for c in counts.index], "pairs": list(counts)})


__all__ = [
    "AGREEMENT_WORDS",
    "CHECKS",
    "CHECK_LABELS",
    "FLAG_COLUMNS",
    "FLAG_LISTS",
    "FlagList",
    "blank_anomaly",
    "check_pairs",
    "differing_spans",
    "flag_pairs",
    "flag_summary",
    "keep_mask",
    "load_flag_list",
    "non_minimal_reason",
    "published_flags",
    "read_flag_list",
    "token_identical",
    "words",
]

"""Kaneko & Bollegala (2022), Table 2: how frequent are the words that name each group?

Masked metrics predict the masked words, and frequent words are easier to predict; if
the words naming advantaged groups are more frequent in general text than those naming
disadvantaged groups, a masked metric can mistake frequency for bias. This module needs
no model: it compares the modified words of CrowS-Pairs' two groups.

Per the spec (Word frequency), as the paper defines Table 2:

* a word-level diff of each pair (`difflib` over the lower-cased words of
  `wordfreq.tokenize`); **Dis** words are the modified words of `sent_more` in stereo rows
  and of `sent_less` in antistereo rows, **Adv** words the others;
* corpus frequency: the paper counted Wikipedia + BookCorpus; biaslens uses the offline
  `wordfreq` English "large" list as the documented stand-in (rank 1 = the most frequent
  word; a word not in the list ranks after every listed one);
* words whose common sense is not the group one are left out (`EXCLUDED_WORDS`: white and
  black as colours, as the paper says, and function words such as articles and
  prepositions, which name no group: `FUNCTION_WORDS`), and the exclusion list is part of
  the result;
* per bias type, a word modified in both groups goes to the group where it is modified
  more often (a word modified equally often in both is left out, and listed);
* the words of both groups are merged into one list ranked by corpus frequency and the
  top `TOP` (8) kept, each with its group; each group's **mean rank** is the mean position
  (1-8) of its words in that merged list (NaN when none of its words made the list).

The project's earlier statistic (the mean corpus rank over every modified-word occurrence,
and the words modified most often) is kept as a labelled extra: `occurrence_summary`.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from biaslens.data.datasets import Pair, PairDataset
from biaslens.errors import InputError

LANGUAGE = "en"
WORDLIST = "large"
ALL_TYPES = "all"

WORD_COLUMNS = ("pair_id", "bias_type", "direction", "group", "sentence", "word", "rank", "zipf", "listed")

#: Kaneko & Bollegala's Table 2 keeps the top 8 words of the merged list.
TOP = 8

#: Closed-class words a word-level diff catches (articles, prepositions, conjunctions, auxiliaries, negation) but which
#: name no group; pronouns are not among them (he, she, his, her name genders). biaslens's addition to the paper's list.
FUNCTION_WORDS = (
    "a an the of in on at to for with by from into about as and or but nor so if than then that this these those it its "
    "is are was were be been being am do does did done have has had will would shall should can could may might must "
    "not no n't don't doesn't didn't isn't aren't wasn't weren't can't won't there here very too also just all any some"
).split()

#: Words left out of Table 2 because their common sense is not the group one (the paper: white and black, "which
#: have non-stereotypical senses" as colours), and the function words, which name no group.
EXCLUDED_WORDS: dict[str, str] = {
    "white": "colour sense (the paper leaves it out)",
    "black": "colour sense (the paper leaves it out)",
    **{w: "function word: names no group (biaslens's addition)" for w in FUNCTION_WORDS},
}

MERGED_COLUMNS = ("bias_type", "word", "group", "position", "rank", "zipf", "count_adv", "count_dis")
MEAN_RANK_COLUMNS = ("bias_type", "group", "mean_rank", "words_in_list", "words", "distinct")


@functools.lru_cache(maxsize=2)
def corpus_ranks(language: str = LANGUAGE, wordlist: str = WORDLIST) -> Mapping[str, int]:
    """word -> rank in wordfreq's frequency list (1 = most frequent)."""
    import wordfreq

    words = wordfreq.top_n_list(language, 10**7, wordlist=wordlist)
    return {w: i + 1 for i, w in enumerate(words)}


def tokenize(text: str) -> list[str]:
    """Lower-cased words as wordfreq counts them (punctuation dropped, contractions kept whole)."""
    import wordfreq

    return wordfreq.tokenize(text, LANGUAGE)


def modified_words(a: str, b: str) -> tuple[list[str], list[str]]:
    """The words of `a` and of `b` outside the runs the two sentences share (word-level diff)."""
    wa, wb = tokenize(a), tokenize(b)
    out_a: list[str] = []
    out_b: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if tag != "equal":
            out_a += wa[i1:i2]
            out_b += wb[j1:j2]
    return out_a, out_b


@dataclass
class WordFrequency:
    """Table 2 as the paper defines it, plus the earlier occurrence statistic as a labelled extra.

    `words`: one row per modified-word occurrence (`pair_id`, `bias_type`, `direction`,
    `group` "adv"/"dis", `sentence` "stereo"/"anti", `word`, `rank`, `zipf`, `listed`).
    `merged` (``table2_top_words.csv``): per bias type (and "all") the top `TOP` words of
    the merged list: `word`, its `group`, `position` (1-8 by corpus frequency), corpus
    `rank` and `zipf`, and how often it is modified in each group (`count_adv`, `count_dis`).
    `mean_ranks` (``table2_word_frequency.csv``): per bias type and group, `mean_rank` = the
    mean position of the group's words in the merged list, `words_in_list`, and the group's
    modified-word occurrences (`words`) and distinct words (`distinct`) after exclusions.
    `excluded`: the words left out (`bias_type`, `word`, `reason`, `count_adv`, `count_dis`).
    `occurrence_summary` / `occurrence_top`: the extra (not the paper's statistic): mean
    corpus rank over every occurrence, and the words modified most often.
    """

    words: pd.DataFrame
    merged: pd.DataFrame
    mean_ranks: pd.DataFrame
    excluded: pd.DataFrame
    occurrence_summary: pd.DataFrame
    occurrence_top: pd.DataFrame
    wordlist: str

    def table(self) -> pd.DataFrame:
        """The paper's layout: one row per bias type, the merged top words (group marked) and each group's mean rank."""
        rows = []
        for bias_type in dict.fromkeys(self.mean_ranks["bias_type"]):
            listed = self.merged[self.merged["bias_type"] == bias_type].sort_values("position")
            ranks = self.mean_ranks[self.mean_ranks["bias_type"] == bias_type].set_index("group")["mean_rank"]
            rows.append(
                {
                    "bias_type": bias_type,
                    "top words by corpus frequency (group)": ", ".join(f"{w} ({g})" for w, g in zip(listed["word"], listed["group"])),
                    "adv mean rank": float(ranks.get("adv", np.nan)),
                    "dis mean rank": float(ranks.get("dis", np.nan)),
                }
            )
        return pd.DataFrame(rows)

    def excluded_table(self) -> pd.DataFrame:
        """The exclusion list as shown: one row per word and reason, with the bias types it was left out of."""
        if self.excluded.empty:
            return pd.DataFrame(columns=["word", "reason", "bias types", "count_adv", "count_dis"])
        own = self.excluded[self.excluded["bias_type"] != ALL_TYPES]
        grouped = own.groupby(["word", "reason"], sort=False).agg(
            types=("bias_type", lambda t: ", ".join(sorted(set(t)))), count_adv=("count_adv", "sum"), count_dis=("count_dis", "sum")
        )
        return grouped.reset_index().rename(columns={"types": "bias types"})

    def occurrence_table(self) -> pd.DataFrame:
        """The extra statistic in a wide layout: per bias type, each group's most modified words and mean occurrence rank."""
        wide = self.occurrence_summary.pivot(index="bias_type", columns="group", values=["top_words", "mean_rank", "words"])
        wide.columns = [f"{group} {what.replace('_', ' ')}" for what, group in wide.columns]
        order = ["adv top words", "adv mean rank", "dis top words", "dis mean rank", "adv words", "dis words"]
        wide = wide.reindex(columns=[c for c in order if c in wide.columns])
        types = [t for t in dict.fromkeys(self.occurrence_summary["bias_type"]) if t in wide.index]
        return wide.reindex(types).reset_index().infer_objects()  # numbers as numbers, not pivot objects


def merged_top_words(
    counts: pd.DataFrame,
    ranks: Mapping[str, int],
    *,
    top: int = TOP,
    excluded: Mapping[str, str] | None = None,
    unlisted_rank: int | None = None,
) -> tuple[pd.DataFrame, list[dict]]:
    """One bias type's merged list from per-word counts (columns `word`, `count_adv`, `count_dis`).

    Returns (the top `top` words ranked by corpus frequency with `group` and `position`,
    the words left out with their reason). A word goes to the group where it is modified
    more often; equal counts leave it out. A word missing from `ranks` ranks after every
    listed word (`unlisted_rank`, default the largest rank + 1).
    """
    excluded = EXCLUDED_WORDS if excluded is None else excluded
    unlisted = unlisted_rank if unlisted_rank is not None else max(ranks.values(), default=0) + 1
    kept, dropped = [], []
    for r in counts.itertuples(index=False):
        reason = excluded.get(r.word)
        if reason is None and r.count_adv == r.count_dis:
            reason = "modified equally often in both groups"
        if reason is not None:
            dropped.append({"word": r.word, "reason": reason, "count_adv": int(r.count_adv), "count_dis": int(r.count_dis)})
            continue
        group = "adv" if r.count_adv > r.count_dis else "dis"
        kept.append(
            {"word": r.word, "group": group, "rank": ranks.get(r.word, unlisted), "count_adv": int(r.count_adv), "count_dis": int(r.count_dis)}
        )
    frame = pd.DataFrame(kept, columns=["word", "group", "rank", "count_adv", "count_dis"])
    frame = frame.sort_values(["rank", "word"]).head(top).reset_index(drop=True)
    frame.insert(2, "position", np.arange(1, len(frame) + 1))
    return frame, dropped


def word_frequency(pairs: PairDataset | Sequence[Pair], *, top: int = 3, merged_top: int = TOP) -> WordFrequency:
    """Table 2 from CrowS-Pairs-style pairs (they need a stereo/antistereo direction).

    `merged_top`: words kept in the merged list (the paper: 8). `top`: words per group in
    the extra occurrence statistic.
    """
    items = list(pairs.pairs if isinstance(pairs, PairDataset) else pairs)
    directed = [p for p in items if p.direction in ("stereo", "antistereo")]
    if not directed:
        raise InputError("Word frequency needs pairs with a stereo/antistereo direction (CrowS-Pairs or such a custom CSV).")
    if top < 1 or merged_top < 1:
        raise InputError("The number of top words must be positive.")
    import wordfreq

    ranks = corpus_ranks()
    unlisted_rank = len(ranks) + 1
    rows = []
    for p in directed:
        stereo_words, anti_words = modified_words(p.sent_stereo, p.sent_anti)
        dis_side = "stereo" if p.direction == "stereo" else "anti"
        for side, words in (("stereo", stereo_words), ("anti", anti_words)):
            group = "dis" if side == dis_side else "adv"
            for w in words:
                rank = ranks.get(w)
                rows.append(
                    (
                        p.pair_id,
                        p.bias_type,
                        p.direction,
                        group,
                        side,
                        w,
                        rank or unlisted_rank,
                        wordfreq.zipf_frequency(w, LANGUAGE, wordlist=WORDLIST),
                        rank is not None,
                    )
                )
    words = pd.DataFrame(rows, columns=list(WORD_COLUMNS))
    types = sorted(t for t in words["bias_type"].unique() if t) + [ALL_TYPES]
    merged_parts, mean_rows, excluded_rows, summary_rows, top_rows = [], [], [], [], []
    zipf = dict(zip(words["word"], words["zipf"]))
    for bias_type in types:
        sub = words if bias_type == ALL_TYPES else words[words["bias_type"] == bias_type]
        counts = sub.pivot_table(index="word", columns="group", values="pair_id", aggfunc="size", fill_value=0)
        counts = counts.reindex(columns=["adv", "dis"], fill_value=0).reset_index()
        counts = counts.rename(columns={"adv": "count_adv", "dis": "count_dis"})
        merged, dropped = merged_top_words(counts, ranks, top=merged_top, unlisted_rank=unlisted_rank)
        merged.insert(0, "bias_type", bias_type)
        merged["zipf"] = merged["word"].map(zipf)
        merged_parts.append(merged[list(MERGED_COLUMNS)])
        excluded_rows += [{"bias_type": bias_type, **d} for d in dropped]
        left_out = {d["word"] for d in dropped}
        for group in ("adv", "dis"):
            in_list = merged[merged["group"] == group]
            own = sub[(sub["group"] == group) & ~sub["word"].isin(left_out)]
            mean_rows.append(
                {
                    "bias_type": bias_type,
                    "group": group,
                    "mean_rank": float(in_list["position"].mean()) if len(in_list) else np.nan,
                    "words_in_list": len(in_list),
                    "words": len(own),
                    "distinct": int(own["word"].nunique()),
                }
            )
            g = sub[sub["group"] == group]
            occurrences = g.groupby("word").agg(count=("word", "size"), rank=("rank", "first"), zipf=("zipf", "first")).reset_index()
            best = occurrences.sort_values(["count", "rank", "word"], ascending=[False, True, True]).head(top)
            top_rows += [{"bias_type": bias_type, "group": group, **r} for r in best.to_dict("records")]
            summary_rows.append(
                {
                    "bias_type": bias_type,
                    "group": group,
                    "words": len(g),
                    "distinct": int(g["word"].nunique()),
                    "mean_rank": float(g["rank"].mean()) if len(g) else np.nan,
                    "median_rank": float(g["rank"].median()) if len(g) else np.nan,
                    "mean_zipf": float(g["zipf"].mean()) if len(g) else np.nan,
                    "unlisted": int((~g["listed"]).sum()),
                    "top_words": ", ".join(f"{r.word} ({r.count}×, rank {r.rank:,})" for r in best.itertuples()),
                }
            )
    return WordFrequency(
        words=words,
        merged=pd.concat(merged_parts, ignore_index=True).astype({"position": np.int64, "rank": np.int64}),
        mean_ranks=pd.DataFrame(mean_rows, columns=list(MEAN_RANK_COLUMNS)),
        excluded=pd.DataFrame(excluded_rows, columns=["bias_type", "word", "reason", "count_adv", "count_dis"]),
        occurrence_summary=pd.DataFrame(summary_rows),
        occurrence_top=pd.DataFrame(top_rows, columns=["bias_type", "group", "word", "count", "rank", "zipf"]),
        wordlist=WORDLIST,
    )


__all__ = [
    "EXCLUDED_WORDS",
    "FUNCTION_WORDS",
    "TOP",
    "WordFrequency",
    "corpus_ranks",
    "merged_top_words",
    "modified_words",
    "tokenize",
    "word_frequency",
]

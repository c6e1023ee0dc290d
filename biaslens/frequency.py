"""Kaneko & Bollegala (2022), Table 2: how frequent are the words that name each group?

Masked metrics predict the masked words, and frequent words are easier to predict; if
the words naming advantaged groups are more frequent in general text than those naming
disadvantaged groups, a masked metric can mistake frequency for bias. This module needs
no model: it compares the modified words of CrowS-Pairs' two groups.

Per the spec (Word frequency): a word-level diff of each pair (`difflib` over the
lower-cased words of `wordfreq.tokenize`); **Dis** words are the modified words of
`sent_more` in stereo rows and of `sent_less` in antistereo rows, **Adv** words the
others. Each word gets its corpus frequency from the `wordfreq` package (English
"large" list, offline): its rank (1 = the most frequent English word; words not in
the list get the list's length + 1 and count as `unlisted`) and its Zipf value
(log10 of occurrences per billion words).

"Most frequent words of a group" are the words modified most often in that group of
pairs (with their corpus rank beside them); a group's mean rank is the mean corpus rank
over its modified-word occurrences. Both readings are biaslens's own.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .datasets import Pair, PairDataset
from .errors import InputError

LANGUAGE = "en"
WORDLIST = "large"
ALL_TYPES = "all"

WORD_COLUMNS = ("pair_id", "bias_type", "direction", "group", "sentence", "word", "rank", "zipf", "listed")


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
    """Table 2: modified words of the Adv and Dis groups and their corpus frequency.

    `words`: one row per modified-word occurrence (`pair_id`, `bias_type`, `direction`,
    `group` "adv"/"dis", `sentence` "stereo"/"anti", `word`, `rank`, `zipf`, `listed`).
    `summary`: per bias type (and "all") and group: `words` (occurrences), `distinct`,
    `mean_rank`, `median_rank`, `mean_zipf`, `unlisted`, and `top_words` (the `top`
    most often modified words as "word (count×, rank r)").
    `top`: those words as rows (`bias_type`, `group`, `word`, `count`, `rank`, `zipf`).
    """

    words: pd.DataFrame
    summary: pd.DataFrame
    top: pd.DataFrame
    wordlist: str

    def table(self) -> pd.DataFrame:
        """The paper's layout: one row per bias type, Adv and Dis top words and mean ranks side by side."""
        wide = self.summary.pivot(index="bias_type", columns="group", values=["top_words", "mean_rank", "words"])
        wide.columns = [f"{group} {what.replace('_', ' ')}" for what, group in wide.columns]
        order = ["adv top words", "adv mean rank", "dis top words", "dis mean rank", "adv words", "dis words"]
        wide = wide.reindex(columns=[c for c in order if c in wide.columns])
        types = [t for t in dict.fromkeys(self.summary["bias_type"]) if t in wide.index]
        return wide.reindex(types).reset_index().infer_objects()  # numbers as numbers, not pivot objects


def word_frequency(pairs: PairDataset | Sequence[Pair], *, top: int = 3) -> WordFrequency:
    """Table 2 from CrowS-Pairs-style pairs (they need a stereo/antistereo direction)."""
    items = list(pairs.pairs if isinstance(pairs, PairDataset) else pairs)
    directed = [p for p in items if p.direction in ("stereo", "antistereo")]
    if not directed:
        raise InputError("Word frequency needs pairs with a stereo/antistereo direction (CrowS-Pairs or such a custom CSV).")
    if top < 1:
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
                rows.append((p.pair_id, p.bias_type, p.direction, group, side, w, rank or unlisted_rank,
                             wordfreq.zipf_frequency(w, LANGUAGE, wordlist=WORDLIST), rank is not None))
    words = pd.DataFrame(rows, columns=list(WORD_COLUMNS))
    types = sorted(t for t in words["bias_type"].unique() if t) + [ALL_TYPES]
    summary_rows, top_rows = [], []
    for bias_type in types:
        sub = words if bias_type == ALL_TYPES else words[words["bias_type"] == bias_type]
        for group in ("adv", "dis"):
            g = sub[sub["group"] == group]
            counts = g.groupby("word").agg(count=("word", "size"), rank=("rank", "first"), zipf=("zipf", "first")).reset_index()
            best = counts.sort_values(["count", "rank", "word"], ascending=[False, True, True]).head(top)
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
    top = pd.DataFrame(top_rows, columns=["bias_type", "group", "word", "count", "rank", "zipf"])
    return WordFrequency(words, pd.DataFrame(summary_rows), top, WORDLIST)


__all__ = ["WordFrequency", "corpus_ranks", "modified_words", "tokenize", "word_frequency"]

"""What a left-to-right metric sees before a pair's modified words: SSS-c without context.

SSS-c is the mean log P of the modified tokens given their left context (`biaslens.engine.metrics`). In CrowS-Pairs the
modified words are usually the group words, and often they come first ("The poor are really ignorant ..." / "The rich
are ..."): their left context is then the start token and function words only, so SSS-c compares P("poor" | "The")
with P("rich" | "The"), the group words' prior, and never sees the attribute the sentence states. On StereoSet the
modified word is the attribute, read after the target, and SSS-c means what it says.

`prior_only(pair)`: the pair's first modified word precedes every other content word (every word before it is a
function word, `biaslens.analyses.frequency.FUNCTION_WORDS`; words by a word-level diff, as the flagged-rows checks
find them). `sss_c_context(result, pairs)`: per pair that flag and the words before the modified span, and SSS-c's bias
score over the pairs that are not prior-only beside its score over all of them. StereoSet's examples (a context with a
BLANK) are never flagged.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from biaslens.analyses.frequency import FUNCTION_WORDS
from biaslens.data.datasets import Pair
from biaslens.data.flags import words
from biaslens.engine.stats import bias_score

if TYPE_CHECKING:
    from biaslens.engine.evaluation import EvaluationResult

#: The metric whose reading this concerns.
METRIC = "sss_c"
#: The columns of `SssContext.pairs`.
COLUMNS = ("pair_id", "prior_only", "before")
#: What a reader must know, in one sentence (the CLI, summary.json).
CAVEAT = (
    "SSS-c reads the modified words given the words before them only: where they come before every other content word "
    "(CrowS-Pairs' group words, often), it compares the group words' prior probabilities and never sees the attribute"
)


def words_before(pair: Pair) -> list[str] | None:
    """The words of the pair before its first modified word (word-level diff, lower case), or None when the two
    sentences have the same words."""
    a, b = words(pair.sent_stereo), words(pair.sent_anti)
    for tag, i1, _, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            return a[:i1]
    return None


def prior_only(pair: Pair) -> bool:
    """Whether the pair's modified words precede every other content word (StereoSet's examples: never)."""
    if pair.context:
        return False
    before = words_before(pair)
    return before is not None and all(w in _FUNCTION for w in before)


_FUNCTION = frozenset(FUNCTION_WORDS)


@dataclass(frozen=True)
class SssContext:
    """`pairs`: one row per scored pair (`COLUMNS`); `scores`: SSS-c's bias score over all pairs and over the pairs with a
    content word before the modified span (`scope` "all" / "with context": bias_score, ci_low, ci_high, n, wins)."""

    pairs: pd.DataFrame
    scores: pd.DataFrame

    @property
    def flagged(self) -> int:
        return int(np.count_nonzero(self.pairs["prior_only"].to_numpy(bool)))

    def summary(self) -> dict[str, Any]:
        """The `summary.json` block (and the entry beside SSS-c's bias score)."""
        scoped = {r["scope"]: {k: r[k] for k in ("bias_score", "ci_low", "ci_high", "n", "wins")} for r in self.scores.to_dict(orient="records")}
        return {"pairs": len(self.pairs), "prior_only": self.flagged, "with_context": scoped["with context"], "note": CAVEAT}

    def line(self) -> str:
        """The caveat with this run's numbers, for people."""
        kept = self.scores.set_index("scope").loc["with context"]
        score = "n/a" if np.isnan(kept["bias_score"]) else f"{kept['bias_score']:.2f} [{kept['ci_low']:.2f}, {kept['ci_high']:.2f}]"
        return (
            f"SSS-c: in {self.flagged:,} of {len(self.pairs):,} pairs the modified words come before every other content word, "
            f"so SSS-c compares their prior probabilities there (sss_c_context.csv: prior_only); over the other "
            f"{int(kept['n']):,} pairs SSS-c's bias score is {score}."
        )


def sss_c_context(result: EvaluationResult, pairs: Sequence[Pair]) -> SssContext:
    """The flag of each of the result's pairs and SSS-c's bias score with and without the flagged ones (`pairs`: the
    dataset's pairs, found by id)."""
    by_id = {p.pair_id: p for p in pairs}
    frame = result.pairs
    rows = []
    for pair_id in frame["pair_id"]:
        pair = by_id[pair_id]
        before = words_before(pair)
        rows.append({"pair_id": pair_id, "prior_only": prior_only(pair), "before": " ".join(before or [])})
    flags = pd.DataFrame(rows, columns=list(COLUMNS))
    stereo, anti = frame[f"{METRIC}_stereo"].to_numpy(float), frame[f"{METRIC}_anti"].to_numpy(float)
    keep = ~flags["prior_only"].to_numpy(bool)
    scores = []
    for scope, mask in (("all", np.ones(len(keep), dtype=bool)), ("with context", keep)):
        counts = bias_score(stereo[mask], anti[mask])
        scores.append(
            {"scope": scope, "bias_score": counts.score, "ci_low": counts.ci_low, "ci_high": counts.ci_high, "n": counts.n, "wins": counts.wins}
        )
    return SssContext(flags, pd.DataFrame(scores))


__all__ = ["CAVEAT", "COLUMNS", "METRIC", "SssContext", "prior_only", "sss_c_context", "words_before"]

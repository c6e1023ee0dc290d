"""Does the anatomy find a planted bias? The bias lab's models have a known association (group A's names with attributes
X, group B's with Y), so the anatomy views can be checked against the truth (docs/lab.md, *Where the planted bias lives*).

For one trained lab model (`planted_anatomy`):

* **Attribution**: for each held-out pair's stereotyped sentence, the share of |integrated gradients| (over the
  sentence's words, special tokens left out) on the planted words (the name and the attribute) against the share of
  the tokens they are (what an attribution blind to them would give); and for the pair, how often the attribute, the
  planted word both sentences share, has the largest |stereo - anti| difference of the shared tokens, against 1 / the
  number of shared tokens.
* **Heads**: the held-out pairs split in two halves (even and odd pair ids); the heads ranked on the first half
  (`rank_heads`: the mean margin change, most negative first), then on the second half the planted margin (the mean AUL
  margin, stereo following the planted direction) with the top k heads zeroed together, against every set of k heads
  (all of them: a lab model has 8 heads, so C(8, 2) = 28 sets): the shrink of the top k and the share of sets that
  shrink the margin less.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from biaslens.anatomy.attribution import attribute_sentence
from biaslens.anatomy.focus import focus_sentence
from biaslens.anatomy.heads import rank_heads, zeroed_score
from biaslens.engine.alignment import align_pair
from biaslens.engine.lm import LanguageModel
from biaslens.lab.corpus import LabPair, heldout_pairs
from biaslens.lab.settings import LabSettings


@dataclass(frozen=True)
class PlantedAnatomy:
    """What `planted_anatomy` found in one lab model (module docstring)."""

    seed: int
    pairs: int
    planted_share: float  # mean share of |IG| on the name and attribute tokens
    planted_token_share: float  # mean share of the tokens they are
    attribute_top: float  # share of pairs whose largest |difference| among shared tokens is on the attribute
    attribute_chance: float  # mean 1 / number of shared tokens
    k: int
    top_heads: tuple[tuple[int, int], ...]
    margin: float  # mean planted margin on the second half, nothing zeroed
    top_k_margin: float  # with the top k heads zeroed
    random_k_margins: tuple[float, ...]  # with each set of k heads zeroed

    @property
    def top_k_shrink(self) -> float:
        return self.margin - self.top_k_margin

    @property
    def random_k_shrink(self) -> float:
        """The mean shrink over every set of k heads."""
        return self.margin - float(np.mean(self.random_k_margins))

    @property
    def beaten(self) -> float:
        """The share of k-head sets whose zeroing shrinks the planted margin less than the top k's (ties count half)."""
        others = np.asarray(self.random_k_margins)
        return float(np.mean((others > self.top_k_margin) + 0.5 * (others == self.top_k_margin)))

    def record(self) -> dict[str, Any]:
        """Every field but the k-head sets' margins, and the shrinks and the share of sets the top k beats."""
        fields = {k: v for k, v in dataclasses.asdict(self).items() if k != "random_k_margins"}
        return {**fields, "top_k_shrink": self.top_k_shrink, "random_k_shrink": self.random_k_shrink, "top_k_beats": self.beaten}


def _word_tokens(lm: LanguageModel, text: str, words: tuple[str, ...]) -> set[int]:
    """Positions (in `lm.encode(text)`) of the tokens that cover any of `words` (whole words) in `text`."""
    spans = [m.span() for w in words for m in re.finditer(rf"\b{re.escape(w)}\b", text)]
    offsets = lm.tokenizer(text, return_offsets_mapping=True)["offset_mapping"]
    return {k for k, (a, b) in enumerate(offsets) if b > a and any(a < e and s < b for s, e in spans)}


def planted_anatomy(lm: LanguageModel, settings: LabSettings, *, k: int = 2, n_steps: int = 32) -> PlantedAnatomy:
    """The anatomy of lab model `lm` (trained on `settings`) against its planted association (module docstring)."""
    pairs: list[LabPair] = heldout_pairs(settings)
    names = (*settings.group_a, *settings.group_b)
    attributes = (*settings.attributes_x, *settings.attributes_y)
    shares, token_shares, top, chance = [], [], [], []
    for lab_pair in pairs:
        p = lab_pair.pair
        a, b = focus_sentence(lm, p.sent_stereo), focus_sentence(lm, p.sent_anti)
        ig_a, ig_b = attribute_sentence(lm, a, n_steps=n_steps), attribute_sentence(lm, b, n_steps=n_steps)
        words = [i for i, special in enumerate(a.encoding.special) if not special]
        planted = _word_tokens(lm, p.sent_stereo, names) | _word_tokens(lm, p.sent_stereo, attributes)
        magnitude = np.abs(ig_a.integrated_gradients[words])
        shares.append(float(magnitude[[i in planted for i in words]].sum() / magnitude.sum()))
        token_shares.append(len(planted & set(words)) / len(words))
        alignment = align_pair(a.encoding, b.encoding)
        attribute = _word_tokens(lm, p.sent_stereo, attributes)
        diff = {i: abs(ig_a.integrated_gradients[i] - ig_b.integrated_gradients[j]) for i, j in zip(alignment.unmodified_a, alignment.unmodified_b)}
        top.append(float(max(diff, key=lambda i: diff[i]) in attribute))
        chance.append(1.0 / len(diff))
    first, second = [lp.pair for lp in pairs if lp.pair.pair_id % 2 == 0], [lp.pair for lp in pairs if lp.pair.pair_id % 2 == 1]
    ranking = rank_heads(lm, first).frame()
    order = ranking.sort_values("mean_margin_change", kind="stable")  # most negative first: zeroing it shrinks the margin most
    top_heads = tuple((int(layer), int(head)) for layer, head in zip(order["layer"].head(k), order["head"].head(k)))
    held = [(focus_sentence(lm, p.sent_stereo), focus_sentence(lm, p.sent_anti)) for p in second]

    def mean_margin(zeroed: tuple[tuple[int, int], ...]) -> float:
        return float(np.mean([zeroed_score(lm, a, zeroed) - zeroed_score(lm, b, zeroed) for a, b in held]))

    every = list(itertools.product(range(lm.num_layers or 0), range(lm.num_heads or 0)))
    return PlantedAnatomy(
        seed=settings.seed,
        pairs=len(pairs),
        planted_share=float(np.mean(shares)),
        planted_token_share=float(np.mean(token_shares)),
        attribute_top=float(np.mean(top)),
        attribute_chance=float(np.mean(chance)),
        k=k,
        top_heads=top_heads,
        margin=mean_margin(()),
        top_k_margin=mean_margin(top_heads),
        random_k_margins=tuple(mean_margin(tuple(heads)) for heads in itertools.combinations(every, k)),
    )


__all__ = ["PlantedAnatomy", "planted_anatomy"]
